// filter.cu -- stream compaction: keep the elements that pass a predicate.
//
//  1. atomic   push_back: a thread that keeps an element takes the next free
//              output slot from the old value atomicAdd returns on a global
//              counter. One pass, no scan, but the output order is whatever
//              order the atomics happened in, and every kept element is one
//              atomic on one address.
//  2. ordered  a real order-preserving compaction in three launches: each
//              block counts the keepers in its own contiguous slice; one
//              block scans the counts into output offsets; each block walks
//              its slice again a tile at a time, ranking keepers inside each
//              warp with a ballot and across warps through shared memory.
//              Reads the input twice; output equals a[mask].
//  3. lookback single pass, ordered (decoupled look-back, Merrill & Garland):
//              a block takes the next tile number from a counter, counts its
//              keepers, publishes the count as an "aggregate", then reads its
//              predecessors' published values backwards -- a block's worth
//              at a time, one per thread -- until it meets an "inclusive" prefix;
//              it publishes its own inclusive prefix, stages its keepers in
//              shared memory in order and writes them out coalesced. Reads
//              the input once. Tiles are numbered in the order blocks start,
//              so a block only ever waits for blocks that are running.
//  4. warp_aggregated  atomic's push_back with one atomicAdd per warp instead
//              of one per kept element: the warp ballots which lanes keep
//              their element, lane 0 reserves that many slots at once, and
//              each keeper writes at the warp's first slot plus the keepers
//              in lower lanes. Up to 32x fewer atomics on the counter; still
//              unordered (warps reserve in whatever order they arrive).
//  5. pipelined  lookback's walk in a pipeline: the block copies its next
//              tile into shared memory (cp.async) while it looks back for
//              the one before, so the look-back's latency hides behind the
//              copy; see "lookback, pipelined" below. Ordered. Needs sm_80
//              (cp.async and three 24 KiB buffers), input aligned to 16
//              bytes and its own block of PIPE_THREADS threads: anything
//              else is refused (its `fits`), and "auto" passes it by.
//
// The predicate is an interval test: keep x iff (lo <= x <= hi) != negate,
// in the data's type (the Python layer turns `x <op> value` into this form
// under NumPy's comparison rules).
//
// Every rung writes a kept element through a sink: filter's writes the
// element, nonzero's (flatnonzero, argwhere, compress) its int64 index. So
// each rung is one kernel for both; only what lands in `out` differs.
#include <type_traits>

#include "common.cuh"

// Integers test the interval with one unsigned compare: x is in [lo, hi]
// iff (x - lo) <= (hi - lo) in wrapping arithmetic at least 32 bits wide.
// The interval test sits in every kernel's inner loop (the pipelined
// kernel with two compares took 0.614 ms at 1% kept, with a one-sided test
// 0.507: H200, 2^28 int32).
template <class T>
struct DevPred {
    using Wide = typename std::conditional<(sizeof(T) <= 4), uint32_t, uint64_t>::type;
    T lo, hi;
    Wide span;  // integers: hi - lo
    int negate;
};

template <class T>
static DevPred<T> to_dev(const cua_pred *p)
{
    DevPred<T> d;
    if constexpr (std::is_same<T, float>::value) d.lo = p->lo.f, d.hi = p->hi.f;
    else if constexpr (std::is_same<T, double>::value) d.lo = p->lo.d, d.hi = p->hi.d;
    else if constexpr (std::is_signed<T>::value) d.lo = (T)p->lo.i, d.hi = (T)p->hi.i;
    else d.lo = (T)p->lo.u, d.hi = (T)p->hi.u;
    d.negate = p->negate;
    if constexpr (std::is_integral<T>::value) {
        using W = typename DevPred<T>::Wide;
        if (d.lo > d.hi) {  // empty: every x is in [0, 0 + max], and the answer turned over
            d.lo = 0;
            d.span = ~(W)0;
            d.negate = !d.negate;
        } else {
            d.span = (W)d.hi - (W)d.lo;
        }
    }
    return d;
}

template <class T>
__device__ __forceinline__ bool keep(T v, const DevPred<T> &p)
{
    if constexpr (std::is_integral<T>::value) {
        using W = typename DevPred<T>::Wide;
        return ((W)((W)v - (W)p.lo) <= p.span) != (bool)p.negate;
    } else {
        return (p.lo <= v && v <= p.hi) != (bool)p.negate;
    }
}

// The sinks. put(o, v, i): element v, at index i of the input, is the
// o-th kept. The look-back rungs stage a tile's keepers in shared memory
// before writing them out: a ValueSink stages the element, an IndexSink its
// position in the tile (4 bytes, whatever the element's size), to which
// put_staged adds the tile's first index. An IndexSink holds `cap` outputs
// (nonzero's counted ones): a keeper past it -- the data changed after it
// was counted -- is not written, and the launcher's caller, seeing a count
// past cap, raises.
template <class T>
struct ValueSink {
    T *out;
    using Staged = T;
    __device__ __forceinline__ void put(u64 o, T v, int64_t) const { out[o] = v; }
    __device__ __forceinline__ static Staged stage(T v, unsigned) { return v; }
    __device__ __forceinline__ void put_staged(u64 o, Staged s, int64_t) const { out[o] = s; }
};

