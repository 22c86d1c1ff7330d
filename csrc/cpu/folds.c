/* folds.c -- reduce's values and its typed folds: the ops on the 64-bit
 * values every CPU rung works in (and the glue, when it combines the
 * chunks of a host array streamed to the GPU), and the fold of one
 * contiguous chunk for every element type and op, in SIMD lanes.
 *
 * A value is 8 bytes of cua_reduce_kind(dtype, op) (cuatomic_abi.h) in a
 * cua_acc_t: `i` holds int64 (as its bits) and uint64, `d` double.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "typed.h"

/* On x86-64 with GCC an x86-64-v3 clone (AVX2 and FMA) of each fold is
 * chosen at load time where the CPU has it, as vector.c's loops are. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_CLONES
#endif

/* ------------------------------------------------------------- the values */

/* IEEE 754-2019 minimum and maximum: a NaN wins, and -0.0 counts below
 * +0.0, so the answer does not depend on the order elements are combined
 * in (NumPy's own sign of a zero does). */
static double pick_min(double a, double b) { return isnan(a) || a < b || (a == b && signbit(a)) ? a : b; }
static double pick_max(double a, double b) { return isnan(a) || a > b || (a == b && !signbit(a)) ? a : b; }

cua_acc_t cua_cpu_red_combine(int kind, int op, cua_acc_t a, cua_acc_t b)
{
    const int f = kind == CUA_FLOAT64, s = kind == CUA_INT64;
    switch (op) {
    case CUA_REDUCE_ADD:
        if (f) a.d += b.d;
        else a.i += b.i; /* wraps modulo 2^64: the low bits are NumPy's */
        break;
    case CUA_REDUCE_MULTIPLY:
        if (f) a.d *= b.d;
        else a.i *= b.i;
        break;
    case CUA_REDUCE_MINIMUM:
        if (f) a.d = pick_min(a.d, b.d);
        else if (s ? (int64_t)b.i < (int64_t)a.i : b.i < a.i) a = b;
        break;
    case CUA_REDUCE_MAXIMUM:
        if (f) a.d = pick_max(a.d, b.d);
        else if (s ? (int64_t)a.i < (int64_t)b.i : a.i < b.i) a = b;
        break;
    case CUA_REDUCE_BITWISE_AND: a.i &= b.i; break;
    case CUA_REDUCE_BITWISE_OR: a.i |= b.i; break;
    case CUA_REDUCE_BITWISE_XOR: a.i ^= b.i; break;
    default: break;
    }
    return a;
}

cua_acc_t cua_cpu_red_identity(int kind, int op)
{
    const int f = kind == CUA_FLOAT64, s = kind == CUA_INT64;
    cua_acc_t r = {0};
    switch (op) {
    case CUA_REDUCE_MULTIPLY:
        if (f) r.d = 1.0;
        else r.i = 1;
        break;
    case CUA_REDUCE_BITWISE_AND: r.i = ~(uint64_t)0; break;
    /* No identity in NumPy: these are the values every element is at most
     * (at least), for an empty share of a non-empty input. */
    case CUA_REDUCE_MINIMUM:
        if (f) r.d = INFINITY;
        else r.i = s ? (uint64_t)INT64_MAX : UINT64_MAX;
        break;
    case CUA_REDUCE_MAXIMUM:
        if (f) r.d = -INFINITY;
        else r.i = s ? (uint64_t)INT64_MIN : 0;
        break;
    default: break; /* add, or, xor: 0 (and 0.0) */
    }
    return r;
}

/* An element widened to its kind, by typed.h's union member of its type:
 * signed integers sign-extended, unsigned ones zero-extended, floats as
 * double. */
#define LOAD_i(r, v) ((r).i = (uint64_t)(int64_t)(v))
#define LOAD_u(r, v) ((r).i = (uint64_t)(v))
#define LOAD_f(r, v) ((r).d = (double)(v))
#define LOAD_d(r, v) ((r).d = (v))
#define LOAD_CASE(ID, T, K) \
    case ID: LOAD_##K(r, ((const T *)x)[i]); break;

