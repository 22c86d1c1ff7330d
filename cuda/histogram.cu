// histogram.cu -- the histogram ladder (the min/max that sizes its range is
// in minmax.cu).
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
//             counted. Contention drops from a block's threads to a warp's lanes;
//             lanes of a warp that hit one bin still queue (on an H200 this
//             cost less than rung 4's flushes, even for a single repeated
//             value). Needs (nbins + 1) * 4 bytes of shared memory for
//             one copy; more bins than one copy fits are refused with a
//             message pointing at `global` ("auto" passes this rung by).
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
//  5. bytes  rung 3 cut to the tutorial's case, 1-byte data in bins of width
//             one: 1024 threads, a copy of 256 counters per warp (one per
//             byte value), so a byte costs three instructions -- extract,
//             address, one shared reduction -- with no range check and no
//             branch; the flush adds the counters of the byte values that
//             fall in a bin. What limited rung 3 there (Nsight Compute,
//             H200, 1 GiB of text): issue-bound at 82% SM throughput, 12
//             instructions a byte, each atomic behind a branch that
//             recomputed the shared window; this kernel is bound by the
//             shared-memory atomics' bank conflicts instead, as CUB's
//             HistogramEven is. Refuses any other data or bins (its `fits`).
//
// A launcher counts into `counts` (device memory) and returns once its work
// is queued: where the counts go next -- the caller's array, a call slot's
// mapped memory -- and the one wait are the result route's (route.cu),
// which the glue runs after any launcher.
//
// The bin rule (np.histogram's, exactly), the plans and the dispatch are in
// bins.cuh, shared with the weighted ladder (weighted.cu).
#include "bins.cuh"

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

// `copies` >= 1 private histograms per block (the launcher refuses bin
// counts that leave room for none); warp w counts into copy w % copies.
template <class T, class E>
__global__ void hist_warp_private_kernel(const T *__restrict__ x, int64_t n, DevBins<E> bn, int copies,
                                         u64 *counts)
{
    unsigned *local = reinterpret_cast<unsigned *>(cua_smem);
    const int64_t nb = bn.nbins;
    const int64_t stride = cua_grid_stride(), gid = cua_global_id();
    const int64_t stride_c = nb + 1;  // the plan's layout: one spare counter per copy, never counted
    for (int64_t j = threadIdx.x; j < stride_c * copies; j += blockDim.x) local[j] = 0;
    __syncthreads();  // every copy is zeroed before anyone counts
    unsigned *mine = local + (int64_t)((threadIdx.x >> 5) % copies) * stride_c;
    const SmallBins sb(bn);
    auto count = [&](T v) {
        int64_t b = wide_bin(v, bn, sb);
        if (b >= 0) atomicAdd(&mine[b], 1u);
    };
    Split<T> sp(x, n);
    for (int64_t i = gid; i < sp.head; i += stride) count(x[i]);
    for (int64_t i = sp.tail_begin + gid; i < n; i += stride) count(x[i]);
    for_vectors(sp.body, sp.nvec, [&](uint4 r) {
        T v[Split<T>::V];
        unpack(r, v);
#pragma unroll
        for (int k = 0; k < Split<T>::V; k++) count(v[k]);
    });
    __syncthreads();  // every count of this block is in before the flush
    for (int64_t j = threadIdx.x; j < nb; j += blockDim.x) {
        u64 total = 0;
        for (int c = 0; c < copies; c++) total += local[(int64_t)c * stride_c + j];
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

// Rung 5: 1-byte data in integer bins of width one. Warp w counts into
// copy w % copies of 256 counters, indexed by the byte's bits: every byte has
// a counter, so none is range-checked; the flush adds the counters of the
// byte values that fall in a bin (lo + j, and for the last bin also the
// closed top edge lo + nb).
constexpr int BYTE_THREADS = 1024;  // on an H200 3-10% faster than 256 (2 blocks per SM)
constexpr int BYTE_VECTORS = 2;     // 16-byte loads per thread per step, all issued before counting

__device__ __forceinline__ void shared_increment(unsigned address)
{
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(address) : "memory");
}

template <class T>
__global__ void __launch_bounds__(BYTE_THREADS)
    hist_bytes_kernel(const T *__restrict__ x, int64_t n, int64_t lo, int64_t nb, int copies, u64 *counts)
{
    static_assert(sizeof(T) == 1, "bytes only");
    unsigned *local = reinterpret_cast<unsigned *>(cua_smem);
    for (int j = threadIdx.x; j < 256 * copies; j += blockDim.x) local[j] = 0;
    __syncthreads();  // every copy is zeroed before anyone counts
    const unsigned mine = (unsigned)__cvta_generic_to_shared(local + ((threadIdx.x >> 5) % copies) * 256);
    auto put = [&](unsigned byte) { shared_increment(mine + (byte << 2)); };  // byte: 0..255
    Split<T> sp(x, n);
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();
    for (int64_t i = gid; i < sp.head; i += stride) put((uint8_t)x[i]);
    for (int64_t i = sp.tail_begin + gid; i < n; i += stride) put((uint8_t)x[i]);
    const int64_t tile = (int64_t)blockDim.x * BYTE_VECTORS;
    for (int64_t t = blockIdx.x; t * tile < sp.nvec; t += gridDim.x) {
        uint4 r[BYTE_VECTORS];
        bool in[BYTE_VECTORS];
#pragma unroll
        for (int k = 0; k < BYTE_VECTORS; k++) {
            const int64_t i = t * tile + (int64_t)k * blockDim.x + threadIdx.x;
            in[k] = i < sp.nvec;
            if (in[k]) r[k] = __ldg(sp.body + i);
        }
#pragma unroll
        for (int k = 0; k < BYTE_VECTORS; k++) {
            if (!in[k]) continue;
            const unsigned w[4] = {r[k].x, r[k].y, r[k].z, r[k].w};
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int b = 0; b < 4; b++) put(__byte_perm(w[q], 0, 0x4440 + b));  // byte b, zero-extended
        }
    }
    __syncthreads();  // every count of this block is in before the flush
    for (int u = threadIdx.x; u < 256; u += blockDim.x) {
        const int64_t j = (int64_t)(T)u - lo;  // the bin of byte value (T)u
        if (j < 0 || j > nb) continue;         // j == nb: the closed top edge, in the last bin
        u64 total = 0;
        for (int c = 0; c < copies; c++) total += local[c * 256 + u];
        if (total) atomicAdd(&counts[j < nb ? j : nb - 1], total);
    }
}