struct IndexSink {
    int64_t *out;
    u64 cap;
    using Staged = unsigned;
    template <class T>
    __device__ __forceinline__ void put(u64 o, T, int64_t i) const
    {
        if (o < cap) out[o] = i;
    }
    template <class T>
    __device__ __forceinline__ static Staged stage(T, unsigned at) { return at; }
    __device__ __forceinline__ void put_staged(u64 o, Staged s, int64_t first) const
    {
        if (o < cap) out[o] = first + s;
    }
};

template <class T, class Sink>
__global__ void filter_atomic_kernel(const T *__restrict__ x, int64_t n, DevPred<T> p, Sink out, u64 *count)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        T v = x[i];
        // The old value of the counter is this element's slot: no two
        // threads can receive the same one.
        if (keep(v, p)) out.put(atomicAdd(count, 1ULL), v, i);
    }
}

template <class T, class Sink>
__global__ void filter_warp_aggregated_kernel(const T *__restrict__ x, int64_t n, DevPred<T> p, Sink out,
                                              u64 *count)
{
    const unsigned lane = threadIdx.x & 31, below = (1u << lane) - 1;
    // The lanes this warp has (a block of threads % 32 != 0 ends in a
    // partial warp), taken before any branch, when all of them are active.
    const unsigned lanes = __activemask();
    // The loop test is the warp's first element, so every lane of a warp
    // takes the same number of turns and meets every ballot.
    for (int64_t i = cua_global_id(); i - lane < n; i += cua_grid_stride()) {
        const bool mine = i < n && keep(x[i], p);
        const unsigned kept = __ballot_sync(lanes, mine);
        // One reservation for the whole warp: the old value of the counter
        // is its first slot, no other warp can receive the same ones.
        u64 first = 0;
        if (lane == 0 && kept) first = atomicAdd(count, (u64)__popc(kept));
        first = __shfl_sync(lanes, first, 0);
        if (mine) out.put(first + __popc(kept & below), x[i], i);
    }
}

// Block b owns elements [b*slice, (b+1)*slice).
__device__ __forceinline__ void block_slice(int64_t n, int64_t slice, int64_t *begin, int64_t *end)
{
    *begin = (int64_t)blockIdx.x * slice;
    *end = *begin + slice < n ? *begin + slice : n;
}

template <class T>
__global__ void filter_count_kernel(const T *__restrict__ x, int64_t n, int64_t slice, DevPred<T> p, u64 *block_counts)
{
    int64_t begin, end;
    block_slice(n, slice, &begin, &end);
    u64 c = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) c += keep(x[i], p);
    c = cua_block_tree(c);
    if (threadIdx.x == 0) block_counts[blockIdx.x] = c;
}

// One block turns the per-block counts into exclusive offsets (in place),
// a tile of blockDim counts at a time, and writes the total after them.
// Launched with SCAN_THREADS threads: the largest block, the fewest tiles.
constexpr int SCAN_THREADS = 1024;
__global__ void filter_scan_kernel(u64 *counts, int64_t nblocks)
{
    u64 *cache = reinterpret_cast<u64 *>(cua_smem);
    u64 carry = 0;
    for (int64_t base = 0; base < nblocks; base += blockDim.x) {
        int64_t i = base + threadIdx.x;
        u64 v = i < nblocks ? counts[i] : 0;
        cache[threadIdx.x] = v;
        __syncthreads();
        // Hillis-Steele inclusive scan over the tile.
        for (unsigned d = 1; d < blockDim.x; d *= 2) {
            u64 add = threadIdx.x >= d ? cache[threadIdx.x - d] : 0;
            __syncthreads();
            cache[threadIdx.x] += add;
            __syncthreads();
        }
        if (i < nblocks) counts[i] = carry + cache[threadIdx.x] - v;
        carry += cache[blockDim.x - 1];
        __syncthreads();  // the cache is refilled by the next tile
    }
    if (threadIdx.x == 0) counts[nblocks] = carry;
}

template <class T, class Sink>
__global__ void filter_scatter_kernel(const T *__restrict__ x, int64_t n, int64_t slice, DevPred<T> p,
                                      const u64 *offsets, Sink out)
{
    u64 *warp_total = reinterpret_cast<u64 *>(cua_smem);  // one per warp, then the tile total
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned nwarps = (blockDim.x + 31) / 32;
    // Lanes that exist in this warp (the last warp may be partial).
    const unsigned tail = blockDim.x - warp * 32;
    const unsigned members = tail >= 32 ? 0xffffffffu : (1u << tail) - 1;
    int64_t begin, end;
    block_slice(n, slice, &begin, &end);
    u64 base_out = offsets[blockIdx.x];
    for (int64_t base = begin; base < end; base += blockDim.x) {
        int64_t i = base + threadIdx.x;
        T v = i < end ? x[i] : T();
        bool k = i < end && keep(v, p);
        unsigned ballot = __ballot_sync(members, k);
        unsigned rank = __popc(ballot & ((1u << lane) - 1));
        if (lane == 0) warp_total[warp] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {  // exclusive scan of the warp totals
            u64 run = 0;
            for (unsigned w = 0; w < nwarps; w++) {
                u64 t = warp_total[w];
                warp_total[w] = run;
                run += t;
            }
            warp_total[nwarps] = run;
        }
        __syncthreads();
        if (k) out.put(base_out + warp_total[warp] + rank, v, i);
        base_out += warp_total[nwarps];
        __syncthreads();  // warp_total is rewritten by the next tile
    }
}

