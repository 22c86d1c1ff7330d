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
//  3. warp_private  one private histogram per warp (as many copies as fit in
//             shared memory; warps share copies round-robin beyond that),
//             16-byte loads, the next load in flight while a vector is
//             counted; bytes in bins of width one take a lean 32-bit path.
//             Contention drops from a block's threads to a warp's lanes;
//             lanes of a warp that hit one bin still queue (on an H200 this
//             cost less than rung 4's flushes, even for a single repeated
//             value). More bins than one copy fits fall back to global
//             atomics (with the same wide loads).
//  4. thread_counters  no atomics while counting: every thread owns an
//             8-bit counter per bin in shared memory (four bins to a word,
//             laid out so a warp's 32 counters of one bin sit in 32 banks).
//             Skew costs nothing. Before a counter can overflow (every 255
//             elements a thread reads) the block adds the counters into
//             32-bit block totals -- a SWAR sum of 32 words at a time -- and
//             clears them. Needs one byte per bin per thread: the default
//             block shrinks (whole warps, down to 32 threads) until that
//             fits; more bins than 32 threads' counters fit are refused.
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

enum HistRung { GLOBAL, SHARED, WARP_PRIVATE, THREAD_COUNTERS };

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

// ---------------------------------------------------- wide-load rungs (3, 4)

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

// f(vector) over this thread's grid-stride share of the body, with the next
// vector's load issued before the current one is counted.
template <class F>
__device__ __forceinline__ void for_vectors(const uint4 *body, int64_t nvec, F f)
{
    const int64_t stride = cua_grid_stride();
    int64_t i = cua_global_id();
    if (i >= nvec) return;
    uint4 cur = __ldg(body + i);
    while (true) {
        const int64_t next = i + stride;
        uint4 ahead = next < nvec ? __ldg(body + next) : cur;
        f(cur);
        if (next >= nvec) return;
        cur = ahead;
        i = next;
    }
}

template <class T, class E>
__global__ void hist_warp_private_kernel(const T *__restrict__ x, int64_t n, DevBins<E> bn, int copies,
                                         u64 *counts)
{
    unsigned *local = reinterpret_cast<unsigned *>(cua_smem);
    const int64_t nb = bn.nbins;
    const int64_t stride = cua_grid_stride(), gid = cua_global_id();
    // Each copy has one counter more than there are bins: the lean byte path
    // counts the top edge (which np.histogram puts in the last bin) there
    // and the flush adds it to the last bin, so no byte needs a clamp.
    const int64_t stride_c = nb + 1;
    if (copies > 0) {
        for (int64_t j = threadIdx.x; j < stride_c * copies; j += blockDim.x) local[j] = 0;
        __syncthreads();  // every copy is zeroed before anyone counts
    }
    unsigned *mine = local + (int64_t)((threadIdx.x >> 5) % (copies > 0 ? copies : 1)) * stride_c;
    const SmallBins sb(bn);
    auto count = [&](T v) {
        int64_t b = wide_bin(v, bn, sb);
        if (b < 0) return;
        if (copies > 0) atomicAdd(&mine[b], 1u);
        else atomicAdd(&counts[b], 1ULL);
    };
    Split<T> sp(x, n);
    bool done = false;
    if constexpr (std::is_integral<T>::value && sizeof(T) == 1) {
        if (sb.on && sb.width == 1 && copies > 0) {
            // The tutorial's case, lean: bytes of 32-bit words, 32-bit bin
            // arithmetic, one shared atomic per counted byte.
            const int lo = sb.lo;
            const unsigned top = sb.last + 1;  // d == top is the closed top edge: its own counter
            auto put = [&](unsigned byte) {  // byte: 0..255
                const unsigned d = std::is_signed<T>::value ? (unsigned)((int)(T)byte - lo) : byte - (unsigned)lo;
                if (d <= top) atomicAdd(&mine[d], 1u);
            };
            for (int64_t i = gid; i < sp.head; i += stride) put((uint8_t)x[i]);
            for (int64_t i = sp.tail_begin + gid; i < n; i += stride) put((uint8_t)x[i]);
            for_vectors(sp.body, sp.nvec, [&](uint4 r) {
                const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
                for (int k = 0; k < 4; k++) {
#pragma unroll
                    for (int b = 0; b < 4; b++) put(__byte_perm(w[k], 0, 0x4440 + b));  // byte b, zero-extended
                }
            });
            done = true;
        }
    }
    if (!done) {
        for (int64_t i = gid; i < sp.head; i += stride) count(x[i]);
        for (int64_t i = sp.tail_begin + gid; i < n; i += stride) count(x[i]);
        for_vectors(sp.body, sp.nvec, [&](uint4 r) {
            T v[Split<T>::V];
            unpack(r, v);
#pragma unroll
            for (int k = 0; k < Split<T>::V; k++) count(v[k]);
        });
    }
    if (copies == 0) return;
    __syncthreads();  // every count of this block is in before the flush
    for (int64_t j = threadIdx.x; j < nb; j += blockDim.x) {
        u64 total = 0;
        for (int c = 0; c < copies; c++) {
            total += local[(int64_t)c * stride_c + j];
            if (j == nb - 1) total += local[(int64_t)c * stride_c + nb];  // the closed top edge
        }
        if (total) atomicAdd(&counts[j], total);
    }
}

