// weighted.cu -- the weighted histogram ladder: sums[b] is the sum of the
// weights w[i] of the x[i] in bin b (np.histogram(x, bins, weights=w), and
// bincount with weights). The bins and the bin rule are histogram.cu's
// (bins.cuh). Sums are float64, or int64 for integer weights (two's-
// complement wrap-around: exact modulo 2^64); the Python layer casts every
// other weight type to one of the two. Float sums are added in an order the
// atomics choose: no rung here gives the same bits every call.
//
//  1. global  one atomicAdd on a global sum per element: native for doubles
//             since sm_60 (one RED.ADD.F64 in the L2) and for 64-bit
//             integers. As histogram's `global`: threads that hit a popular
//             bin queue at its L2 slice.
//  2. cas     the same add built from atomicCAS on the sum's bits, retried
//             until nobody changed the word in between -- how a double
//             atomicAdd was written before sm_60, and how any atomic the
//             hardware lacks is built. Every lost race is a read and a retry:
//             on a hot bin all contenders but one retry, so the default grid
//             is one block per SM.
//  3. shared  a block-private sum per bin in shared memory, added into the
//             global sums with one atomicAdd per bin per block. An 8-byte add
//             in shared memory is itself a CAS loop on sm_90 (its SASS is
//             ATOMS.CAST.SPIN.64), so lanes that hit one bin still retry
//             there. Needs nbins * 8 bytes of shared memory per block; more
//             bins are refused with a message pointing at `global`.
//  4. warp_private  a private copy of the sums per warp (as many copies as
//             fit; warps share copies round-robin beyond that), and the edges
//             in shared memory when they fit beside them; x and w read in
//             16-byte vectors, the next step's loads in flight while this one
//             is summed; the lanes of a warp that hit one bin first add
//             their weights by shuffles (__match_any_sync groups them), so
//             each bin gets one shared add per warp and step and the CAS
//             loop never retries within a warp: skew (a run of one value)
//             costs log2(32) shuffle rounds, not 32 retries. A warp whose
//             lanes hold mostly distinct bins skips that grouping for its
//             next steps (it costs more than the few retries it saves; the
//             kernel says by how much). Integer data in
//             integer bins is binned without float math (bytes in 32-bit
//             arithmetic). Needs one copy, nbins * 8 bytes of shared memory;
//             more bins are refused with a message pointing at `global`.
#include "bins.cuh"

// In the kernels W is the weights' and sums' type: double, or u64 holding
// int64 bits (adds wrap around exactly as int64 ones would).

// ---------------------------------------------------------------- kernels

template <class T, class E, class W>
__global__ void whist_global_kernel(const T *__restrict__ x, const W *__restrict__ w, int64_t n, DevBins<E> bn,
                                    W *sums)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const int64_t b = bin_of(x[i], bn);
        if (b >= 0) atomicAdd(&sums[b], w[i]);
    }
}

// Native double atomicAdd exists from sm_60. Before it, code defined its own
// under `#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600 #else ... #endif`
// as this loop, and this rung keeps it on every architecture: read the sum,
// add, and swap the new bits in with atomicCAS only if the word still holds
// what was read; otherwise retry with what the winner wrote. cua_cas_add
// (common.cuh) is that loop: it compares bits, so a NaN sum cannot make it
// spin, and it backs off a little after each lost race.
template <class T, class E, class W>
__global__ void whist_cas_kernel(const T *__restrict__ x, const W *__restrict__ w, int64_t n, DevBins<E> bn,
                                 W *sums)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const int64_t b = bin_of(x[i], bn);
        if (b >= 0) cua_cas_add(&sums[b], w[i]);
    }
}

template <class T, class E, class W>
__global__ void whist_shared_kernel(const T *__restrict__ x, const W *__restrict__ w, int64_t n, DevBins<E> bn,
                                    W *sums)
{
    W *local = reinterpret_cast<W *>(cua_smem);
    for (int64_t j = threadIdx.x; j < bn.nbins; j += blockDim.x) local[j] = 0;
    __syncthreads();  // the private sums are zeroed before anyone adds
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const int64_t b = bin_of(x[i], bn);
        if (b >= 0) atomicAdd(&local[b], w[i]);
    }
    __syncthreads();  // every add of this block is in before the flush
    for (int64_t j = threadIdx.x; j < bn.nbins; j += blockDim.x)
        if (local[j] != 0) atomicAdd(&sums[j], local[j]);
}

// ------------------------------------------------------ warp_private (4)

constexpr unsigned FULL_WARP = 0xffffffffu;

