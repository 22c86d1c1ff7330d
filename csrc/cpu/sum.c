/* sum.c -- the sum ladder on the CPU (cuda/sum.cu tells the lesson; here
 * each step says what it does on a CPU, what it costs there, and how it
 * differs from the GPU rung of the same name).
 *
 *  1. atomic       every element added to one shared cell atomically:
 *                  fetch_add for integers; floats have no atomic add on a
 *                  CPU, so a CAS loop (the GPU has atomicAdd for both).
 *                  Every add moves the cell's cache line between cores:
 *                  by far the slowest rung.
 *  2. cas          each logical thread sums its share (one contiguous chunk,
 *                  the CPU form of a grid-stride loop), then adds it with a
 *                  compare-exchange loop. A failed exchange retries at once:
 *                  with a few OS threads collisions are rare, so there is no
 *                  backoff as on the GPU.
 *  3. thread_local the same local sum, then one atomic add per logical
 *                  thread: fetch_add for integers, and for floats the same
 *                  CAS loop as `cas` (no native float add to use).
 *  4. block_tree   the sums of a logical block's threads combine in the tree
 *                  the GPU builds in shared memory -- here a loop over a
 *                  stack array on the one OS thread that runs the block, with
 *                  no barrier between levels -- then one atomic add per block.
 *  5. grid_lock    block partials to an array, then a barrier of the OpenMP
 *                  team on one atomic counter; thread 0 adds the partials in
 *                  block order. The barrier is between OS threads, not
 *                  logical blocks (those run a few at a time on each thread);
 *                  waiters pause, then yield their core, then sleep.
 *  6. grid_flags   the same barrier without a contended counter: each OpenMP
 *                  thread raises its own arrive flag, thread 0 gathers them
 *                  and raises one release flag per thread (per block on the
 *                  GPU).
 *  7. cooperative  the same barrier as `#pragma omp barrier`: OpenMP's own,
 *                  where the GPU uses cooperative groups' grid.sync().
 *  8. last_block   no barrier: each block publishes its partial with an
 *                  acq_rel ticket (the release/acquire pair the GPU makes
 *                  with __threadfence); whoever draws the last ticket adds
 *                  the partials in block order.
 *  9. vector       one contiguous chunk per OpenMP thread in SIMD lanes,
 *                  chunk values added in order by the calling thread
 *                  (the GPU's 16-byte loads and last-block finish become
 *                  SIMD lanes and a fork-join). Floats are summed as
 *                  accurately as NumPy's pairwise sum or better (CUA_F_WIDE:
 *                  float64 lanes with TwoSum compensation; see vector.c).
 * OpenMP starts its whole team at once, so the barrier rungs have no
 * residency limit here: any number of logical blocks works. They keep
 * CUA_F_RESIDENT, the mark of their idea (waiting across blocks).
 */
#include <stdlib.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

/* ---------------------------------------------------------------- helpers */

/* Rungs 2 and 3: every logical thread's share summed and added into one
 * cell by `add`, the cell's value stored to result. */
static int threads_into_cell(cua_cell_add add, const void *x, int64_t n, int dtype, int acc, void *result,
                             cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic uint64_t cell = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        add(acc, &cell, cua_cpu_chunk_sum(x, dtype, acc, lo, hi));
    }
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_CPU_DONE(cfg);
}

/* Rungs 5-8 write one partial per logical block with elements. */
static cua_acc_t *new_partials(int64_t blocks)
{
    return malloc((size_t)(blocks > 0 ? blocks : 1) * sizeof(cua_acc_t));
}

/* Rungs 5-7, before the barrier: OpenMP thread t of nt writes the partials
 * of logical blocks t, t + nt, ... */
static void team_partials(const void *x, int64_t n, int dtype, int acc, cua_launch *cfg, cua_acc_t *partials,
                          int64_t blocks, int t, int nt)
{
    for (int64_t b = t; b < blocks; b += nt)
        if (!cua_cpu_stop(cfg)) partials[b] = cua_cpu_block_value(x, NULL, n, dtype, acc, cfg, b);
}

