/* vector.c -- the `vector` rung shared by sum and dot (as cuda/vector.cuh
 * is): the reduction at the speed of the memory system and the cores' SIMD
 * units.
 *
 * One contiguous chunk per OpenMP thread, summed in independent SIMD lanes
 * (an x86-64-v3 clone, AVX2 and FMA, where the CPU has them): integers in
 * 64-bit lanes, floats in float64 lanes with compensation (CUA_F_WIDE); the
 * chunks' values added in chunk order by the calling thread after the team
 * has finished: deterministic for a given team size. Where the GPU rung
 * keeps 16-byte loads in flight, reduces warps with shuffles and lets the
 * last block add the partials, the CPU leans on the hardware prefetcher,
 * SIMD lanes and OpenMP's fork-join. Inputs of fewer than ONE_CHUNK_BELOW
 * elements are one chunk on the calling thread, as the GPU runs small
 * inputs in one block.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "typed.h"

/* The `vector` rungs' inner loop: LANES independent accumulators, which the
 * compiler keeps in SIMD registers (floats too: the lanes are separate sums,
 * so no reassociation is needed), added up in lane order at the end. On
 * x86-64 with GCC an x86-64-v3 clone (AVX2 and FMA) is chosen at load time
 * where the CPU has it. */
#define LANES 16
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_CLONES
#endif

/* EXPR is the term of element j. */
#define WIDE_LOOP(A, EXPR)                                                     \
    do {                                                                       \
        A lane[LANES] = {0}, s = 0;                                            \
        int64_t i = lo;                                                        \
        for (; i + LANES <= hi; i += LANES)                                    \
            for (int k = 0; k < LANES; k++) {                                  \
                const int64_t j = i + k;                                       \
                lane[k] += (EXPR);                                             \
            }                                                                  \
        for (int k = 0; k < LANES; k++) s += lane[k];                          \
        for (int64_t j = i; j < hi; j++) s += (EXPR);                          \
        memcpy(&r, &s, sizeof s);                                              \
    } while (0)

/* The `vector` rungs' float arithmetic (CUA_F_WIDE), as accurate as NumPy's
 * pairwise sum or better: float32 and float64 are accumulated in float64
 * lanes with compensation. TwoSum (Knuth) recovers the exact rounding error
 * of every addition, and for a float64 dot TwoProduct (an FMA) that of
 * every product (products of two float32 are exact in float64); the errors
 * are summed beside the sum and added once at the end. The result errs by
 * about one rounding plus n * 2^-106 * sum(|x|), whatever the
 * cancellation. */
#define TWO_SUM(s, c, x)                                 \
    do {                                                 \
        const __typeof__(s) t_ = (s) + (x), z_ = t_ - (s); \
        (c) += ((s) - (t_ - z_)) + ((x) - z_);           \
        (s) = t_;                                        \
    } while (0)

cua_dd cua_dd_add(cua_dd a, cua_dd b)
{
    TWO_SUM(a.s, a.c, b.s);
    a.c += b.c;
    return a;
}

/* Explicit vectors (GCC/Clang vector extensions): four 4-wide
 * accumulators, so that the compiler neither serializes the lanes nor
 * shuffles them (the Haswell clone runs them as AVX2 registers, the default
 * one as pairs of SSE2 registers). */
#define D4_LANES 4 /* lanes of a d4 and of an f4 */
typedef double d4 __attribute__((vector_size(D4_LANES * sizeof(double))));
typedef float f4 __attribute__((vector_size(D4_LANES * sizeof(float))));
#define DD_U 4 /* accumulators */
#define DD_STEP (D4_LANES * DD_U)

/* Loads and the product error are macros, not functions: a function that
 * takes or returns a 32-byte vector is compiled for the default (SSE2)
 * clone too, where such a vector travels by another calling convention than
 * in the AVX2 clone (GCC's -Wpsabi warning). These are only ever inlined;
 * as macros there is no call to have a convention at all. */
#define LOAD_D4(p) ({ d4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define LOAD_F4(p) ({ f4 v_; memcpy(&v_, (p), sizeof v_); __builtin_convertvector(v_, d4); })
/* a * b - fl(a * b), exactly: lane by lane FMAs (vector FMAs where the
 * clone has them). */
#define PRODUCT_ERROR(a, b, p)                                  \
    ({                                                          \
        d4 e_;                                                  \
        for (int l_ = 0; l_ < D4_LANES; l_++)                   \
            e_[l_] = __builtin_fma((a)[l_], (b)[l_], -(p)[l_]); \
        e_;                                                     \
    })

WIDE_CLONES
static cua_dd wide_dd(const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    d4 s[DD_U] = {{0}}, c[DD_U] = {{0}};
    int64_t i = lo;
    if (dtype == CUA_FLOAT32) { /* float64 lanes; products of floats are exact there */
        const float *p = a, *q = b;
        if (q)
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 xy = LOAD_F4(p + i + D4_LANES * u) * LOAD_F4(q + i + D4_LANES * u);
                    TWO_SUM(s[u], c[u], xy);
                }
        else
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 x = LOAD_F4(p + i + D4_LANES * u);
                    TWO_SUM(s[u], c[u], x);
                }
        for (; i < hi; i++) {
            const double x = q ? (double)p[i] * (double)q[i] : (double)p[i];
            TWO_SUM(s[0][0], c[0][0], x);
        }
    } else {
        const double *p = a, *q = b;
        if (q)
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 x = LOAD_D4(p + i + D4_LANES * u), y = LOAD_D4(q + i + D4_LANES * u), xy = x * y;
                    c[u] += PRODUCT_ERROR(x, y, xy);
                    TWO_SUM(s[u], c[u], xy);
                }
        else
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 x = LOAD_D4(p + i + D4_LANES * u);
                    TWO_SUM(s[u], c[u], x);
                }
        for (; i < hi; i++) {
            const double x = q ? p[i] * q[i] : p[i];
            if (q) c[0][0] += __builtin_fma(p[i], q[i], -x);
            TWO_SUM(s[0][0], c[0][0], x);
        }
    }
    cua_dd r = {0, 0};
    for (int u = 0; u < DD_U; u++)
        for (int l = 0; l < D4_LANES; l++) r = cua_dd_add(r, (cua_dd){s[u][l], c[u][l]});
    return r;
}