cua_acc_t cua_cpu_red_load(const void *x, int dtype, int64_t i)
{
    cua_acc_t r = {0};
    switch (dtype) {
        CUA_CPU_TYPES(LOAD_CASE)
    default: break;
    }
    return r;
}

/* ----------------------------------------------------------------- folds */

/* x[lo:hi] folded with F over LANES independent lanes, which the compiler
 * keeps in SIMD registers (the lanes are separate folds, so floats need no
 * reassociation either), then the lanes in order, then the tail; `out` is
 * the fold. TERM is element j as A. */
#define FOLD(A, START, TERM, F, out)                                            \
    do {                                                                        \
        A lane_[CUA_CPU_FOLD_LANES], s_ = (START);                              \
        for (int k_ = 0; k_ < CUA_CPU_FOLD_LANES; k_++) lane_[k_] = s_;         \
        int64_t i_ = lo;                                                        \
        for (; i_ + CUA_CPU_FOLD_LANES <= hi; i_ += CUA_CPU_FOLD_LANES)         \
            for (int k_ = 0; k_ < CUA_CPU_FOLD_LANES; k_++) {                   \
                const int64_t j = i_ + k_;                                      \
                lane_[k_] = F(lane_[k_], (TERM));                               \
            }                                                                   \
        for (int k_ = 0; k_ < CUA_CPU_FOLD_LANES; k_++) s_ = F(s_, lane_[k_]);  \
        for (int64_t j = i_; j < hi; j++) s_ = F(s_, (TERM));                   \
        (out) = s_;                                                             \
    } while (0)

#define ADD_(a, b) ((a) + (b))
#define MUL_(a, b) ((a) * (b))
#define MIN_(a, b) ((b) < (a) ? (b) : (a))
#define MAX_(a, b) ((a) < (b) ? (b) : (a))
#define AND_(a, b) ((a) & (b))
#define OR_(a, b) ((a) | (b))
#define XOR_(a, b) ((a) ^ (b))

/* An integer type's fold: add and multiply in 64-bit unsigned lanes
 * (wrapping, like the GPU's), the others in lanes of the type itself (as
 * many to a register as it holds), widened to WIDE at the end. */
#define INT_FOLD(ID, T, WIDE, TMIN, TMAX)                                                \
    WIDE_CLONES static cua_acc_t fold_##ID(const void *x, int op, int64_t lo, int64_t hi) \
    {                                                                                    \
        const T *p = (const T *)x;                                                       \
        cua_acc_t r = {0};                                                               \
        T v = 0;                                                                         \
        switch (op) {                                                                    \
        case CUA_REDUCE_ADD: FOLD(uint64_t, 0, (uint64_t)p[j], ADD_, r.i); return r;     \
        case CUA_REDUCE_MULTIPLY: FOLD(uint64_t, 1, (uint64_t)p[j], MUL_, r.i); return r; \
        case CUA_REDUCE_MINIMUM: FOLD(T, TMAX, p[j], MIN_, v); break;                    \
        case CUA_REDUCE_MAXIMUM: FOLD(T, TMIN, p[j], MAX_, v); break;                    \
        case CUA_REDUCE_BITWISE_AND: FOLD(T, (T)~(T)0, p[j], AND_, v); break;            \
        case CUA_REDUCE_BITWISE_OR: FOLD(T, 0, p[j], OR_, v); break;                     \
        case CUA_REDUCE_BITWISE_XOR: FOLD(T, 0, p[j], XOR_, v); break;                   \
        default: return r;                                                               \
        }                                                                                \
        r.i = (uint64_t)(WIDE)v;                                                         \
        return r;                                                                        \
    }

/* The integer types as X(id, T, WIDE (its 64-bit widening), T's least, T's
 * largest): the typed folds and column folds are expanded from it. */