// Thread t's counter of bin b is byte (b & 3) of word (b >> 2) * T + t.
template <class T, class E>
__global__ void hist_thread_counters_kernel(const T *__restrict__ x, int64_t n, DevBins<E> bn, u64 *counts)
{
    constexpr int V = Split<T>::V;
    constexpr int STEPS = (255 - 2) / V;  // elements per counter between flushes, head and tail included
    const unsigned T_ = blockDim.x, t = threadIdx.x;
    const int rows = (int)((bn.nbins + 3) / 4);
    unsigned *words = reinterpret_cast<unsigned *>(cua_smem);  // rows * T_
    unsigned *totals = words + (size_t)rows * T_;               // rows * 4 block totals
    for (unsigned j = t; j < (unsigned)rows * T_; j += T_) words[j] = 0;
    for (unsigned j = t; j < (unsigned)rows * 4; j += T_) totals[j] = 0;
    __syncthreads();

    const SmallBins sb(bn);
    const bool lean = std::is_integral<T>::value && sizeof(T) == 1 && sb.on && sb.width == 1;
    const int lo = sb.lo;
    const unsigned nb = sb.last + 1;
    auto bump = [&](unsigned b) { words[(b >> 2) * T_ + t] += 1u << ((b & 3) << 3); };  // own byte: no atomic
    auto count = [&](T v) {
        if (lean) {  // bytes in bins of width one: 32-bit arithmetic only
            const unsigned d = (unsigned)((int)v - lo);
            if (d <= nb) bump(d < nb ? d : nb - 1);
            return;
        }
        int64_t b = wide_bin(v, bn, sb);
        if (b >= 0) bump((unsigned)b);
    };
    // Add every thread's counters into the totals and clear them. Work item
    // (row, segment) sums 32 words of one row; lanes start at different
    // columns so that a warp's 32 reads hit 32 banks.
    auto flush = [&]() {
        __syncthreads();  // all counts of this round are in
        const unsigned segments = T_ / 32, lane = t & 31;
        for (unsigned item = t; item < (unsigned)rows * segments; item += T_) {
            const unsigned row = item / segments, base = row * T_ + (item % segments) * 32;
            unsigned even = 0, odd = 0;  // two 16-bit lanes each: 32 * 255 fits
            for (unsigned c = 0; c < 32; c++) {
                unsigned *w = &words[base + ((c + lane) & 31)];
                even += *w & 0x00FF00FFu;
                odd += (*w >> 8) & 0x00FF00FFu;
                *w = 0;
            }
            const unsigned add[4] = {even & 0xFFFFu, odd & 0xFFFFu, even >> 16, odd >> 16};
            for (int k = 0; k < 4; k++)
                if (add[k]) atomicAdd(&totals[row * 4 + k], add[k]);
        }
        __syncthreads();  // counters are clear before the next round counts
    };

    Split<T> sp(x, n);
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();
    if (gid < sp.head) count(x[gid]);
    if (sp.tail_begin + gid < n) count(x[sp.tail_begin + gid]);
    // Every thread of the block runs the same number of steps, so that all
    // of them reach every flush.
    const int64_t steps = cua_ceil_div(sp.nvec, stride);
    uint4 ahead = gid < sp.nvec ? __ldg(sp.body + gid) : uint4();
    for (int64_t s = 0; s < steps; s++) {
        const int64_t i = s * stride + gid;
        const uint4 cur = ahead;
        if (i + stride < sp.nvec) ahead = __ldg(sp.body + i + stride);  // the next step's load, in flight
        if (i < sp.nvec) {
            T v[V];
            unpack(cur, v);
#pragma unroll
            for (int k = 0; k < V; k++) count(v[k]);
        }
        if ((s + 1) % STEPS == 0) flush();
    }
    flush();
    for (int64_t j = t; j < bn.nbins; j += T_)
        if (totals[j]) atomicAdd(&counts[j], (u64)totals[j]);
}

