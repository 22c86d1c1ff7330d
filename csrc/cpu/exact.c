/* exact.c -- the CPU twins of the exact rungs of sum and dot (cuda/exact.cu):
 * the exact sum of values of any dtype (of the exact products a[i]*b[i];
 * integers at weight 2^0) in a superaccumulator of integers (cuda/xacc.h),
 * rounded once by the caller. Integer addition is associative, so the
 * result is the same for any team size, blocks, threads or order.
 *
 *  exact_global  every element's term added to one shared superaccumulator
 *                with atomic fetch_add on its 3 (products: 5) words: the
 *                lesson -- every thread queues on the same few words.
 *  exact_shared  one superaccumulator per logical block, plain adds by the
 *                one OS thread that runs the block (a CPU block needs no
 *                atomics where the GPU's shared memory does), merged into
 *                the shared one with one fetch_add per nonzero word.
 *  exact         the fast rung: per OpenMP thread, SIMD lanes of float64
 *                expansions kept exact by error-free TwoSum (and TwoProduct,
 *                an FMA, for float64 products); a rounding error that the
 *                expansion cannot hold exactly -- rare for ordinary data --
 *                goes into the thread's superaccumulator at once, and the
 *                lanes go in at the end. Non-finite data, overflow of a lane
 *                and products too small for TwoProduct are caught and
 *                summed term by term instead. Integers, which have no
 *                rounding error to carry, are summed as they are in 128-bit
 *                registers (the GPU's 64-bit digit sums): a few terms per
 *                range into the superaccumulator instead of one per element.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

/* A superaccumulator that OpenMP threads add to at once. */
typedef struct {
    _Atomic int64_t w[CUA_XACC_WORDS];
    _Atomic uint64_t special;
} xacc_atomic;

static void xacc_atomic_clear(xacc_atomic *acc)
{
    for (int k = 0; k < CUA_XACC_WORDS; k++) atomic_init(&acc->w[k], 0);
    atomic_init(&acc->special, 0);
}

/* Relaxed: only the sum matters, read after the team has joined. C11's
 * signed fetch_add wraps in two's complement, as the GPU's atomicAdd. */
static void xacc_atomic_add_term(xacc_atomic *acc, const cua_xacc_term *t)
{
    for (int i = 0; i < t->ndigits; i++) {
        const int64_t d = (int64_t)t->digits[i];
        atomic_fetch_add_explicit(&acc->w[t->k + i], t->negative ? -d : d, memory_order_relaxed);
    }
    if ((atomic_load_explicit(&acc->special, memory_order_relaxed) & t->special) != t->special)
        atomic_fetch_or_explicit(&acc->special, t->special, memory_order_relaxed);
}

static void xacc_atomic_merge(xacc_atomic *acc, const cua_xacc *part)
{
    for (int k = 0; k < CUA_XACC_WORDS; k++)
        if (part->w[k]) atomic_fetch_add_explicit(&acc->w[k], part->w[k], memory_order_relaxed);
    atomic_fetch_or_explicit(&acc->special, part->special, memory_order_relaxed);
}

static void xacc_atomic_read(xacc_atomic *acc, cua_xacc *out)
{
    for (int k = 0; k < CUA_XACC_WORDS; k++) out->w[k] = atomic_load(&acc->w[k]);
    out->special = atomic_load(&acc->special);
    cua_xacc_normalize(out);
}

/* The exact term of element i: a value, or the exact product of two;
 * integers exactly at weight 2^0. */
static inline cua_xacc_term term_at(const void *a, const void *b, int dtype, int64_t i)
{
    if (dtype == CUA_FLOAT32) {
        const float *p = a, *q = b;
        /* a product of two floats is exact in float64 (48 bits) */
        return cua_xacc_term_of(q ? (double)p[i] * (double)q[i] : (double)p[i]);
    }
    if (dtype == CUA_FLOAT64) {
        const double *p = a, *q = b;
        return q ? cua_xacc_product_of(p[i], q[i]) : cua_xacc_term_of(p[i]);
    }
    const int is_unsigned = dtype == CUA_BOOL || dtype == CUA_UINT8 || dtype == CUA_UINT16 || dtype == CUA_UINT32 ||
                            dtype == CUA_UINT64;
    const uint64_t x = cua_cpu_load(a, dtype, CUA_ACC_INT64, i).i; /* the value's 64 bits */
    const int nx = !is_unsigned && (int64_t)x < 0;
    const uint64_t mx = nx ? 0 - x : x;
    if (!b) return cua_xacc_term_of_int(mx, nx);
    const uint64_t y = cua_cpu_load(b, dtype, CUA_ACC_INT64, i).i;
    const int ny = !is_unsigned && (int64_t)y < 0;
    return cua_xacc_int_product(mx, ny ? 0 - y : y, nx ^ ny);
}

