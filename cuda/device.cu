// device.cu -- the device probe, memory helpers, error names, and the index
// of the ladders that csrc/ looks rungs up in.
#include <pthread.h>

#include "common.cuh"

// A kernel that does nothing: launching it proves this binary carries code
// the current GPU can run.
__global__ void probe_kernel(int *p)
{
    if (p) *p = 1;
}

extern "C" {
CUA_LADDER_INDEX(cua_cuda)
}

static void say(cua_cuda_device *info, const char *what, cudaError_t e)
{
    snprintf(info->reason, sizeof info->reason, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

extern "C" int cua_cuda_probe(cua_cuda_device *info)
{
    memset(info, 0, sizeof *info);
    cudaRuntimeGetVersion(&info->runtime_version);
    cudaError_t e = cudaDriverGetVersion(&info->driver_version);
    if (e != cudaSuccess || info->driver_version == 0) {
        snprintf(info->reason, sizeof info->reason, "no NVIDIA driver found (libcuda.so could not be loaded)");
        return 0;
    }
    // Minor-version compatibility: any driver of the same major CUDA version
    // runs this runtime; an older major cannot.
    if (info->driver_version / 1000 < info->runtime_version / 1000) {
        snprintf(info->reason, sizeof info->reason,
                 "the NVIDIA driver supports CUDA %d.%d but cuatomic was built with CUDA %d.%d: update the driver",
                 info->driver_version / 1000, info->driver_version % 1000 / 10, info->runtime_version / 1000,
                 info->runtime_version % 1000 / 10);
        return 0;
    }
    int n = 0;
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        say(info, "no usable CUDA device", e);
        cudaGetLastError();
        return 0;
    }
    if (n == 0) {
        snprintf(info->reason, sizeof info->reason, "no CUDA device found");
        return 0;
    }
    e = cudaGetDevice(&info->device);
    cudaDeviceProp prop;
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, info->device);
    if (e != cudaSuccess) {
        say(info, "cannot query the CUDA device", e);
        return 0;
    }
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->total_memory = (int64_t)prop.totalGlobalMem;
    info->shared_per_block_optin = (int64_t)prop.sharedMemPerBlockOptin;
    cudaDeviceGetAttribute(&info->cooperative_launch, cudaDevAttrCooperativeLaunch, info->device);
    probe_kernel<<<1, 1>>>(NULL);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
            snprintf(info->reason, sizeof info->reason,
                     "this build has no kernel image for %s (compute capability %d.%d): rebuild with "
                     "CUATOMIC_CUDA_ARCHS including %d%d",
                     prop.name, prop.major, prop.minor, prop.major, prop.minor);
        else say(info, "a test kernel failed to run", e);
        return 0;
    }
    // Keep freed memory in the stream-ordered pool instead of returning it
    // at every synchronization: scratch allocations then cost microseconds,
    // and the pool holds at most the largest working set, not more.
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, info->device) == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();
    info->usable = 1;
    return 0;
}

extern "C" int cua_cuda_malloc(void **ptr, size_t nbytes)
{
    *ptr = NULL;
    CUA_CHECK(cudaMalloc(ptr, nbytes > 0 ? nbytes : 1));
    return 0;
}

extern "C" int cua_cuda_free(void *ptr)
{
    CUA_CHECK(cudaFree(ptr));
    return 0;
}

