// route.cu -- the result route: results a launcher left in device memory,
// delivered to the caller, and the call's one wait.
//
// A launcher whose results are arrays (the histogram's counts, the weighted
// histogram's sums) writes them to device memory and returns once its work
// is queued. What happens next is not the rung's business, so it lives here
// and runs after any such launcher:
//
//  - a call slot (cfg->result.device, page-locked host memory the device
//    can write): one block copies the results there after the launcher's
//    kernels, fences at system scope and raises the slot's flag; the wait
//    ends on the flag, about a microsecond before the stream would report
//    done, and no copy engine is involved (on an H200 a copy-engine
//    transfer of the counts cost 8.7 us more per call than a kernel that
//    copies them). Where the kernel was compiled for sm_90 or later it is
//    launched as a programmatic dependent of the kernel before it, and
//    griddepcontrol.wait holds the copy until that kernel has finished and
//    its writes are visible (the rungs' kernels do not trigger early, so the
//    most this can save is the gap between two launches; measured with the
//    call-slot row of tools/bench_ab.py);
//  - a host array: the wait, then a copy;
//  - device results: the wait alone.
//
// Every wait answers Ctrl-C (cua_wait polls cfg->poll).
#include "common.cuh"

namespace {

constexpr int PUBLISH_THREADS = 256;

__global__ void __launch_bounds__(PUBLISH_THREADS)
    publish_kernel(const u64 *__restrict__ src, u64 *dst, int64_t words, unsigned *flag)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // A programmatic dependent starts before the kernel it depends on has
    // finished: this waits until that grid has completed and flushed its
    // writes (a no-op when launched without the attribute).
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    for (int64_t j = threadIdx.x; j < words; j += blockDim.x) dst[j] = src[j];
    __threadfence_system();  // each thread's words reach host memory ...
    __syncthreads();         // ... before thread 0 raises the flag
    if (threadIdx.x == 0) cua_raise_flag(flag);
}

// Whether publish_kernel as it runs on the current device was compiled
// with griddepcontrol.wait: from PTX of sm_90 or later. (The device's own
// compute capability is not enough: a build for sm_80 only runs on an H100
// through the compute_80 PTX, which has no wait.) Once per device per thread.
int publish_waits(bool *waits)
{
    static thread_local int seen_device = -1;
    static thread_local bool seen_waits = false;
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    if (dev != seen_device) {
        cudaFuncAttributes attr;
        CUA_CHECK(cudaFuncGetAttributes(&attr, publish_kernel));
        seen_waits = attr.ptxVersion >= 90;
        seen_device = dev;
    }
    *waits = seen_waits;
    return 0;
}

// The copy into the slot; a programmatic dependent of the work before it
// only where the kernel waits for it.
int publish(const void *dev, size_t nbytes, cua_launch *cfg)
{
    bool waits;
    int st = publish_waits(&waits);
    if (st) return st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3(1);
    lc.blockDim = dim3(PUBLISH_THREADS);
    lc.stream = cua_stream(cfg);
    lc.attrs = attr;
    lc.numAttrs = waits ? 1 : 0;
    CUA_CHECK(cudaLaunchKernelEx(&lc, publish_kernel, (const u64 *)dev, (u64 *)cfg->result.device,
                                 (int64_t)(nbytes / sizeof(u64)), cfg->result.flag));
    CUA_CHECK_LAUNCH();
    return 0;
}

}  // namespace

extern "C" int cua_cuda_deliver(const void *dev, size_t nbytes, void *host, cua_launch *cfg)
{
    if (cfg->result.device) {
        if (nbytes % sizeof(u64) != 0) return CUA_EINTERNAL;
        int st = publish(dev, nbytes, cfg);
        if (!st) st = cua_wait_result(cfg);
        return st ? st : cua_cuda_pool_settle_if_over();
    }
    CUA_WAIT(cfg);
    if (host && nbytes) {
        const int st = cua_cuda_memcpy_dtoh(host, dev, nbytes, cfg->stream);
        if (st) return st;
    }
    // The launcher's scratch was queued for freeing before this wait
    // (cua_scratch::queued): trim the pool now, if that left it over its limit.
    return cua_cuda_pool_settle_if_over();
}