/* Elements [lo, hi) term by term into a private superaccumulator, which
 * takes at most CUA_XACC_PIECE terms per word between normalizations. */
static void terms_into(cua_xacc *acc, const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    for (int64_t p = lo; p < hi; p += CUA_XACC_PIECE) {
        const int64_t q = hi - p < CUA_XACC_PIECE ? hi : p + CUA_XACC_PIECE;
        for (int64_t i = p; i < q; i++) {
            const cua_xacc_term t = term_at(a, b, dtype, i);
            cua_xacc_add_term(acc, &t);
        }
        cua_xacc_normalize(acc);
    }
}

static int refuse_dtype(int dtype, cua_launch *cfg)
{
    if (cua_dtype_size(dtype)) return 0;
    snprintf(cfg->msg, sizeof cfg->msg, "dtype id %d", dtype);
    return CUA_EINTERNAL;
}

/* ------------------------------------------------------------ exact_global */

int cua_cpu_exact_global(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg)
{
    int st = refuse_dtype(dtype, cfg);
    if (st) return st;
    const cua_grid g = cua_cpu_grid(cfg, n);
    cua_xacc *out = result;
    memset(out, 0, sizeof *out);
    xacc_atomic *acc = malloc(sizeof *acc);
    if (!acc) return CUA_ENOMEM;
    /* A word takes at most CUA_XACC_PIECE adds between normalizations: the
     * input goes in pieces, each summed by the whole team, read and merged. */
    for (int64_t p = 0; p < n && !cua_cpu_stop(cfg); p += CUA_XACC_PIECE) {
        const int64_t m = n - p < CUA_XACC_PIECE ? n - p : CUA_XACC_PIECE;
        const int64_t busy = cua_cpu_busy(m, g.workers);
        const int team = cua_cpu_team(cfg, m, (busy + g.threads - 1) / g.threads);
        xacc_atomic_clear(acc);
#pragma omp parallel for schedule(static) num_threads(team)
        for (int64_t w = 0; w < busy; w++) {
            if (cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(m, g.workers, w, &lo, &hi);
            for (int64_t i = p + lo; i < p + hi; i++) {
                const cua_xacc_term t = term_at(a, b, dtype, i);
                xacc_atomic_add_term(acc, &t);
            }
        }
        cua_xacc piece;
        xacc_atomic_read(acc, &piece);
        cua_xacc_merge(out, &piece);
    }
    free(acc);
    return CUA_CPU_DONE(cfg);
}

/* ------------------------------------------------------------ exact_shared */

int cua_cpu_exact_shared(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg)
{
    int st = refuse_dtype(dtype, cfg);
    if (st) return st;
    cua_cpu_default_config(cfg, n);
    const int64_t blocks = cua_cpu_busy(n, cfg->blocks);
    const int team = cua_cpu_team(cfg, n, blocks);
    cua_xacc *out = result;
    memset(out, 0, sizeof *out);
    xacc_atomic *acc = malloc(sizeof *acc);
    if (!acc) return CUA_ENOMEM;
    xacc_atomic_clear(acc);
    /* The shared words take one add per block: far below CUA_XACC_PIECE. */
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t blk = 0; blk < blocks; blk++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, cfg->blocks, blk, &lo, &hi);
        cua_xacc mine;
        memset(&mine, 0, sizeof mine);
        terms_into(&mine, a, b, dtype, lo, hi);
        xacc_atomic_merge(acc, &mine);
    }
    xacc_atomic_read(acc, out);
    free(acc);
    return CUA_CPU_DONE(cfg);
}