// ------------------------------------------------------------- lookback

constexpr int LB_ITEMS = 16;  // elements per thread per tile (the default kernel)
// A tile's published state: flag in the top 2 bits, count in the rest,
// written and read as one 64-bit word so the pair is never torn.
#define LB_AGGREGATE (1ULL << 62)
#define LB_INCLUSIVE (2ULL << 62)
#define LB_VALUE ((1ULL << 62) - 1)

// Exclusive prefix of the tiles before `tile`, read back by the whole
// block: each round, thread i reads the state of tile (top - i), so one
// round trip to L2 covers blockDim predecessors. A thread whose tile has
// not published yet waits for it: that tile took its number before us and
// is running, so the wait ends. The nearest inclusive prefix ends the walk;
// the aggregates after it are added. Valid in thread 0. Reuses the dynamic
// shared memory (the stage) for the block sum, before the stage is filled.
__device__ u64 look_back(volatile u64 *status, int64_t tile, unsigned *stop_s)
{
    u64 prefix = 0;
    for (int64_t top = tile - 1;; top -= blockDim.x) {
        const int64_t idx = top - (int64_t)threadIdx.x;
        u64 st = idx >= 0 ? status[idx] : LB_INCLUSIVE;  // before tile 0: an inclusive 0
        unsigned backoff = 16;
        while ((st >> 62) == 0) {  // spin: tile idx has not published yet
            __nanosleep(backoff);
            backoff = backoff < CUA_SPIN_SLEEP_MAX_NS ? 2 * backoff : CUA_SPIN_SLEEP_MAX_NS;
            st = status[idx];
        }
        if (threadIdx.x == 0) *stop_s = blockDim.x;
        __syncthreads();
        if ((st >> 62) == 2) atomicMin(stop_s, threadIdx.x);  // the nearest inclusive
        __syncthreads();
        const unsigned stop = *stop_s;
        prefix += cua_block_tree<u64>(threadIdx.x <= stop ? st & LB_VALUE : 0);
        if (stop < blockDim.x) return prefix;
    }
}

template <class T, int LB_ITEMS, class Sink>
__device__ __forceinline__ void lookback_tiles(const T *__restrict__ x, int64_t n, DevPred<T> p, Sink out,
                                               unsigned *tile_counter, u64 *status, int64_t ntiles, u64 *total)
{
    __shared__ int64_t tile_s;
    __shared__ u64 warp_scan[33];  // exclusive warp offsets, then the tile's count
    __shared__ u64 prefix_s;
    __shared__ unsigned stop_s;
    using Staged = typename Sink::Staged;
    Staged *stage = reinterpret_cast<Staged *>(cua_smem);  // blockDim * LB_ITEMS of them
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) / 32;
    // Lanes in this thread's warp: the last warp of a block may be partial.
    const unsigned wsize = blockDim.x - warp * 32 < 32 ? blockDim.x - warp * 32 : 32;
    const unsigned wmask = wsize == 32 ? 0xffffffffu : (1u << wsize) - 1;
    const int64_t tile_size = (int64_t)blockDim.x * LB_ITEMS;
    const bool wide = ((uintptr_t)x & 15) == 0;
    volatile u64 *vstatus = status;

    while (true) {
        if (threadIdx.x == 0) tile_s = atomicAdd(tile_counter, 1u);
        __syncthreads();
        const int64_t tile = tile_s;
        if (tile >= ntiles) break;
        const int64_t base = tile * tile_size + (int64_t)threadIdx.x * LB_ITEMS;

        // This thread's LB_ITEMS consecutive elements and which of them stay.
        T v[LB_ITEMS];
        constexpr int V = 16 / sizeof(T);
        if (LB_ITEMS % V == 0 && wide && base + LB_ITEMS <= n) {
#pragma unroll
            for (int j = 0; j < LB_ITEMS / V; j++) {
                uint4 r = __ldg(reinterpret_cast<const uint4 *>(x + base) + j);
                memcpy(&v[j * V], &r, 16);
            }
        } else {
#pragma unroll
            for (int j = 0; j < LB_ITEMS; j++) v[j] = base + j < n ? x[base + j] : T();
        }
        unsigned kept = 0, mask = 0;
#pragma unroll
        for (int j = 0; j < LB_ITEMS; j++)
            if (base + j < n && keep(v[j], p)) {
                mask |= 1u << j;
                kept++;
            }

        // Block-wide exclusive scan of the per-thread counts.
        unsigned incl = kept;
        for (int o = 1; o < 32; o <<= 1) {
            unsigned up = __shfl_up_sync(wmask, incl, o);
            if ((int)lane >= o) incl += up;
        }
        if (lane == wsize - 1) warp_scan[warp] = incl;
        __syncthreads();
        if (threadIdx.x == 0) {
            u64 run = 0;
            for (unsigned w = 0; w < nwarps; w++) {
                u64 t = warp_scan[w];
                warp_scan[w] = run;
                run += t;
            }
            warp_scan[32] = run;
        }
        __syncthreads();
        const u64 tile_count = warp_scan[32];
        unsigned pos = (unsigned)warp_scan[warp] + incl - kept;

        // Publish, look back, publish the inclusive prefix.
        u64 prefix = 0;
        if (tile == 0) {
            if (threadIdx.x == 0) vstatus[0] = LB_INCLUSIVE | tile_count;
        } else {
            if (threadIdx.x == 0) vstatus[tile] = LB_AGGREGATE | tile_count;
            prefix = look_back(vstatus, tile, &stop_s);
            if (threadIdx.x == 0) vstatus[tile] = LB_INCLUSIVE | (prefix + tile_count);
        }
        if (threadIdx.x == 0) {
            prefix_s = prefix;
            if (tile == ntiles - 1) *total = prefix + tile_count;
        }
        // Keepers to shared memory in input order, then out coalesced.
#pragma unroll
        for (int j = 0; j < LB_ITEMS; j++)
            if (mask & (1u << j)) stage[pos++] = Sink::stage(v[j], threadIdx.x * LB_ITEMS + j);
        __syncthreads();
        const u64 base_out = prefix_s;
        for (u64 i = threadIdx.x; i < tile_count; i += blockDim.x)
            out.put_staged(base_out + i, stage[i], tile * tile_size);
        __syncthreads();  // stage, tile_s and warp_scan are reused by the next tile
    }
}