// What a rung needs of shared memory for nb bins on a device whose blocks
// can opt in to `optin` bytes, with the threads asked for (cfg->threads <= 0:
// the default, which thread_counters shrinks until its counters fit): the
// bytes, and (warp_private) how many copies fit. A rung that cannot count nb
// bins refuses with the limit; the launcher and histogram_fits both ask here.
template <int R>
static int hist_plan(int64_t nb, int optin, int *copies, size_t *smem, cua_launch *cfg)
{
    *copies = 0;
    *smem = 0;
    if (R == GLOBAL) return 0;
    if (R == SHARED) {
        if (nb > optin / 4)
            return cua_refuse(cfg,
                              "method 'shared' keeps one 4-byte counter per bin in shared memory: "
                              "this device fits at most %d bins per block (got %lld); use method='global'",
                              optin / 4, (long long)nb);
        *smem = (size_t)nb * 4;
        return 0;
    }
    const bool defaulted = cfg->threads <= 0;
    if (defaulted) cfg->threads = 256;
    int threads = cfg->threads;
    if (R == WARP_PRIVATE) {
        const int64_t warps = (threads + 31) / 32, fit = optin / ((nb + 1) * 4);
        if (fit < 1)
            return cua_refuse(cfg,
                              "method 'warp_private' keeps a 4-byte counter per bin per warp in shared memory: "
                              "this device fits at most %d bins per block (got %lld); use method='global'",
                              optin / 4 - 1, (long long)nb);
        *copies = (int)(fit < warps ? fit : warps);
        *smem = (size_t)*copies * (nb + 1) * 4;
        return 0;
    }
    if (threads % 32 != 0)
        return cua_refuse(cfg, "method 'thread_counters' needs whole warps: threads must be a multiple of 32 (got %d)",
                          threads);
    const int64_t rows = (nb + 3) / 4;
    *smem = (size_t)rows * threads * 4 + (size_t)rows * 16;
    // The default block shrinks (whole warps) until a byte per bin per thread fits.
    while (defaulted && (int64_t)*smem > optin && threads > 32) {
        threads -= 32;
        cfg->threads = threads;
        *smem = (size_t)rows * threads * 4 + (size_t)rows * 16;
    }
    if ((int64_t)*smem > optin)
        return cua_refuse(cfg,
                          "method 'thread_counters' keeps a byte per bin per thread in shared memory: %lld bins x "
                          "%d threads do not fit in %d bytes; use fewer threads or method='warp_private'",
                          (long long)nb, threads, optin);
    return 0;
}

static int shared_optin(int *optin)
{
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return 0;
}

template <int R>
static int hist_fits(int64_t nbins, int dtype, cua_launch *cfg)
{
    (void)dtype;
    int optin, copies;
    size_t smem;
    int st = shared_optin(&optin);
    return st ? st : hist_plan<R>(nbins, optin, &copies, &smem, cfg);
}