/* ------------------------------------------------------------------- exact */

/* The fast rung's SIMD lanes: DD_U accumulators of D4 float64 lanes (the
 * x86-64-v3 clone runs them as AVX2 registers). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_CLONES
#endif
#define D4 4
/* Helpers the clone calls are inlined into it, and take vectors by
 * pointer or are macros: a function that takes or returns a 32-byte vector
 * by value is compiled for the default (SSE2) clone too, where the vector
 * would travel by another calling convention than in the AVX2 clone (GCC's
 * -Wpsabi warning, though no such call is ever made). */
#define LANE_FN static inline __attribute__((always_inline))
typedef double d4 __attribute__((vector_size(D4 * sizeof(double))));
typedef float f4 __attribute__((vector_size(D4 * sizeof(float))));
typedef int64_t i4 __attribute__((vector_size(D4 * sizeof(int64_t))));
#define DD_U 2
#define STEP (D4 * DD_U)

/* Knuth's TwoSum, lane by lane: s + x == s' + err exactly (no overflow). */
#define TWO_SUM(s, x, err)                               \
    do {                                                 \
        const d4 t_ = (s) + (x), z_ = t_ - (s);          \
        (err) = ((s) - (t_ - z_)) + ((x) - z_);          \
        (s) = t_;                                        \
    } while (0)

/* Whether any lane of the i4 mask m is set. */
#define ANY_LANE(m) ({ const i4 m_ = (m); (m_[0] | m_[1] | m_[2] | m_[3]) != 0; })

/* The lanes of v (D4 doubles, in memory) that are nonzero, each into acc
 * exactly. */
static void flush_lanes(cua_xacc *acc, const double *v)
{
    for (int l = 0; l < D4; l++)
        if (v[l] != 0) {
            const cua_xacc_term t = cua_xacc_term_of(v[l]);
            cua_xacc_add_term(acc, &t);
        }
}

/* One expansion per lane: s, its rounding errors c, and for float64 dot the
 * products' rounding errors e with their own errors ce. A value x enters
 * as TwoSum(s, x) -> err, TwoSum(c, err) -> residual; a residual that is
 * not zero (c could not hold err exactly) goes to acc at once. Every step
 * is error-free, so s + c + e + ce + acc is the exact sum so far -- unless
 * a lane overflowed or met inf/NaN, which the caller checks afterwards. */
typedef struct {
    d4 s[DD_U], c[DD_U], e[DD_U], ce[DD_U];
} lanes;

LANE_FN void lanes_add(lanes *L, int u, const d4 *x, cua_xacc *acc)
{
    d4 err, res;
    TWO_SUM(L->s[u], *x, err);
    TWO_SUM(L->c[u], err, res);
    if (ANY_LANE(res != 0)) flush_lanes(acc, (const double *)&res);
}

LANE_FN void lanes_add_error(lanes *L, int u, const d4 *e, cua_xacc *acc)
{
    d4 err, res;
    TWO_SUM(L->e[u], *e, err);
    TWO_SUM(L->ce[u], err, res);
    if (ANY_LANE(res != 0)) flush_lanes(acc, (const double *)&res);
}

/* Smallest |a*b| whose TwoProduct error is exact: at or above 2^-968 the
 * exact product's last bit is at or above 2^-1074 (see cua_xacc_product_of
 * for the rest). */
#define TWO_PRODUCT_MIN 0x1p-968

/* Whether every lane ended finite: else the chunk is summed term by term. */
static int lanes_finite(const lanes *L)
{
    for (int u = 0; u < DD_U; u++)
        for (int l = 0; l < D4; l++)
            if (!isfinite(L->s[u][l]) || !isfinite(L->c[u][l]) || !isfinite(L->e[u][l]) ||
                !isfinite(L->ce[u][l]))
                return 0;
    return 1;
}

static void lanes_into(cua_xacc *acc, const lanes *L)
{
    for (int u = 0; u < DD_U; u++) {
        flush_lanes(acc, (const double *)&L->s[u]);
        flush_lanes(acc, (const double *)&L->c[u]);
        flush_lanes(acc, (const double *)&L->e[u]);
        flush_lanes(acc, (const double *)&L->ce[u]);
    }
}

