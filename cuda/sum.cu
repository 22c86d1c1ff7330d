// sum.cu -- the sum ladder: from one atomic per element to one per grid.
//
//  1. atomic       one atomicAdd per element into a single counter. Correct
//                  where a plain `+=` loses updates, but every add queues on
//                  one address: throughput is that of a single L2 slice.
//  2. cas          each thread first sums its grid-stride share in a
//                  register, then adds it with an add built from an
//                  atomicCAS loop -- the way any missing atomic (float add
//                  before sm_20, double add before sm_60, multiply) is made.
//                  Colliding threads retry (T^2/2 attempts for T threads),
//                  so losers back off and the default grid is one block
//                  per SM.
//  3. thread_local the same local sum, then one native atomicAdd per thread.
//                  Contention drops from n to blocks*threads adds.
//  4. block_tree   threads of a block combine their sums in a shared-memory
//                  tree; one atomicAdd per block. Float results still depend
//                  on the order the blocks arrive in.
//  5. grid_lock    block partials to global memory, then an inter-block
//                  barrier on one atomic counter; block 0 adds the partials
//                  in a fixed order. Every block spins, so all blocks must be
//                  resident at once: the grid is limited by occupancy.
//  6. grid_flags   the same barrier without a contended counter: each block
//                  raises its own arrive flag, block 0 gathers them and
//                  raises one release flag per block (Xiao & Feng's
//                  lock-free barrier). Same residency limit.
//  7. cooperative  the same barrier from cooperative groups: grid.sync()
//                  under cudaLaunchCooperativeKernel, which refuses grids
//                  that cannot all be resident.
//  8. last_block   no barrier at all: each block publishes its partial,
//                  fences, and takes a ticket; the block that draws the last
//                  ticket adds the partials. Any grid size, one launch,
//                  deterministic float order for a given configuration.
//  9. vector       the same finish at the memory system's speed: 16-byte
//                  loads, several in flight per thread, warp shuffles, the
//                  resident grid; small inputs in one block that writes the
//                  result straight to the host (see vector.cuh).
// 10. exact_global the exact sum (CUA_F_EXACT; integers too, at weight 2^0):
//                  every element placed as digits of a superaccumulator
//                  (xacc.h: 136 words of 32-bit digits) and added with
//                  64-bit atomicAdd to one accumulator in global memory;
//                  the launcher normalizes it and the caller rounds once.
//                  Integer adds: any grid, any order, the same bits. The
//                  cost is rung 1's again: three atomics per element on
//                  the same few words (2^22 float64 on an H200: 7 ms).
//                  At most 2^30 elements a launch (a word's digit budget).
// 11. exact_shared one superaccumulator per block in shared memory, its
//                  nonzero words added to global memory once per block.
//                  The global queue is gone; a warp's lanes still queue on
//                  one shared word, and the 64-bit shared add is a CAS
//                  loop on sm_90 (2^22 float64: 0.55 ms).
// 12. exact        the vector rung's streaming with error-free arithmetic:
//                  each thread sums in two double expansions (TwoSum, then
//                  an exactness test of adding its error); only a term the
//                  test rejects (rare for ordinary data; inf, NaN,
//                  overflow) goes to the block's superaccumulator, and the
//                  warps' folded expansions at the end. Runs at `vector`'s
//                  speed (2^28 float64 on an H200: 3.9 TB/s); data spread
//                  over hundreds of binades take the slow path (6-16x
//                  slower). See exact.cu.
//
// Integers accumulate in 64-bit unsigned arithmetic (exact modulo 2^64, so
// int64 and uint64 sums are exact and narrower result types are the low
// bits); floats in the accumulator type the caller asks for.
#include <cooperative_groups.h>

#include "common.cuh"
#include "exact.cuh"
#include "vector.cuh"

namespace cg = cooperative_groups;

// ---------------------------------------------------------------- helpers

// This thread's grid-stride share of x, summed in a register.
template <class T, class Acc>
__device__ Acc thread_sum(const T *__restrict__ x, int64_t n)
{
    Acc v = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v += (Acc)x[i];
    return v;
}