// At most 40 registers: six 256-thread blocks per SM instead of four, which
// measured 9% faster on an H200 (an experiment at 9de18f3, since removed,
// compared 8, 16 and 32 elements per thread with and without a cap; the
// numbers are in docs/benchmarks.md).
template <class T, class Sink>
__global__ __maxnreg__(40) void filter_lookback_kernel(const T *__restrict__ x, int64_t n, DevPred<T> p, Sink out,
                                                       unsigned *tile_counter, u64 *status, int64_t ntiles,
                                                       u64 *total)
{
    lookback_tiles<T, LB_ITEMS>(x, n, p, out, tile_counter, status, ntiles, total);
}

// ------------------------------------------------- lookback, pipelined
//
// The register kernel above keeps no copy in flight while a block looks
// back, so an SM's memory pipe idles whenever its blocks wait on their
// predecessors: at 50% selectivity on an H200 it ran at 1.3x CUB's time,
// latency-bound (no eligible warp in 46% of cycles). From sm_80 on the same
// rung runs this kernel instead. A block holds three tiles in shared memory:
//
//   write    its look-back done, its keepers go out (ranked by warp ballots);
//   counted  in, counted, its aggregate already published;
//   copying  claimed and on its way in (cp.async, 16 bytes a thread at a time).
//
// Each turn counts the tile that just arrived and publishes its aggregate,
// claims the next tile and starts its copy, then looks back for the tile
// counted a turn before and writes it. So the copy is in flight while the
// block waits on L2 for its predecessors, and a tile's aggregate is out one
// turn before its own look-back. Deeper rings (two copies in flight) were
// slower: a claimed tile publishes nothing until its block reaches it, so
// every tile claimed ahead holds up the blocks that claimed the tiles after
// it (measured on an H200: 4 buffers 0.78 ms, 5 buffers 0.97 ms against 3
// buffers 0.62 ms). What limits it is still that chain of waits on the
// look-back's L2 round trips, not DRAM. Nsight Compute (H200, 2^28 int32,
// 50% kept) puts it at 58% of DRAM peak, CUB's select at 55%. Its largest
// stall is the barrier where the other eleven warps wait for warp 0's
// look-back: 7.9 of the 17.1 cycles between a warp's instructions. Letting
// them write the tile before meanwhile, from a fourth buffer, was slower
// (smaller tiles or fewer blocks an SM). Three 24 KiB
// buffers let three 384-thread blocks share an SM (int32 needs 55
// registers a thread, within what three blocks leave; 1-byte types need 80,
// so two of their blocks fit: capping them at 56 spilled).
//
// Within a tile each warp owns a contiguous run of 32 * ITEMS elements and
// reads it a row of 32 at a time, so a warp's keepers in a row go to
// consecutive outputs: a ballot ranks them, and the store is coalesced.
constexpr int PIPE_THREADS = 384;
constexpr int PIPE_BUFFERS = 3;
template <class T>
struct Pipe {
    static constexpr int ITEMS = 64 / (int)sizeof(T);  // 64 bytes a thread: 24 KiB tiles
    static constexpr int TILE = PIPE_THREADS * ITEMS;
    static constexpr int WARPS = PIPE_THREADS / 32;
    static constexpr int SEG = 32 * ITEMS;  // elements a warp owns in a tile
    static constexpr size_t SMEM = (size_t)PIPE_BUFFERS * TILE * sizeof(T);
};

__device__ __forceinline__ void copy16_async(void *dst, const void *src)
{
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
#else
    *reinterpret_cast<uint4 *>(dst) = __ldg(reinterpret_cast<const uint4 *>(src));
#endif
}