#define LOAD_D4(p) ({ d4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define LOAD_F4(p) ({ f4 v_; memcpy(&v_, (p), sizeof v_); __builtin_convertvector(v_, d4); })

/* Elements [lo, hi) into acc through the lanes; returns 0 when a lane
 * went non-finite (the caller then sums the range term by term). Flushed
 * residuals are few, but each adds to up to 3 words of acc: at most
 * 2 * (hi - lo) adds per word, so ranges stay below CUA_XACC_PIECE / 2. */
WIDE_CLONES
static int lanes_range(cua_xacc *acc, const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    lanes L;
    memset(&L, 0, sizeof L);
    int64_t i = lo;
    if (dtype == CUA_FLOAT32) {
        const float *p = a, *q = b;
        for (; i + STEP <= hi; i += STEP)
            for (int u = 0; u < DD_U; u++) {
                d4 x = LOAD_F4(p + i + D4 * u);
                if (q) x *= LOAD_F4(q + i + D4 * u); /* exact: 24 x 24 bits */
                lanes_add(&L, u, &x, acc);
            }
    } else {
        const double *p = a, *q = b;
        for (; i + STEP <= hi; i += STEP)
            for (int u = 0; u < DD_U; u++) {
                d4 x = LOAD_D4(p + i + D4 * u);
                if (!q) {
                    lanes_add(&L, u, &x, acc);
                    continue;
                }
                const d4 y = LOAD_D4(q + i + D4 * u);
                d4 xy = x * y, e;
                for (int l = 0; l < D4; l++) e[l] = __builtin_fma(x[l], y[l], -xy[l]);
                /* Lanes whose product is tiny (TwoProduct's error would
                 * underflow), zero from underflow, or not finite: their
                 * exact product goes to acc, and the lane adds zero. */
                const d4 mag = (d4)((i4)xy & INT64_MAX); /* |xy|, bit by bit */
                const i4 odd = ((mag < TWO_PRODUCT_MIN) & (x != 0) & (y != 0)) | (mag > DBL_MAX) | (mag != mag);
                if (ANY_LANE(odd))
                    for (int l = 0; l < D4; l++)
                        if (odd[l]) {
                            const cua_xacc_term t = cua_xacc_product_of(x[l], y[l]);
                            cua_xacc_add_term(acc, &t);
                            xy[l] = 0;
                            e[l] = 0;
                        }
                lanes_add(&L, u, &xy, acc);
                lanes_add_error(&L, u, &e, acc);
            }
    }
    if (!lanes_finite(&L)) return 0;
    lanes_into(acc, &L);
    terms_into(acc, a, b, dtype, i, hi); /* the tail */
    return 1;
}

#define LANES_RANGE ((int64_t)1 << 20)

/* Integers [lo, hi) -- values, or the exact products of two -- summed in
 * registers into acc: each term's 128 bits split into its low 64 bits,
 * summed unsigned, and the rest, summed signed (a product of two int64 is
 * below 2^126 in magnitude; of two uint64 below 2^128). Each sum takes
 * fewer than 2^63 parts below 2^64, so neither overflows; they go to acc
 * as two terms, at weights 2^0 and 2^64. */
static void ints_into(cua_xacc *acc, const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    const int is_unsigned = dtype == CUA_BOOL || dtype == CUA_UINT8 || dtype == CUA_UINT16 || dtype == CUA_UINT32 ||
                            dtype == CUA_UINT64;
    unsigned __int128 low = 0;
    __int128 high = 0;
    for (int64_t i = lo; i < hi; i++) {
        const uint64_t x = cua_cpu_load(a, dtype, CUA_ACC_INT64, i).i; /* the value's 64 bits */
        unsigned __int128 bits;
        if (!b) {
            bits = is_unsigned ? (unsigned __int128)x : (unsigned __int128)(__int128)(int64_t)x;
        } else {
            const uint64_t y = cua_cpu_load(b, dtype, CUA_ACC_INT64, i).i;
            bits = is_unsigned ? (unsigned __int128)x * y
                               : (unsigned __int128)((__int128)(int64_t)x * (int64_t)y);
        }
        low += (uint64_t)bits;
        high += is_unsigned ? (__int128)(bits >> 64) : (__int128)(int64_t)(uint64_t)(bits >> 64);
    }
    if (hi <= lo) return;
    const unsigned special = CUA_XACC_ANY | CUA_XACC_NOT_NEGZERO;
    const cua_xacc_term tl = cua_xacc_place((uint64_t)(low >> 64), (uint64_t)low, 0, 0, 5, special);
    cua_xacc_add_term(acc, &tl);
    const int negative = high < 0;
    const unsigned __int128 mag = negative ? (unsigned __int128)0 - (unsigned __int128)high : (unsigned __int128)high;
    const cua_xacc_term th = cua_xacc_place((uint64_t)(mag >> 64), (uint64_t)mag, 64, negative, 5, special);
    cua_xacc_add_term(acc, &th);
}