static int copy(void *dst, const void *src, size_t nbytes, cudaMemcpyKind kind, void *stream)
{
    if (nbytes == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    CUA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int cua_cuda_malloc_async(void **ptr, size_t nbytes, void *stream)
{
    *ptr = NULL;
    CUA_CHECK(cudaMallocAsync(ptr, nbytes > 0 ? nbytes : 1, (cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_free_async(void *ptr, void *stream)
{
    CUA_CHECK(cudaFreeAsync(ptr, (cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_memcpy_htod_async(void *dst, const void *src, size_t nbytes, void *stream)
{
    // From pageable memory this returns once the source has been read; from
    // page-locked memory the DMA runs while the host goes on.
    if (nbytes) CUA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, (cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_host_alloc(void **ptr, size_t nbytes)
{
    *ptr = NULL;
    CUA_CHECK(cudaHostAlloc(ptr, nbytes > 0 ? nbytes : 1, cudaHostAllocDefault));
    return 0;
}

extern "C" int cua_cuda_host_free(void *ptr)
{
    CUA_CHECK(cudaFreeHost(ptr));
    return 0;
}

extern "C" int cua_cuda_memcpy_htod(void *dst, const void *src, size_t n, void *s)
{
    return copy(dst, src, n, cudaMemcpyHostToDevice, s);
}
extern "C" int cua_cuda_memcpy_dtoh(void *dst, const void *src, size_t n, void *s)
{
    return copy(dst, src, n, cudaMemcpyDeviceToHost, s);
}
extern "C" int cua_cuda_memcpy_dtod(void *dst, const void *src, size_t n, void *s)
{
    return copy(dst, src, n, cudaMemcpyDeviceToDevice, s);
}

// ------------------------------------------------------------- call slots

// CUA_SLOTS slots of one page-locked, device-mapped allocation, made on
// first use and kept for the life of the process; a bit per slot says it is
// taken. Portable: every device of the process can use the mapping.
#define CUA_SLOTS 32
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static char *slot_host, *slot_device;
static uint32_t slot_taken;
static int slot_failed;

extern "C" int cua_cuda_slot_acquire(void **host, void **device)
{
    int slot = -1;
    pthread_mutex_lock(&slot_lock);
    if (!slot_host && !slot_failed) {
        void *h = NULL, *d = NULL;
        cudaError_t e = cudaHostAlloc(&h, (size_t)CUA_SLOTS * CUA_SLOT_BYTES,
                                      cudaHostAllocMapped | cudaHostAllocPortable);
        if (e == cudaSuccess) e = cudaHostGetDevicePointer(&d, h, 0);
        if (e == cudaSuccess) {
            slot_host = (char *)h;
            slot_device = (char *)d;
        } else {
            if (h) cudaFreeHost(h);
            cudaGetLastError();  // the ordinary path is taken; nothing to report
            slot_failed = 1;
        }
    }
    for (int i = 0; slot_host && i < CUA_SLOTS; i++)
        if (!(slot_taken & (1u << i))) {
            slot_taken |= 1u << i;
            slot = i;
            break;
        }
    pthread_mutex_unlock(&slot_lock);
    if (slot >= 0) {
        *host = slot_host + (size_t)slot * CUA_SLOT_BYTES;
        *device = slot_device + (size_t)slot * CUA_SLOT_BYTES;
    }
    return slot;
}

extern "C" void cua_cuda_slot_release(int slot)
{
    if (slot < 0) return;
    pthread_mutex_lock(&slot_lock);
    slot_taken &= ~(1u << slot);
    pthread_mutex_unlock(&slot_lock);
}

__global__ void trap_kernel() { __trap(); }

extern "C" int cua_cuda_debug_trap(void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    trap_kernel<<<1, 1, 0, s>>>();
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int cua_cuda_event_create(void **event)
{
    cudaEvent_t e = NULL;
    CUA_CHECK(cudaEventCreate(&e));
    *event = (void *)e;
    return 0;
}

extern "C" int cua_cuda_event_destroy(void *event)
{
    CUA_CHECK(cudaEventDestroy((cudaEvent_t)event));
    return 0;
}

extern "C" int cua_cuda_event_record(void *event, void *stream)
{
    CUA_CHECK(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_event_elapsed(void *start, void *stop, float *ms)
{
    CUA_CHECK(cudaEventSynchronize((cudaEvent_t)stop));
    CUA_CHECK(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop));
    return 0;
}

extern "C" int cua_cuda_event_synchronize(void *event)
{
    CUA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
    return 0;
}

extern "C" int cua_cuda_synchronize(void)
{
    CUA_CHECK(cudaDeviceSynchronize());
    return 0;
}

extern "C" const char *cua_cuda_error_name(int status) { return cudaGetErrorName((cudaError_t)status); }
extern "C" const char *cua_cuda_error_string(int status) { return cudaGetErrorString((cudaError_t)status); }

extern "C" int cua_cuda_error_is_sticky(int status)
{
    switch ((cudaError_t)status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout: return 1;
    default: return 0;
    }
}
