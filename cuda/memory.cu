// memory.cu -- device and page-locked host memory, copies, and the call
// slots (page-locked, device-mapped memory for one call's small input and
// its result).
#include <pthread.h>
#include <stdlib.h>

#include "common.cuh"

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

// ------------------------------------------------------------------ pool
//
// cuatomic's own stream-ordered pool, one per GPU, made on first use. The
// device's default pool is shared by every library of the process that
// allocates stream-ordered (CuPy's and PyTorch's async allocators, JAX,
// the user's own cudaMallocAsync): its settings are theirs, and cuatomic
// leaves them as it found them.
//
// The pool keeps freed memory up to a cache limit, so the scratch and
// results of repeated calls cost no driver allocation. The limit is
// CUATOMIC_CACHE_BYTES when set, else 1/16 of the GPU's memory up to
// 2 GiB. The documented point where memory goes back: whenever cuatomic
// frees memory of a GPU whose pool then holds more than the limit, it
// waits for the freeing stream and trims the pool to the limit; at every
// synchronization the driver trims it too (the release threshold). So a
// result larger than the cache goes back to the driver when it is freed
// (as cudaFree would, it waits for the stream it is freed on), and
// cua_cuda_pool_release gives back everything held.

#define CUA_MAX_POOLS 64
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaMemPool_t pools[CUA_MAX_POOLS];
static uint64_t pool_limit[CUA_MAX_POOLS];

static uint64_t cache_limit_for(int device)
{
    const char *env = getenv("CUATOMIC_CACHE_BYTES");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0') return (uint64_t)v;
    }
    size_t total = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) total = prop.totalGlobalMem;
    cudaGetLastError();
    const uint64_t cap = (uint64_t)2 << 30;
    return total / 16 < cap ? total / 16 : cap;
}

// The pool of `device`, made on first use (NULL with an error if it
// cannot be). Lock-free once made: a pool is never replaced.
static cudaError_t pool_of(int device, cudaMemPool_t *out)
{
    *out = NULL;
    if (device < 0 || device >= CUA_MAX_POOLS) return cudaErrorInvalidDevice;
    cudaMemPool_t p = __atomic_load_n(&pools[device], __ATOMIC_ACQUIRE);
    if (p) {
        *out = p;
        return cudaSuccess;
    }
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&pool_lock);
    if (!pools[device]) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        e = cudaMemPoolCreate(&p, &props);
        if (e == cudaSuccess) {
            uint64_t keep = cache_limit_for(device);
            e = cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep);
            if (e == cudaSuccess) {
                pool_limit[device] = keep;
                __atomic_store_n(&pools[device], p, __ATOMIC_RELEASE);
            } else {
                cudaMemPoolDestroy(p);
            }
        }
    }
    *out = pools[device];
    pthread_mutex_unlock(&pool_lock);
    return e;
}

static cudaError_t current_pool(cudaMemPool_t *out, int *device)
{
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (device) *device = dev;
    return pool_of(dev, out);
}

extern "C" int cua_cuda_malloc_async(void **ptr, size_t nbytes, void *stream)
{
    *ptr = NULL;
    cudaMemPool_t pool;
    CUA_CHECK(current_pool(&pool, NULL));
    CUA_CHECK(cudaMallocFromPoolAsync(ptr, nbytes > 0 ? nbytes : 1, pool, (cudaStream_t)stream));
    return 0;
}

// Memory the pool holds beyond its limit goes back to the driver now: the
// freeing stream is waited for (its frees are then done), and the pool is
// trimmed to the limit. Most frees find the pool within it (one attribute
// read).
static int pool_settle(cudaStream_t s)
{
    int device;
    cudaMemPool_t pool;
    CUA_CHECK(current_pool(&pool, &device));
    uint64_t reserved = 0;
    CUA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    if (reserved <= pool_limit[device]) return 0;
    CUA_CHECK(cudaStreamSynchronize(s));
    CUA_CHECK(cudaMemPoolTrimTo(pool, pool_limit[device]));
    return 0;
}

extern "C" int cua_cuda_free_async(void *ptr, void *stream)
{
    CUA_CHECK(cudaFreeAsync(ptr, (cudaStream_t)stream));
    return pool_settle((cudaStream_t)stream);
}

extern "C" int cua_cuda_pool_info(int device, cua_pool_info *info)
{
    memset(info, 0, sizeof *info);
    info->device = device;
    cudaMemPool_t p = device >= 0 && device < CUA_MAX_POOLS ? __atomic_load_n(&pools[device], __ATOMIC_ACQUIRE)
                                                           : NULL;
    if (!p) return 0;  // no pool yet: nothing held
    uint64_t used = 0, reserved = 0;
    CUA_CHECK(cudaMemPoolGetAttribute(p, cudaMemPoolAttrUsedMemCurrent, &used));
    CUA_CHECK(cudaMemPoolGetAttribute(p, cudaMemPoolAttrReservedMemCurrent, &reserved));
    info->in_use = (int64_t)used;
    info->cached = (int64_t)(reserved - used);
    info->limit = (int64_t)pool_limit[device];
    return 0;
}

extern "C" int cua_cuda_pool_release(int device)
{
    cudaMemPool_t p = device >= 0 && device < CUA_MAX_POOLS ? __atomic_load_n(&pools[device], __ATOMIC_ACQUIRE)
                                                           : NULL;
    if (!p) return 0;
    int previous;
    CUA_CHECK(cudaGetDevice(&previous));
    if (previous != device) CUA_CHECK(cudaSetDevice(device));
    // Buffers are freed in the order of the legacy default stream: once it
    // is through, every free cuatomic queued there is done.
    cudaError_t e = cudaStreamSynchronize(0);
    if (e == cudaSuccess) e = cudaMemPoolTrimTo(p, 0);
    if (previous != device) cudaSetDevice(previous);
    CUA_CHECK(e);
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
    // Portable: page-locked for every GPU of the process, not only the current one.
    CUA_CHECK(cudaHostAlloc(ptr, nbytes > 0 ? nbytes : 1, cudaHostAllocPortable));
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
    // dst is on the current GPU; a source on another GPU is a peer copy
    // (over NVLink or PCIe, or staged by the driver when there is no peer
    // path), which cudaMemcpyAsync refuses.
    if (n == 0) return 0;
    cudaPointerAttributes attr;
    int here;
    CUA_CHECK(cudaPointerGetAttributes(&attr, src));
    CUA_CHECK(cudaGetDevice(&here));
    if (attr.type != cudaMemoryTypeDevice || attr.device == here)
        return copy(dst, src, n, cudaMemcpyDeviceToDevice, s);
    CUA_CHECK(cudaMemcpyPeerAsync(dst, here, src, attr.device, n, (cudaStream_t)s));
    CUA_CHECK(cudaStreamSynchronize((cudaStream_t)s));
    return 0;
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