// The sum of v over `peers` (the lanes of this warp with this lane's bin),
// in the group's lowest lane. Round r: every lane still in play adds the
// value of its next peer in play above it, then the peers of odd rank (in
// the order of those in play) drop out; a group of g lanes takes
// ceil(log2 g) rounds, and every lane of the warp takes part in every round
// (the shuffles and ballots name the whole warp). Elmar Westphal's
// reduce_peers, from NVIDIA's "Voting and Shuffling to Optimize Atomic
// Operations".
template <class W>
__device__ __forceinline__ W sum_over_peers(unsigned peers, W v)
{
    const unsigned lane = threadIdx.x & 31;
    unsigned rank = __popc(peers & ((1u << lane) - 1));  // peers below this lane
    peers &= 0xfffffffeu << lane;                          // peers above it
    while (__any_sync(FULL_WARP, peers)) {
        const int next = __ffs(peers);  // 1 + the lowest peer in play above, or 0
        const W t = __shfl_sync(FULL_WARP, v, next > 0 ? next - 1 : (int)lane);
        if (next) v += t;
        peers &= ~__ballot_sync(FULL_WARP, rank & 1);  // odd ranks have given their value away
        rank >>= 1;
    }
    return v;
}

// Element j of this thread's scalar share: the elements before the first
// vector and after the last one, numbered head first.
struct Scalars {
    int64_t head, tail_begin, count;
    __device__ int64_t index(int64_t j) const { return j < head ? j : tail_begin + (j - head); }
};

// `copies` >= 1 private sums per block, nbins each (the launcher refuses bin
// counts that leave room for none); warp k adds into copy k % copies. With
// `edges_in_smem` the edges follow the copies in shared memory.
template <class T, class E, class W>
__global__ void whist_warp_private_kernel(const T *__restrict__ x, const W *__restrict__ w, int64_t n,
                                          DevBins<E> bn, int copies, int edges_in_smem, W *sums)
{
    constexpr int V = Split<T>::V;          // elements in a 16-byte vector of x (>= 2)
    constexpr int WV = V * sizeof(W) / 16;  // 16-byte vectors of their weights
    W *local = reinterpret_cast<W *>(cua_smem);
    const int64_t nb = bn.nbins;
    for (int64_t j = threadIdx.x; j < nb * copies; j += blockDim.x) local[j] = 0;
    if (edges_in_smem) {
        E *e = reinterpret_cast<E *>(local + nb * copies);
        for (int64_t j = threadIdx.x; j <= nb; j += blockDim.x) e[j] = bn.edges[j];
        bn.edges = e;
    }
    __syncthreads();  // copies zeroed and edges in place before anyone bins
    W *mine = local + (int64_t)((threadIdx.x >> 5) % copies) * nb;
    // A block of threads that are not whole warps ends in a partial warp:
    // its lanes add one by one (the shuffles below name all 32 lanes).
    const bool whole = (threadIdx.x | 31) < blockDim.x;
    const SmallBins sb(bn);

    // Every lane of a warp calls this together (b < 0: nothing to add).
    // __match_any_sync costs more the more distinct bins a warp holds: on
    // spread data (1,000 bins hit at random) it and the peers' sum took
    // half the time while saving almost no retries. So a warp that finds
    // at least DIRECT_GROUPS distinct bins among its 32 lanes adds lane by
    // lane for its next DIRECT_STEPS steps (a few lanes may meet on a bin
    // and retry), then looks again. `direct` comes from a ballot: the
    // same in every lane, so the warp stays on one path.
    constexpr int DIRECT_GROUPS = 24, DIRECT_STEPS = 15;
    int direct = 0;
    auto add = [&](int b, W v) {
        if (!whole || direct > 0) {
            direct--;
            if (b >= 0) atomicAdd(&mine[b], v);
            return;
        }
        const unsigned peers = __match_any_sync(FULL_WARP, b);
        const bool lowest = (peers & ((1u << (threadIdx.x & 31)) - 1)) == 0;
        if (__popc(__ballot_sync(FULL_WARP, lowest)) >= DIRECT_GROUPS) direct = DIRECT_STEPS;
        v = sum_over_peers(peers, v);
        if (lowest && b >= 0) atomicAdd(&mine[b], v);  // one lane per bin: no retry within the warp
    };

    // The body in 16-byte vectors when w's vectors line up with x's (both
    // 16-byte aligned at the same element); the rest element by element.
    Split<T> sp(x, n);
    const bool paired = ((uintptr_t)(w + sp.head) & 15) == 0 && sp.head < n;
    const int64_t nvec = paired ? sp.nvec : 0;
    const Scalars sc{sp.head, paired ? sp.tail_begin : sp.head, sp.head + (n - (paired ? sp.tail_begin : sp.head))};
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();

    // Every thread of the grid runs the same number of steps, so that the
    // lanes of a warp meet at every shuffle.
    const int64_t scalar_steps = cua_ceil_div(sc.count, stride);
    for (int64_t s = 0; s < scalar_steps; s++) {
        const int64_t j = s * stride + gid;
        int b = -1;
        W v = 0;
        if (j < sc.count) {
            const int64_t i = sc.index(j);
            b = (int)wide_bin(x[i], bn, sb);
            v = w[i];
        }
        add(b, v);
    }

    struct Step {
        uint4 xv;
        uint4 wv[WV];
    };
    const uint4 *xb = sp.body;
    const uint4 *wb = reinterpret_cast<const uint4 *>(w + sp.head);
    auto load = [&](int64_t i, Step &st) {
        if (i >= nvec) return;
        st.xv = __ldg(xb + i);
#pragma unroll
        for (int k = 0; k < WV; k++) st.wv[k] = __ldg(wb + i * WV + k);
    };
    const int64_t vector_steps = cua_ceil_div(nvec, stride);
    Step cur{}, ahead{};
    load(gid, cur);
    for (int64_t s = 0; s < vector_steps; s++) {
        const int64_t i = s * stride + gid;
        load(i + stride, ahead);  // the next step's loads, in flight while this one is summed
        T xs[V];
        W ws[V];
        memcpy(xs, &cur.xv, sizeof xs);
        memcpy(ws, cur.wv, sizeof ws);
#pragma unroll
        for (int k = 0; k < V; k++) add(i < nvec ? (int)wide_bin(xs[k], bn, sb) : -1, ws[k]);
        cur = ahead;
    }

    __syncthreads();  // every add of this block is in before the flush
    for (int64_t j = threadIdx.x; j < nb; j += blockDim.x) {
        W total = 0;
        for (int c = 0; c < copies; c++) total += local[(int64_t)c * nb + j];
        if (total != 0) atomicAdd(&sums[j], total);
    }
}