__device__ __forceinline__ void copies_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void copies_wait_all()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// Start copying tile `tile` (if there is one) into `buf`: 16 bytes a copy;
// the last tile's last few elements, short of 16 bytes, are read plainly.
// Always one commit, so every thread's groups stay in step.
template <class T>
__device__ void start_tile_copy(T *buf, const T *x, int64_t n, int64_t tile, int64_t ntiles)
{
    constexpr int V = 16 / sizeof(T), CHUNKS = Pipe<T>::TILE / V;
    static_assert(CHUNKS % PIPE_THREADS == 0, "a tile is whole 16-byte copies for every thread");
    if (tile < ntiles) {
        const int64_t first = tile * Pipe<T>::TILE;
        if (first + Pipe<T>::TILE <= n) {
#pragma unroll
            for (int j = 0; j < CHUNKS / PIPE_THREADS; j++) {
                const int c = j * PIPE_THREADS + threadIdx.x;
                copy16_async(buf + c * V, x + first + c * V);
            }
        } else {
            for (int c = threadIdx.x; c < CHUNKS; c += PIPE_THREADS) {
                const int64_t i = first + (int64_t)c * V;
                if (i + V <= n) copy16_async(buf + c * V, x + i);
                else
                    for (int k = 0; k < V && i + k < n; k++) buf[c * V + k] = x[i + k];
            }
        }
    }
    copies_commit();
}

// A warp's run of a tile, row by row: `limit` is how many of its elements
// exist (FULL: all of them, and no row tests an index). The full run gets
// its own loop because the compiler, given one loop for both, tested every
// element's 64-bit index and predicated every shared-memory load: with one
// loop the kernel took 0.679 / 0.598 / 0.718 ms at 50% / 1% / 99% kept,
// with the two 0.574 / 0.469 / 0.689 (H200, 2^28 int32, kernel alone; CUB's
// select 0.596 / 0.483 / 0.752 in the same run).
template <class T, bool FULL>
__device__ __forceinline__ unsigned count_rows(const T *run, int limit, const DevPred<T> &p, unsigned lane)
{
    unsigned c = 0;
#pragma unroll
    for (int r = 0; r < Pipe<T>::ITEMS; r++) {
        const int i = r * 32 + (int)lane;
        c += __popc(__ballot_sync(0xffffffffu, (FULL || i < limit) && keep(run[i], p)));
    }
    return c;
}

// The keepers of a warp's run (its first at index `first`), ranked by
// ballots, written from out[o] on.
template <class T, bool FULL, class Sink>
__device__ __forceinline__ void write_rows(const T *run, int64_t first, int limit, const DevPred<T> &p,
                                           unsigned lane, const Sink &out, u64 o)
{
    const unsigned below = (1u << lane) - 1;
#pragma unroll
    for (int r = 0; r < Pipe<T>::ITEMS; r++) {
        const int i = r * 32 + (int)lane;
        const T v = run[i];
        const bool k = (FULL || i < limit) && keep(v, p);
        const unsigned kept = __ballot_sync(0xffffffffu, k);
        if (k) out.put(o + __popc(kept & below), v, first + i);
        o += __popc(kept);
    }
}

// How many elements of a warp's run (its first at index `first`) exist:
// the whole run, fewer in the last tile, none past it.
template <class T>
__device__ __forceinline__ int run_limit(int64_t first, int64_t n)
{
    return first >= n ? 0 : (int)(n - first < Pipe<T>::SEG ? n - first : Pipe<T>::SEG);
}

// How many of the warp's elements of a tile stay.
template <class T>
__device__ __forceinline__ unsigned warp_count(const T *run, int64_t first, int64_t n, const DevPred<T> &p,
                                               unsigned lane)
{
    const int limit = run_limit<T>(first, n);
    return limit == Pipe<T>::SEG ? count_rows<T, true>(run, limit, p, lane) : count_rows<T, false>(run, limit, p, lane);
}

// Exclusive prefix of the tiles before `tile`, by one warp: lane i reads
// the state of tile (top - i), 32 predecessors a round trip; a lane whose
// tile has not published yet waits for it (that tile was claimed before
// ours, by a running block). The nearest inclusive prefix ends the walk.
__device__ u64 warp_look_back(volatile u64 *status, int64_t tile, unsigned lane)
{
    u64 prefix = 0;
    for (int64_t top = tile - 1;; top -= 32) {
        const int64_t idx = top - (int64_t)lane;
        u64 st = idx >= 0 ? status[idx] : LB_INCLUSIVE;  // before tile 0: an inclusive 0
        unsigned backoff = 32;
        while (__any_sync(0xffffffffu, (st >> 62) == 0)) {
            if ((st >> 62) == 0) {
                __nanosleep(backoff);
                st = status[idx];
            }
            backoff = backoff < CUA_SPIN_SLEEP_MAX_NS ? 2 * backoff : CUA_SPIN_SLEEP_MAX_NS;
        }
        const unsigned inclusive = __ballot_sync(0xffffffffu, (st >> 62) == 2);
        const unsigned stop = inclusive ? __ffs(inclusive) - 1 : 32;
        u64 v = lane <= stop ? st & LB_VALUE : 0;
        for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        prefix += v;
        if (inclusive) return prefix;
    }
}

// Warp 0 of a block: the warps' counts of a tile (count) into each warp's
// offset in it (offset) and its count (total), and the tile's aggregate
// published -- its inclusive prefix if it is tile 0.
template <int WARPS>
__device__ __forceinline__ void publish_count(const unsigned *count, unsigned *offset, unsigned *total,
                                              volatile u64 *status, int64_t tile, unsigned lane)
{
    const unsigned c = lane < WARPS ? count[lane] : 0;
    unsigned incl = c;
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned up = __shfl_up_sync(0xffffffffu, incl, o);
        if ((int)lane >= o) incl += up;
    }
    const unsigned tile_count = __shfl_sync(0xffffffffu, incl, 31);
    if (lane < WARPS) offset[lane] = incl - c;
    if (lane == 0) {
        *total = tile_count;
        status[tile] = (tile == 0 ? LB_INCLUSIVE : LB_AGGREGATE) | tile_count;
    }
}

