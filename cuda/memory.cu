// memory.cu -- device and page-locked host memory, copies, and the call
// slots (page-locked, device-mapped memory for one call's small input and
// its result).
#include <pthread.h>

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