/* After the wait, by one thread: the partials in block order, so that a
 * float sum is the same every call. */
static cua_acc_t add_in_order(const cua_acc_t *partials, int64_t blocks, int acc)
{
    cua_acc_t total = {0};
    for (int64_t b = 0; b < blocks; b++) cua_acc_add(acc, &total, partials[b]);
    return total;
}

static int partials_result(cua_acc_t *partials, cua_acc_t total, int acc, void *result, cua_launch *cfg)
{
    free(partials);
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

/* ------------------------------------------------------------------ rungs */

static int sum_atomic(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic uint64_t cell = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) cua_cpu_atomic_add(acc, &cell, cua_cpu_load(x, dtype, acc, i));
    }
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_CPU_DONE(cfg);
}

static int sum_cas(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return threads_into_cell(cua_cpu_cas_add, x, n, dtype, acc, result, cfg);
}

static int sum_thread_local(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return threads_into_cell(cua_cpu_atomic_add, x, n, dtype, acc, result, cfg);
}

static int sum_block_tree(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_cpu_blocks_into_cell(cua_cpu_atomic_add, x, NULL, n, dtype, acc, result, cfg);
}

static int sum_grid_lock(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    cua_acc_t *partials = new_partials(g.busy_blocks);
    cua_acc_t total = {0};
    if (!partials) return CUA_ENOMEM;
    atomic_int arrived = 0;
#pragma omp parallel num_threads(g.team)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        team_partials(x, n, dtype, acc, cfg, partials, g.busy_blocks, t, nt);
        /* Release: our partials are published before our arrival is
         * counted. Acquire: once all arrived, everyone's partials are
         * visible to us. */
        unsigned spins = 0;
        atomic_fetch_add_explicit(&arrived, 1, memory_order_release);
        while (atomic_load_explicit(&arrived, memory_order_acquire) < nt)
            cua_cpu_relax(&spins); /* spin: wait for the team */
        if (t == 0 && !cfg->interrupted) total = add_in_order(partials, g.busy_blocks, acc);
    }
    return partials_result(partials, total, acc, result, cfg);
}

static int sum_grid_flags(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    const int P = g.team;
    cua_acc_t *partials = new_partials(g.busy_blocks);
    cua_acc_t total = {0};
    atomic_int *flags = calloc(2 * (size_t)P, sizeof *flags); /* arrive[P], release[P] */
    if (!partials || !flags) {
        free(flags);
        free(partials);
        return CUA_ENOMEM;
    }
#pragma omp parallel num_threads(P)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        atomic_int *arrive = flags, *release = flags + P;
        team_partials(x, n, dtype, acc, cfg, partials, g.busy_blocks, t, nt);
        /* Release stores, acquire loads: the partials written before a flag
         * is raised are visible to whoever sees it raised. */
        unsigned spins = 0;
        atomic_store_explicit(&arrive[t], 1, memory_order_release);
        if (t == 0) {
            for (int i = 0; i < nt; i++)
                while (!atomic_load_explicit(&arrive[i], memory_order_acquire))
                    cua_cpu_relax(&spins); /* spin: thread i has not arrived */
            for (int i = 0; i < nt; i++) atomic_store_explicit(&release[i], 1, memory_order_release);
        }
        while (!atomic_load_explicit(&release[t], memory_order_acquire))
            cua_cpu_relax(&spins); /* spin: thread 0 has not seen everyone yet */
        if (t == 0 && !cfg->interrupted) total = add_in_order(partials, g.busy_blocks, acc);
    }
    free(flags);
    return partials_result(partials, total, acc, result, cfg);
}