// ------------------------------------------------------------------ plans

// Each rung's HistPlan (bins.cuh): its shared memory for nb bins, or its limit.
static int plan_global(int64_t, int, HistPlan *, cua_launch *)
{
    return 0;
}

static int plan_shared(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg)
{
    if (nb > optin / 4)
        return cua_refuse(cfg,
                          "method 'shared' keeps one 4-byte counter per bin in shared memory: "
                          "this device fits at most %d bins per block (got %lld); use method='global'",
                          optin / 4, (long long)nb);
    plan->smem = (size_t)nb * 4;
    return 0;
}

static int plan_warp_private(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg)
{
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int64_t warps = (cfg->threads + 31) / 32, fit = optin / ((nb + 1) * 4);
    if (fit < 1)
        return cua_refuse(cfg,
                          "method 'warp_private' keeps a 4-byte counter per bin per warp in shared memory: "
                          "this device fits at most %d bins per block (got %lld); use method='global'",
                          optin / 4 - 1, (long long)nb);
    plan->copies = (int)(fit < warps ? fit : warps);
    plan->smem = (size_t)plan->copies * (nb + 1) * 4;
    return 0;
}

static int plan_thread_counters(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg)
{
    const bool defaulted = cfg->threads <= 0;
    if (defaulted) cfg->threads = CUA_DEFAULT_THREADS;
    int threads = cfg->threads;
    if (threads % 32 != 0)
        return cua_refuse(cfg, "method 'thread_counters' needs whole warps: threads must be a multiple of 32 (got %d)",
                          threads);
    const int64_t rows = (nb + 3) / 4;
    plan->smem = (size_t)rows * threads * 4 + (size_t)rows * 16;
    // The default block shrinks (whole warps) until a byte per bin per thread fits.
    while (defaulted && (int64_t)plan->smem > optin && threads > 32) {
        threads -= 32;
        cfg->threads = threads;
        plan->smem = (size_t)rows * threads * 4 + (size_t)rows * 16;
    }
    if ((int64_t)plan->smem > optin)
        return cua_refuse(cfg,
                          "method 'thread_counters' keeps a byte per bin per thread in shared memory: %lld bins x "
                          "%d threads do not fit in %d bytes; use fewer threads or method='warp_private'",
                          (long long)nb, threads, optin);
    return 0;
}