template <class T, class Sink>
__global__ __launch_bounds__(PIPE_THREADS) void filter_pipelined_kernel(
    const T *__restrict__ x, int64_t n, DevPred<T> p, Sink out, unsigned *tile_counter, u64 *status, int64_t ntiles,
    u64 *total)
{
    using P = Pipe<T>;
    T *bufs = reinterpret_cast<T *>(cua_smem);  // PIPE_BUFFERS tiles
    __shared__ int64_t tile_s[PIPE_BUFFERS];
    __shared__ unsigned count_s[P::WARPS], offset_s[PIPE_BUFFERS][P::WARPS], total_s[PIPE_BUFFERS];
    __shared__ u64 prefix_s;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    volatile u64 *vstatus = status;

    // The first tile: claimed, copied, counted; the second claimed and started.
    if (threadIdx.x == 0) tile_s[0] = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const int64_t first_tile = tile_s[0];
    if (first_tile >= ntiles) return;
    start_tile_copy<T>(bufs, x, n, first_tile, ntiles);
    copies_wait_all();
    __syncthreads();
    {
        const unsigned c = warp_count<T>(bufs + warp * P::SEG, first_tile * P::TILE + (int64_t)warp * P::SEG, n, p, lane);
        if (lane == 0) count_s[warp] = c;
    }
    if (threadIdx.x == 0) tile_s[1] = atomicAdd(tile_counter, 1u);
    __syncthreads();
    start_tile_copy<T>(bufs + P::TILE, x, n, tile_s[1], ntiles);
    if (warp == 0) publish_count<P::WARPS>(count_s, offset_s[0], &total_s[0], vstatus, first_tile, lane);

    for (int turn = 0;; turn++) {
        const int wr = turn % PIPE_BUFFERS, in = (turn + 1) % PIPE_BUFFERS, next = (turn + 2) % PIPE_BUFFERS;
        copies_wait_all();
        __syncthreads();  // tile `in` has arrived; count_s and the buffer `next` are free
        const int64_t tile = tile_s[wr], arrived = tile_s[in];
        const bool more = arrived < ntiles;  // claims only grow: nothing after it either
        if (more) {
            const unsigned c = warp_count<T>(bufs + in * P::TILE + warp * P::SEG,
                                             arrived * P::TILE + (int64_t)warp * P::SEG, n, p, lane);
            if (lane == 0) count_s[warp] = c;
            if (threadIdx.x == 0) tile_s[next] = atomicAdd(tile_counter, 1u);
        }
        __syncthreads();
        if (more) start_tile_copy<T>(bufs + next * P::TILE, x, n, tile_s[next], ntiles);
        if (warp == 0) {
            if (more) publish_count<P::WARPS>(count_s, offset_s[in], &total_s[in], vstatus, arrived, lane);
            const unsigned tile_count = total_s[wr];
            u64 prefix = 0;
            if (tile > 0) {
                prefix = warp_look_back(vstatus, tile, lane);
                if (lane == 0) vstatus[tile] = LB_INCLUSIVE | (prefix + tile_count);
            }
            if (lane == 0) {
                prefix_s = prefix;
                if (tile == ntiles - 1) *total = prefix + tile_count;
            }
        }
        __syncthreads();
        // The warp's keepers, row by row, at the tile's prefix plus the
        // warp's offset plus the keepers before them.
        const T *run = bufs + wr * P::TILE + warp * P::SEG;
        const int64_t first = tile * P::TILE + (int64_t)warp * P::SEG;
        const int limit = run_limit<T>(first, n);
        const u64 o = prefix_s + offset_s[wr][warp];
        if (limit == P::SEG) write_rows<T, true>(run, first, limit, p, lane, out, o);
        else write_rows<T, false>(run, first, limit, p, lane, out, o);
        if (!more) break;
    }
    copies_wait_all();
}

// -------------------------------------------------------------- launchers

// The end of every launch: the launch checked, the number of kept
// elements copied to the host, the one wait. A kernel given the caller's
// mapped result (cfg->result.device, the device side of *count) as `kept`
// has written the count there itself: only the wait is left.
static int filter_finish(const u64 *kept, int64_t *count, cua_launch *cfg)
{
    CUA_CHECK_LAUNCH();
    if (kept == cfg->result.device) {
        CUA_WAIT(cfg);
        return 0;
    }
    u64 total = 0;
    CUA_CHECK(cudaMemcpyAsync(&total, kept, sizeof(u64), cudaMemcpyDeviceToHost, cua_stream(cfg)));
    CUA_WAIT(cfg);
    *count = (int64_t)total;
    return 0;
}

// The push_back rungs (atomic, warp_aggregated): one grid-stride kernel
// that takes output slots from a zeroed counter; they differ only in how the
// kernel takes them.
template <class T, class Sink>
using push_back_kernel = void (*)(const T *, int64_t, DevPred<T>, Sink, u64 *);

