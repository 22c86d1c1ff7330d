// minmax.cu -- the smallest and largest element of a device array and
// whether it holds a NaN: the range np.histogram takes when none is given.
#include <cuda/std/limits>

#include "common.cuh"

// Per-block smallest and largest non-NaN element and a NaN flag; the host
// combines the blocks. Used to find the range of a device array.
template <class T>
__global__ void minmax_kernel(const T *__restrict__ x, int64_t n, T *bmin, T *bmax, int *nan)
{
    using lim = cuda::std::numeric_limits<T>;
    T lo = lim::has_infinity ? lim::infinity() : lim::max();
    T hi = lim::has_infinity ? -lim::infinity() : lim::lowest();
    bool saw_nan = false;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        T v = x[i];
        if (v != v) saw_nan = true;
        else {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    if (saw_nan) *nan = 1;  // a plain store: every writer writes the same 1
    T *slo = reinterpret_cast<T *>(cua_smem), *shi = slo + blockDim.x;
    unsigned tid = threadIdx.x;
    slo[tid] = lo;
    shi[tid] = hi;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {  // blockDim is a power of two here
        if (tid < s) {
            slo[tid] = slo[tid + s] < slo[tid] ? slo[tid + s] : slo[tid];
            shi[tid] = shi[tid + s] > shi[tid] ? shi[tid + s] : shi[tid];
        }
        __syncthreads();
    }
    if (tid == 0) {
        bmin[blockIdx.x] = slo[0];
        bmax[blockIdx.x] = shi[0];
    }
}

extern "C" int cua_cuda_minmax(const void *x, int64_t n, int dtype, void *min_out, void *max_out, int *has_nan,
                               void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        const int threads = CUA_DEFAULT_THREADS;
        static_assert((threads & (threads - 1)) == 0, "minmax_kernel's tree needs a power-of-two block");
        int sms;
        int st = cua_sm_count(&sms);
        if (st) return st;
        int64_t want = cua_ceil_div(n, threads);
        const unsigned blocks = (unsigned)(want < 4LL * sms ? want : 4LL * sms);
        // Scratch: the NaN flag first (aligned), then per-block minima and maxima.
        size_t bytes = 16 + 2 * (size_t)blocks * sizeof(T);
        cua_scratch scratch;
        CUA_CHECK(scratch.get(bytes, s));
        int *nan = (int *)scratch.ptr;
        T *bmin = (T *)((char *)scratch.ptr + 16), *bmax = bmin + blocks;
        CUA_CHECK(cudaMemsetAsync(nan, 0, sizeof(int), s));
        minmax_kernel<T><<<blocks, threads, 2 * threads * sizeof(T), s>>>((const T *)x, n, bmin, bmax, nan);
        CUA_CHECK_LAUNCH();
        char *raw = (char *)malloc(bytes);
        if (!raw) return CUA_ENOMEM;
        T *host = (T *)(raw + 16);
        cudaError_t e = cudaMemcpyAsync(raw, scratch.ptr, bytes, cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        if (e == cudaSuccess) {
            T lo = host[0], hi = host[blocks];
            for (unsigned i = 1; i < blocks; i++) {
                lo = host[i] < lo ? host[i] : lo;
                hi = host[blocks + i] > hi ? host[blocks + i] : hi;
            }
            memcpy(min_out, &lo, sizeof(T));
            memcpy(max_out, &hi, sizeof(T));
            memcpy(has_nan, raw, sizeof(int));
        }
        free(raw);
        if (e != cudaSuccess) cudaGetLastError();  // reported now, not again by the next call
        return (int)e;
    });
}
