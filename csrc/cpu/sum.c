/* sum.c -- the sum ladder on the CPU (see cuda/sum.cu for the lesson).
 *
 *  1. atomic       every element added to one shared cell atomically
 *                  (fetch_add for integers, a CAS loop for floats: the CPU
 *                  has no atomic float add).
 *  2. cas          each logical thread sums its share, then adds it with a
 *                  CAS loop.
 *  3. thread_local each logical thread sums its share, then one atomic add.
 *  4. block_tree   a logical block's lanes combine in a tree, one atomic add
 *                  per block.
 *  5. grid_lock    block partials, then a barrier of the OpenMP team on one
 *                  atomic counter; thread 0 adds the partials in order.
 *  6. grid_flags   the same barrier with per-thread arrive/release flags.
 *  7. cooperative  the same barrier as `#pragma omp barrier`.
 *  8. last_block   block partials and an acq_rel ticket; whoever takes the
 *                  last ticket adds the partials.
 *  9. vector       one contiguous chunk per thread, summed in independent
 *                  lanes the compiler vectorizes; chunk sums added in order.
 *                  Floats are summed as accurately as NumPy's pairwise sum
 *                  or better (CUA_F_WIDE: float64 lanes with TwoSum
 *                  compensation; see vector.c).
 * All team threads of OpenMP run at once, so the barrier rungs have no
 * residency limit here: any number of logical blocks works.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

enum { ATOMIC, CAS, THREAD_LOCAL, BLOCK_TREE, GRID_LOCK, GRID_FLAGS, COOPERATIVE, LAST_BLOCK };

static int sum_accumulate(int rung, const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t T = cfg->threads, W = cfg->blocks * T;
    const int64_t busy = cua_cpu_busy(n, W), busy_blocks = (busy + T - 1) / T;
    _Atomic uint64_t cell = 0;
    if (rung == BLOCK_TREE) {
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < busy_blocks; b++)
            if (!cua_cpu_stop(cfg))
                cua_cpu_atomic_add(acc, &cell, cua_cpu_block_value(x, NULL, n, dtype, acc, cfg, b));
    } else {
#pragma omp parallel for schedule(static)
        for (int64_t w = 0; w < busy; w++) {
            if (cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, W, w, &lo, &hi);
            if (rung == ATOMIC) {
                CUA_CPU_PIECES(cfg, lo, hi, a, b)
                for (int64_t i = a; i < b; i++) cua_cpu_atomic_add(acc, &cell, cua_cpu_load(x, dtype, acc, i));
            } else if (lo < hi) {
                cua_acc_t local = cua_cpu_chunk_sum(x, dtype, acc, lo, hi);
                if (rung == CAS) cua_cpu_cas_add(acc, &cell, local);
                else cua_cpu_atomic_add(acc, &cell, local);
            }
        }
    }
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_CPU_DONE(cfg);
}

static cua_acc_t add_in_order(const cua_acc_t *partials, int64_t B, int acc)
{
    cua_acc_t total = {0};
    for (int64_t b = 0; b < B; b++) cua_acc_add(acc, &total, partials[b]);
    return total;
}

/* Logical blocks with at least one element: the others add nothing. */
static int64_t busy_blocks(const cua_launch *cfg, int64_t n)
{
    const int64_t T = cfg->threads;
    return (cua_cpu_busy(n, cfg->blocks * T) + T - 1) / T;
}

