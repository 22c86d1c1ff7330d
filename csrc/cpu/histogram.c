/* histogram.c -- the histogram ladder on the CPU (see cuda/histogram.cu).
 *
 *  1. global  every element's bin incremented with an atomic fetch_add on
 *             the shared counts: threads contend on popular bins (and the
 *             cache lines bounce between cores).
 *  2. shared  each logical block counts into a private histogram (one per
 *             OpenMP thread, reused across its blocks), then adds each bin
 *             to the shared counts with one atomic add per bin per block.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "atomic counters must overlay plain ones");

static int hist_global(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t W = cfg->blocks * cfg->threads;
    _Atomic uint64_t *shared = (_Atomic uint64_t *)counts;
    memset(counts, 0, (size_t)bins->nbins * sizeof *counts);
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < W; w++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, w, &lo, &hi);
        for (int64_t i = lo; i < hi; i++) {
            int64_t k = cua_cpu_bin(x, dtype, bins, i);
            if (k >= 0) atomic_fetch_add_explicit(&shared[k], 1, memory_order_relaxed);
        }
    }
    return CUA_OK;
}

static int hist_shared(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cfg->blocks, nb = bins->nbins;
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
            if (!local) continue;
            int64_t lo, hi;
            cua_cpu_share(n, B, b, &lo, &hi); /* the block's logical threads' shares, together */
            memset(local, 0, (size_t)nb * sizeof *local);
            cua_cpu_chunk_hist(x, dtype, bins, lo, hi, local);
            for (int64_t k = 0; k < nb; k++)
                if (local[k]) atomic_fetch_add_explicit(&shared[k], local[k], memory_order_relaxed);
        }
        free(local);
    }
    return failed ? CUA_ENOMEM : CUA_OK;
}

const cua_variant cua_cpu_histogram_variants[] = {
    {"global", 1, "one atomic fetch_add on the shared counts per element", 0, (cua_fn)hist_global},
    {"shared", 2, "private histogram per block, one atomic add per bin per block", CUA_F_DEFAULT,
     (cua_fn)hist_shared},
};
const int cua_cpu_histogram_nvariants = sizeof cua_cpu_histogram_variants / sizeof cua_cpu_histogram_variants[0];
