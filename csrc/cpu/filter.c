/* filter.c -- stream compaction on the CPU (see cuda/filter.cu).
 *
 *  1. atomic   push_back: the old value of fetch_add on a shared counter is
 *              the output slot. Unordered.
 *  2. ordered  count per logical block, exclusive scan of the counts, then
 *              each block copies its keepers to its offset. Keeps order.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static int filter_atomic(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                         cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t W = cfg->blocks * cfg->threads;
    const size_t size = cua_dtype_size(dtype);
    _Atomic int64_t next = 0;
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < W; w++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, w, &lo, &hi);
        for (int64_t i = lo; i < hi; i++)
            if (cua_cpu_keep(x, dtype, pred, i)) {
                int64_t slot = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
                memcpy((char *)out + slot * size, (const char *)x + i * size, size);
            }
    }
    *count = atomic_load(&next);
    return CUA_OK;
}

static int filter_ordered(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                          cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cfg->blocks;
    const size_t size = cua_dtype_size(dtype);
    int64_t *offsets = malloc((size_t)B * sizeof *offsets);
    if (!offsets) return CUA_ENOMEM;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; b++) {
        int64_t lo, hi;
        cua_cpu_share(n, B, b, &lo, &hi);
        offsets[b] = cua_cpu_chunk_count(x, dtype, pred, lo, hi);
    }
    int64_t total = 0;
    for (int64_t b = 0; b < B; b++) { /* exclusive scan: where each block's keepers start */
        int64_t c = offsets[b];
        offsets[b] = total;
        total += c;
    }
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; b++) {
        int64_t lo, hi;
        cua_cpu_share(n, B, b, &lo, &hi);
        cua_cpu_chunk_compact(x, dtype, pred, lo, hi, (char *)out + offsets[b] * size);
    }
    free(offsets);
    *count = total;
    return CUA_OK;
}

const cua_variant cua_cpu_filter_variants[] = {
    {"atomic", 1, "push_back: fetch_add's old value is the output slot (unordered)", 0, (cua_fn)filter_atomic},
    {"ordered", 2, "count per block, scan, copy to offsets: keeps input order", CUA_F_ORDERED | CUA_F_DEFAULT,
     (cua_fn)filter_ordered},
};
const int cua_cpu_filter_nvariants = sizeof cua_cpu_filter_variants / sizeof cua_cpu_filter_variants[0];