// Rung 5 takes only its case (cua_byte_bins): any other data or bins are
// refused, and "auto" passes it by.
static int plan_bytes(const cua_bins *bins, size_t itemsize, HistPlan *plan, cua_launch *cfg)
{
    if (itemsize != 1) return cua_refuse(cfg, CUA_BYTES_ONLY, (int)itemsize);
    if (!cua_byte_bins(bins)) return cua_refuse(cfg, CUA_BYTE_BINS_ONLY);
    if (cfg->threads <= 0) cfg->threads = BYTE_THREADS;
    plan->copies = (cfg->threads + 31) / 32;
    plan->smem = (size_t)plan->copies * 256 * sizeof(unsigned);  // at most 32 KiB
    return 0;
}

static int bytes_fits(const cua_bins *bins, int dtype, cua_launch *cfg)
{
    HistPlan plan;
    return plan_bytes(bins, cua_dtype_size(dtype), &plan, cfg);
}

// ---------------------------------------------------------- launch helpers

// The counting every rung ends with, once its grid is set: the counts
// zeroed, the bins uploaded, launch(x + off, m, bins) for chunks of at most
// blocks * 2^31 elements -- no block's 32-bit shared counter can reach 2^32
// within one launch -- each launch checked. No wait: the route's.
template <class T, class E, class L>
static int count_in_chunks(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg, L launch)
{
    cudaStream_t s = cua_stream(cfg);
    const int64_t chunk = (int64_t)(unsigned)cfg->blocks << 31;
    CUA_CHECK(cudaMemsetAsync(counts, 0, (size_t)bins->nbins * sizeof(u64), s));
    if (n == 0) return 0;
    cua_scratch edges;  // freed in stream order, after the launches that read it (upload_bins)
    DevBins<E> bn;
    int st = upload_bins<T>(bins, &edges, &bn, s);
    if (st) return st;
    for (int64_t off = 0; off < n; off += chunk) {
        launch(x + off, n - off < chunk ? n - off : chunk, bn);
        CUA_CHECK_LAUNCH();
    }
    return 0;
}

// -------------------------------------------------------------- launchers

template <class T, class E>
static int hist_global(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, NARROW_THREADS);
    if (st) return st;
    return count_in_chunks<T, E>(x, n, bins, counts, cfg, [&](const T *xc, int64_t m, const DevBins<E> &bn) {
        hist_global_kernel<T, E><<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(xc, m, bn, counts);
    });
}

template <class T, class E>
static int hist_shared(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_here(plan_shared, bins->nbins, &plan, cfg);
    if (st) return st;
    st = cua_default_config(cfg, n, NARROW_THREADS);
    if (st) return st;
    st = cua_allow_smem(hist_shared_kernel<T, E>, plan.smem);
    if (st) return st;
    return count_in_chunks<T, E>(x, n, bins, counts, cfg, [&](const T *xc, int64_t m, const DevBins<E> &bn) {
        hist_shared_kernel<T, E><<<(unsigned)cfg->blocks, cfg->threads, plan.smem, cua_stream(cfg)>>>(xc, m, bn,
                                                                                                     counts);
    });
}

template <class T, class E>
static int hist_warp_private(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_here(plan_warp_private, bins->nbins, &plan, cfg);
    if (st) return st;
    st = wide_config<T>(hist_warp_private_kernel<T, E>, n, plan.smem, cfg);
    if (st) return st;
    return count_in_chunks<T, E>(x, n, bins, counts, cfg, [&](const T *xc, int64_t m, const DevBins<E> &bn) {
        hist_warp_private_kernel<T, E><<<(unsigned)cfg->blocks, cfg->threads, plan.smem, cua_stream(cfg)>>>(
            xc, m, bn, plan.copies, counts);
    });
}