template <int R, class T, class E>
static int hist_typed(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    const bool wide = R == WARP_PRIVATE || R == THREAD_COUNTERS;
    const int64_t nb = bins->nbins;
    int optin;
    int st = shared_optin(&optin);
    if (st) return st;
    size_t smem = 0;
    int copies = 0;
    st = hist_plan<R>(nb, optin, &copies, &smem, cfg);
    if (st) return st;
    if (wide) {
        if (R == THREAD_COUNTERS && (uintptr_t)x % sizeof(T) != 0)
            return cua_refuse(cfg, "method 'thread_counters' needs input aligned to its element size");
        if (smem > CUA_STATIC_SMEM_BYTES) {
            if (R == WARP_PRIVATE)
                CUA_CHECK(cudaFuncSetAttribute(hist_warp_private_kernel<T, E>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            else
                CUA_CHECK(cudaFuncSetAttribute(hist_thread_counters_kernel<T, E>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        }
        if (cfg->blocks <= 0) {
            int64_t resident;
            int st2 = R == WARP_PRIVATE
                          ? cua_max_resident_blocks(hist_warp_private_kernel<T, E>, cfg->threads, smem, &resident)
                          : cua_max_resident_blocks(hist_thread_counters_kernel<T, E>, cfg->threads, smem, &resident);
            if (st2) return st2;
            const int64_t want = cua_ceil_div(n > 0 ? n : 1, (int64_t)cfg->threads * (16 / sizeof(T)));
            cfg->blocks = want < resident ? want : resident;
            if (cfg->blocks < 1) cfg->blocks = 1;
        }
        cua_clamp_grid(cfg, cua_ceil_div(n, (int64_t)cfg->threads * (16 / sizeof(T))));
        cfg->used_blocks = cfg->blocks;
        cfg->used_threads = cfg->threads;
    } else {
        st = cua_default_config(cfg, n, 128);
        if (st) return st;
        if (R == SHARED && smem > CUA_STATIC_SMEM_BYTES)
            CUA_CHECK(cudaFuncSetAttribute(hist_shared_kernel<T, E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    }
    CUA_CHECK(cudaMemsetAsync(counts, 0, (size_t)nb * sizeof(u64), s));
    if (n == 0) {
        CUA_WAIT(cfg);
        return 0;
    }

    // The edges go to the device only when the kernel reads them: integer
    // data in integer bins is binned by arithmetic alone.
    cua_scratch scratch;
    const bool arithmetic = bins->integer && std::is_integral<T>::value && sizeof(T) <= 4;
    if (!arithmetic) {
        CUA_CHECK(scratch.get((size_t)(nb + 1) * sizeof(E), s));
        CUA_CHECK(
            cudaMemcpyAsync(scratch.ptr, bins->edges, (size_t)(nb + 1) * sizeof(E), cudaMemcpyHostToDevice, s));
    }
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
        else if (R == SHARED) hist_shared_kernel<T, E><<<blocks, threads, smem, s>>>(x + off, m, bn, counts);
        else if (R == WARP_PRIVATE)
            hist_warp_private_kernel<T, E><<<blocks, threads, smem, s>>>(x + off, m, bn, copies, counts);
        else hist_thread_counters_kernel<T, E><<<blocks, threads, smem, s>>>(x + off, m, bn, counts);
        CUA_CHECK_LAUNCH();
    }
    CUA_WAIT(cfg);
    return 0;
}

template <int R>
static int hist_run(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts, cua_launch *cfg)
{
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        if (bins->edge_dtype == CUA_FLOAT32) return hist_typed<R, T, float>((const T *)x, n, bins, (u64 *)counts, cfg);
        if (bins->edge_dtype == CUA_FLOAT64) return hist_typed<R, T, double>((const T *)x, n, bins, (u64 *)counts, cfg);
        // 64-bit integers against integer edges, compared exactly (float64
        // edges would round both above 2^53). Narrower data is exact against
        // float64 edges already.
        if constexpr (std::is_same<T, int64_t>::value)
            if (bins->edge_dtype == CUA_INT64) return hist_typed<R, T, int64_t>((const T *)x, n, bins, (u64 *)counts, cfg);
        if constexpr (std::is_same<T, uint64_t>::value)
            if (bins->edge_dtype == CUA_UINT64) return hist_typed<R, T, uint64_t>((const T *)x, n, bins, (u64 *)counts, cfg);
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

static int hist_WARP_PRIVATE(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_run<WARP_PRIVATE>(x, n, d, b, c, cfg);
}
static int hist_THREAD_COUNTERS(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_run<THREAD_COUNTERS>(x, n, d, b, c, cfg);
}

static const cua_hist_row histogram_rows[] = {
    {{"global", 1, "one global atomicAdd per element: contention on popular bins",
      CUA_F_DETERMINISTIC},
     hist_GLOBAL, hist_fits<GLOBAL>},
    {{"shared", 2, "block-private histogram in shared memory, one global atomicAdd per bin per block",
      CUA_F_DETERMINISTIC},
     hist_SHARED, hist_fits<SHARED>},
    {{"warp_private", 3, "a shared-memory histogram per warp, 16-byte loads: contention only within a warp",
      CUA_F_DETERMINISTIC},
     hist_WARP_PRIVATE, hist_fits<WARP_PRIVATE>},
    {{"thread_counters", 4, "8-bit counters per thread per bin, flushed before they overflow: no atomics, skew-proof",
      CUA_F_DETERMINISTIC},
     hist_THREAD_COUNTERS, hist_fits<THREAD_COUNTERS>},
};
extern "C" const cua_ladder cua_cuda_histogram_ladder = CUA_LADDER(histogram_rows);

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