#define INT_TYPES(X)                                    \
    X(CUA_BOOL, uint8_t, uint64_t, 0, UINT8_MAX)        \
    X(CUA_INT8, int8_t, int64_t, INT8_MIN, INT8_MAX)    \
    X(CUA_UINT8, uint8_t, uint64_t, 0, UINT8_MAX)       \
    X(CUA_INT16, int16_t, int64_t, INT16_MIN, INT16_MAX) \
    X(CUA_UINT16, uint16_t, uint64_t, 0, UINT16_MAX)    \
    X(CUA_INT32, int32_t, int64_t, INT32_MIN, INT32_MAX) \
    X(CUA_UINT32, uint32_t, uint64_t, 0, UINT32_MAX)    \
    X(CUA_INT64, int64_t, int64_t, INT64_MIN, INT64_MAX) \
    X(CUA_UINT64, uint64_t, uint64_t, 0, UINT64_MAX)

INT_TYPES(INT_FOLD)

/* Float minimum and maximum as integer min/max: a float's bits as a signed
 * integer, with the magnitude bits flipped when the sign is set, order the
 * values as IEEE 754-2019 does (-inf < ... < -0.0 < +0.0 < ... < +inf); a
 * NaN is given NAN_KEY, the key that wins (the smallest for minimum, the
 * largest for maximum), and both of those decode to NaN patterns. The
 * same keys as cuda/reduce.cu's vector rung. MAG is the magnitude mask,
 * INF the bits (and the key) of +inf; ~INF is the key of -inf. */
#define KEY(s, MAG, INF, NAN_KEY) (((s) & (MAG)) > (INF) ? (NAN_KEY) : (s) ^ (((s) >> (8 * sizeof(s) - 1)) & (MAG)))

typedef int32_t alias_i32 __attribute__((may_alias)); /* float data read as its bits */
typedef int64_t alias_i64 __attribute__((may_alias));

/* A float type's fold: add and multiply in float64 lanes (the tutorial's
 * rungs; the vector rung's are compensated), minimum and maximum in key
 * lanes, decoded and widened to double at the end. */
#define FLOAT_FOLD(ID, T, I, ALIAS, MAG, INF)                                                   \
    WIDE_CLONES static cua_acc_t fold_##ID(const void *x, int op, int64_t lo, int64_t hi)        \
    {                                                                                           \
        const T *p = (const T *)x;                                                              \
        const ALIAS *b = (const ALIAS *)x;                                                      \
        cua_acc_t r = {0};                                                                      \
        I k = 0;                                                                                \
        switch (op) {                                                                           \
        case CUA_REDUCE_ADD: FOLD(double, 0.0, (double)p[j], ADD_, r.d); return r;              \
        case CUA_REDUCE_MULTIPLY: FOLD(double, 1.0, (double)p[j], MUL_, r.d); return r;         \
        case CUA_REDUCE_MINIMUM: FOLD(I, (INF), KEY(b[j], (MAG), (INF), -(MAG)-1), MIN_, k); break; \
        case CUA_REDUCE_MAXIMUM: FOLD(I, ~(INF), KEY(b[j], (MAG), (INF), (MAG)), MAX_, k); break; \
        default: return r;                                                                      \
        }                                                                                       \
        k ^= (k >> (8 * sizeof k - 1)) & (MAG);                                                 \
        T f;                                                                                    \
        memcpy(&f, &k, sizeof f);                                                               \
        r.d = (double)f;                                                                        \
        return r;                                                                               \
    }

FLOAT_FOLD(CUA_FLOAT32, float, int32_t, alias_i32, INT32_MAX, (int32_t)0x7f800000)
FLOAT_FOLD(CUA_FLOAT64, double, int64_t, alias_i64, INT64_MAX, (int64_t)0x7ff0000000000000LL)

