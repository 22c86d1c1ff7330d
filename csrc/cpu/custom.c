/* custom.c -- atomics built from compare-and-swap, on the CPU
 * (cuda/custom.cu tells the lesson; here the step says what it does on a
 * CPU, what it costs there, and how it differs from the GPU rung).
 *
 * prod: the product of all elements.
 *  1. cas  each logical thread multiplies its share (one contiguous chunk),
 *          then multiplies it into the total with a compare-exchange loop:
 *          read the cell, compute old * v, swap it in only if the cell still
 *          holds old, else retry with what is there now. Integers multiply
 *          modulo 2^64 (np.prod of intN wraps: the low bits are the same).
 *          Floats (CUA_F_WIDE: the caller passes a float64 accumulator for
 *          float32 and float64) are multiplied with compensation: every
 *          multiplication's exact rounding error comes from an FMA, as a
 *          relative error, and the relative errors -- of the threads' own
 *          products and of each successful compare-exchange -- are summed
 *          into a second cell, with a CAS loop where the GPU has atomicAdd
 *          for doubles. The total is corrected once at the end: total * (1 +
 *          sum of relative errors), which leaves about one rounding instead
 *          of one per element. A failed exchange retries at once, without
 *          the GPU's backoff: a few OS threads rarely collide.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

/* *r = p * x rounded, and the rounding error relative to *r (exact up to
 * its own rounding). Zero, infinite, NaN and subnormal products carry no
 * usable relative error: they contribute none. */
static inline double mul_rel(double p, double x, double *r)
{
    *r = p * x;
    return isnormal(*r) ? __builtin_fma(p, x, -*r) / *r : 0.0;
}

/* `cas` on integers: the product modulo 2^64 in one cell. */
static int prod_cas_integer(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg,
                            const cua_grid *g)
{
    cua_acc_t one = {.i = 1};
    _Atomic uint64_t cell = cua_cpu_cell_bits(acc, one);
#pragma omp parallel for schedule(static) num_threads(g->team)
    for (int64_t w = 0; w < g->busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g->workers, w, &lo, &hi);
        cua_cpu_cas_mul(acc, &cell, cua_cpu_chunk_prod(x, dtype, acc, lo, hi));
    }
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_CPU_DONE(cfg);
}

/* `cas` on floats: the product in one cell, its summed relative rounding
 * errors in another, one correction at the end. */
static int prod_cas_compensated(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg,
                                const cua_grid *g)
{
    const double one = 1.0;
    uint64_t bits;
    memcpy(&bits, &one, sizeof bits);
    _Atomic uint64_t cell = bits, rel_cell = 0; /* the product, and the summed relative errors (0.0) */
#pragma omp parallel for schedule(static) num_threads(g->team)
    for (int64_t w = 0; w < g->busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g->workers, w, &lo, &hi);
        double p = 1.0, rel = 0.0;
        for (int64_t i = lo; i < hi; i++) rel += mul_rel(p, cua_cpu_load(x, dtype, CUA_ACC_FLOAT64, i).d, &p);
        /* The CAS multiply, keeping the rounding error of the product that
         * was swapped in (a failed attempt's error is recomputed). */
        uint64_t old = atomic_load_explicit(&cell, memory_order_relaxed), next;
        double err;
        do {
            double o, r;
            memcpy(&o, &old, sizeof o);
            err = mul_rel(o, p, &r);
            memcpy(&next, &r, sizeof next);
        } while (!atomic_compare_exchange_weak_explicit(&cell, &old, next, memory_order_relaxed,
                                                        memory_order_relaxed));
        cua_acc_t e = {0};
        e.d = rel + err;
        cua_cpu_cas_add(CUA_ACC_FLOAT64, &rel_cell, e);
    }
    double total, rel;
    bits = atomic_load(&cell);
    memcpy(&total, &bits, sizeof total);
    bits = atomic_load(&rel_cell);
    memcpy(&rel, &bits, sizeof rel);
    /* total * (1 + rel); a zero (of either sign), infinite or subnormal
     * total has no relative error to correct, and keeps its sign. */
    if (isnormal(total) && isfinite(rel)) total = __builtin_fma(total, rel, total);
    cua_acc_t r = {0};
    if (acc == CUA_ACC_FLOAT32) r.f = (float)total;
    else r.d = total;
    cua_cpu_store_result(acc, r, result);
    return CUA_CPU_DONE(cfg);
}

static int prod_cas(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    if (acc == CUA_ACC_INT64) return prod_cas_integer(x, n, dtype, acc, result, cfg, &g);
    return prod_cas_compensated(x, n, dtype, acc, result, cfg, &g);
}

static const cua_prod_row prod_rows[] = {
    {{"cas", 1, "per-thread local product, multiplied into the total by a compare-exchange loop; floats compensated",
      CUA_F_WIDE},
     prod_cas},
};
const cua_ladder cua_cpu_prod_ladder = CUA_LADDER(prod_rows);
