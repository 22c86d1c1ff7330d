// bins.cuh -- what the histogram ladders share (histogram.cu counts,
// weighted.cu sums weights): np.histogram's bin rule on the device, the
// 16-byte split of the input, the shared-memory plans and their `fits`, the
// bins as the kernels read them, the wide rungs' grid and the dispatch on
// the data's and the edges' types.
//
// The bin of x is the largest b with edges[b] <= x for edges[0] <= x <=
// edges[nbins] (compared in the edge type), exactly np.histogram's rule.
// Evenly spaced edges guess b arithmetically and correct by +-1 against the
// edges; uneven ones binary-search. Integer data with integer edges of an
// integer width (the tutorial's bytes, bins=128, range=(0, 128); bincount's
// bins of width one from zero) take an integer-only path: b = (x - lo) / width.
#pragma once

#include <type_traits>

#include "common.cuh"

// The default block of `global` and `shared`; the wide rungs default to
// CUA_DEFAULT_THREADS.
constexpr int NARROW_THREADS = 128;

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
    if constexpr (std::is_integral<T>::value && sizeof(T) == 8) {
        // 64-bit data in integer bins (bincount's): the bins lie within
        // int64, so uint64 values past INT64_MAX are outside, and the offset
        // from lo is taken in uint64, where it cannot overflow.
        if (bn.integer) {
            if (std::is_unsigned<T>::value && (uint64_t)x > (uint64_t)INT64_MAX) return -1;
            if ((int64_t)x < bn.ilo) return -1;
            const uint64_t d = (uint64_t)(int64_t)x - (uint64_t)bn.ilo;
            if (d > (uint64_t)bn.ispan) return -1;
            const int64_t b = bn.iwidth == 1 ? (int64_t)d : (int64_t)(d / (uint64_t)bn.iwidth);
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

// The body of x in 16-byte vectors, with the elements before the first
// 16-byte boundary (head) and after the last one (tail) kept apart: each
// thread of the grid gets at most one head and one tail element.
template <class T>
struct Split {
    static constexpr int V = 16 / sizeof(T);
    const uint4 *body;
    int64_t nvec, head, tail_begin, n;
    __device__ Split(const T *x, int64_t n_) : n(n_)
    {
        const uintptr_t offset = (uintptr_t)x & 15;
        head = offset % sizeof(T) ? n : (int64_t)(((16 - offset) & 15) / sizeof(T));
        head = head < n ? head : n;
        nvec = (n - head) / V;
        tail_begin = head + nvec * V;
        body = reinterpret_cast<const uint4 *>(x + head);
    }
};

template <class T>
__device__ __forceinline__ void unpack(uint4 r, T (&v)[16 / sizeof(T)])
{
    memcpy(v, &r, 16);
}

// Integer bins for 1- and 2-byte data in 32-bit arithmetic (the tutorial's
// bytes): the general bin_of works in 64 bits and the edge type.
struct SmallBins {
    bool on;
    int lo;
    unsigned span, width, last;
    template <class E>
    __device__ SmallBins(const DevBins<E> &bn)
    {
        on = bn.integer && bn.ilo >= -(1LL << 30) && bn.ilo <= (1LL << 30) && bn.ispan < (1LL << 30);
        lo = (int)bn.ilo;
        span = (unsigned)bn.ispan;
        width = (unsigned)bn.iwidth;
        last = (unsigned)(bn.nbins - 1);
    }
};

template <class T, class E>
__device__ __forceinline__ int64_t wide_bin(T v, const DevBins<E> &bn, const SmallBins &sb)
{
    if constexpr (std::is_integral<T>::value && sizeof(T) <= 2) {
        if (sb.on) {
            const unsigned d = (unsigned)((int)v - sb.lo);
            if (d > sb.span) return -1;
            const unsigned b = sb.width == 1 ? d : d / sb.width;
            return b < sb.last ? b : sb.last;  // the last bin is closed
        }
    }
    return bin_of(v, bn);
}

// What a rung needs of shared memory to count (or sum into) nb bins on a
// device whose blocks can opt in to `optin` bytes, with the threads asked
// for (cfg->threads <= 0: the rung's default, which thread_counters shrinks
// until its counters fit): the bytes, and (warp_private) how many copies
// fit and whether the edges do. A rung that cannot count nb bins refuses
// with the limit; its launcher and its row's `fits` both ask here.
struct HistPlan {
    size_t smem = 0;
    int copies = 0;
    int edges = 0;  // the edges kept in shared memory too (weighted warp_private)
};
typedef int (*hist_plan_fn)(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg);

// A rung's plan on the current device.
static int plan_here(hist_plan_fn plan, int64_t nb, HistPlan *p, cua_launch *cfg)
{
    int dev, optin;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return plan(nb, optin, p, cfg);
}

// A row's `fits`: the rung's plan, without a launch.
template <hist_plan_fn plan>
static int hist_fits(const cua_bins *bins, int dtype, cua_launch *cfg)
{
    (void)dtype;
    HistPlan p;
    return plan_here(plan, bins->nbins, &p, cfg);
}

// The bins as the kernels read them. The edges go to the device (into
// `edges`, which must outlive the launches) only when the kernel reads
// them: integer data in integer bins is binned by arithmetic alone (the
// glue sets `integer` for 64-bit data only for bins within int64). The
// histogram launchers return before their kernels end, so `edges` only
// queues its free (cua_scratch::queued): the result route settles the
// pool after its wait.
template <class T, class E>
static int upload_bins(const cua_bins *bins, cua_scratch *edges, DevBins<E> *bn, cudaStream_t s)
{
    const int64_t nb = bins->nbins;
    edges->queued = true;
    const bool arithmetic = bins->integer && std::is_integral<T>::value;
    if (!arithmetic) {
        CUA_CHECK(edges->get((size_t)(nb + 1) * sizeof(E), s));
        CUA_CHECK(cudaMemcpyAsync(edges->ptr, bins->edges, (size_t)(nb + 1) * sizeof(E), cudaMemcpyHostToDevice, s));
    }
    const E *host_edges = (const E *)bins->edges;
    *bn = DevBins<E>{(const E *)edges->ptr, nb, host_edges[0], host_edges[nb], bins->inv_width,
                     bins->uniform, bins->integer, bins->ilo, bins->iwidth, bins->iwidth * nb};
    return 0;
}

// The grid of the wide-load rungs: by default the resident grid of
// `kernel`, never more blocks than there are 16-byte vectors' worth of
// threads. Lets the kernel use `smem` bytes first (the occupancy depends
// on it).
template <class T, class K>
static int wide_config(K kernel, int64_t n, size_t smem, cua_launch *cfg)
{
    int st = cua_allow_smem(kernel, smem);
    if (st) return st;
    const int64_t per_block = (int64_t)cfg->threads * (16 / sizeof(T));
    if (cfg->blocks <= 0) {
        int64_t resident;
        st = cua_max_resident_blocks(kernel, cfg->threads, smem, &resident);
        if (st) return st;
        const int64_t want = cua_ceil_div(n > 0 ? n : 1, per_block);
        cfg->blocks = want < resident ? want : resident;
        if (cfg->blocks < 1) cfg->blocks = 1;
    }
    cua_clamp_grid(cfg, cua_ceil_div(n, per_block));
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    return 0;
}

// float32 edges come only with data that NumPy compares in float32: the
// edges' type is np.result_type(edges, data) (cuatomic/_bins.py,
// kernel_bins), float32 for float32 data and for integers of at most 16
// bits (bool read as uint8); wider integers and float64 make it float64.
// So only those types get a float-edge kernel: (int32, uint32, int64,
// uint64, float64) x float32 edges would be 5 kernels per rung and weight
// type that no call reaches (build time only); the ABI answers such a pair
// as any other it has no kernel for.
template <class T>
constexpr bool hist_float_edges = std::is_same<T, float>::value || (std::is_integral<T>::value && sizeof(T) <= 2);

// Call f(T(), E()) with the C type of the data and the type its edges are
// compared in.
template <class F>
static int hist_dispatch(int dtype, int edge_dtype, F &&f)
{
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        if constexpr (hist_float_edges<T>)
            if (edge_dtype == CUA_FLOAT32) return f(t, float());
        if (edge_dtype == CUA_FLOAT64) return f(t, double());
        // 64-bit integers against integer edges, compared exactly (float64
        // edges would round both above 2^53). Narrower data is exact against
        // float64 edges already.
        if constexpr (std::is_same<T, int64_t>::value)
            if (edge_dtype == CUA_INT64) return f(t, int64_t());
        if constexpr (std::is_same<T, uint64_t>::value)
            if (edge_dtype == CUA_UINT64) return f(t, uint64_t());
        return CUA_EINTERNAL;
    });
}