#define FOLD_CALL(ID, T, K) \
    case ID: return fold_##ID(x, op, lo, hi);

cua_acc_t cua_cpu_red_fold(const void *x, int dtype, int op, int64_t lo, int64_t hi)
{
    switch (dtype) {
        CUA_CPU_TYPES(FOLD_CALL)
    default: return cua_cpu_red_identity(-1, op);
    }
}

/* ------------------------------------------------- compensated products */

/* a * x as a double-double: the product hi + lo, with this multiplication's
 * exact rounding error (an FMA) and lo's share carried in lo. */
static inline cua_dd dd_times(cua_dd a, double x)
{
    const double h = a.s * x;
    a.c = __builtin_fma(a.c, x, __builtin_fma(a.s, x, -h));
    a.s = h;
    return a;
}

cua_dd cua_cpu_dd_mul(cua_dd a, cua_dd b)
{
    const double h = a.s * b.s;
    a.c = __builtin_fma(a.s, b.c, __builtin_fma(a.c, b.s, __builtin_fma(a.s, b.s, -h)));
    a.s = h;
    return a;
}

double cua_cpu_dd_product_value(cua_dd p)
{
    /* A zero keeps its sign; past the range (inf, NaN) the error term means
     * nothing and the product alone is the answer. */
    return p.s == 0 || !isfinite(p.s) ? p.s : p.s + p.c;
}

WIDE_CLONES
cua_dd cua_cpu_red_product(const void *x, int dtype, int64_t lo, int64_t hi)
{
    cua_dd p = {1.0, 0.0};
    if (dtype == CUA_FLOAT32)
        for (int64_t i = lo; i < hi; i++) p = dd_times(p, (double)((const float *)x)[i]);
    else
        for (int64_t i = lo; i < hi; i++) p = dd_times(p, ((const double *)x)[i]);
    return p;
}

/* ---------------------------------------------------------------- columns */

/* w columns of `rows` rows -- element (j, c) at p + j * inner + c * cs,
 * cs = 1 for neighbouring columns (a strided axis: every row's w elements
 * are read contiguously), cs = m for w short contiguous rows folded side by
 * side -- folded column by column, the columns as the SIMD lanes: w
 * independent lanes, so the compiler vectorizes (or at least interleaves)
 * across the columns with no reassociation. COLS(A, START, TERM, F) folds
 * into A lane_[w] from START; TERM is element (j, c) at p[r_ + c * cs_],
 * with the cs == 1 loop written apart so that it is a plain contiguous one. */
#define COLS(A, START, TERM, F)                                                       \
    A lane_[CUA_CPU_RUN];                                                             \
    for (int64_t c = 0; c < w; c++) lane_[c] = (START);                               \
    if (cs == 1) {                                                                    \
        const int64_t cs_ = 1;                                                        \
        for (int64_t j = 0; j < rows; j++) {                                          \
            const int64_t r_ = j * inner;                                             \
            for (int64_t c = 0; c < w; c++) lane_[c] = F(lane_[c], (TERM));           \
        }                                                                             \
    } else {                                                                          \
        const int64_t cs_ = cs;                                                       \
        for (int64_t j = 0; j < rows; j++) {                                          \
            const int64_t r_ = j * inner;                                             \
            for (int64_t c = 0; c < w; c++) lane_[c] = F(lane_[c], (TERM));           \
        }                                                                             \
    }

#define COLS_OUT(EXPR) \
    for (int64_t c = 0; c < w; c++) out[c] = (EXPR)