// This block's share of x: the threads' sums added in the shared-memory
// tree. Every thread must call it; valid in thread 0.
template <class T, class Acc>
__device__ Acc block_sum(const T *__restrict__ x, int64_t n)
{
    return cua_block_tree(thread_sum<T, Acc>(x, n));
}

// Block 0 (or the last block) adds the partials of all blocks in a fixed
// order. Volatile reads: the partials were written by other blocks and must
// come from L2, not from a stale L1 line.
template <class Acc>
__device__ void add_partials(const Acc *partials, unsigned nblocks, Acc *total)
{
    const volatile Acc *p = partials;
    Acc v = 0;
    for (unsigned i = threadIdx.x; i < nblocks; i += blockDim.x) v += p[i];
    v = cua_block_tree(v);
    if (threadIdx.x == 0) *total = v;
}

// ---------------------------------------------------------------- kernels

template <class T, class Acc>
__global__ void sum_atomic_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) cua_atomic_add(total, (Acc)x[i]);
}

template <class T, class Acc>
__global__ void sum_cas_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    cua_cas_add(total, thread_sum<T, Acc>(x, n));
}

template <class T, class Acc>
__global__ void sum_thread_local_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    cua_atomic_add(total, thread_sum<T, Acc>(x, n));
}

template <class T, class Acc>
__global__ void sum_block_tree_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    Acc v = block_sum<T, Acc>(x, n);
    if (threadIdx.x == 0) cua_atomic_add(total, v);
}

// Rungs 5-8 put each block's sum in partials[blockIdx.x] and differ in how
// block 0 (or the last block) learns that every partial is in place.

// `arrived` counts the blocks that have written their partial; the launcher
// zeroes it before every launch.
template <class T, class Acc>
__global__ void sum_grid_lock_kernel(const T *__restrict__ x, int64_t n, Acc *total, Acc *partials,
                                     unsigned *arrived)
{
    Acc v = block_sum<T, Acc>(x, n);
    const unsigned b = blockIdx.x, tid = threadIdx.x;
    if (tid == 0) {
        partials[b] = v;
        // Make the partial visible device-wide before the counter says
        // this block has arrived.
        __threadfence();
        atomicAdd(arrived, 1u);
        // Spin until every block has arrived. Safe only because the
        // launcher limited the grid to blocks that are all resident.
        while (*(volatile unsigned *)arrived < gridDim.x) {
        }
        // Order the reads of other blocks' partials after the wait.
        __threadfence();
    }
    __syncthreads();
    if (b == 0) add_partials(partials, gridDim.x, total);
}

// `flags` holds gridDim arrive flags, then gridDim release flags; the
// launcher zeroes them before every launch.
template <class T, class Acc>
__global__ void sum_grid_flags_kernel(const T *__restrict__ x, int64_t n, Acc *total, Acc *partials,
                                      unsigned *flags)
{
    Acc v = block_sum<T, Acc>(x, n);
    const unsigned b = blockIdx.x, tid = threadIdx.x;
    volatile unsigned *arrive = flags, *release = flags + gridDim.x;
    if (tid == 0) {
        partials[b] = v;
        __threadfence();  // partial visible before the arrive flag
        arrive[b] = 1;
    }
    if (b == 0) {
        // Block 0's threads each watch a slice of the arrive flags.
        for (unsigned i = tid; i < gridDim.x; i += blockDim.x)
            while (arrive[i] == 0) {
            }
        __syncthreads();
        __threadfence();  // everything we saw arrive is ordered before the release
        for (unsigned i = tid; i < gridDim.x; i += blockDim.x) release[i] = 1;
    }
    if (tid == 0)
        while (release[b] == 0) {
        }
    __syncthreads();
    __threadfence();  // reads of partials after the release was seen
    if (b == 0) add_partials(partials, gridDim.x, total);
}