template <class T, class Sink>
static int push_back(push_back_kernel<T, Sink> kernel, const T *x, int64_t n, const cua_pred *pred, Sink out,
                     int64_t *count, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    *count = 0;
    if (n == 0) return 0;
    cua_scratch scratch;
    CUA_CHECK(scratch.get(sizeof(u64), s));
    u64 *counter = (u64 *)scratch.ptr;
    CUA_CHECK(cudaMemsetAsync(counter, 0, sizeof(u64), s));
    kernel<<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(x, n, to_dev<T>(pred), out, counter);
    return filter_finish(counter, count, cfg);
}

template <class T, class Sink>
static int filter_atomic(const T *x, int64_t n, const cua_pred *pred, Sink out, int64_t *count, cua_launch *cfg)
{
    return push_back<T, Sink>(filter_atomic_kernel<T, Sink>, x, n, pred, out, count, cfg);
}

template <class T, class Sink>
static int filter_warp_aggregated(const T *x, int64_t n, const cua_pred *pred, Sink out, int64_t *count,
                                  cua_launch *cfg)
{
    return push_back<T, Sink>(filter_warp_aggregated_kernel<T, Sink>, x, n, pred, out, count, cfg);
}

template <class T, class Sink>
static int filter_ordered(const T *x, int64_t n, const cua_pred *pred, Sink out, int64_t *count, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    *count = 0;
    if (n == 0) return 0;
    const unsigned blocks = (unsigned)cfg->blocks;
    const int threads = cfg->threads;
    const DevPred<T> p = to_dev<T>(pred);
    const int64_t slice = cua_ceil_div(n, blocks);
    // Scratch: one count per block, scanned in place into offsets, then the total.
    cua_scratch scratch;
    CUA_CHECK(scratch.get(((size_t)blocks + 1) * sizeof(u64), s));
    u64 *offsets = (u64 *)scratch.ptr;
    filter_count_kernel<T><<<blocks, threads, threads * sizeof(u64), s>>>(x, n, slice, p, offsets);
    CUA_CHECK_LAUNCH();
    filter_scan_kernel<<<1, SCAN_THREADS, SCAN_THREADS * sizeof(u64), s>>>(offsets, blocks);
    CUA_CHECK_LAUNCH();
    const size_t warps = (threads + 31) / 32;
    filter_scatter_kernel<T, Sink><<<blocks, threads, (warps + 1) * sizeof(u64), s>>>(x, n, slice, p, offsets, out);
    return filter_finish(offsets + blocks, count, cfg);
}

// Rung 5's limits: copies of 16 bytes need an aligned input, cp.async and
// three 24 KiB buffers need sm_80, and its block is PIPE_THREADS threads.
static int pipelined_fits(const void *x, int, cua_launch *cfg)
{
    if (((uintptr_t)x & 15) != 0)
        return cua_refuse(cfg, "method 'pipelined' copies 16-byte vectors: the input must start on a 16-byte "
                               "boundary; use method='lookback'");
    if (cfg->threads > 0 && cfg->threads != PIPE_THREADS)
        return cua_refuse(cfg, "method 'pipelined' runs blocks of %d threads (got threads=%d); use method='lookback'",
                          PIPE_THREADS, cfg->threads);
    int major;
    int st = cua_cc_major(&major);
    if (st) return st;
    if (major < 8)
        return cua_refuse(cfg, "method 'pipelined' needs cp.async, sm_80 or newer (this device is sm_%d*); use "
                               "method='lookback'", major);
    return 0;
}

// Every other rung takes any input on any device.
static int filter_fits_any(const void *, int, cua_launch *) { return 0; }

// The look-back rungs share the launch: persistent blocks take tiles until
// none is left, the default grid what is resident at once (never more than
// there are tiles), and a scratch of the total, the tile counter and one
// status word per tile, all zero. The last tile writes the total into the
// caller's mapped result when there is one (no copy back after the kernel).
// The two kernels take the same arguments.
template <class T, class Sink>
using lookback_kernel = void (*)(const T *, int64_t, DevPred<T>, Sink, unsigned *, u64 *, int64_t, u64 *);

template <class T, class Sink>
static int look_back(lookback_kernel<T, Sink> kernel, int threads, int64_t tile_size, size_t smem, const T *x,
                     int64_t n, const cua_pred *pred, Sink out, int64_t *count, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_allow_smem(kernel, smem);
    if (st) return st;
    if (cfg->blocks <= 0) {
        st = cua_max_resident_blocks(kernel, threads, smem, &cfg->blocks);
        if (st) return st;
        if (cfg->blocks < 1) return cua_refuse(cfg, "no block of %d threads fits on this device", threads);
    }
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = threads;
    *count = 0;
    if (n == 0) return 0;
    const int64_t ntiles = cua_ceil_div(n, tile_size);
    const size_t bytes = 16 + (size_t)ntiles * sizeof(u64);
    cua_scratch scratch;
    CUA_CHECK(scratch.get(bytes, s));
    u64 *total = cfg->result.device ? (u64 *)cfg->result.device : (u64 *)scratch.ptr;
    unsigned *counter = (unsigned *)((char *)scratch.ptr + 8);
    u64 *status = (u64 *)((char *)scratch.ptr + 16);
    CUA_CHECK(cudaMemsetAsync(scratch.ptr, 0, bytes, s));
    const unsigned grid = (unsigned)(cfg->blocks < ntiles ? cfg->blocks : ntiles);
    cfg->used_blocks = grid;
    kernel<<<grid, threads, smem, s>>>(x, n, to_dev<T>(pred), out, counter, status, ntiles, total);
    return filter_finish(total, count, cfg);
}

