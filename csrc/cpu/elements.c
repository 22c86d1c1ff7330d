/* elements.c -- the typed inner loops of the CPU backend.
 *
 * The rung files (sum.c, dot.c, ...) hold the algorithms once, in terms of
 * these primitives; here each primitive is expanded for every element type
 * by CUA_CPU_TYPES, so the loops the rungs spend their time in are plain
 * typed loops the compiler vectorizes.
 */
#include <math.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* id, C type, member of cua_pred's union holding a bound of this type */
#define CUA_CPU_TYPES(X)          \
    X(CUA_BOOL, uint8_t, u)       \
    X(CUA_INT8, int8_t, i)        \
    X(CUA_UINT8, uint8_t, u)      \
    X(CUA_INT16, int16_t, i)      \
    X(CUA_UINT16, uint16_t, u)    \
    X(CUA_INT32, int32_t, i)      \
    X(CUA_UINT32, uint32_t, u)    \
    X(CUA_INT64, int64_t, i)      \
    X(CUA_UINT64, uint64_t, u)    \
    X(CUA_FLOAT32, float, f)      \
    X(CUA_FLOAT64, double, d)

int cua_cpu_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void cua_cpu_default_config(cua_launch *cfg, int64_t n)
{
    if (cfg->threads <= 0) cfg->threads = 32;
    if (cfg->blocks <= 0) {
        int64_t want = (n + cfg->threads - 1) / cfg->threads;
        int64_t cap = 4LL * cua_cpu_threads();
        cfg->blocks = want < 1 ? 1 : (want < cap ? want : cap);
    }
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
}

int64_t cua_cpu_busy(int64_t n, int64_t W)
{
    if (n <= 0 || W <= 0) return 0;
    const int64_t chunk = (n + W - 1) / W;
    return (n + chunk - 1) / chunk;
}

/* Polled at most this often (the caller's thread takes the GIL back for a
 * moment each time). */
#define POLL_NS 20000000LL

int cua_cpu_stop(cua_launch *cfg)
{
    if (__atomic_load_n(&cfg->interrupted, __ATOMIC_RELAXED)) return 1;
#ifdef _OPENMP
    if (omp_get_thread_num() != 0 || omp_get_level() > 1) return 0;
#endif
    if (!cfg->poll) return 0;
    static _Thread_local int64_t last;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (now - last < POLL_NS) return 0;
    last = now;
    if (!cfg->poll()) return 0;
    __atomic_store_n(&cfg->interrupted, 1, __ATOMIC_RELAXED);
    return 1;
}

void cua_cpu_share(int64_t n, int64_t W, int64_t w, int64_t *lo, int64_t *hi)
{
    int64_t chunk = (n + W - 1) / W;
    *lo = w * chunk < n ? w * chunk : n;
    *hi = *lo + chunk < n ? *lo + chunk : n;
}

/* ------------------------------------------------------------ accumulators */

#define LOAD_CASE(ID, T, K)                              \
    case ID: {                                           \
        T v = ((const T *)x)[i];                         \
        if (acc == CUA_ACC_INT64) r.i = (uint64_t)v;     \
        else if (acc == CUA_ACC_FLOAT32) r.f = (float)v; \
        else r.d = (double)v;                            \
        break;                                           \
    }