template <class T, class Acc>
__global__ void sum_cooperative_kernel(const T *__restrict__ x, int64_t n, Acc *total, Acc *partials)
{
    Acc v = block_sum<T, Acc>(x, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
    // A grid-wide barrier with memory ordering: every partial written
    // before it is visible to every block after it.
    cg::this_grid().sync();
    if (blockIdx.x == 0) add_partials(partials, gridDim.x, total);
}

// `ticket` counts the blocks that have published their partial; the
// launcher zeroes it before every launch.
template <class T, class Acc>
__global__ void sum_last_block_kernel(const T *__restrict__ x, int64_t n, Acc *total, Acc *partials,
                                      unsigned *ticket)
{
    __shared__ bool last;
    Acc v = block_sum<T, Acc>(x, n);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        // The partial must be visible before the ticket is taken: the
        // block that draws the last ticket reads it right away.
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        __threadfence();  // order the partial reads after the ticket
        add_partials(partials, gridDim.x, total);
    }
}

// -------------------------------------------------------------- launchers

// Rungs 5-7 wait for every block at once, so all blocks must be resident:
// the default grid is the resident one (never more blocks than there are
// threads' worth of elements), and a larger grid asked for is refused.
template <class Acc, class K>
static int resident_config(K kernel, int64_t n, cua_launch *cfg)
{
    const int threads = cfg->threads > 0 ? cfg->threads : CUA_DEFAULT_THREADS;
    int64_t max_blocks;
    int st = cua_max_resident_blocks(kernel, threads, cua_tree_bytes<Acc>(threads), &max_blocks);
    if (st) return st;
    if (max_blocks < 1)
        return cua_refuse(cfg, "no block of %d threads fits on this device", threads);
    if (cfg->blocks > max_blocks)
        return cua_refuse(cfg,
                          "this method waits for all blocks at once, so they must all be resident: "
                          "at most %lld blocks of %d threads on this device (got %lld)",
                          (long long)max_blocks, threads, (long long)cfg->blocks);
    if (cfg->blocks <= 0) {
        int64_t want = cua_ceil_div(n > 0 ? n : 1, threads);
        cfg->blocks = want < max_blocks ? want : max_blocks;
    }
    cfg->threads = threads;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = threads;
    return 0;
}

// Rungs 1-4 add into one zeroed total: after its grid config (the CAS rung
// has its own), each launches its kernel once with `smem` bytes of shared
// memory and reads the total back.
template <class T, class Acc>
using total_kernel = void (*)(const T *, int64_t, Acc *);

template <class T, class Acc>
static int launch_into_total(total_kernel<T, Acc> kernel, size_t smem, const T *x, int64_t n, Acc *result,
                             cua_launch *cfg)
{
    if (n == 0) return cua_empty_sum(result);
    cudaStream_t s = cua_stream(cfg);
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s));
    kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, s>>>(x, n, sc.total);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int sum_atomic(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st : launch_into_total<T, Acc>(sum_atomic_kernel<T, Acc>, 0, x, n, result, cfg);
}

template <class T, class Acc>
static int sum_cas(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    int st = cua_cas_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st : launch_into_total<T, Acc>(sum_cas_kernel<T, Acc>, 0, x, n, result, cfg);
}

template <class T, class Acc>
static int sum_thread_local(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st : launch_into_total<T, Acc>(sum_thread_local_kernel<T, Acc>, 0, x, n, result, cfg);
}

template <class T, class Acc>
static int sum_block_tree(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st
              : launch_into_total<T, Acc>(sum_block_tree_kernel<T, Acc>, cua_tree_bytes<Acc>(cfg->threads), x, n,
                                          result, cfg);
}

template <class T, class Acc>
static int sum_grid_lock(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = resident_config<Acc>(sum_grid_lock_kernel<T, Acc>, n, cfg);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    const unsigned blocks = (unsigned)cfg->blocks;
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s, blocks, 1));  // a partial per block, the arrival counter
    sum_grid_lock_kernel<<<blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(x, n, sc.total,
                                                                                      sc.partials, sc.sync);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int sum_grid_flags(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = resident_config<Acc>(sum_grid_flags_kernel<T, Acc>, n, cfg);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    const unsigned blocks = (unsigned)cfg->blocks;
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s, blocks, 2 * (size_t)blocks));  // a partial, an arrive and a release flag per block
    sum_grid_flags_kernel<<<blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(x, n, sc.total,
                                                                                       sc.partials, sc.sync);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int sum_cooperative(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int dev, coop;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) return cua_refuse(cfg, "this device does not support cooperative launches");
    int st = resident_config<Acc>(sum_cooperative_kernel<T, Acc>, n, cfg);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s, (size_t)cfg->blocks));  // a partial per block
    void *args[] = {(void *)&x, (void *)&n, (void *)&sc.total, (void *)&sc.partials};
    CUA_CHECK(cudaLaunchCooperativeKernel((const void *)sum_cooperative_kernel<T, Acc>, dim3((unsigned)cfg->blocks),
                                          dim3(cfg->threads), args, cua_tree_bytes<Acc>(cfg->threads), s));
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int sum_last_block(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    const unsigned blocks = (unsigned)cfg->blocks;
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s, blocks, 1));  // a partial per block, the ticket counter
    sum_last_block_kernel<<<blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(x, n, sc.total,
                                                                                       sc.partials, sc.sync);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int sum_vector(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    return vec::launch<T, Acc, false>(x, nullptr, n, result, cfg);
}