template <class T, class Sink>
static int filter_lookback(const T *x, int64_t n, const cua_pred *pred, Sink out, int64_t *count, cua_launch *cfg)
{
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int threads = cfg->threads;
    return look_back<T, Sink>(filter_lookback_kernel<T, Sink>, threads, (int64_t)threads * LB_ITEMS,
                              (size_t)threads * LB_ITEMS * sizeof(typename Sink::Staged), x, n, pred, out, count,
                              cfg);
}

template <class T, class Sink>
static int filter_pipelined(const T *x, int64_t n, const cua_pred *pred, Sink out, int64_t *count, cua_launch *cfg)
{
    int st = pipelined_fits(x, 0, cfg);
    if (st) return st;
    cfg->threads = PIPE_THREADS;
    return look_back<T, Sink>(filter_pipelined_kernel<T, Sink>, PIPE_THREADS, Pipe<T>::TILE, Pipe<T>::SMEM, x, n,
                              pred, out, count, cfg);
}

// ------------------------------------------------------------ counting

// How many elements pass, without writing them: nonzero of a device array
// of two or more dimensions counts first, so that its coordinate arrays
// are made to their exact size (a buffer for every element passing, then
// freed, would churn the memory pool's cache at every call). Each thread
// counts its grid-stride share, a block adds its threads' counts with the
// shared-memory tree, and one atomicAdd per block makes the total.
template <class T>
__global__ void count_kept_kernel(const T *__restrict__ x, int64_t n, DevPred<T> p, u64 *total)
{
    u64 c = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) c += keep(x[i], p);
    c = cua_block_tree(c);
    if (threadIdx.x == 0 && c) atomicAdd(total, c);
}

extern "C" int cua_cuda_count_kept(const void *x, int64_t n, int dtype, const cua_pred *pred, int64_t *count,
                                   void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    *count = 0;
    if (n == 0) return 0;
    int sms;
    int st = cua_sm_count(&sms);
    if (st) return st;
    const int threads = CUA_DEFAULT_THREADS;
    const int64_t want = cua_ceil_div(n, threads), most = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    const unsigned blocks = (unsigned)(want < most ? want : most);
    cua_scratch scratch;
    CUA_CHECK(scratch.get(sizeof(u64), s));
    u64 *total = (u64 *)scratch.ptr;
    CUA_CHECK(cudaMemsetAsync(total, 0, sizeof(u64), s));
    st = cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        count_kept_kernel<T><<<blocks, threads, cua_tree_bytes<u64>(threads), s>>>((const T *)x, n, to_dev<T>(pred),
                                                                                   total);
        return 0;
    });
    if (st) return st;
    CUA_CHECK(cudaGetLastError());
    u64 host = 0;
    CUA_CHECK(cudaMemcpyAsync(&host, total, sizeof host, cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    *count = (int64_t)host;
    return 0;
}

// ----------------------------------------------------------- variant table

// A row's launcher: the call's element type and what `out` receives (the
// elements, or their indices), then the rung's typed launcher.
#define FILTER_ENTRY(RUNG, launcher)                                                                       \
    static int filter_##RUNG(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out,         \
                             int64_t *count, cua_launch *cfg)                                              \
    {                                                                                                      \
        return cua_dispatch(dtype, [&](auto t) -> int {                                                    \
            using T = decltype(t);                                                                         \
            if (pred->indices)                                                                             \
                return launcher<T, IndexSink>((const T *)x, n, pred, {(int64_t *)out, (u64)pred->capacity}, count, \
                                              cfg);                                                        \
            return launcher<T, ValueSink<T>>((const T *)x, n, pred, {(T *)out}, count, cfg);               \
        });                                                                                                \
    }
FILTER_ENTRY(ATOMIC, filter_atomic)
FILTER_ENTRY(ORDERED, filter_ordered)
FILTER_ENTRY(LOOKBACK, filter_lookback)
FILTER_ENTRY(WARP_AGGREGATED, filter_warp_aggregated)
FILTER_ENTRY(PIPELINED, filter_pipelined)

static const cua_filter_row filter_rows[] = {
    {{"atomic", 1, "push_back: the old value atomicAdd returns is the output slot (unordered)",
      0},
     filter_ATOMIC, filter_fits_any},
    {{"ordered", 2, "count per block, scan the counts, scatter with warp ballots: keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_ORDERED, filter_fits_any},
    {{"lookback", 3, "single pass: tile counts published, predecessors' prefixes read back; keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_LOOKBACK, filter_fits_any},
    {{"warp_aggregated", 4, "push_back with one atomicAdd per warp: a ballot, lane 0 reserves the warp's slots (unordered)",
      0},
     filter_WARP_AGGREGATED, filter_fits_any},
    {{"pipelined", 5, "lookback with the next tile copied into shared memory (cp.async, sm_80+) while it looks back; ordered",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_PIPELINED, pipelined_fits},
};
extern "C" const cua_ladder cua_cuda_filter_ladder = CUA_LADDER(filter_rows);
