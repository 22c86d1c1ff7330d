/* weighted.c -- the weighted histogram ladder on the CPU (cuda/weighted.cu
 * tells the lesson; here each step says what it does on a CPU and how it
 * differs from the GPU rung of the same name). sums are float64, or int64
 * for integer weights (wrapping, as the GPU's); the bins are bins.c's.
 *
 *  1. global  every element's weight added to the shared sums with an
 *             atomic add: fetch_add for int64 weights; C11 has no atomic
 *             add of doubles (atomic_fetch_add takes integers only), so a
 *             float64 weight goes in by a compare-exchange loop on the
 *             sum's bits (cells.c's cua_cpu_atomic_add), the loop the GPU
 *             only needed before sm_60. Threads contend on popular bins and
 *             their cache lines bounce between cores.
 *  2. cas     the compare-exchange loop for every weight, int64 ones too
 *             (cells.c's cua_cpu_cas_add): read the sum, add, and swap the
 *             new bits in only if the sum still holds what was read, else
 *             retry with what the other thread wrote. For float64 weights
 *             this is what `global` does already: the CPU has nothing
 *             better to offer it.
 *  3. shared  each logical block sums its share into private sums, then
 *             adds each bin to the shared sums with one atomic add per bin
 *             per block. The block's threads run one after another on one
 *             OS thread, so the private adds are plain (the GPU's block
 *             shares them through 8-byte shared-memory CAS loops), and the
 *             private sums are a heap buffer per OpenMP thread, cleared for
 *             each of its blocks: no limit on bins.
 *  4. warp_private  private sums per OpenMP thread, not per warp (a warp's
 *             lanes would all run on that one thread), for the shares of all
 *             its logical blocks (by default one block per OpenMP thread),
 *             kept as WCOPIES interleaved copies while they fit in cache, so
 *             that a run of one value is WCOPIES independent chains of adds,
 *             not one chain of store-to-load dependencies (what skew costs a
 *             CPU); branch-free (values outside the bins go to a spare bin),
 *             bytes binned through a table. Merged after the team in thread
 *             and copy order, without atomics: the same bits every call for
 *             a given team.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
#endif

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(double), "atomic cells must overlay the sums");

/* Inputs of fewer elements are summed by one thread by default (warp_private):
 * a team would spend longer starting and merging. */
#define ONE_BLOCK_BELOW ((int64_t)1 << 16)
/* warp_private's interleaved copies per OpenMP thread, and the most bytes
 * they may take (about a core's L2): past that, one copy. */
#define WCOPIES CUA_CPU_WSUM_COPIES
#define WCOPIES_MAX_BYTES ((int64_t)256 << 10)

static int acc_of(int wdtype) { return wdtype == CUA_FLOAT64 ? CUA_ACC_FLOAT64 : CUA_ACC_INT64; }

/* The weight of element i (or a private sum) as an accumulator value: its
 * 64 bits are the double's or the int64's. */
static cua_acc_t bits_of(const void *w, int64_t i)
{
    cua_acc_t v;
    v.i = ((const uint64_t *)w)[i];
    return v;
}