// ------------------------------------------------------------------ plans

// Each rung's HistPlan (bins.cuh): shared memory for 8-byte sums of nb bins.

static int plan_global(int64_t, int, HistPlan *, cua_launch *)
{
    return 0;
}

static int plan_shared(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg)
{
    if (nb > optin / 8)
        return cua_refuse(cfg,
                          "method 'shared' keeps one 8-byte sum per bin in shared memory: "
                          "this device fits at most %d bins per block (got %lld); use method='global'",
                          optin / 8, (long long)nb);
    plan->smem = (size_t)nb * 8;
    return 0;
}

// Copies first; the edges (nb + 1 of at most 8 bytes) join them when they
// fit beside one copy, else the kernel reads them from global memory.
static int plan_warp_private(int64_t nb, int optin, HistPlan *plan, cua_launch *cfg)
{
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int64_t warps = (cfg->threads + 31) / 32, copy = nb * 8, edges = (nb + 1) * 8;
    if (copy > optin)
        return cua_refuse(cfg,
                          "method 'warp_private' keeps an 8-byte sum per bin per warp in shared memory: "
                          "this device fits at most %d bins per block (got %lld); use method='global'",
                          optin / 8, (long long)nb);
    plan->edges = copy + edges <= optin;
    const int64_t room = optin - (plan->edges ? edges : 0), fit = room / copy;
    plan->copies = (int)(fit < warps ? fit : warps);
    plan->smem = (size_t)(plan->copies * copy + (plan->edges ? edges : 0));
    return 0;
}

// ---------------------------------------------------------- launch helper

// The summing every rung ends with, once its grid is set: the sums zeroed,
// the bins uploaded, one launch(bins), checked. (No chunks: an 8-byte sum
// cannot overflow the way histogram's 32-bit shared counters can.) No wait:
// the result route's (route.cu).
template <class T, class E, class W, class L>
static int sum_weights(int64_t n, const cua_bins *bins, W *sums, cua_launch *cfg, L launch)
{
    cudaStream_t s = cua_stream(cfg);
    CUA_CHECK(cudaMemsetAsync(sums, 0, (size_t)bins->nbins * sizeof(W), s));
    if (n == 0) return 0;
    cua_scratch edges;  // freed in stream order, after the launch that reads it (upload_bins)
    DevBins<E> bn;
    int st = upload_bins<T>(bins, &edges, &bn, s);
    if (st) return st;
    launch(bn);
    CUA_CHECK_LAUNCH();
    return 0;
}

// -------------------------------------------------------------- launchers

template <class T, class E, class W>
static int whist_global(const T *x, const W *w, int64_t n, const cua_bins *bins, W *sums, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, NARROW_THREADS);
    if (st) return st;
    return sum_weights<T, E>(n, bins, sums, cfg, [&](const DevBins<E> &bn) {
        whist_global_kernel<T, E, W><<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(x, w, n, bn, sums);
    });
}