#define INT_COLS(ID, T, WIDE, TMIN, TMAX)                                                                       \
    WIDE_CLONES static void cols_##ID(const void *x, int op, int64_t inner, int64_t cs, int64_t rows,            \
                                      int64_t w, cua_acc_t *out)                                                          \
    {                                                                                                          \
        const T *p = (const T *)x;                                                                             \
        switch (op) {                                                                                          \
        case CUA_REDUCE_ADD: { COLS(uint64_t, 0, (uint64_t)p[r_ + c * cs_], ADD_) COLS_OUT(((cua_acc_t){.i = lane_[c]})); return; } \
        case CUA_REDUCE_MULTIPLY: { COLS(uint64_t, 1, (uint64_t)p[r_ + c * cs_], MUL_) COLS_OUT(((cua_acc_t){.i = lane_[c]})); return; } \
        case CUA_REDUCE_MINIMUM: { COLS(T, TMAX, p[r_ + c * cs_], MIN_) COLS_OUT(((cua_acc_t){.i = (uint64_t)(WIDE)lane_[c]})); return; } \
        case CUA_REDUCE_MAXIMUM: { COLS(T, TMIN, p[r_ + c * cs_], MAX_) COLS_OUT(((cua_acc_t){.i = (uint64_t)(WIDE)lane_[c]})); return; } \
        case CUA_REDUCE_BITWISE_AND: { COLS(T, (T)~(T)0, p[r_ + c * cs_], AND_) COLS_OUT(((cua_acc_t){.i = (uint64_t)(WIDE)lane_[c]})); return; } \
        case CUA_REDUCE_BITWISE_OR: { COLS(T, 0, p[r_ + c * cs_], OR_) COLS_OUT(((cua_acc_t){.i = (uint64_t)(WIDE)lane_[c]})); return; } \
        case CUA_REDUCE_BITWISE_XOR: { COLS(T, 0, p[r_ + c * cs_], XOR_) COLS_OUT(((cua_acc_t){.i = (uint64_t)(WIDE)lane_[c]})); return; } \
        default: return;                                                                                       \
        }                                                                                                      \
    }

INT_TYPES(INT_COLS)

/* The key lanes of FLOAT_COLS decoded (FLOAT_FOLD's decoding) into out. */
#define DECODE_LANES(T, I, MAG)                                                   \
    for (int64_t c = 0; c < w; c++) {                                             \
        const I k = lane_[c] ^ ((lane_[c] >> (8 * sizeof(I) - 1)) & (MAG));       \
        T f;                                                                      \
        memcpy(&f, &k, sizeof f);                                                 \
        out[c].d = (double)f;                                                     \
    }

/* A float add's lanes: compensated float64 (TwoSum, the rounding error of
 * each addition carried in its own lane); a product's: double-doubles
 * (each multiplication's error from an FMA); minimum and maximum: the key
 * lanes of FLOAT_FOLD, decoded at the end. */