// reduce.cu's vector add calls these instances (vector.cuh).
VEC_SUM_PAIRS(VEC_SUM_INSTANTIATE)

// ----------------------------------------------------------- variant table

// A row's launcher: the call's element and accumulator types, then the
// rung's typed launcher.
#define SUM_ENTRY(RUNG, launcher)                                                                      \
    static int sum_##RUNG(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg) \
    {                                                                                                  \
        return cua_dispatch_acc(dtype, acc, [&](auto t, auto a) -> int {                               \
            using T = decltype(t);                                                                     \
            using Acc = decltype(a);                                                                   \
            return launcher<T, Acc>((const T *)x, n, (Acc *)result, cfg);                              \
        });                                                                                            \
    }
SUM_ENTRY(ATOMIC, sum_atomic)
SUM_ENTRY(CAS, sum_cas)
SUM_ENTRY(THREAD_LOCAL, sum_thread_local)
SUM_ENTRY(BLOCK_TREE, sum_block_tree)
SUM_ENTRY(GRID_LOCK, sum_grid_lock)
SUM_ENTRY(GRID_FLAGS, sum_grid_flags)
SUM_ENTRY(COOPERATIVE, sum_cooperative)
SUM_ENTRY(LAST_BLOCK, sum_last_block)
SUM_ENTRY(VECTOR, sum_vector)

static const cua_sum_row sum_rows[] = {
    {{"atomic", 1, "one atomicAdd per element: no lost updates, but every add queues on one address",
      CUA_F_ARRIVAL},
     sum_ATOMIC},
    {{"cas", 2, "per-thread local sum, then an add built from an atomicCAS loop (how custom atomics are made)",
      CUA_F_ARRIVAL},
     sum_CAS},
    {{"thread_local", 3, "grid-stride sum in a register, one native atomicAdd per thread",
      CUA_F_ARRIVAL},
     sum_THREAD_LOCAL},
    {{"block_tree", 4, "shared-memory tree per block, one atomicAdd per block",
      0},
     sum_BLOCK_TREE},
    {{"grid_lock", 5, "block partials, inter-block barrier on one atomic counter, block 0 adds them",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_GRID_LOCK},
    {{"grid_flags", 6, "the same barrier lock-free: per-block arrive and release flags",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_GRID_FLAGS},
    {{"cooperative", 7, "the same barrier from cooperative groups grid.sync()",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_COOPERATIVE},
    {{"last_block", 8, "threadfence + ticket: the last block to finish adds the partials, any grid size",
      CUA_F_DETERMINISTIC},
     sum_LAST_BLOCK},
    {{"vector", 9, "16-byte loads in flight, floats in compensated double, warp shuffles, last-block finish: deterministic, as accurate as NumPy or better",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     sum_VECTOR},
    {{"exact_global", 10, "the exact sum: every element's digits atomically added to one superaccumulator in global memory (exact, order-free, but contended)",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact_global},
    {{"exact_shared", 11, "one superaccumulator per block in shared memory, added to global memory once per block: the global queue gone",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact_shared},
    {{"exact", 12, "error-free double expansions per thread, only the terms they cannot hold exactly to the superaccumulator: exact at the vector rung's speed",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact},
};
extern "C" const cua_ladder cua_cuda_sum_ladder = CUA_LADDER(sum_rows);