cua_acc_t cua_cpu_load(const void *x, int dtype, int acc, int64_t i)
{
    cua_acc_t r = {0};
    switch (dtype) {
        CUA_CPU_TYPES(LOAD_CASE)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_sum(const void *x, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define SUM_INTO_R(ID, T, K)                                                          \
    case ID: {                                                                        \
        const T *p = (const T *)x;                                                    \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 0;                                                           \
            for (int64_t i = lo; i < hi; i++) s += (uint64_t)p[i];                    \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 0;                                                              \
            for (int64_t i = lo; i < hi; i++) s += (float)p[i];                       \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 0;                                                             \
            for (int64_t i = lo; i < hi; i++) s += (double)p[i];                      \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(SUM_INTO_R)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_prod(const void *x, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define PROD_INTO_R(ID, T, K)                                                         \
    case ID: {                                                                        \
        const T *p = (const T *)x;                                                    \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 1;                                                           \
            for (int64_t i = lo; i < hi; i++) s *= (uint64_t)p[i];                    \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 1;                                                              \
            for (int64_t i = lo; i < hi; i++) s *= (float)p[i];                       \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 1;                                                             \
            for (int64_t i = lo; i < hi; i++) s *= (double)p[i];                      \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(PROD_INTO_R)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_dot(const void *a, const void *b, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define DOT_INTO_R(ID, T, K)                                                          \
    case ID: {                                                                        \
        const T *p = (const T *)a, *q = (const T *)b;                                 \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 0;                                                           \
            for (int64_t i = lo; i < hi; i++) s += (uint64_t)p[i] * (uint64_t)q[i];   \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 0;                                                              \
            for (int64_t i = lo; i < hi; i++) s += (float)p[i] * (float)q[i];         \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 0;                                                             \
            for (int64_t i = lo; i < hi; i++) s += (double)p[i] * (double)q[i];       \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(DOT_INTO_R)
    default: break;
    }
    return r;
}

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
typedef double d4 __attribute__((vector_size(32)));
typedef float f4 __attribute__((vector_size(16)));
#define DD_U 4 /* accumulators */
#define DD_STEP (4 * DD_U)

static inline d4 load_d4(const double *p)
{
    d4 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline d4 load_f4(const float *p)
{
    f4 v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, d4);
}
/* a * b - fl(a * b), exactly: lane by lane FMAs (vector FMAs where the
 * clone has them). */
static inline d4 product_error(d4 a, d4 b, d4 p)
{
    d4 e;
    for (int l = 0; l < 4; l++) e[l] = __builtin_fma(a[l], b[l], -p[l]);
    return e;
}

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
                    const d4 xy = load_f4(p + i + 4 * u) * load_f4(q + i + 4 * u);
                    TWO_SUM(s[u], c[u], xy);
                }
        else
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 x = load_f4(p + i + 4 * u);
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
                    const d4 x = load_d4(p + i + 4 * u), y = load_d4(q + i + 4 * u), xy = x * y;
                    c[u] += product_error(x, y, xy);
                    TWO_SUM(s[u], c[u], xy);
                }
        else
            for (; i + DD_STEP <= hi; i += DD_STEP)
                for (int u = 0; u < DD_U; u++) {
                    const d4 x = load_d4(p + i + 4 * u);
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
        for (int l = 0; l < 4; l++) r = cua_dd_add(r, (cua_dd){s[u][l], c[u][l]});
    return r;
}

cua_dd cua_cpu_chunk_dd(const void *a, const void *b, int dtype, int64_t lo, int64_t hi)
{
    if (dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64) return wide_dd(a, b, dtype, lo, hi);
    cua_acc_t r = cua_cpu_chunk_wide(a, b, dtype, CUA_ACC_FLOAT64, lo, hi); /* integers: exact enough */
    return (cua_dd){r.d, 0};
}

/* Integers (acc CUA_ACC_INT64) and integers converted to float64: the float
 * data of the `vector` rungs goes through cua_cpu_chunk_dd. */
WIDE_CLONES
cua_acc_t cua_cpu_chunk_wide(const void *a, const void *b, int dtype, int acc, int64_t lo, int64_t hi)
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

void cua_acc_add(int acc, cua_acc_t *s, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) s->i += v.i;
    else if (acc == CUA_ACC_FLOAT32) s->f += v.f;
    else s->d += v.d;
}

/* The cell holds the accumulator's bits: all 64 for integers and doubles,
 * the low 32 for floats. */
cua_acc_t cua_cpu_cell_value(int acc, uint64_t bits)
{
    cua_acc_t r = {0};
    if (acc == CUA_ACC_FLOAT32) {
        uint32_t w = (uint32_t)bits;
        memcpy(&r.f, &w, sizeof w);
    } else {
        r.i = bits;
    }
    return r;
}

static uint64_t cell_bits(int acc, cua_acc_t v)
{
    if (acc == CUA_ACC_FLOAT32) {
        uint32_t w;
        memcpy(&w, &v.f, sizeof w);
        return w;
    }
    return v.i;
}

static void acc_mul(int acc, cua_acc_t *s, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) s->i *= v.i;
    else if (acc == CUA_ACC_FLOAT32) s->f *= v.f;
    else s->d *= v.d;
}

/* Read, combine, and swap in the result only if the cell still holds what we
 * read; on failure `old` is refreshed with the value someone else wrote and
 * we retry. The comparison is of integer bits, never floats, so a NaN cannot
 * make the loop spin forever. */
static void cas_apply(int acc, _Atomic uint64_t *cell, cua_acc_t v, void (*combine)(int, cua_acc_t *, cua_acc_t))
{
    uint64_t old = atomic_load_explicit(cell, memory_order_relaxed), next;
    do {
        cua_acc_t s = cua_cpu_cell_value(acc, old);
        combine(acc, &s, v);
        next = cell_bits(acc, s);
    } while (!atomic_compare_exchange_weak_explicit(cell, &old, next, memory_order_relaxed,
                                                    memory_order_relaxed));
}

void cua_cpu_cas_add(int acc, _Atomic uint64_t *cell, cua_acc_t v) { cas_apply(acc, cell, v, cua_acc_add); }
void cua_cpu_cas_mul(int acc, _Atomic uint64_t *cell, cua_acc_t v) { cas_apply(acc, cell, v, acc_mul); }

uint64_t cua_cpu_cell_bits(int acc, cua_acc_t v) { return cell_bits(acc, v); }

void cua_cpu_atomic_add(int acc, _Atomic uint64_t *cell, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) atomic_fetch_add_explicit(cell, v.i, memory_order_relaxed);
    else cua_cpu_cas_add(acc, cell, v); /* no atomic float add on the CPU */
}

void cua_cpu_store_result(int acc, cua_acc_t v, void *result)
{
    if (acc == CUA_ACC_FLOAT32) memcpy(result, &v.f, sizeof v.f);
    else memcpy(result, &v.i, sizeof v.i);
}

/* ------------------------------------------------------------------- bins */

static inline int64_t bin_int(int64_t x, const cua_bins *b)
{
    int64_t d = x - b->ilo;
    if (d < 0 || d > b->iwidth * b->nbins) return -1;
    int64_t k = b->iwidth == 1 ? d : d / b->iwidth;
    return k < b->nbins ? k : b->nbins - 1; /* the last bin is closed */
}

/* Largest k with e[k] <= v, for e[0] <= v <= e[nbins]; see cuatomic_abi.h. */
#define DEFINE_BIN(NAME, E)                                                      \
    static inline int64_t NAME(E v, const cua_bins *b)                           \
    {                                                                            \
        const E *e = (const E *)b->edges;                                        \
        const int64_t nb = b->nbins;                                             \
        if (!(v >= e[0] && v <= e[nb])) return -1; /* outside, or NaN */        \
        int64_t k;                                                               \
        if (b->uniform) {                                                        \
            k = (int64_t)((double)(v - e[0]) * b->inv_width);                    \
            k = k < 0 ? 0 : (k > nb - 1 ? nb - 1 : k);                           \
            while (k > 0 && v < e[k]) --k;                                       \
            while (k < nb - 1 && v >= e[k + 1]) ++k;                             \
        } else {                                                                 \
            int64_t lo = 0, hi = nb - 1;                                         \
            while (lo < hi) {                                                    \
                int64_t mid = lo + (hi - lo + 1) / 2;                            \
                if (e[mid] <= v) lo = mid;                                       \
                else hi = mid - 1;                                               \
            }                                                                    \
            k = lo;                                                              \
        }                                                                        \
        return k;                                                                \
    }
DEFINE_BIN(bin_f32, float)
DEFINE_BIN(bin_f64, double)
DEFINE_BIN(bin_i64, int64_t) /* 64-bit integer data against integer edges: exact (never uniform) */
DEFINE_BIN(bin_u64, uint64_t)

/* Integer data of at most 32 bits converts to int64 exactly; only those take
 * the integer path (the host sets bins->integer only for them). */
#define BIN_OF(T, v, b)                                                                      \
    ((b)->integer && sizeof(T) <= 4 && (T)0.5 == 0 ? bin_int((int64_t)(v), (b))              \
     : (b)->edge_dtype == CUA_INT64              ? bin_i64((int64_t)(v), (b))                \
     : (b)->edge_dtype == CUA_UINT64             ? bin_u64((uint64_t)(v), (b))               \
     : (b)->edge_dtype == CUA_FLOAT32            ? bin_f32((float)(v), (b))                  \
                                                 : bin_f64((double)(v), (b)))

#define BIN_CASE(ID, T, K)                 \
    case ID: {                             \
        T v = ((const T *)x)[i];           \
        return BIN_OF(T, v, bins);         \
    }

int64_t cua_cpu_bin(const void *x, int dtype, const cua_bins *bins, int64_t i)
{
    switch (dtype) {
        CUA_CPU_TYPES(BIN_CASE)
    default: return -1;
    }
}

#define HIST_CASE(ID, T, K)                                  \
    case ID: {                                               \
        const T *p = (const T *)x;                           \
        for (int64_t i = lo; i < hi; i++) {                  \
            int64_t k = BIN_OF(T, p[i], bins);               \
            if (k >= 0) counts[k]++;                         \
        }                                                    \
        break;                                               \
    }

void cua_cpu_chunk_hist(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint64_t *counts)
{
    switch (dtype) {
        CUA_CPU_TYPES(HIST_CASE)
    default: break;
    }
}

/* The counting loop of `thread_counters`: element i goes to copy i % 8 of
 * eight interleaved 32-bit histograms (counts[8 * k + i % 8]), so a run of
 * equal values -- skewed text -- is eight independent chains of increments
 * instead of one chain of store-to-load dependencies. Values outside the
 * bins count into a spare bin nbins, so the loops have no branch to
 * mispredict on random data. Byte data reads 8 elements per load and finds
 * bins in a 256-entry table built with the same bin rule. counts holds
 * 8 * (nbins + 1) counters; at most 2^32 - 1 elements per call. */
#define HIST8_CASE(ID, T, K)                                                         \
    case ID: {                                                                       \
        const T *p = (const T *)x;                                                   \
        for (int64_t i = lo; i < hi; i++) {                                          \
            int64_t k = BIN_OF(T, p[i], bins);                                       \
            counts[8 * (k >= 0 ? k : bins->nbins) + (i & 7)]++;                      \
        }                                                                            \
        break;                                                                       \
    }

void cua_cpu_chunk_hist8(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint32_t *counts)
{
    if (cua_dtype_size(dtype) == 1 && bins->nbins < ((int64_t)1 << 28)) {
        uint32_t table[256]; /* byte value -> 8 * bin */
        for (int v = 0; v < 256; v++) {
            const uint8_t byte = (uint8_t)v;
            int64_t k = cua_cpu_bin(&byte, dtype, bins, 0);
            table[v] = (uint32_t)(8 * (k >= 0 ? k : bins->nbins));
        }
        const uint8_t *p = (const uint8_t *)x;
        int64_t i = lo;
        for (; i + 8 <= hi; i += 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            for (int k = 0; k < 8; k++) counts[table[(w >> (8 * k)) & 255] + k]++;
        }
        for (; i < hi; i++) counts[table[p[i]]]++;
        return;
    }
    switch (dtype) {
        CUA_CPU_TYPES(HIST8_CASE)
    default: break;
    }
}

/* ----------------------------------------------------------------- filter */

#define KEEP(T, K, v) ((((T)pred->lo.K <= (v)) && ((v) <= (T)pred->hi.K)) != (pred->negate != 0))

#define KEEP_CASE(ID, T, K)              \
    case ID: {                           \
        T v = ((const T *)x)[i];         \
        return KEEP(T, K, v);            \
    }

int cua_cpu_keep(const void *x, int dtype, const cua_pred *pred, int64_t i)
{
    switch (dtype) {
        CUA_CPU_TYPES(KEEP_CASE)
    default: return 0;
    }
}

#define COUNT_CASE(ID, T, K)                                  \
    case ID: {                                                \
        const T *p = (const T *)x;                            \
        for (int64_t i = lo; i < hi; i++) c += KEEP(T, K, p[i]); \
        break;                                                \
    }

int64_t cua_cpu_chunk_count(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(COUNT_CASE)
    default: break;
    }
    return c;
}