#define FLOAT_COLS(ID, T, I, ALIAS, MAG, INF)                                                                   \
    WIDE_CLONES static void cols_##ID(const void *x, int op, int64_t inner, int64_t cs, int64_t rows,            \
                                      int64_t w, cua_acc_t *out, cua_dd *dd)                                              \
    {                                                                                                          \
        const T *p = (const T *)x;                                                                             \
        const ALIAS *b = (const ALIAS *)x;                                                                     \
        switch (op) {                                                                                          \
        case CUA_REDUCE_ADD: {                                                                                 \
            double s[CUA_CPU_RUN], e[CUA_CPU_RUN];                                                             \
            for (int64_t c = 0; c < w; c++) s[c] = e[c] = 0.0;                                                 \
            /* (cs == 1 apart: a contiguous loop the compiler vectorizes) */                                   \
            for (int64_t j = 0; j < rows; j++) {                                                               \
                const T *row = p + j * inner;                                                                  \
                if (cs == 1)                                                                                   \
                    for (int64_t c = 0; c < w; c++) {                                                          \
                        const double v = (double)row[c], t = s[c] + v, bp = t - s[c];                          \
                        e[c] += (s[c] - (t - bp)) + (v - bp);                                                  \
                        s[c] = t;                                                                              \
                    }                                                                                          \
                else                                                                                           \
                    for (int64_t c = 0; c < w; c++) {                                                          \
                        const double v = (double)row[c * cs], t = s[c] + v, bp = t - s[c];                     \
                        e[c] += (s[c] - (t - bp)) + (v - bp);                                                  \
                        s[c] = t;                                                                              \
                    }                                                                                          \
            }                                                                                                  \
            for (int64_t c = 0; c < w; c++) dd[c] = (cua_dd){s[c], e[c]};                                      \
            return;                                                                                            \
        }                                                                                                      \
        case CUA_REDUCE_MULTIPLY: {                                                                            \
            double h[CUA_CPU_RUN], l[CUA_CPU_RUN];                                                             \
            for (int64_t c = 0; c < w; c++) {                                                                  \
                h[c] = 1.0;                                                                                    \
                l[c] = 0.0;                                                                                    \
            }                                                                                                  \
            for (int64_t j = 0; j < rows; j++) {                                                               \
                const T *row = p + j * inner;                                                                  \
                for (int64_t c = 0; c < w; c++) {                                                              \
                    const double v = (double)row[c * cs], t = h[c] * v; /* (products are rare: one loop) */    \
                    l[c] = __builtin_fma(l[c], v, __builtin_fma(h[c], v, -t));                                 \
                    h[c] = t;                                                                                  \
                }                                                                                              \
            }                                                                                                  \
            for (int64_t c = 0; c < w; c++) dd[c] = (cua_dd){h[c], l[c]};                                      \
            return;                                                                                            \
        }                                                                                                      \
        case CUA_REDUCE_MINIMUM: {                                                                             \
            COLS(I, (INF), KEY(b[r_ + c * cs_], (MAG), (INF), -(MAG)-1), MIN_)                                 \
            DECODE_LANES(T, I, MAG);                                                                           \
            return;                                                                                            \
        }                                                                                                      \
        case CUA_REDUCE_MAXIMUM: {                                                                             \
            COLS(I, ~(INF), KEY(b[r_ + c * cs_], (MAG), (INF), (MAG)), MAX_)                                   \
            DECODE_LANES(T, I, MAG);                                                                           \
            return;                                                                                            \
        }                                                                                                      \
        default: return;                                                                                       \
        }                                                                                                      \
    }

FLOAT_COLS(CUA_FLOAT32, float, int32_t, alias_i32, INT32_MAX, (int32_t)0x7f800000)
FLOAT_COLS(CUA_FLOAT64, double, int64_t, alias_i64, INT64_MAX, (int64_t)0x7ff0000000000000LL)

void cua_cpu_red_columns(const void *x, int dtype, int op, int64_t inner, int64_t cs, int64_t rows, int64_t w,
                         cua_acc_t *out, cua_dd *dd)
{
    switch (dtype) {
    case CUA_BOOL: cols_CUA_BOOL(x, op, inner, cs, rows, w, out); return;
    case CUA_INT8: cols_CUA_INT8(x, op, inner, cs, rows, w, out); return;
    case CUA_UINT8: cols_CUA_UINT8(x, op, inner, cs, rows, w, out); return;
    case CUA_INT16: cols_CUA_INT16(x, op, inner, cs, rows, w, out); return;
    case CUA_UINT16: cols_CUA_UINT16(x, op, inner, cs, rows, w, out); return;
    case CUA_INT32: cols_CUA_INT32(x, op, inner, cs, rows, w, out); return;
    case CUA_UINT32: cols_CUA_UINT32(x, op, inner, cs, rows, w, out); return;
    case CUA_INT64: cols_CUA_INT64(x, op, inner, cs, rows, w, out); return;
    case CUA_UINT64: cols_CUA_UINT64(x, op, inner, cs, rows, w, out); return;
    case CUA_FLOAT32: cols_CUA_FLOAT32(x, op, inner, cs, rows, w, out, dd); return;
    case CUA_FLOAT64: cols_CUA_FLOAT64(x, op, inner, cs, rows, w, out, dd); return;
    default: return;
    }
}