template <class T, class E>
static int hist_thread_counters(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_here(plan_thread_counters, bins->nbins, &plan, cfg);
    if (st) return st;
    if ((uintptr_t)x % sizeof(T) != 0)
        return cua_refuse(cfg, "method 'thread_counters' needs input aligned to its element size");
    st = wide_config<T>(hist_thread_counters_kernel<T, E>, n, plan.smem, cfg);
    if (st) return st;
    return count_in_chunks<T, E>(x, n, bins, counts, cfg, [&](const T *xc, int64_t m, const DevBins<E> &bn) {
        hist_thread_counters_kernel<T, E><<<(unsigned)cfg->blocks, cfg->threads, plan.smem, cua_stream(cfg)>>>(
            xc, m, bn, counts);
    });
}

// A resident grid (two 1024-thread blocks per SM), or one block per SM for
// inputs too small to give every resident thread a few steps (on an H200,
// kernels alone: 5.7 MB of text in 8.6 us with 132 blocks of per-warp
// copies, 9.1 us with 264).
template <class T, class E>
static int hist_bytes(const T *x, int64_t n, const cua_bins *bins, u64 *counts, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_bytes(bins, sizeof(T), &plan, cfg);
    if (st) return st;
    if constexpr (sizeof(T) == 1) {
        const int threads = cfg->threads, copies = plan.copies;
        if (cfg->blocks <= 0) {  // small inputs: one block per SM; the rest as every wide rung
            int64_t resident;
            int sms;
            st = cua_max_resident_blocks(hist_bytes_kernel<T>, threads, plan.smem, &resident);
            if (!st) st = cua_sm_count(&sms);
            if (st) return st;
            const int64_t steps = cua_ceil_div(n / 16 + 1, (int64_t)threads * BYTE_VECTORS);
            if (steps < 4 * resident) cfg->blocks = steps < sms ? steps : sms;
        }
        st = wide_config<T>(hist_bytes_kernel<T>, n, plan.smem, cfg);
        if (st) return st;
        return count_in_chunks<T, E>(x, n, bins, counts, cfg, [&](const T *xc, int64_t m, const DevBins<E> &) {
            hist_bytes_kernel<T><<<(unsigned)cfg->blocks, threads, plan.smem, cua_stream(cfg)>>>(
                xc, m, bins->ilo, bins->nbins, copies, counts);
        });
    }
    return CUA_EINTERNAL;  // plan_bytes refused every other size
}

// ----------------------------------------------------------- variant table

// A row's launcher: the call's data and edge types, then the rung's typed
// launcher.
#define HIST_ENTRY(RUNG, launcher)                                                                         \
    static int hist_##RUNG(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,    \
                           cua_launch *cfg)                                                                \
    {                                                                                                      \
        return hist_dispatch(dtype, bins->edge_dtype, [&](auto t, auto e) -> int {                         \
            using T = decltype(t);                                                                         \
            return launcher<T, decltype(e)>((const T *)x, n, bins, (u64 *)counts, cfg);                    \
        });                                                                                                \
    }
HIST_ENTRY(GLOBAL, hist_global)
HIST_ENTRY(SHARED, hist_shared)
HIST_ENTRY(WARP_PRIVATE, hist_warp_private)
HIST_ENTRY(THREAD_COUNTERS, hist_thread_counters)
HIST_ENTRY(BYTES, hist_bytes)

static const cua_hist_row histogram_rows[] = {
    {{"global", 1, "one global atomicAdd per element: contention on popular bins",
      CUA_F_DETERMINISTIC},
     hist_GLOBAL, hist_fits<plan_global>},
    {{"shared", 2, "block-private histogram in shared memory, one global atomicAdd per bin per block",
      CUA_F_DETERMINISTIC},
     hist_SHARED, hist_fits<plan_shared>},
    {{"warp_private", 3, "a shared-memory histogram per warp, 16-byte loads: contention only within a warp",
      CUA_F_DETERMINISTIC},
     hist_WARP_PRIVATE, hist_fits<plan_warp_private>},
    {{"thread_counters", 4, "8-bit counters per thread per bin, flushed before they overflow: no atomics, skew-proof",
      CUA_F_DETERMINISTIC},
     hist_THREAD_COUNTERS, hist_fits<plan_thread_counters>},
    {{"bytes", 5, "bytes in bins of width one: a counter per byte value per warp, no range check, no branch",
      CUA_F_DETERMINISTIC},
     hist_BYTES, bytes_fits},
};
extern "C" const cua_ladder cua_cuda_histogram_ladder = CUA_LADDER(histogram_rows);
