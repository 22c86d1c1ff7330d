// histogram.cu -- the histogram ladder, and the min/max that sizes its range.
//
//  1. global  one atomicAdd on a global counter per element. Simple; slow
//             when many threads hit the same bin at once (skewed data such
//             as English text, where ' ' and 'e' dominate).
//  2. shared  each block counts into its own private histogram in shared
//             memory (fast on-chip atomics, contention only within the
//             block), then adds each bin to the global counts with one
//             atomicAdd per bin per block. Needs nbins * 4 bytes of shared
//             memory per block; more bins than fit are refused with a
//             message pointing at `global`. Shared counters are 32-bit:
//             the launcher splits huge inputs so no block counts 2^32.
//
// The bin of x is the largest b with edges[b] <= x for edges[0] <= x <=
// edges[nbins] (compared in the edge type), exactly np.histogram's rule.
// Evenly spaced edges guess b arithmetically and correct by +-1 against the
// edges; uneven ones binary-search. Integer data with integer edges of an
// integer width (the tutorial's bytes, bins=128, range=(0, 128)) take an
// integer-only path: b = (x - lo) / width.
#include <cuda/std/limits>
#include <type_traits>

#include "common.cuh"

enum HistRung { GLOBAL, SHARED };

template <class E>
struct DevBins {
    const E *edges;
    int64_t nbins;
    E first, last;
    double inv_width;
    int uniform, integer;
    int64_t ilo, iwidth, ispan;
};

template <class T, class E>
__device__ __forceinline__ int64_t bin_of(T x, const DevBins<E> &bn)
{
    if constexpr (std::is_integral<T>::value && sizeof(T) <= 4) {
        if (bn.integer) {
            int64_t d = (int64_t)x - bn.ilo;
            if (d < 0 || d > bn.ispan) return -1;
            int64_t b = bn.iwidth == 1 ? d : d / bn.iwidth;
            return b < bn.nbins ? b : bn.nbins - 1;  // the last bin is closed
        }
    }
    const E v = (E)x;
    if (!(v >= bn.first && v <= bn.last)) return -1;  // outside, or NaN
    const E *e = bn.edges;
    int64_t b;
    if (bn.uniform) {
        b = (int64_t)((double)(v - bn.first) * bn.inv_width);
        b = b < 0 ? 0 : (b > bn.nbins - 1 ? bn.nbins - 1 : b);
        while (b > 0 && v < e[b]) --b;
        while (b < bn.nbins - 1 && v >= e[b + 1]) ++b;
    } else {
        int64_t lo = 0, hi = bn.nbins - 1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            if (e[mid] <= v) lo = mid;
            else hi = mid - 1;
        }
        b = lo;
    }
    return b;
}

template <class T, class E>
__global__ void hist_global_kernel(const T *__restrict__ x, int64_t n, DevBins<E> bn, u64 *counts)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        int64_t b = bin_of(x[i], bn);
        if (b >= 0) atomicAdd(&counts[b], 1ULL);
    }
}

template <class T, class E>
__global__ void hist_shared_kernel(const T *__restrict__ x, int64_t n, DevBins<E> bn, u64 *counts)
{
    unsigned *local = reinterpret_cast<unsigned *>(cua_smem);
    for (int64_t j = threadIdx.x; j < bn.nbins; j += blockDim.x) local[j] = 0;
    __syncthreads();  // the private histogram is zeroed before anyone counts
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        int64_t b = bin_of(x[i], bn);
        if (b >= 0) atomicAdd(&local[b], 1u);
    }
    __syncthreads();  // every count of this block is in before the flush
    for (int64_t j = threadIdx.x; j < bn.nbins; j += blockDim.x) atomicAdd(&counts[j], (u64)local[j]);
}

template <int R, class T, class E>
static int hist_typed(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, 128);
    if (st) return st;
    const int64_t nb = bins->nbins;
    size_t smem = 0;
    if (R == SHARED) {
        int dev, optin;
        CUA_CHECK(cudaGetDevice(&dev));
        CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (nb > optin / 4)
            return cua_refuse(cfg,
                              "method 'shared' keeps one 4-byte counter per bin in shared memory: "
                              "this device fits at most %d bins per block (got %lld); use method='global'",
                              optin / 4, (long long)nb);
        smem = (size_t)nb * 4;
        if (smem > 48 * 1024)
            CUA_CHECK(cudaFuncSetAttribute(hist_shared_kernel<T, E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    }
    CUA_CHECK(cudaMemsetAsync(counts, 0, (size_t)nb * sizeof(u64), s));
    if (n == 0) return (int)cudaStreamSynchronize(s);

    cua_scratch scratch;
    CUA_CHECK(scratch.get((size_t)(nb + 1) * sizeof(E), s));
    CUA_CHECK(cudaMemcpyAsync(scratch.ptr, bins->edges, (size_t)(nb + 1) * sizeof(E), cudaMemcpyHostToDevice, s));
    const E *host_edges = (const E *)bins->edges;
    DevBins<E> bn = {(const E *)scratch.ptr, nb, host_edges[0], host_edges[nb], bins->inv_width,
                     bins->uniform, bins->integer, bins->ilo, bins->iwidth, bins->iwidth * nb};

    const unsigned blocks = (unsigned)cfg->blocks;
    const int threads = cfg->threads;
    // Chunks of at most blocks * 2^31 elements: no block's 32-bit shared
    // counter can reach 2^32 within one launch.
    const int64_t chunk = (int64_t)blocks << 31;
    for (int64_t off = 0; off < n; off += chunk) {
        int64_t m = n - off < chunk ? n - off : chunk;
        if (R == GLOBAL) hist_global_kernel<T, E><<<blocks, threads, 0, s>>>(x + off, m, bn, counts);
        else hist_shared_kernel<T, E><<<blocks, threads, smem, s>>>(x + off, m, bn, counts);
        CUA_CHECK_LAUNCH();
    }
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

template <int R>
static int hist_run(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts, cua_launch *cfg)
{
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        if (bins->edge_dtype == CUA_FLOAT32) return hist_typed<R, T, float>((const T *)x, n, bins, (u64 *)counts, cfg);
        if (bins->edge_dtype == CUA_FLOAT64) return hist_typed<R, T, double>((const T *)x, n, bins, (u64 *)counts, cfg);
        return CUA_EINTERNAL;
    });
}

static int hist_GLOBAL(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_run<GLOBAL>(x, n, d, b, c, cfg);
}
static int hist_SHARED(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_run<SHARED>(x, n, d, b, c, cfg);
}

extern "C" const cua_variant cua_cuda_histogram_variants[] = {
    {"global", 1, "one global atomicAdd per element: contention on popular bins", 0, (cua_fn)hist_GLOBAL},
    {"shared", 2, "block-private histogram in shared memory, one global atomicAdd per bin per block",
     CUA_F_DEFAULT, (cua_fn)hist_SHARED},
};
extern "C" const int cua_cuda_histogram_nvariants =
    sizeof cua_cuda_histogram_variants / sizeof cua_cuda_histogram_variants[0];

// ------------------------------------------------------------------ minmax

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
        const int threads = 256;
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