/* Rungs 1 and 2: every weight added into the shared sums by `add`. */
static int per_element(cua_cell_add add, const void *x, const void *w, int64_t n, int dtype, int wdtype,
                       const cua_bins *bins, void *sums, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    const int acc = acc_of(wdtype);
    _Atomic uint64_t *cells = (_Atomic uint64_t *)sums;
    memset(sums, 0, (size_t)bins->nbins * sizeof(uint64_t));
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t wk = 0; wk < g.busy; wk++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, wk, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) {
            const int64_t k = cua_cpu_bin(x, dtype, bins, i);
            if (k >= 0) add(acc, &cells[k], bits_of(w, i));
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int whist_global(const void *x, const void *w, int64_t n, int dtype, int wdtype, const cua_bins *bins,
                        void *sums, cua_launch *cfg)
{
    return per_element(cua_cpu_atomic_add, x, w, n, dtype, wdtype, bins, sums, cfg);
}

static int whist_cas(const void *x, const void *w, int64_t n, int dtype, int wdtype, const cua_bins *bins,
                     void *sums, cua_launch *cfg)
{
    return per_element(cua_cpu_cas_add, x, w, n, dtype, wdtype, bins, sums, cfg);
}

static int whist_shared(const void *x, const void *w, int64_t n, int dtype, int wdtype, const cua_bins *bins,
                        void *sums, cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cua_cpu_busy(n, cfg->blocks), nb = bins->nbins; /* blocks with elements */
    const int team = cua_cpu_team(cfg, n, B);
    const int acc = acc_of(wdtype);
    _Atomic uint64_t *cells = (_Atomic uint64_t *)sums;
    int failed = 0;
    memset(sums, 0, (size_t)nb * sizeof(uint64_t));
#pragma omp parallel num_threads(team)
    {
        uint64_t *local = malloc((size_t)(nb + 1) * sizeof *local); /* + the spare bin */
        if (!local) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            if (!local || cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            /* The block's contiguous share, summed as one chunk: its
             * threads would run one after another here anyway. */
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
            memset(local, 0, (size_t)(nb + 1) * sizeof *local);
            cua_cpu_chunk_wsum(x, dtype, w, wdtype, bins, lo, hi, 1, local);
            for (int64_t k = 0; k < nb; k++)
                if (local[k]) cua_cpu_atomic_add(acc, &cells[k], bits_of(local, k));
        }
        free(local);
    }
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

static int whist_warp_private(const void *x, const void *w, int64_t n, int dtype, int wdtype, const cua_bins *bins,
                              void *sums, cua_launch *cfg)
{
    const int64_t nb = bins->nbins;
    const int copies = WCOPIES * (nb + 1) * (int64_t)sizeof(double) <= WCOPIES_MAX_BYTES ? WCOPIES : 1;
    const int64_t per_thread = copies * (nb + 1); /* sums of one OpenMP thread */
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_BLOCK_BELOW ? 1 : cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_threads = 1;
    cua_cpu_clamp_grid(cfg, n, CUA_CPU_MIN_SHARE);
    const int64_t blocks = cua_cpu_busy(n, cfg->blocks);
    const int team = cua_cpu_team(cfg, n, blocks);
    uint64_t *local = calloc((size_t)team * (size_t)per_thread, sizeof *local); /* zero bits: +0.0 or 0 */
    if (!local) return CUA_ENOMEM;
#pragma omp parallel num_threads(team)
    {
        uint64_t *mine = local + (size_t)omp_get_thread_num() * (size_t)per_thread;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; b++) {
            if (cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
            CUA_CPU_PIECES(cfg, lo, hi, start, stop)
            cua_cpu_chunk_wsum(x, dtype, w, wdtype, bins, start, stop, copies, mine);
        }
    }
    /* After the team: each bin's copies added in thread, then copy, order. */
    if (wdtype == CUA_FLOAT64) {
        const double *p = (const double *)local;
        double *out = (double *)sums;
        for (int64_t k = 0; k < nb; k++) {
            double s = 0.0;
            for (int t = 0; t < team; t++)
                for (int c = 0; c < copies; c++) s += p[(size_t)t * (size_t)per_thread + copies * k + c];
            out[k] = s;
        }
    } else {
        uint64_t *out = (uint64_t *)sums;
        for (int64_t k = 0; k < nb; k++) {
            uint64_t s = 0;
            for (int t = 0; t < team; t++)
                for (int c = 0; c < copies; c++) s += local[(size_t)t * (size_t)per_thread + copies * k + c];
            out[k] = s;
        }
    }
    free(local);
    return CUA_CPU_DONE(cfg);
}

static const cua_whist_row weighted_rows[] = {
    {{"global", 1, "one atomic add of the weight per element: fetch_add for int64, a CAS loop for float64 (C11 has no atomic double add)",
      0},
     whist_global, cua_cpu_hist_fits_any},
    {{"cas", 2, "every weight added by an explicit compare-exchange loop on the sum's bits", 0},
     whist_cas, cua_cpu_hist_fits_any},
    {{"shared", 3, "private sums per block (plain adds: one OS thread runs a block), one atomic add per bin per block",
      0},
     whist_shared, cua_cpu_hist_fits_any},
    {{"warp_private", 4, "four interleaved private copies of the sums per OpenMP thread (not per warp), branch-free; merged in order without atomics",
      CUA_F_DETERMINISTIC},
     whist_warp_private, cua_cpu_hist_fits_any},
};
const cua_ladder cua_cpu_weighted_histogram_ladder = CUA_LADDER(weighted_rows);
