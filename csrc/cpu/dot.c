/* dot.c -- the dot-product ladder on the CPU (see cuda/dot.cu).
 *
 *  1. partial  each logical block's value to its own slot; one thread adds
 *              the slots in order afterwards. No atomics, deterministic.
 *  2. mutex    each block's value added to the total under the CAS spin
 *              lock, with its fences.
 *  3. atomic   each block's value added atomically (fetch_add for integers;
 *              floats have no atomic add on the CPU, so a CAS loop).
 *  4. cas      each block's value added by a compare-exchange loop.
 *  5. vector   a chunk per thread in SIMD lanes, chunk values added in
 *              order (shared with sum.c); products made exact (float32
 *              in float64, float64 with an FMA) and summed in float64 with
 *              compensation (CUA_F_WIDE).
 */
#include <stdlib.h>

#include "cpu.h"

enum { PARTIAL, MUTEX, ATOMIC, CAS };

static int dot_run(int rung, const void *a, const void *b, int64_t n, int dtype, int acc, void *result,
                   cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t T = cfg->threads, B = (cua_cpu_busy(n, cfg->blocks * T) + T - 1) / T; /* blocks with elements */
    cua_acc_t total = {0};
    if (rung == PARTIAL) {
        cua_acc_t *partials = calloc((size_t)(B > 0 ? B : 1), sizeof *partials);
        if (!partials) return CUA_ENOMEM;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < B; k++)
            if (!cua_cpu_stop(cfg)) partials[k] = cua_cpu_block_value(a, b, n, dtype, acc, cfg, k);
        for (int64_t k = 0; k < B; k++) cua_acc_add(acc, &total, partials[k]);
        free(partials);
    } else if (rung == MUTEX) {
        atomic_int mutex = 0;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < B; k++) {
            if (cua_cpu_stop(cfg)) continue;
            cua_acc_t v = cua_cpu_block_value(a, b, n, dtype, acc, cfg, k);
            cua_cpu_lock(&mutex);
            cua_acc_add(acc, &total, v); /* plain read-modify-write: the lock makes it safe */
            cua_cpu_unlock(&mutex);
        }
    } else {
        _Atomic uint64_t cell = 0;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < B; k++) {
            if (cua_cpu_stop(cfg)) continue;
            cua_acc_t v = cua_cpu_block_value(a, b, n, dtype, acc, cfg, k);
            if (rung == ATOMIC) cua_cpu_atomic_add(acc, &cell, v);
            else cua_cpu_cas_add(acc, &cell, v);
        }
        total = cua_cpu_cell_value(acc, atomic_load(&cell));
    }
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}

#define DOT(R)                                                                                       \
    static int dot_##R(const void *a, const void *b, int64_t n, int d, int acc, void *r, cua_launch *c) \
    {                                                                                                \
        return dot_run(R, a, b, n, d, acc, r, c);                                                    \
    }
DOT(PARTIAL)
DOT(MUTEX)
DOT(ATOMIC)
DOT(CAS)

static int dot_vector(const void *a, const void *b, int64_t n, int d, int acc, void *r, cua_launch *c)
{
    return cua_cpu_vector_reduce(a, b, n, d, acc, r, c);
}

static const cua_dot_row dot_rows[] = {
    {{"partial", 1, "block values to their own slots, summed in order afterwards: deterministic",
      CUA_F_DETERMINISTIC},
     dot_PARTIAL},
    {{"mutex", 2, "block value added under the CAS spin lock, with fences",
      0},
     dot_MUTEX},
    {{"atomic", 3, "block value added atomically (fetch_add; CAS loop for floats)",
      0},
     dot_ATOMIC},
    {{"cas", 4, "block value added by a compare-exchange loop on the bit pattern",
      0},
     dot_CAS},
    {{"vector", 5, "a chunk per thread in SIMD lanes, floats in compensated float64 with exact products, chunks added in order: deterministic",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     dot_vector},
};
const cua_ladder cua_cpu_dot_ladder = CUA_LADDER(dot_rows);