template <class T, class E, class W>
static int whist_cas(const T *x, const W *w, int64_t n, const cua_bins *bins, W *sums, cua_launch *cfg)
{
    int st = cua_cas_config(cfg, n, NARROW_THREADS);
    if (st) return st;
    return sum_weights<T, E>(n, bins, sums, cfg, [&](const DevBins<E> &bn) {
        whist_cas_kernel<T, E, W><<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(x, w, n, bn, sums);
    });
}

template <class T, class E, class W>
static int whist_shared(const T *x, const W *w, int64_t n, const cua_bins *bins, W *sums, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_here(plan_shared, bins->nbins, &plan, cfg);
    if (st) return st;
    st = cua_default_config(cfg, n, NARROW_THREADS);
    if (st) return st;
    st = cua_allow_smem(whist_shared_kernel<T, E, W>, plan.smem);
    if (st) return st;
    return sum_weights<T, E>(n, bins, sums, cfg, [&](const DevBins<E> &bn) {
        whist_shared_kernel<T, E, W><<<(unsigned)cfg->blocks, cfg->threads, plan.smem, cua_stream(cfg)>>>(x, w, n,
                                                                                                         bn, sums);
    });
}

template <class T, class E, class W>
static int whist_warp_private(const T *x, const W *w, int64_t n, const cua_bins *bins, W *sums, cua_launch *cfg)
{
    HistPlan plan;
    int st = plan_here(plan_warp_private, bins->nbins, &plan, cfg);
    if (st) return st;
    if (plan.edges && bins->integer && std::is_integral<T>::value) {  // binned by arithmetic: no edges to keep
        plan.smem -= (size_t)(bins->nbins + 1) * 8;
        plan.edges = 0;
    }
    if ((uintptr_t)x % sizeof(T) != 0 || (uintptr_t)w % sizeof(W) != 0)
        return cua_refuse(cfg, "method 'warp_private' needs x and weights aligned to their element sizes");
    st = wide_config<T>(whist_warp_private_kernel<T, E, W>, n, plan.smem, cfg);
    if (st) return st;
    return sum_weights<T, E>(n, bins, sums, cfg, [&](const DevBins<E> &bn) {
        whist_warp_private_kernel<T, E, W><<<(unsigned)cfg->blocks, cfg->threads, plan.smem, cua_stream(cfg)>>>(
            x, w, n, bn, plan.copies, plan.edges, sums);
    });
}

// ----------------------------------------------------------- variant table

// A row's launcher: the call's data, edge and weight types, then the rung's
// typed launcher.
#define WHIST_ENTRY(RUNG, launcher)                                                                              \
    static int whist_##RUNG(const void *x, const void *w, int64_t n, int dtype, int wdtype, const cua_bins *bins, \
                            void *sums, cua_launch *cfg)                                                         \
    {                                                                                                            \
        return hist_dispatch(dtype, bins->edge_dtype, [&](auto t, auto e) -> int {                               \
            using T = decltype(t);                                                                               \
            using E = decltype(e);                                                                               \
            if (wdtype == CUA_FLOAT64)                                                                           \
                return launcher<T, E, double>((const T *)x, (const double *)w, n, bins, (double *)sums, cfg);    \
            if (wdtype == CUA_INT64)                                                                             \
                return launcher<T, E, u64>((const T *)x, (const u64 *)w, n, bins, (u64 *)sums, cfg);             \
            return CUA_EINTERNAL;                                                                                \
        });                                                                                                      \
    }
WHIST_ENTRY(GLOBAL, whist_global)
WHIST_ENTRY(CAS, whist_cas)
WHIST_ENTRY(SHARED, whist_shared)
WHIST_ENTRY(WARP_PRIVATE, whist_warp_private)

static const cua_whist_row weighted_rows[] = {
    {{"global", 1, "one global atomicAdd of the weight per element (native float64 add since sm_60)", 0},
     whist_GLOBAL, hist_fits<plan_global>},
    {{"cas", 2, "the float64 add built from an atomicCAS loop on the sum's bits, as before sm_60", 0},
     whist_CAS, hist_fits<plan_global>},
    {{"shared", 3, "block-private 8-byte sums in shared memory, one global atomicAdd per bin per block", 0},
     whist_SHARED, hist_fits<plan_shared>},
    {{"warp_private", 4,
      "8-byte sums per warp in shared memory, 16-byte loads of x and w, lanes of one bin summed by shuffles first where bins repeat",
      0},
     whist_WARP_PRIVATE, hist_fits<plan_warp_private>},
};
extern "C" const cua_ladder cua_cuda_weighted_histogram_ladder = CUA_LADDER(weighted_rows);
