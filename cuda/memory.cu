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

// Wait for what was queued on s up to now -- the copy just queued, and the
// work before it -- but not for work other threads queue on s after it
// (the legacy default stream is every thread's that passes none): an event
// recorded now, synchronized; the stream itself only if none can be.
static int wait_queued(cudaStream_t s)
{
    const cua_call_event done(s);
    CUA_CHECK(done.e ? cudaEventSynchronize(done.e) : cudaStreamSynchronize(s));
    return 0;
}

static int copy(void *dst, const void *src, size_t nbytes, cudaMemcpyKind kind, void *stream)
{
    if (nbytes == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    CUA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, s));
    return wait_queued(s);
}

// ------------------------------------------------------------------ pool
//
// cuatomic's own stream-ordered pool, one per GPU, made on first use. The
// device's default pool is shared by every library of the process that
// allocates stream-ordered (CuPy's and PyTorch's async allocators, JAX,
// the user's own cudaMallocAsync): its settings are theirs, and cuatomic
// leaves them as it found them.
//
// The pool caches freed memory (reserved by the pool, in use by nobody) up
// to a limit, so the scratch and results of repeated calls cost no driver
// allocation. The limit is CUATOMIC_CACHE_BYTES when set to a number of
// bytes, else 1/16 of the GPU's memory up to 2 GiB. The documented point
// where memory goes back: whenever cuatomic frees memory and its pool then
// caches more than the limit, the GPU is synchronized (as cudaFree does:
// every stream's work that could still read the memory is done) and the
// pool trimmed to what is in use plus the limit. The driver's own trimming
// at synchronizations is off for this pool (release threshold UINT64_MAX)
// so that the cache is not dropped whenever the memory in use passes the
// limit. What is in use cannot be given back; memory the allocator keeps
// in the same chunk as a live allocation may stay cached too.

#define CUA_MAX_POOLS 64
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaMemPool_t pools[CUA_MAX_POOLS];
static uint64_t pool_limit[CUA_MAX_POOLS];

// The limit of the current GPU's pool (`device` is current): a valid
// CUATOMIC_CACHE_BYTES (digits only; the Python side refuses anything else
// before a pool is made), else 1/16 of the GPU's memory up to 2 GiB.
static uint64_t cache_limit_for(void)
{
    const char *env = getenv("CUATOMIC_CACHE_BYTES");
    if (env && *env && strspn(env, "0123456789") == strlen(env) && strlen(env) < 19)
        return (uint64_t)strtoull(env, NULL, 10);
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
        cudaGetLastError();  // this query's own failure: the default below
        total = 0;
    }
    const uint64_t cap = (uint64_t)2 << 30;
    return total / 16 < cap ? total / 16 : cap;
}

// The pool of `device` when it has one (never made here).
static cudaMemPool_t pool_if_made(int device)
{
    return device >= 0 && device < CUA_MAX_POOLS ? __atomic_load_n(&pools[device], __ATOMIC_ACQUIRE) : NULL;
}

// The pool of the current GPU, made on first use. Lock-free once made: a
// pool is never replaced.
static cudaError_t current_pool(cudaMemPool_t *out)
{
    *out = NULL;
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev >= CUA_MAX_POOLS) return cudaErrorInvalidDevice;
    if ((*out = pool_if_made(dev))) return cudaSuccess;
    pthread_mutex_lock(&pool_lock);
    if (!pools[dev]) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        cudaMemPool_t p;
        e = cudaMemPoolCreate(&p, &props);
        if (e == cudaSuccess) {
            uint64_t never = UINT64_MAX;  // trimming is cua_cuda_pool_settle's alone
            e = cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &never);
            if (e == cudaSuccess) {
                pool_limit[dev] = cache_limit_for();
                __atomic_store_n(&pools[dev], p, __ATOMIC_RELEASE);
            } else {
                cudaMemPoolDestroy(p);
            }
        }
    }
    *out = pools[dev];
    pthread_mutex_unlock(&pool_lock);
    return e;
}

extern "C" int cua_cuda_malloc_async(void **ptr, size_t nbytes, void *stream)
{
    *ptr = NULL;
    cudaMemPool_t pool;
    CUA_CHECK(current_pool(&pool));
    CUA_CHECK(cudaMallocFromPoolAsync(ptr, nbytes > 0 ? nbytes : 1, pool, (cudaStream_t)stream));
    return 0;
}

// Bytes the pool of `device` caches (reserved, not in use) and uses.
static cudaError_t pool_bytes(cudaMemPool_t p, uint64_t *cached, uint64_t *used)
{
    uint64_t reserved = 0;
    *cached = *used = 0;
    cudaError_t e = cudaMemPoolGetAttribute(p, cudaMemPoolAttrUsedMemCurrent, used);
    if (e == cudaSuccess) e = cudaMemPoolGetAttribute(p, cudaMemPoolAttrReservedMemCurrent, &reserved);
    *cached = reserved > *used ? reserved - *used : 0;  // the two reads may straddle a trim
    return e;
}

