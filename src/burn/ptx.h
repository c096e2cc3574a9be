/*
 * ptx.h -- the kernel vgpu-burn launches, as embedded PTX text.
 *
 * The program carries its kernel as PTX source rather than a cubin so that
 * no CUDA toolkit is needed to build or run it: the driver JIT-compiles the
 * text for whatever GPU it finds. ".target sm_50" with ".version 7.0" is
 * accepted by every driver since CUDA 11, and the simulator reads the same
 * text (it looks for the .entry name).
 */
#ifndef VG_BURN_PTX_H
#define VG_BURN_PTX_H

/* The module image for cuModuleLoadData (NUL-terminated PTX). */
extern const char vg_burn_ptx[];

/* Name of the entry point in vg_burn_ptx. Its signature is
 *   vg_burn(float *buf, unsigned n, unsigned iters)
 * Thread i < n runs `iters` iterations of 8 independent FMA chains seeded
 * from buf[i] and stores their sum back to buf[i]. */
#define VG_BURN_KERNEL "vg_burn"

/* Floating-point operations one thread does per iteration (8 FMAs). */
#define VG_BURN_FLOPS_PER_ITER 16

#endif
