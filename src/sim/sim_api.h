/*
 * sim_api.h -- how the simulator exports exactly the driver's API.
 *
 * The simulator libraries are built with -fvisibility=hidden, so nothing of
 * ours leaks into the program's symbol namespace. The public prototypes from
 * cuda_abi.h / nvml_abi.h are declared here with default visibility, which
 * makes precisely the functions NVIDIA's libraries export visible and
 * everything else (vg_* helpers, statics) private.
 */
#ifndef VG_SIM_API_H
#define VG_SIM_API_H

#pragma GCC visibility push(default)
#include "cuda_abi.h"
#include "nvml_abi.h"
#pragma GCC visibility pop

#endif