#define COMPACT_CASE(ID, T, K)                   \
    case ID: {                                   \
        const T *p = (const T *)x;               \
        T *o = (T *)out;                         \
        for (int64_t i = lo; i < hi; i++) {      \
            T v = p[i];                          \
            if (KEEP(T, K, v)) o[c++] = v;       \
        }                                        \
        break;                                   \
    }

int64_t cua_cpu_chunk_compact(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *out)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(COMPACT_CASE)
    default: break;
    }
    return c;
}

/* ------------------------------------------------------------------- lock */

void cua_cpu_relax(unsigned *spins)
{
    if (++*spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

void cua_cpu_lock(atomic_int *mutex)
{
    int expected = 0;
    unsigned spins = 0;
    while (!atomic_compare_exchange_weak_explicit(mutex, &expected, 1, memory_order_relaxed, memory_order_relaxed)) {
        expected = 0; /* spin: another thread owns the critical section */
        cua_cpu_relax(&spins);
    }
    /* Fence after acquiring: reads of the protected data cannot move before
     * we own the lock (pairs with the release fence in unlock). */
    atomic_thread_fence(memory_order_acquire);
}

void cua_cpu_unlock(atomic_int *mutex)
{
    /* Fence before releasing: our writes to the protected data are visible
     * to the next owner before it can see the lock free. */
    atomic_thread_fence(memory_order_release);
    atomic_exchange_explicit(mutex, 0, memory_order_relaxed);
}

/* ------------------------------------------------------------ block value */

cua_acc_t cua_cpu_block_value(const void *a, const void *b, int64_t n, int dtype, int acc, const cua_launch *cfg,
                              int64_t block)
{
    cua_acc_t lanes[1024];
    const int T = cfg->threads;
    const int64_t W = cfg->blocks * T;
    for (int t = 0; t < T; t++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, block * T + t, &lo, &hi);
        lanes[t] = b ? cua_cpu_chunk_dot(a, b, dtype, acc, lo, hi) : cua_cpu_chunk_sum(a, dtype, acc, lo, hi);
    }
    /* The tree: halve the active lanes, each adding its partner's value. */
    int s = 1;
    while (s * 2 < T) s *= 2;
    for (; s > 0; s >>= 1)
        for (int t = 0; t < s && t + s < T; t++) cua_acc_add(acc, &lanes[t], lanes[t + s]);
    return lanes[0];
}

/* Branch-free compaction into a private buffer of at least hi - lo
 * elements: every element is stored at the next free slot and the slot
 * advances only when it stays (no mispredicted branch per element at ~50%
 * selectivity). Writes one slot past the kept ones, so never into shared
 * output. */
#define STAGE_CASE(ID, T, K)                     \
    case ID: {                                   \
        const T *p = (const T *)x;               \
        T *o = (T *)buf;                         \
        for (int64_t i = lo; i < hi; i++) {      \
            T v = p[i];                          \
            o[c] = v;                            \
            c += KEEP(T, K, v);                  \
        }                                        \
        break;                                   \
    }

int64_t cua_cpu_chunk_stage(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *buf)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(STAGE_CASE)
    default: break;
    }
    return c;
}