// Whether the current GPU's pool caches more than its limit.
static int pool_over(int *over)
{
    *over = 0;
    int device;
    CUA_CHECK(cudaGetDevice(&device));
    cudaMemPool_t p = pool_if_made(device);
    if (!p) return 0;
    uint64_t cached, used;
    CUA_CHECK(pool_bytes(p, &cached, &used));
    *over = cached > pool_limit[device];
    return 0;
}

extern "C" int cua_cuda_free_queued(void *ptr, void *stream, int *over)
{
    *over = 0;
    CUA_CHECK(cudaFreeAsync(ptr, (cudaStream_t)stream));
    return pool_over(over);
}

extern "C" int cua_cuda_pool_settle(void)
{
    int device;
    CUA_CHECK(cudaGetDevice(&device));
    cudaMemPool_t p = pool_if_made(device);
    if (!p) return 0;
    CUA_CHECK(cudaDeviceSynchronize());  // every free queued so far is done, and nothing still reads it
    uint64_t cached, used;
    CUA_CHECK(pool_bytes(p, &cached, &used));
    if (cached > pool_limit[device]) CUA_CHECK(cudaMemPoolTrimTo(p, used + pool_limit[device]));
    return 0;
}

extern "C" int cua_cuda_pool_settle_if_over(void)
{
    int over;
    int st = pool_over(&over);
    return st ? st : over ? cua_cuda_pool_settle() : 0;
}

extern "C" int cua_cuda_free_async(void *ptr, void *stream)
{
    int over;
    int st = cua_cuda_free_queued(ptr, stream, &over);
    return st ? st : over ? cua_cuda_pool_settle() : 0;
}

extern "C" int cua_cuda_pool_info(int device, cua_pool_info *info)
{
    memset(info, 0, sizeof *info);
    info->device = device;
    cudaMemPool_t p = pool_if_made(device);
    if (!p) return 0;  // no pool yet: nothing held
    uint64_t cached, used;
    CUA_CHECK(pool_bytes(p, &cached, &used));
    info->in_use = (int64_t)used;
    info->cached = (int64_t)cached;
    info->limit = pool_limit[device] > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)pool_limit[device];
    return 0;
}

extern "C" int cua_cuda_pool_release(int device)
{
    cudaMemPool_t p = pool_if_made(device);
    if (!p) return 0;
    int previous;
    CUA_CHECK(cudaGetDevice(&previous));
    if (previous != device) CUA_CHECK(cudaSetDevice(device));
    // Every free queued on any stream of the GPU is done after this.
    cudaError_t e = cudaDeviceSynchronize();
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
extern "C" int cua_cuda_sample_dtoh(void *dst, const void *src, size_t itemsize, size_t pitch, size_t count,
                                    void *s)
{
    // One strided copy on the caller's stream (no kernel, no scratch), then
    // a wait for it: a few elements of a large array for a host estimate.
    if (count == 0 || itemsize == 0) return 0;
    const cudaStream_t st = (cudaStream_t)s;
    CUA_CHECK(cudaMemcpy2DAsync(dst, itemsize, src, pitch, itemsize, count, cudaMemcpyDeviceToHost, st));
    return wait_queued(st);
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
    return wait_queued((cudaStream_t)s);
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

// ------------------------------------------------------------- call events
//
// A call waits for its own work, not for its stream's: the stream may be
// shared (the legacy default stream of every thread that passes none), and
// a query of a stream says "not ready" while any thread's later work is
// queued on it. Threads calling on one GPU then waited for each other and
// returned together once the GPU ran dry, with nothing queued while they
// went back to Python (dask's threaded scheduler on two GPUs: no faster
// than one). The wait is on an event recorded after the call's work
// (cua_wait). Spare events are kept per GPU for the next calls, at most
// CUA_SPARE_EVENTS each; the rest are destroyed.
#define CUA_SPARE_EVENTS 64
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaEvent_t spare_events[CUA_MAX_POOLS][CUA_SPARE_EVENTS];
static int spare_count[CUA_MAX_POOLS];

extern "C" int cua_cuda_event_take(void **event, int *device)
{
    *event = NULL;
    CUA_CHECK(cudaGetDevice(device));
    if (*device < 0 || *device >= CUA_MAX_POOLS) return (int)cudaErrorInvalidDevice;
    pthread_mutex_lock(&event_lock);
    if (spare_count[*device] > 0) *event = (void *)spare_events[*device][--spare_count[*device]];
    pthread_mutex_unlock(&event_lock);
    if (*event) return 0;
    cudaEvent_t e;
    CUA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    *event = (void *)e;
    return 0;
}

extern "C" void cua_cuda_event_give(void *event, int device)
{
    if (!event) return;
    pthread_mutex_lock(&event_lock);
    const int kept = spare_count[device] < CUA_SPARE_EVENTS;
    if (kept) spare_events[device][spare_count[device]++] = (cudaEvent_t)event;
    pthread_mutex_unlock(&event_lock);
    if (!kept) cudaEventDestroy((cudaEvent_t)event);
}