/* Integers (acc CUA_ACC_INT64) and integers converted to float64: the float
 * data of the `vector` rungs goes through chunk_dd. */
WIDE_CLONES
static cua_acc_t chunk_wide(const void *a, const void *b, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define WIDE_CASE(ID, T, K)                                                                         \
    case ID: {                                                                                      \
        const T *p = (const T *)a, *q = (const T *)b;                                               \
        if (b) {                                                                                    \
            if (acc == CUA_ACC_INT64) WIDE_LOOP(uint64_t, (uint64_t)p[j] * (uint64_t)q[j]);         \
            else WIDE_LOOP(double, (double)p[j] * (double)q[j]);                                    \
        } else {                                                                                    \
            if (acc == CUA_ACC_INT64) WIDE_LOOP(uint64_t, (uint64_t)p[j]);                          \
            else WIDE_LOOP(double, (double)p[j]);                                                   \
        }                                                                                           \
        break;                                                                                      \
    }
        CUA_CPU_TYPES(WIDE_CASE)
    default: break;
    }
    return r;
}

/* The compensated float64 sum of float x[lo:hi] (segmented.c's rows). */
cua_dd cua_cpu_float_sum_dd(const void *x, int dtype, int64_t lo, int64_t hi) { return wide_dd(x, NULL, dtype, lo, hi); }

static cua_dd chunk_dd(const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    if (dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64) return wide_dd(a, b, dtype, lo, hi);
    cua_acc_t r = chunk_wide(a, b, dtype, CUA_ACC_FLOAT64, lo, hi); /* integers: exact enough */
    return (cua_dd){r.d, 0};
}

/* One chunk of the `vector` rungs, walked in pieces (Ctrl-C is asked
 * between them): integers in 64-bit lanes, floats compensated. */
static void vector_chunk(const void *a, const void *b, int64_t lo, int64_t hi, int dtype, int acc,
                         cua_launch *cfg, cua_acc_t *total, cua_dd *dd)
{
    CUA_CPU_PIECES(cfg, lo, hi, p, q) {
        if (acc == CUA_ACC_INT64) cua_acc_add(acc, total, chunk_wide(a, b, dtype, acc, p, q));
        else *dd = cua_dd_add(*dd, chunk_dd(a, b, dtype, p, q));
    }
}

/* Inputs of fewer elements are one chunk, summed by the calling thread:
 * waking the team would cost more than it saves. */
#define ONE_CHUNK_BELOW ((int64_t)1 << 15)

/* Shared with dot.c's `vector` rung. Integers in 16 SIMD lanes of 64 bits;
 * floats as chunk_dd computes them (CUA_F_WIDE), the chunks' values
 * and error terms added in chunk order, rounded once at the end (or, with
 * cfg->result.pair, written unrounded). */
int cua_cpu_vector_reduce(const void *a, const void *b, int64_t n, int dtype, int acc, void *result,
                          cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_CHUNK_BELOW ? 1 : cua_cpu_threads();
    cfg->used_threads = cfg->threads = LANES; /* a block's threads are the lanes of chunk_wide */
    cua_cpu_clamp_grid(cfg, n, (int64_t)LANES * CUA_CPU_MIN_SHARE);
    const int64_t B = cfg->blocks, busy = cua_cpu_busy(n, B);
    const int team = cua_cpu_team(cfg, n, busy);
    cua_acc_t total = {0};
    cua_dd dd = {0, 0};
    if (busy <= 1) {
        vector_chunk(a, b, 0, n, dtype, acc, cfg, &total, &dd);
    } else {
        cua_acc_t *partials = calloc((size_t)busy, sizeof *partials);
        cua_dd *dds = calloc((size_t)busy, sizeof *dds);
        if (!partials || !dds) {
            free(partials);
            free(dds);
            return CUA_ENOMEM;
        }
#pragma omp parallel for schedule(static) num_threads(team)
        for (int64_t k = 0; k < busy; k++) {
            int64_t lo, hi;
            cua_cpu_share(n, B, k, &lo, &hi);
            vector_chunk(a, b, lo, hi, dtype, acc, cfg, &partials[k], &dds[k]);
        }
        for (int64_t k = 0; k < busy; k++) {
            cua_acc_add(acc, &total, partials[k]);
            dd = cua_dd_add(dd, dds[k]);
        }
        free(partials);
        free(dds);
    }
    if (acc == CUA_ACC_FLOAT64 && cfg->result.pair) {
        memcpy(result, &dd, sizeof dd);
        return CUA_CPU_DONE(cfg);
    }
    if (acc == CUA_ACC_FLOAT32) total.f = (float)cua_dd_value(dd);
    else if (acc == CUA_ACC_FLOAT64) total.d = cua_dd_value(dd);
    cua_cpu_store_result(acc, total, result);
    return CUA_CPU_DONE(cfg);
}
