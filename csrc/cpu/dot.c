/* dot.c -- the dot-product ladder on the CPU (cuda/dot.cu tells the lesson:
 * how the blocks' results meet). Every rung computes a logical block's
 * value the same way -- each of its threads dots its share, the lanes
 * combine in the block tree (chunks.c) -- and they differ in how the block
 * values become one number.
 *
 *  1. partial  each block's value to its own slot; the calling thread adds
 *              the slots in order afterwards (the GPU rung copies them to
 *              the host and adds them there). No atomics, deterministic.
 *  2. mutex    each block's value added to the total under the CAS spin
 *              lock, with its fences (spin.c). Blocks queue for the lock;
 *              a waiter pauses, yields its core, then sleeps (the GPU's
 *              lock spins bare).
 *  3. atomic   each block's value added atomically: fetch_add for integers;
 *              floats have no atomic add on the CPU, so the CAS loop of
 *              rung 4 (the GPU has a native atomicAdd for both).
 *  4. cas      each block's value added by a compare-exchange loop on the
 *              bit pattern; the loop compares integers, so a NaN cannot make
 *              it spin forever.
 *  5. vector   a chunk per OpenMP thread in SIMD lanes, chunk values added
 *              in order (vector.c, shared with sum); products made exact
 *              (float32 in float64, float64 with an FMA) and summed in
 *              float64 with compensation (CUA_F_WIDE). As in sum, the GPU's
 *              wide loads and last-block finish become SIMD lanes and a
 *              fork-join.
 */
#include <stdlib.h>

#include "cpu.h"

static int dot_partial(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    cua_acc_t *partials = calloc((size_t)(g.busy_blocks > 0 ? g.busy_blocks : 1), sizeof *partials);
    if (!partials) return CUA_ENOMEM;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t k = 0; k < g.busy_blocks; k++)
        if (!cua_cpu_stop(cfg)) partials[k] = cua_cpu_block_value(a, b, n, dtype, acc, cfg, k);
    cua_acc_t total = {0};
    for (int64_t k = 0; k < g.busy_blocks; k++) cua_acc_add(acc, &total, partials[k]);
    free(partials);
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

static int dot_mutex(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    cua_acc_t total = {0}; /* only touched inside the critical section */
    atomic_int mutex = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t k = 0; k < g.busy_blocks; k++) {
        if (cua_cpu_stop(cfg)) continue;
        cua_acc_t v = cua_cpu_block_value(a, b, n, dtype, acc, cfg, k);
        cua_cpu_lock(&mutex);
        cua_acc_add(acc, &total, v); /* plain read-modify-write: the lock makes it safe */
        cua_cpu_unlock(&mutex);
    }
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

static int dot_atomic(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_cpu_blocks_into_cell(cua_cpu_atomic_add, a, b, n, dtype, acc, result, cfg);
}

static int dot_cas(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_cpu_blocks_into_cell(cua_cpu_cas_add, a, b, n, dtype, acc, result, cfg);
}

static int dot_vector(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_cpu_vector_reduce(a, b, n, dtype, acc, result, cfg);
}

static int dot_exact_global(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_global(a, b, n, dtype, result, cfg);
}

static int dot_exact_shared(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_shared(a, b, n, dtype, result, cfg);
}

static int dot_exact(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_fast(a, b, n, dtype, result, cfg);
}

static const cua_dot_row dot_rows[] = {
    {{"partial", 1, "block values to their own slots, summed in order afterwards: deterministic",
      CUA_F_DETERMINISTIC},
     dot_partial},
    {{"mutex", 2, "block value added under the CAS spin lock, with fences",
      0},
     dot_mutex},
    {{"atomic", 3, "block value added atomically (fetch_add; CAS loop for floats)",
      0},
     dot_atomic},
    {{"cas", 4, "block value added by a compare-exchange loop on the bit pattern",
      0},
     dot_cas},
    {{"vector", 5, "a chunk per OpenMP thread in SIMD lanes, floats in compensated float64 with exact products, chunks added in order: deterministic",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     dot_vector},
    {{"exact_global", 6, "exact: every exact product into one superaccumulator of integers with fetch_add on its words (cuda/xacc.h): the same bits in any order, but every thread queues on a few words",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact_global},
    {{"exact_shared", 7, "exact: one superaccumulator per logical block with plain adds (one OS thread runs a block: no atomics needed), one fetch_add per word per block",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact_shared},
    {{"exact", 8, "exact at SIMD speed: float64 expansions per lane kept error-free by TwoSum and TwoProduct, a rare inexact residual to the thread's superaccumulator",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact},
};
const cua_ladder cua_cpu_dot_ladder = CUA_LADDER(dot_rows);