static int sum_cooperative(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    cua_acc_t *partials = new_partials(g.busy_blocks);
    cua_acc_t total = {0};
    if (!partials) return CUA_ENOMEM;
#pragma omp parallel num_threads(g.team)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        team_partials(x, n, dtype, acc, cfg, partials, g.busy_blocks, t, nt);
        /* OpenMP's barrier orders memory too: every partial written before
         * it is visible to every thread after it. */
#pragma omp barrier
        if (t == 0 && !cfg->interrupted) total = add_in_order(partials, g.busy_blocks, acc);
    }
    return partials_result(partials, total, acc, result, cfg);
}

static int sum_last_block(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    const int64_t B = g.busy_blocks;
    cua_acc_t *partials = new_partials(B);
    cua_acc_t total = {0};
    if (!partials) return CUA_ENOMEM;
    _Atomic int64_t ticket = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t b = 0; b < B; b++) {
        if (cua_cpu_stop(cfg)) continue;
        partials[b] = cua_cpu_block_value(x, NULL, n, dtype, acc, cfg, b);
        /* acq_rel: the release publishes this partial with the ticket; the
         * acquire makes every earlier ticket-holder's partial visible to
         * whoever draws the last one. */
        if (atomic_fetch_add_explicit(&ticket, 1, memory_order_acq_rel) == B - 1)
            total = add_in_order(partials, B, acc);
    }
    return partials_result(partials, total, acc, result, cfg);
}

static int sum_vector(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_cpu_vector_reduce(x, NULL, n, dtype, acc, result, cfg);
}

static int sum_exact_global(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_global(x, NULL, n, dtype, result, cfg);
}

static int sum_exact_shared(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_shared(x, NULL, n, dtype, result, cfg);
}

static int sum_exact(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    (void)acc; /* the exact rungs write a cua_xacc, whatever the result type */
    return cua_cpu_exact_fast(x, NULL, n, dtype, result, cfg);
}

/* ----------------------------------------------------------- variant table */

static const cua_sum_row sum_rows[] = {
    {{"atomic", 1, "one atomic add per element (fetch_add; a CAS loop for floats)",
      CUA_F_ARRIVAL},
     sum_atomic},
    {{"cas", 2, "per-thread local sum, then an add built from a compare-exchange loop",
      CUA_F_ARRIVAL},
     sum_cas},
    {{"thread_local", 3, "local sum per logical thread, one atomic add each (fetch_add; for floats the CAS loop of cas)",
      CUA_F_ARRIVAL},
     sum_thread_local},
    {{"block_tree", 4, "a logical block's lanes combine in a tree (a loop on one OS thread), one atomic add per block",
      0},
     sum_block_tree},
    {{"grid_lock", 5, "block partials, a barrier of the OpenMP threads (not blocks) on one atomic counter, thread 0 adds them",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_grid_lock},
    {{"grid_flags", 6, "the same barrier lock-free: arrive and release flags per OpenMP thread",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_grid_flags},
    {{"cooperative", 7, "the same barrier as an OpenMP barrier",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_cooperative},
    {{"last_block", 8, "acq_rel ticket: whoever finishes last adds the partials",
      CUA_F_DETERMINISTIC},
     sum_last_block},
    {{"vector", 9, "a chunk per OpenMP thread in SIMD lanes (floats in compensated float64), chunks added in order: deterministic, as accurate as NumPy or better",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     sum_vector},
    {{"exact_global", 10, "exact: every value into one superaccumulator of integers with fetch_add on its words (cuda/xacc.h): the same bits in any order, but every thread queues on a few words",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact_global},
    {{"exact_shared", 11, "exact: one superaccumulator per logical block with plain adds (one OS thread runs a block: no atomics needed), one fetch_add per word per block",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact_shared},
    {{"exact", 12, "exact at SIMD speed: float64 expansions per lane kept error-free by TwoSum, a rare inexact residual to the thread's superaccumulator",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     sum_exact},
};
const cua_ladder cua_cpu_sum_ladder = CUA_LADDER(sum_rows);