static int sum_barrier(int rung, const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = busy_blocks(cfg, n);
    const int P = cua_cpu_threads();
    cua_acc_t *partials = malloc((size_t)(B > 0 ? B : 1) * sizeof *partials);
    atomic_int *flags = calloc(2 * (size_t)P, sizeof *flags); /* arrive[P], release[P] */
    if (!partials || !flags) {
        free(partials);
        free(flags);
        return CUA_ENOMEM;
    }
    atomic_int arrived = 0;
    cua_acc_t total = {0};
#pragma omp parallel num_threads(P)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        for (int64_t b = t; b < B; b += nt)
            if (!cua_cpu_stop(cfg)) partials[b] = cua_cpu_block_value(x, NULL, n, dtype, acc, cfg, b);
        if (rung == GRID_LOCK) {
            /* Release: our partials are published before our arrival is
             * counted. Acquire: once all arrived, everyone's partials are
             * visible to us. */
            unsigned spins = 0;
            atomic_fetch_add_explicit(&arrived, 1, memory_order_release);
            while (atomic_load_explicit(&arrived, memory_order_acquire) < nt)
                cua_cpu_relax(&spins); /* spin: wait for the team */
        } else if (rung == GRID_FLAGS) {
            atomic_int *arrive = flags, *release = flags + P;
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
        } else {
#pragma omp barrier
        }
        if (t == 0 && !cfg->interrupted) total = add_in_order(partials, B, acc);
    }
    free(partials);
    free(flags);
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

static int sum_last_block(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = busy_blocks(cfg, n);
    cua_acc_t *partials = malloc((size_t)(B > 0 ? B : 1) * sizeof *partials);
    if (!partials) return CUA_ENOMEM;
    _Atomic int64_t ticket = 0;
    cua_acc_t total = {0};
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; b++) {
        if (cua_cpu_stop(cfg)) continue;
        partials[b] = cua_cpu_block_value(x, NULL, n, dtype, acc, cfg, b);
        /* acq_rel: the release publishes this partial with the ticket; the
         * acquire makes every earlier ticket-holder's partial visible to
         * whoever draws the last one. */
        if (atomic_fetch_add_explicit(&ticket, 1, memory_order_acq_rel) == B - 1)
            total = add_in_order(partials, B, acc);
    }
    free(partials);
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

static int sum_vector(const void *x, int64_t n, int d, int a, void *r, cua_launch *c)
{
    return cua_cpu_vector_reduce(x, NULL, n, d, a, r, c);
}

#define SUM_ACC(R) \
    static int sum_##R(const void *x, int64_t n, int d, int a, void *r, cua_launch *c) { return sum_accumulate(R, x, n, d, a, r, c); }
#define SUM_BAR(R) \
    static int sum_##R(const void *x, int64_t n, int d, int a, void *r, cua_launch *c) { return sum_barrier(R, x, n, d, a, r, c); }
SUM_ACC(ATOMIC)
SUM_ACC(CAS)
SUM_ACC(THREAD_LOCAL)
SUM_ACC(BLOCK_TREE)
SUM_BAR(GRID_LOCK)
SUM_BAR(GRID_FLAGS)
SUM_BAR(COOPERATIVE)

static const cua_sum_row sum_rows[] = {
    {{"atomic", 1, "one atomic add per element (fetch_add; a CAS loop for floats)",
      0},
     sum_ATOMIC},
    {{"cas", 2, "per-thread local sum, then an add built from a compare-exchange loop",
      0},
     sum_CAS},
    {{"thread_local", 3, "local sum per logical thread, one atomic add each",
      0},
     sum_THREAD_LOCAL},
    {{"block_tree", 4, "lanes of a logical block combine in a tree, one atomic add per block",
      0},
     sum_BLOCK_TREE},
    {{"grid_lock", 5, "block partials, team barrier on one atomic counter, thread 0 adds them",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_GRID_LOCK},
    {{"grid_flags", 6, "the same barrier lock-free: per-thread arrive and release flags",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_GRID_FLAGS},
    {{"cooperative", 7, "the same barrier as an OpenMP barrier",
      CUA_F_RESIDENT | CUA_F_DETERMINISTIC},
     sum_COOPERATIVE},
    {{"last_block", 8, "acq_rel ticket: whoever finishes last adds the partials",
      CUA_F_DETERMINISTIC},
     sum_last_block},
    {{"vector", 9, "a chunk per thread in SIMD lanes (floats in compensated float64), chunks added in order: deterministic, as accurate as NumPy or better",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     sum_vector},
};
const cua_ladder cua_cpu_sum_ladder = CUA_LADDER(sum_rows);