/* One OpenMP thread's chunk: ranges of LANES_RANGE elements through the
 * lanes (term by term where a lane went non-finite), normalized after
 * each, Ctrl-C asked between them. */
static void exact_chunk(cua_xacc *acc, const void *a, const void *b, int dtype, int64_t lo, int64_t hi,
                        cua_launch *cfg)
{
    for (int64_t p = lo; p < hi && !cua_cpu_stop(cfg); p += LANES_RANGE) {
        const int64_t q = hi - p < LANES_RANGE ? hi : p + LANES_RANGE;
        cua_xacc part;
        memset(&part, 0, sizeof part);
        const int floats = dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64;
        if (!floats) {
            ints_into(&part, a, b, dtype, p, q);
        } else if (!lanes_range(&part, a, b, dtype, p, q)) { /* a lane went non-finite: term by term */
            memset(&part, 0, sizeof part);
            terms_into(&part, a, b, dtype, p, q);
        } else {
            /* the lanes skipped the classification: set what the terms would */
            for (int64_t i = p; i < q && (part.special & CUA_XACC_NOT_NEGZERO) == 0; i++) {
                const cua_xacc_term t = term_at(a, b, dtype, i);
                part.special |= t.special;
            }
            part.special |= CUA_XACC_ANY;
        }
        cua_xacc_normalize(&part);
        cua_xacc_merge(acc, &part);
    }
}

/* Inputs below this are one chunk on the calling thread. */
#define ONE_CHUNK_BELOW ((int64_t)1 << 15)

int cua_cpu_exact_fast(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg)
{
    int st = refuse_dtype(dtype, cfg);
    if (st) return st;
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_CHUNK_BELOW ? 1 : cua_cpu_threads();
    cfg->used_threads = cfg->threads = STEP; /* a block's threads are its SIMD lanes */
    cua_cpu_clamp_grid(cfg, n, (int64_t)STEP * CUA_CPU_MIN_SHARE);
    const int64_t busy = cua_cpu_busy(n, cfg->blocks);
    const int team = cua_cpu_team(cfg, n, busy);
    cua_xacc *out = result;
    memset(out, 0, sizeof *out);
    if (team <= 1) {
        exact_chunk(out, a, b, dtype, 0, n, cfg);
        return CUA_CPU_DONE(cfg);
    }
    cua_xacc *parts = calloc((size_t)team, sizeof *parts);
    if (!parts) return CUA_ENOMEM;
#pragma omp parallel num_threads(team)
    {
        /* An OS thread's blocks are a run of consecutive blocks, as a static
         * schedule hands them out, and their shares one contiguous range:
         * summed at once into the thread's own superaccumulator. An exact
         * sum is the same in any grouping, and a superaccumulator per block
         * would cost a flush of the lanes, a normalization and a merge per
         * block. */
        const int t = omp_get_thread_num();
        int64_t lo, hi;
        cua_cpu_thread_range(n, cfg->blocks, busy, omp_get_num_threads(), t, &lo, &hi);
        if (lo < hi) exact_chunk(&parts[t], a, b, dtype, lo, hi, cfg);
    }
    for (int t = 0; t < team; t++) cua_xacc_merge(out, &parts[t]);
    free(parts);
    return CUA_CPU_DONE(cfg);
}
