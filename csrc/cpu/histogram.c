/* histogram.c -- the histogram ladder on the CPU (see cuda/histogram.cu).
 *
 *  1. global  every element's bin incremented with an atomic fetch_add on
 *             the shared counts: threads contend on popular bins (and the
 *             cache lines bounce between cores).
 *  2. shared  each logical block counts into a private histogram (one per
 *             OpenMP thread, reused across its blocks), then adds each bin
 *             to the shared counts with one atomic add per bin per block.
 *  3. warp_private  one private histogram per OpenMP thread (the CPU's
 *             warp) for the shares of all its logical blocks; merged at
 *             the end without atomics.
 *  4. thread_counters  as warp_private, counted into eight interleaved
 *             32-bit copies so that runs of one value (skewed text) do not
 *             serialize on one counter, branch-free (bytes: 8 per load and
 *             a bin table); copies flushed into the 64-bit result every
 *             2^22 elements, long before they can overflow.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
#endif

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "atomic counters must overlay plain ones");

/* Inputs of fewer elements are counted by one thread into one private
 * histogram by default: a team would spend longer starting and merging. */
#define ONE_BLOCK_BELOW ((int64_t)1 << 16)
/* thread_counters' interleaved copies (see cua_cpu_chunk_hist8). */
#define COPIES CUA_CPU_HIST_COPIES
/* Their 32-bit counters are flushed after every piece of a share: a piece
 * must be too short to overflow one. */
_Static_assert(CUA_CPU_PIECE <= UINT32_MAX, "a piece cannot overflow a 32-bit copy");

static int hist_global(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t W = cfg->blocks * cfg->threads, busy = cua_cpu_busy(n, W);
    _Atomic uint64_t *shared = (_Atomic uint64_t *)counts;
    memset(counts, 0, (size_t)bins->nbins * sizeof *counts);
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, W, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) {
            int64_t k = cua_cpu_bin(x, dtype, bins, i);
            if (k >= 0) atomic_fetch_add_explicit(&shared[k], 1, memory_order_relaxed);
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int hist_shared(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cua_cpu_busy(n, cfg->blocks), nb = bins->nbins; /* blocks with elements */
    _Atomic uint64_t *shared = (_Atomic uint64_t *)counts;
    int failed = 0;
    memset(counts, 0, (size_t)nb * sizeof *counts);
#pragma omp parallel
    {
        uint64_t *local = malloc((size_t)nb * sizeof *local);
        if (!local) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            if (!local || cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi); /* the block's logical threads' shares, together */
            memset(local, 0, (size_t)nb * sizeof *local);
            cua_cpu_chunk_hist(x, dtype, bins, lo, hi, local);
            for (int64_t k = 0; k < nb; k++)
                if (local[k]) atomic_fetch_add_explicit(&shared[k], local[k], memory_order_relaxed);
        }
        free(local);
    }
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

/* Rungs 3 and 4: each OpenMP thread counts the shares of its logical blocks
 * into its own buffer (memory: one histogram per OS thread, however many
 * logical blocks); the buffers are added into counts in thread order after
 * the team has finished. */
static int hist_private(int interleaved, const void *x, int64_t n, int dtype, const cua_bins *bins,
                        uint64_t *counts, cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_BLOCK_BELOW ? 1 : cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = 1;
    const int64_t B = cua_cpu_busy(n, cfg->blocks), nb = bins->nbins;
    const int P = B < cua_cpu_threads() ? (B > 0 ? (int)B : 1) : cua_cpu_threads(); /* a histogram per thread used */
    uint64_t *local = calloc((size_t)P * (size_t)nb, sizeof *local);
    if (!local) return CUA_ENOMEM;
    int failed = 0;
#pragma omp parallel num_threads(P)
    {
        uint64_t *mine = local + (size_t)omp_get_thread_num() * (size_t)nb;
        uint32_t *eight = interleaved ? malloc((size_t)(COPIES * (nb + 1)) * sizeof *eight) : NULL;
        if (interleaved && !eight) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            if ((interleaved && !eight) || cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
            /* The 32-bit copies are flushed after every piece (2^22
             * elements), long before they could overflow. */
            CUA_CPU_PIECES(cfg, lo, hi, start, stop) {
                if (!interleaved) {
                    cua_cpu_chunk_hist(x, dtype, bins, start, stop, mine);
                    continue;
                }
                memset(eight, 0, (size_t)(COPIES * (nb + 1)) * sizeof *eight);
                cua_cpu_chunk_hist8(x, dtype, bins, start, stop, eight);
                for (int64_t k = 0; k < nb; k++)
                    for (int c = 0; c < COPIES; c++) mine[k] += eight[COPIES * k + c];
            }
        }
        free(eight);
    }
    memset(counts, 0, (size_t)nb * sizeof *counts);
    for (int t = 0; t < P; t++)
        for (int64_t k = 0; k < nb; k++) counts[k] += local[(size_t)t * (size_t)nb + k];
    free(local);
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

static int hist_warp_private(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_private(0, x, n, d, b, c, cfg);
}

static int hist_thread_counters(const void *x, int64_t n, int d, const cua_bins *b, uint64_t *c, cua_launch *cfg)
{
    return hist_private(1, x, n, d, b, c, cfg);
}

/* Every CPU rung keeps its counts in heap memory: no bin count is too many
 * (beyond what malloc refuses, reported as MemoryError when it happens). */
static int hist_fits_any(int64_t nbins, int dtype, cua_launch *cfg)
{
    (void)nbins, (void)dtype, (void)cfg;
    return CUA_OK;
}

static const cua_hist_row histogram_rows[] = {
    {{"global", 1, "one atomic fetch_add on the shared counts per element",
      CUA_F_DETERMINISTIC},
     hist_global, hist_fits_any},
    {{"shared", 2, "private histogram per block, one atomic add per bin per block",
      CUA_F_DETERMINISTIC},
     hist_shared, hist_fits_any},
    {{"warp_private", 3, "a private histogram per thread for its whole share, merged without atomics",
      CUA_F_DETERMINISTIC},
     hist_warp_private, hist_fits_any},
    {{"thread_counters", 4, "eight interleaved 32-bit copies per thread, branch-free: runs of one value do not serialize",
      CUA_F_DETERMINISTIC},
     hist_thread_counters, hist_fits_any},
};
const cua_ladder cua_cpu_histogram_ladder = CUA_LADDER(histogram_rows);
