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
//
// Integers accumulate in 64-bit unsigned arithmetic (exact modulo 2^64, so
// int64 and uint64 sums are exact and narrower result types are the low
// bits); floats in the accumulator type the caller asks for.
#include <cooperative_groups.h>

#include "common.cuh"
#include "vector.cuh"

namespace cg = cooperative_groups;

enum SumRung { ATOMIC, CAS, THREAD_LOCAL, BLOCK_TREE, GRID_LOCK, GRID_FLAGS, COOPERATIVE, LAST_BLOCK };

static constexpr bool needs_residency(int r) { return r == GRID_LOCK || r == GRID_FLAGS || r == COOPERATIVE; }
static constexpr bool uses_partials(int r) { return r >= GRID_LOCK; }

// This thread's grid-stride share of x, summed in a register.
template <class T, class Acc>
__device__ Acc thread_sum(const T *__restrict__ x, int64_t n)
{
    Acc v = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v += (Acc)x[i];
    return v;
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
    Acc v = cua_block_tree(thread_sum<T, Acc>(x, n));
    if (threadIdx.x == 0) cua_atomic_add(total, v);
}

// Rungs 5-8 share the block partial and differ in how block 0 (or the last
// block) learns that every partial is in place. `sync` holds the counter
// (grid_lock, last_block) or 2*gridDim flags (grid_flags), zeroed by the
// launcher before every launch.
template <int R, class T, class Acc>
__global__ void sum_partials_kernel(const T *__restrict__ x, int64_t n, Acc *total, Acc *partials,
                                    unsigned *sync)
{
    __shared__ bool last;
    Acc v = cua_block_tree(thread_sum<T, Acc>(x, n));
    const unsigned b = blockIdx.x, tid = threadIdx.x;

    if constexpr (R == GRID_LOCK) {
        if (tid == 0) {
            partials[b] = v;
            // Make the partial visible device-wide before the counter says
            // this block has arrived.
            __threadfence();
            atomicAdd(sync, 1u);
            // Spin until every block has arrived. Safe only because the
            // launcher limited the grid to blocks that are all resident.
            while (*(volatile unsigned *)sync < gridDim.x) {
            }
            // Order the reads of other blocks' partials after the wait.
            __threadfence();
        }
        __syncthreads();
        if (b == 0) add_partials(partials, gridDim.x, total);
    } else if constexpr (R == GRID_FLAGS) {
        volatile unsigned *arrive = sync, *release = sync + gridDim.x;
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
    } else if constexpr (R == COOPERATIVE) {
        if (tid == 0) partials[b] = v;
        // A grid-wide barrier with memory ordering: every partial written
        // before it is visible to every block after it.
        cg::this_grid().sync();
        if (b == 0) add_partials(partials, gridDim.x, total);
    } else {  // LAST_BLOCK
        if (tid == 0) {
            partials[b] = v;
            // The partial must be visible before the ticket is taken: the
            // block that draws the last ticket reads it right away.
            __threadfence();
            last = atomicAdd(sync, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (last) {
            __threadfence();  // order the partial reads after the ticket
            add_partials(partials, gridDim.x, total);
        }
    }
}

// --------------------------------------------------------------- launcher

template <int R, class T, class Acc>
static int sum_typed(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    const int threads = cfg->threads > 0 ? cfg->threads : 256;
    const size_t smem = (size_t)threads * sizeof(Acc);

    if constexpr (needs_residency(R)) {
        int64_t max_blocks;
        int st = cua_max_resident_blocks(sum_partials_kernel<R, T, Acc>, threads, smem, &max_blocks);
        if (st) return st;
        if (R == COOPERATIVE) {
            int dev, coop;
            CUA_CHECK(cudaGetDevice(&dev));
            CUA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
            if (!coop) return cua_refuse(cfg, "this device does not support cooperative launches");
        }
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
    } else {
        int st = R == CAS ? cua_cas_config(cfg, n, threads) : cua_default_config(cfg, n, threads);
        if (st) return st;
    }
    if (n == 0) {
        *result = 0;
        return 0;
    }

    const unsigned blocks = (unsigned)cfg->blocks;
    // Scratch: total, then partials, then the barrier's counter or flags.
    size_t off_partials = 16, off_sync = off_partials + (uses_partials(R) ? blocks * sizeof(Acc) : 0);
    size_t bytes = off_sync + (uses_partials(R) ? 2 * (size_t)blocks * sizeof(unsigned) : 0);
    cua_scratch scratch;
    CUA_CHECK(scratch.get(bytes, s));
    char *base = (char *)scratch.ptr;
    Acc *total = (Acc *)base;
    Acc *partials = (Acc *)(base + off_partials);
    unsigned *sync = (unsigned *)(base + off_sync);
    // Counters and flags start at zero on every call: never trust what a
    // previous launch left behind.
    CUA_CHECK(cudaMemsetAsync(base, 0, bytes, s));

    if constexpr (R == ATOMIC) {
        sum_atomic_kernel<<<blocks, threads, 0, s>>>(x, n, total);
    } else if constexpr (R == CAS) {
        sum_cas_kernel<<<blocks, threads, 0, s>>>(x, n, total);
    } else if constexpr (R == THREAD_LOCAL) {
        sum_thread_local_kernel<<<blocks, threads, 0, s>>>(x, n, total);
    } else if constexpr (R == BLOCK_TREE) {
        sum_block_tree_kernel<<<blocks, threads, smem, s>>>(x, n, total);
    } else if constexpr (R == COOPERATIVE) {
        void *args[] = {(void *)&x, (void *)&n, (void *)&total, (void *)&partials, (void *)&sync};
        CUA_CHECK(cudaLaunchCooperativeKernel((const void *)sum_partials_kernel<R, T, Acc>, dim3(blocks), dim3(threads), args, smem, s));
    } else {
        sum_partials_kernel<R, T, Acc><<<blocks, threads, smem, s>>>(x, n, total, partials, sync);
    }
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaMemcpyAsync(result, total, sizeof(Acc), cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    return 0;
}

template <int R>
static int sum_run(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto a) -> int {
        using T = decltype(t);
        using Acc = decltype(a);
        return sum_typed<R, T, Acc>((const T *)x, n, (Acc *)result, cfg);
    });
}

static int sum_VECTOR(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto a) -> int {
        using T = decltype(t);
        using Acc = decltype(a);
        return vec::launch<T, Acc, false>((const T *)x, nullptr, n, (Acc *)result, cfg);
    });
}

// ----------------------------------------------------------- variant table

#define SUM_LAUNCHER(R) \
    static int sum_##R(const void *x, int64_t n, int d, int a, void *r, cua_launch *c) { return sum_run<R>(x, n, d, a, r, c); }
SUM_LAUNCHER(ATOMIC)
SUM_LAUNCHER(CAS)
SUM_LAUNCHER(THREAD_LOCAL)
SUM_LAUNCHER(BLOCK_TREE)
SUM_LAUNCHER(GRID_LOCK)
SUM_LAUNCHER(GRID_FLAGS)
SUM_LAUNCHER(COOPERATIVE)
SUM_LAUNCHER(LAST_BLOCK)

static const cua_sum_row sum_rows[] = {
    {{"atomic", 1, "one atomicAdd per element: no lost updates, but every add queues on one address",
      0},
     sum_ATOMIC},
    {{"cas", 2, "per-thread local sum, then an add built from an atomicCAS loop (how custom atomics are made)",
      0},
     sum_CAS},
    {{"thread_local", 3, "grid-stride sum in a register, one native atomicAdd per thread",
      0},
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
};
extern "C" const cua_ladder cua_cuda_sum_ladder = CUA_LADDER(sum_rows);
