/* abi_items.h -- the ABI facts cuda_abi.h must share with NVIDIA's cuda.h:
 * enum values and struct sizes/offsets. Included by abi_dump.c twice, once
 * against each header. One fact per line, so the formatter is kept off. */
// clang-format off
#define VG_ABI_VALUES(X)                                     \
  X(CUDA_ERROR_INVALID_VALUE)                                \
  X(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)                       \
  X(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)                    \
  X(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)                        \
  X(CUDA_ERROR_OUT_OF_MEMORY)                                \
  X(CUDA_ERROR_NOT_INITIALIZED)                              \
  X(CUDA_ERROR_INVALID_CONTEXT)                              \
  X(CUDA_ERROR_NOT_FOUND)                                    \
  X(CUDA_ERROR_NOT_SUPPORTED)                                \
  X(CUDA_ERROR_INVALID_DEVICE)                               \
  X(CUDA_ERROR_INVALID_HANDLE)                               \
  X(CUDA_ERROR_INVALID_IMAGE)                                \
  X(CUDA_ERROR_ILLEGAL_ADDRESS)                              \
  X(CUDA_ERROR_NO_DEVICE)                                    \
  X(CUDA_ERROR_UNKNOWN)                                      \
  X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)                \
  X(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)                          \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)      \
  X(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)             \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)            \
  X(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)                      \
  X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)                  \
  X(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) \
  X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)              \
  X(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)           \
  X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)              \
  X(CU_MEM_LOCATION_TYPE_DEVICE)                             \
  X(CU_MEM_LOCATION_TYPE_HOST)                               \
  X(CU_MEM_ALLOCATION_TYPE_PINNED)                           \
  X(CU_AD_FORMAT_FLOAT)                                      \
  X(CU_AD_FORMAT_HALF)                                       \
  X(CUDA_ARRAY3D_LAYERED)                                    \
  X(CUDA_ARRAY3D_CUBEMAP)                                    \
  X(CU_MEM_ATTACH_GLOBAL)              \
  X(CU_STREAM_CAPTURE_MODE_GLOBAL)

#define VG_ABI_STRUCTS(X)    \
  X(CUmemAllocationProp)     \
  X(CUmemPoolProps)          \
  X(CUDA_ARRAY_DESCRIPTOR)   \
  X(CUDA_ARRAY3D_DESCRIPTOR) \
  X(CUlaunchConfig)          \
  X(CUuuid)                  \
  X(CUmemLocation)           \
  X(CUmemAccessDesc)         \
  X(CUDA_KERNEL_NODE_PARAMS)

#define VG_ABI_FIELDS(X)             \
  X(CUmemAllocationProp, location)   \
  X(CUmemPoolProps, maxSize)         \
  X(CUDA_ARRAY3D_DESCRIPTOR, Format) \
  X(CUDA_ARRAY3D_DESCRIPTOR, Flags)  \
  X(CUlaunchConfig, hStream)         \
  X(CUlaunchConfig, numAttrs)
// clang-format on
