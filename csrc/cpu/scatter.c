/* scatter.c -- the np.<op>.at ladder on the CPU (cuda/scatter.cu tells the
 * lesson; here each step says what it does on a CPU).
 *
 * Every element is read as a 64-bit value (integers sign- or
 * zero-extended, floats as double), combined as NumPy combines the
 * element's type (integers wrapping, a float32 sum or product rounded to
 * float32 once: a double holds the exact result of two float32), and
 * written back narrowed. OpenMP threads take contiguous shares of the
 * updates.
 *
 *  1. atomic          one atomic per update: C11 fetch_add, fetch_and/or/xor
 *                     on integers of every width; a CPU has no atomic min,
 *                     max, multiply or float add, so those go through rung
 *                     2's compare-exchange. A hot element's cache line
 *                     moves between cores on every update.
 *  2. cas             every op through a compare-exchange loop on the
 *                     element's own width (x86 and ARM have 1- to 8-byte
 *                     ones): read, combine, exchange if unchanged, else
 *                     retry. Bits are compared; a combine that changes
 *                     nothing skips the exchange.
 *  3. warp_aggregated a CPU "warp" is 32 consecutive updates of one thread:
 *                     the updates naming the same element are combined
 *                     first, in order, and one atomic applies each group.
 *  4. shared          each OS thread owns a private copy of the output (the
 *                     CPU's shared memory is its cache), applies its updates
 *                     there with plain stores, and merges the elements it
 *                     changed with rung 1's atomics. Fits an output of at
 *                     most CUA_CPU_PRIVATE_BYTES.
 *  5. exact           float add and subtract summed exactly in the
 *                     fixed-point accumulators of cuda/fixed.h and rounded
 *                     once: the same bits as the GPU's rung. One
 *                     accumulator per element, shared by the OS threads:
 *                     every word added with an atomic fetch_add, whose old
 *                     value gives the carry.
 *  6. exact_private   the same sums in accumulators private to each OS
 *                     thread (plain integer adds, no atomics), summed word
 *                     by word at the end; the team is cut so that they take
 *                     at most CUA_CPU_EXACT_BYTES. A loop per value and
 *                     index type; a window under 64 bits (most float32
 *                     data) makes an element one signed 128-bit add, a
 *                     wider one two magnitudes (positive and negative
 *                     terms) added without a branch on the sign. Where a
 *                     copy would not stay in a core's cache, one copy with
 *                     each thread owning a range of its elements.
 */
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../../cuda/fixed.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

/* A private copy of rung 4 holds at most this: 64 Ki elements of 8 bytes. */
#define CUA_CPU_PRIVATE_BYTES ((int64_t)512 * 1024)
/* The exact rung's accumulators of all OS threads take at most this. */
#define CUA_CPU_EXACT_BYTES ((int64_t)1 << 30)
/* Past this, a private copy of rung 6's accumulators no longer stays in a
 * core's cache (half a 512 KiB L2) and a copy per thread multiplies the
 * misses: the threads then own ranges of one copy's elements instead. */
#define CUA_CPU_OWN_BYTES ((int64_t)256 * 1024)

enum {
    ADD = CUA_REDUCE_ADD,
    MUL = CUA_REDUCE_MULTIPLY,
    MIN = CUA_REDUCE_MINIMUM,
    MAX = CUA_REDUCE_MAXIMUM,
    AND = CUA_REDUCE_BITWISE_AND,
    OR = CUA_REDUCE_BITWISE_OR,
    XOR = CUA_REDUCE_BITWISE_XOR
};

typedef union {
    int64_t i;
    uint64_t u;
    double d;
} sval;

static int is_float(int dtype) { return dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64; }
static int is_signed(int dtype)
{
    return dtype == CUA_INT8 || dtype == CUA_INT16 || dtype == CUA_INT32 || dtype == CUA_INT64;
}

/* ---------------------------------------------------------------- values */

/* An element's bits (its own width) as a value, and back. */
static sval decode(uint64_t bits, int dtype)
{
    sval v;
    switch (dtype) {
    case CUA_INT8: v.i = (int8_t)bits; break;
    case CUA_INT16: v.i = (int16_t)bits; break;
    case CUA_INT32: v.i = (int32_t)bits; break;
    case CUA_FLOAT32: {
        float f;
        const uint32_t b = (uint32_t)bits;
        memcpy(&f, &b, sizeof f);
        v.d = f;
        break;
    }
    default: v.u = bits; break; /* bool, unsigned (zero-extended), int64, float64's bits */
    }
    return v;
}

static uint64_t encode(sval v, int dtype)
{
    if (dtype == CUA_FLOAT32) {
        const float f = (float)v.d;
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        return b;
    }
    const size_t size = cua_dtype_size(dtype);
    return size == 8 ? v.u : v.u & ((1ull << (8 * size)) - 1);
}

static uint64_t read_bits(const void *p, size_t size)
{
    switch (size) {
    case 1: return *(const uint8_t *)p;
    case 2: return *(const uint16_t *)p;
    case 4: return *(const uint32_t *)p;
    default: return *(const uint64_t *)p;
    }
}

/* Minimum and maximum of floats in IEEE 754-2019's order, as on the GPU: a
 * NaN wins, -0.0 counts below +0.0. */
static double float_pick(int op, double a, double b)
{
    const int first = op == MIN ? a < b || (a == b && signbit(a)) : a > b || (a == b && !signbit(a));
    return isnan(a) || first ? a : b;
}

/* a OP b as NumPy computes it in `dtype` (narrowed by encode). */
static sval combine(int dtype, int op, sval a, sval b)
{
    sval r;
    if (is_float(dtype)) {
        switch (op) {
        case ADD: r.d = a.d + b.d; break;
        case MUL: r.d = a.d * b.d; break;
        default: r.d = float_pick(op, a.d, b.d); break;
        }
        if (dtype == CUA_FLOAT32) r.d = (float)r.d;
        return r;
    }
    switch (op) {
    case ADD: r.u = a.u + b.u; break;
    case MUL: r.u = a.u * b.u; break;
    case MIN: r = (is_signed(dtype) ? b.i < a.i : b.u < a.u) ? b : a; break;
    case MAX: r = (is_signed(dtype) ? a.i < b.i : a.u < b.u) ? b : a; break;
    case AND: r.u = a.u & b.u; break;
    case OR: r.u = a.u | b.u; break;
    default: r.u = a.u ^ b.u; break;
    }
    return r;
}

/* The op's identity: a private copy's start; float add's is -0.0. */
static sval identity(int dtype, int op)
{
    sval v;
    const size_t size = cua_dtype_size(dtype);
    const uint64_t umax = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
    switch (op) {
    case MUL: if (is_float(dtype)) v.d = 1.0; else v.u = 1; break;
    case AND: v.u = ~0ull; break;
    case MIN:
        if (is_float(dtype)) v.d = INFINITY;
        else if (is_signed(dtype)) v.i = (int64_t)(umax >> 1);
        else v.u = umax;
        break;
    case MAX:
        if (is_float(dtype)) v.d = -INFINITY;
        else if (is_signed(dtype)) v.i = -(int64_t)(umax >> 1) - 1;
        else v.u = 0;
        break;
    case ADD: if (is_float(dtype)) v.d = -0.0; else v.u = 0; break;
    default: v.u = 0; break;
    }
    return v;
}

/* Update w: its element and value (negated for subtract). */
typedef struct {
    int64_t e;
    sval v;
} update;

static update update_at(const void *idx, const void *vals, const cua_scatter *s, int64_t w)
{
    const int64_t k = s->row == 1 ? w : w / s->row, j = w - k * s->row;
    int64_t i = s->idx_dtype == CUA_INT64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
    if (i < 0) i += s->m;
    const size_t size = cua_dtype_size(s->dtype);
    update u;
    u.e = i * s->row + j;
    u.v = decode(read_bits((const char *)vals + (size_t)(k * s->vk + j * s->vj) * size, size), s->dtype);
    if (s->negate) {
        if (is_float(s->dtype)) u.v.d = -u.v.d;
        else u.v.u = 0 - u.v.u;
    }
    return u;
}

/* ---------------------------------------------------------------- atomics */

static int exchange(void *p, size_t size, uint64_t *expected, uint64_t want)
{
    switch (size) {
    case 1: {
        uint8_t e = (uint8_t)*expected;
        const int ok = __atomic_compare_exchange_n((uint8_t *)p, &e, (uint8_t)want, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED);
        *expected = e;
        return ok;
    }
    case 2: {
        uint16_t e = (uint16_t)*expected;
        const int ok = __atomic_compare_exchange_n((uint16_t *)p, &e, (uint16_t)want, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED);
        *expected = e;
        return ok;
    }
    case 4: {
        uint32_t e = (uint32_t)*expected;
        const int ok = __atomic_compare_exchange_n((uint32_t *)p, &e, (uint32_t)want, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED);
        *expected = e;
        return ok;
    }
    default:
        return __atomic_compare_exchange_n((uint64_t *)p, expected, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

static uint64_t atomic_read(const void *p, size_t size)
{
    switch (size) {
    case 1: return __atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED);
    case 2: return __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED);
    case 4: return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
    default: return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
    }
}

/* *p = *p OP v by compare-exchange: bits compared, no exchange when
 * nothing changes. A failed exchange refreshes `old` and retries at once. */
static void cas_apply(void *p, int dtype, int op, sval v)
{
    const size_t size = cua_dtype_size(dtype);
    uint64_t old = atomic_read(p, size);
    for (;;) {
        const uint64_t want = encode(combine(dtype, op, decode(old, dtype), v), dtype);
        if (want == old || exchange(p, size, &old, want)) return;
    }
}

#define FETCH_OP_(p, size, v, fn)                                                      \
    switch (size) {                                                                    \
    case 1: fn((uint8_t *)(p), (uint8_t)(v), __ATOMIC_RELAXED); break;                 \
    case 2: fn((uint16_t *)(p), (uint16_t)(v), __ATOMIC_RELAXED); break;               \
    case 4: fn((uint32_t *)(p), (uint32_t)(v), __ATOMIC_RELAXED); break;               \
    default: fn((uint64_t *)(p), (uint64_t)(v), __ATOMIC_RELAXED); break;              \
    }

/* *p = *p OP v with the CPU's atomic instruction for it, else a CAS loop. */
static void native_apply(void *p, int dtype, int op, sval v)
{
    const size_t size = cua_dtype_size(dtype);
    if (is_float(dtype) || op == MUL || op == MIN || op == MAX) {
        cas_apply(p, dtype, op, v);
        return;
    }
    switch (op) {
    case ADD: FETCH_OP_(p, size, v.u, __atomic_fetch_add); break;
    case AND: FETCH_OP_(p, size, v.u, __atomic_fetch_and); break;
    case OR: FETCH_OP_(p, size, v.u, __atomic_fetch_or); break;
    default: FETCH_OP_(p, size, v.u, __atomic_fetch_xor); break;
    }
}

/* ------------------------------------------------------------------ rungs */

/* The updates [0, n * row) in the contiguous shares of the logical grid,
 * run by the OS threads a piece at a time (Ctrl-C is asked between
 * pieces): `run(ctx, a, b)` on each piece [a, b). The loop of rungs 1, 2,
 * 3 and 5. */
typedef void (*piece_fn)(const void *ctx, int64_t a, int64_t b);

static int each_piece(const cua_scatter *s, cua_launch *cfg, piece_fn run, const void *ctx)
{
    const int64_t total = s->n * s->row;
    const cua_grid g = cua_cpu_grid(cfg, total);
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(total, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        run(ctx, a, b);
    }
    return CUA_CPU_DONE(cfg);
}

typedef void (*apply_fn)(void *p, int dtype, int op, sval v);

/* What a piece of rungs 1-3 reads and writes. */
typedef struct {
    apply_fn apply;
    void *out;
    const void *idx, *vals;
    const cua_scatter *s;
} plain_ctx;

/* Rungs 1 and 2: every update applied with `apply`. */
static void per_update(const void *vctx, int64_t a, int64_t b)
{
    const plain_ctx *c = vctx;
    const size_t size = cua_dtype_size(c->s->dtype);
    for (int64_t i = a; i < b; i++) {
        const update u = update_at(c->idx, c->vals, c->s, i);
        c->apply((char *)c->out + (size_t)u.e * size, c->s->dtype, c->s->op, u.v);
    }
}

static int at_atomic(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    const plain_ctx c = {native_apply, out, idx, vals, s};
    return each_piece(s, cfg, per_update, &c);
}

static int at_cas(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    const plain_ctx c = {cas_apply, out, idx, vals, s};
    return each_piece(s, cfg, per_update, &c);
}

/* Rung 3: the piece's updates a warp of 32 at a time, those naming one
 * element combined in lane order, one atomic per element. */
static void per_warp(const void *vctx, int64_t a, int64_t b)
{
    const plain_ctx *c = vctx;
    const cua_scatter *s = c->s;
    const size_t size = cua_dtype_size(s->dtype);
    for (int64_t w0 = a; w0 < b; w0 += CUA_CPU_WARP) {
        update lanes[CUA_CPU_WARP];
        int done[CUA_CPU_WARP] = {0};
        const int nl = (int)(b - w0 < CUA_CPU_WARP ? b - w0 : CUA_CPU_WARP);
        for (int l = 0; l < nl; l++) lanes[l] = update_at(c->idx, c->vals, s, w0 + l);
        for (int l = 0; l < nl; l++) {
            if (done[l]) continue;
            sval v = lanes[l].v;
            for (int p = l + 1; p < nl; p++)
                if (!done[p] && lanes[p].e == lanes[l].e) {
                    v = combine(s->dtype, s->op, v, lanes[p].v);
                    done[p] = 1;
                }
            c->apply((char *)c->out + (size_t)lanes[l].e * size, s->dtype, s->op, v);
        }
    }
}

static int at_warp_aggregated(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    const plain_ctx c = {native_apply, out, idx, vals, s};
    return each_piece(s, cfg, per_warp, &c);
}

static int shared_fits(const cua_scatter *s, cua_launch *cfg)
{
    const int64_t cells = s->m * s->row;
    if (cells > CUA_CPU_PRIVATE_BYTES / 8) {
        snprintf(cfg->msg, sizeof cfg->msg,
                 "method 'shared' keeps a private copy of the output per thread: %lld elements need %lld bytes, "
                 "more than the cpu backend's %lld; use method='warp_aggregated'",
                 (long long)cells, (long long)cells * 8, (long long)CUA_CPU_PRIVATE_BYTES);
        return CUA_EINVAL;
    }
    return 0;
}

static int at_shared(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = shared_fits(s, cfg);
    if (st) return st;
    const int64_t total = s->n * s->row, cells = s->m * s->row;
    cua_cpu_default_config(cfg, total);
    const int team = cua_cpu_team(cfg, total, cfg->blocks);
    const size_t size = cua_dtype_size(s->dtype);
    const sval start = identity(s->dtype, s->op);
    sval *copies = malloc((size_t)team * (size_t)(cells ? cells : 1) * sizeof(sval));
    if (!copies) return CUA_ENOMEM;
#pragma omp parallel num_threads(team)
    {
        /* The threads the runtime started (OMP_THREAD_LIMIT, dynamic teams
         * and nesting may give fewer than asked): they share the updates. */
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        sval *mine = copies + (size_t)t * (size_t)cells;
        for (int64_t e = 0; e < cells; e++) mine[e] = start;
        int64_t lo, hi;
        cua_cpu_share(total, nt, t, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) {
            const update u = update_at(idx, vals, s, i);
            mine[u.e] = combine(s->dtype, s->op, mine[u.e], u.v);
        }
        for (int64_t e = 0; e < cells && !cfg->interrupted; e++)
            if (mine[e].u != start.u) native_apply((char *)out + (size_t)e * size, s->dtype, s->op, mine[e]);
    }
    free(copies);
    return CUA_CPU_DONE(cfg);
}

/* The exact rungs' limit: float add and subtract. */
static int float_add_only(const cua_scatter *s, cua_launch *cfg, const char *name)
{
    static const char *const ops[] = {"add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or",
                                      "bitwise_xor"};
    if (!is_float(s->dtype) || s->op != ADD) {
        const char *dt = s->dtype == CUA_FLOAT32 ? "float32" : s->dtype == CUA_FLOAT64 ? "float64" : "integer";
        snprintf(cfg->msg, sizeof cfg->msg, CUA_EXACT_SCATTER_ONLY, name, dt,
                 s->op >= 0 && s->op < CUA_NREDUCE_OPS ? (s->negate ? "subtract" : ops[s->op]) : "?");
        return CUA_EINVAL;
    }
    return 0;
}

static int exact_fits(const cua_scatter *s, cua_launch *cfg) { return float_add_only(s, cfg, "exact"); }

static int exact_private_fits(const cua_scatter *s, cua_launch *cfg) { return float_add_only(s, cfg, "exact_private"); }

static double element(const void *out, int dtype, int64_t e)
{
    return dtype == CUA_FLOAT32 ? (double)((const float *)out)[e] : ((const double *)out)[e];
}

/* acc (an element's words, word i at acc[i]) += (-1)^neg (t1:t0) *
 * 2^(64k), word by word, each add's carry (borrow) from the word's old
 * value: with `atomic`, each word by an atomic fetch_add (rung 5), else
 * plainly (a thread's own accumulator). */
static inline void fixed_add(uint64_t *acc, int words, int k, uint64_t t0, uint64_t t1, int neg, int atomic)
{
    uint64_t part = t0, later = t1;
    for (int i = k; i < words; i++) {
        uint64_t *word = acc + i, old;
        if (atomic) {
            old = __atomic_fetch_add(word, neg ? 0 - part : part, __ATOMIC_RELAXED);
        } else {
            old = *word;
            *word = neg ? old - part : old + part;
        }
        const uint64_t carry = neg ? old < part : old + part < old;
        part = later + carry;
        later = 0;
        if (!part) return;
    }
}

/* The exact rungs' accumulators: `copies` of them (one per OS thread for
 * exact_private, one shared for exact), each `cells` elements side by side
 * (element e's words from [e * step]: the words an update touches share a
 * cache line) and flags. Rung 5's element is one two's-complement integer
 * of `words` words (step = words); so is rung 6's when the window is
 * under 64 bits (`narrow`: words = 2, one signed 128-bit add per update),
 * else two magnitudes, of its positive and of its negative terms (`split`:
 * step = 2 * words), so that its loop adds without a branch on the sign
 * or a borrow. */
typedef struct {
    int lo, words, negzero, copies, split, narrow;
    int owners; /* rung 6: threads owning ranges of one copy's elements (0: a copy each) */
    int64_t cells, step;
    uint64_t *acc;
    unsigned *flags;
} fixed_state;

/* The update cursor: update w is element j of row k of the updates (w =
 * k * row + j), walked forward without a division per update. */
typedef struct {
    int64_t k, j;
} cursor;

static inline cursor cursor_at(const cua_scatter *s, int64_t w)
{
    const cursor c = {w / s->row, w % s->row};
    return c;
}

static inline void cursor_next(cursor *c, int64_t row)
{
    if (++c->j == row) {
        c->j = 0;
        c->k++;
    }
}

/* Update c's element, or -1 for an index outside [-m, m) (only a rung
 * that checks the indices itself, cua_scatter.bad, sees one). */
static inline int64_t exact_element(const void *idx, const cua_scatter *s, cursor c, const int i64)
{
    int64_t i = i64 ? ((const int64_t *)idx)[c.k] : ((const int32_t *)idx)[c.k];
    i += i < 0 ? s->m : 0;
    return (uint64_t)i < (uint64_t)s->m ? i * s->row + c.j : -1;
}

/* An exact rung's own index check: the least bad position k of all
 * threads' (-1: none yet), by compare-exchange (rare: one per bad index). */
static void note_bad(int64_t *bad, int64_t k)
{
    int64_t seen = __atomic_load_n(bad, __ATOMIC_RELAXED);
    while ((seen < 0 || k < seen) &&
           !__atomic_compare_exchange_n(bad, &seen, k, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Update c's value as its bits (a float32's in the low 32), the sign
 * flipped for subtract. */
static inline uint64_t exact_bits(const void *vals, const cua_scatter *s, cursor c, const int f32)
{
    const int64_t at = c.k * s->vk + c.j * s->vj;
    const uint64_t bits = f32 ? ((const uint32_t *)vals)[at] : ((const uint64_t *)vals)[at];
    return s->negate ? bits ^ (1ull << (f32 ? 31 : 63)) : bits;
}

static inline double bits_value(uint64_t bits, const int f32)
{
    if (f32) {
        const uint32_t b = (uint32_t)bits;
        float x;
        memcpy(&x, &b, sizeof x);
        return x;
    }
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The window from the exponent fields alone. A float's nonzero finite
 * value with exponent field e has its bits in [2^(max(e, 1) - BIAS -
 * MBITS), 2^(e - BIAS)] (a subnormal's, e = 0, below 2^(1 - BIAS)): the
 * least max(e, 1) and the greatest e over the values bound the window.
 * That bound (up to MBITS below the lowest set bit) is as exact as the
 * bits themselves and takes a vectorized pass of integer min and max. */
#define F32_MBITS 23
#define F64_MBITS 52
#define F32_BIAS 127
#define F64_BIAS 1023

typedef struct {
    uint32_t least, most; /* least max(e, 1) and greatest e; least = UINT32_MAX: no value */
} efields;

static inline void efields_add(efields *w, uint64_t bits, const int f32)
{
    const int mbits = f32 ? F32_MBITS : F64_MBITS;
    const uint64_t mag = bits & (f32 ? 0x7fffffffull : ~(1ull << 63));
    const uint32_t e = (uint32_t)(mag >> mbits), top = f32 ? 0xff : 0x7ff;
    const int live = mag != 0 && e != top;
    const uint32_t e1 = e ? e : 1;
    w->least = live && e1 < w->least ? e1 : w->least;
    w->most = live && e > w->most ? e : w->most;
}

/* The updates' values (a value the broadcast repeats, stride 0, read
 * once), contiguous ones in a loop the compiler vectorizes. */
static efields values_efields(const void *vals, const cua_scatter *s, int team)
{
    const int f32 = s->dtype == CUA_FLOAT32;
    const int64_t rows = s->vk ? s->n : 1, per = s->vj ? s->row : 1;
    uint32_t least = UINT32_MAX, most = 0;
    if (per == 1 || (s->vj == 1 && s->vk == per)) { /* rows * per contiguous values */
        const int64_t count = rows * per;
#pragma omp parallel for simd schedule(static) num_threads(team) reduction(min : least) reduction(max : most)
        for (int64_t i = 0; i < count; i++) {
            efields w = {least, most};
            efields_add(&w, f32 ? ((const uint32_t *)vals)[i * (per == 1 ? s->vk : 1)]
                                : ((const uint64_t *)vals)[i * (per == 1 ? s->vk : 1)], f32);
            least = w.least;
            most = w.most;
        }
    } else {
#pragma omp parallel for schedule(static) num_threads(team) reduction(min : least) reduction(max : most)
        for (int64_t k = 0; k < rows; k++)
            for (int64_t j = 0; j < per; j++) {
                efields w = {least, most};
                const int64_t at = k * s->vk + j * s->vj;
                efields_add(&w, f32 ? ((const uint32_t *)vals)[at] : ((const uint64_t *)vals)[at], f32);
                least = w.least;
                most = w.most;
            }
    }
    const efields w = {least, most};
    return w;
}

/* flag |= f: with an atomic OR where the flags are shared (rung 5). */
static inline void flag_or(unsigned *flag, unsigned f, int atomic)
{
    if (atomic) __atomic_fetch_or(flag, f, __ATOMIC_RELAXED);
    else *flag |= f;
}

/* A float's view for the exact adds (`bits`: a float32's when f32): 0 for
 * a NaN or an inf, which set flags instead; else 1 with its integer
 * mantissa, its sign, and its place: the bits between the window's lowest
 * and its last mantissa bit (0 for a zero, which adds nothing anywhere).
 * With track_negzero every value but -0.0 sets a flag too (atomically
 * where `atomic`: rung 5's shared flags). */
static inline __attribute__((always_inline)) int decoded(uint64_t bits, int lo, unsigned *flag,
                                                         const int track_negzero, const int f32, const int atomic,
                                                         uint64_t *mant, int *off, int *neg)
{
    const int mbits = f32 ? F32_MBITS : F64_MBITS, bias = f32 ? F32_BIAS : F64_BIAS, sign_at = f32 ? 31 : 63;
    const uint64_t top = f32 ? 0xff : 0x7ff, e = (bits >> mbits) & top;
    if (track_negzero && bits != 1ull << sign_at) flag_or(flag, CUA_FIXED_NOT_NEGZERO, atomic);
    if (e == top) {
        flag_or(flag, cua_fixed_classify(bits_value(bits, f32)), atomic);
        return 0;
    }
    *mant = (bits & ((1ull << mbits) - 1)) | (e ? 1ull << mbits : 0);
    *off = *mant ? (int)(e ? e : 1) - bias - mbits - lo : 0;
    *neg = (int)((bits >> sign_at) & 1);
    return 1;
}

/* Rung 6's add above a 64-bit window: the value's magnitude into the half
 * of element `acc` for its sign, as one 128-bit add over words k and k + 1
 * (both inside: k + 1 <= words - 1 as the window's top bit is at least the
 * value's); a carry out of them, rare, goes on up. */
static inline __attribute__((always_inline)) void magnitude_add(uint64_t *acc, int words, unsigned *flag,
                                                                 uint64_t bits, int lo, const int track_negzero,
                                                                 const int f32)
{
    uint64_t mant;
    int off, neg;
    if (!decoded(bits, lo, flag, track_negzero, f32, 0, &mant, &off, &neg)) return;
    if ((unsigned)(off >> 6) > (unsigned)(words - 2)) return; /* outside the window: see narrow_add */
    const int sh = off & 63;
    uint64_t *w = acc + (neg ? words : 0) + (off >> 6);
    const unsigned __int128 add = (unsigned __int128)(mant >> 1 >> (63 - sh)) << 64 | (mant << sh);
    unsigned __int128 sum;
    memcpy(&sum, w, sizeof sum);
    sum += add;
    memcpy(w, &sum, sizeof sum);
    if (sum < add) /* carried out of word k + 1 */
        for (uint64_t *p = w + 2; p < acc + (neg ? 2 * words : words) && ++*p == 0; p++) {
        }
}

/* Rung 5's add, and the start values': the value into an element's
 * two's-complement accumulator, word by word from the one holding its last
 * bit (with `atomic`, each word by an atomic fetch_add: rung 5's shared
 * accumulators and flags). */
static inline __attribute__((always_inline)) void fixed_value(uint64_t *acc, int words, unsigned *flag,
                                                               uint64_t bits, int lo, const int track_negzero,
                                                               const int f32, const int atomic)
{
    uint64_t mant;
    int off, neg;
    if (!decoded(bits, lo, flag, track_negzero, f32, atomic, &mant, &off, &neg) || !mant) return;
    if ((unsigned)(off >> 6) > (unsigned)(words - 2)) return; /* outside the window: see narrow_add */
    const int sh = off & 63;
    fixed_add(acc, words, off >> 6, mant << sh, mant >> 1 >> (63 - sh), neg, atomic);
}

/* Rung 6's add when the window is under 64 bits (words = 2): the value
 * lies in word 0, so the element is one signed 128-bit integer and the
 * value is added sign-extended, without a branch. */
static inline __attribute__((always_inline)) void narrow_add(uint64_t *acc, unsigned *flag, uint64_t bits, int lo,
                                                              const int track_negzero, const int f32)
{
    uint64_t mant;
    int off, neg;
    if (!decoded(bits, lo, flag, track_negzero, f32, 0, &mant, &off, &neg)) return;
    /* Never true for the values the window pass read; a value another
     * thread of the user's changed since (the values are read in place)
     * must not write outside the element: its sum is wrong, as any sum of
     * values changing under the call would be. */
    if ((unsigned)off > 63u) return;
    /* -x in 128 bits is 2^64 - x in the low word and all ones in the high
     * one (x != 0): one add and one add-with-carry of 64-bit words. */
    const uint64_t x = mant << off, mask = -(uint64_t)(neg & (x != 0));
    unsigned __int128 sum;
    memcpy(&sum, acc, sizeof sum);
    sum += (unsigned __int128)mask << 64 | ((x ^ mask) - mask);
    memcpy(acc, &sum, sizeof sum);
}

/* Zeroed accumulators of `bytes`. Big ones are aligned to 2 MiB and asked
 * to be backed by huge pages (Linux's transparent huge pages, where
 * madvise turns them on): the updates land anywhere in them, so the fewer
 * pages they span, the fewer TLB misses. */
static void *acc_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (bytes < huge) return calloc(bytes ? bytes : 1, 1);
    if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice: ignored where unsupported */
#endif
    memset(p, 0, bytes);
    return p;
}

/* The window (the bits every value spans; whether an element starts at
 * -0.0) and copy 0 started at the output's values, laid out for rung 6
 * (`private`) or rung 5. 0 or CUA_ENOMEM. */
static int fixed_begin(fixed_state *f, void *out, const void *vals, const cua_scatter *s, cua_launch *cfg,
                       int copies_wanted, int private)
{
    const int64_t total = s->n * s->row, cells = s->m * s->row;
    const int f32 = s->dtype == CUA_FLOAT32;
    efields w = values_efields(vals, s, cua_cpu_team(cfg, total, cfg->blocks));
    int negzero = 0;
    for (int64_t e = 0; e < cells; e++) {
        const uint64_t bits = f32 ? ((const uint32_t *)out)[e] : ((const uint64_t *)out)[e];
        if (bits == 1ull << (f32 ? 31 : 63)) negzero = 1;
        efields_add(&w, bits, f32);
    }
    int lo = 0, hi = 0;
    if (w.least != UINT32_MAX) {
        lo = (int)w.least - (f32 ? F32_BIAS + F32_MBITS : F64_BIAS + F64_MBITS);
        hi = (int)w.most - (f32 ? F32_BIAS : F64_BIAS);
    }
    f->lo = lo;
    f->words = cua_fixed_words(lo, hi);
    f->negzero = negzero;
    f->cells = cells;
    f->narrow = private && f->words == 2;
    f->split = private && !f->narrow;
    f->step = f->split ? 2 * f->words : f->words;
    /* The copies take at most CUA_CPU_EXACT_BYTES together (one at least). */
    const int64_t per = cells * f->step * (int64_t)sizeof(uint64_t) + cells * (int64_t)sizeof(unsigned);
    int copies = copies_wanted;
    f->owners = private && copies > 1 && per > CUA_CPU_OWN_BYTES ? copies : 0;
    if (f->owners) copies = 1;
    while (copies > 1 && copies * per > CUA_CPU_EXACT_BYTES) copies--;
    f->copies = copies;
    f->acc = acc_alloc((size_t)copies * (size_t)(cells * f->step) * sizeof(uint64_t));
    f->flags = calloc((size_t)copies * (size_t)cells, sizeof(unsigned));
    if (!f->acc || !f->flags) {
        free(f->acc); /* from acc_alloc: posix_memalign's memory is free()d */
        free(f->flags);
        return CUA_ENOMEM;
    }
    for (int64_t e = 0; e < cells; e++) {
        const uint64_t bits = f32 ? ((const uint32_t *)out)[e] : ((const uint64_t *)out)[e];
        uint64_t *acc = f->acc + e * f->step;
        f->flags[e] = cua_fixed_classify(bits_value(bits, f32));
        if (!f->split && f32) fixed_value(acc, f->words, &f->flags[e], bits, lo, 0, 1, 0);
        else if (!f->split) fixed_value(acc, f->words, &f->flags[e], bits, lo, 0, 0, 0);
        else if (f32) magnitude_add(acc, f->words, &f->flags[e], bits, lo, 0, 1);
        else magnitude_add(acc, f->words, &f->flags[e], bits, lo, 0, 0);
    }
    return 0;
}

static void fixed_free(fixed_state *f)
{
    free(f->acc); /* from acc_alloc: posix_memalign's memory is free()d */
    free(f->flags);
}

/* sum += (or -=) the `words` words of x, with carries (borrows). */
static inline void words_add(uint64_t *sum, const uint64_t *x, int words, int subtract)
{
    uint64_t carry = 0;
    for (int i = 0; i < words; i++) {
        const uint64_t v = x[i], part = v + carry, old = sum[i];
        carry = part < v;
        if (subtract) {
            sum[i] = old - part;
            carry += old < part;
        } else {
            sum[i] = old + part;
            carry += old + part < old;
        }
    }
}

/* Every copy's integer added up per element (rung 6's halves as positive
 * minus negative), rounded once and written back; a NaN result keeps the
 * start value's NaN. */
static void fixed_end(fixed_state *f, void *out, int dtype, int team)
{
    const int64_t cells = f->cells, size = cells * f->step;
    const int words = f->words, f32 = dtype == CUA_FLOAT32;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t e = 0; e < cells; e++) {
        if (words < 2 || words > CUA_FIXED_MAX_WORDS) __builtin_unreachable(); /* cua_fixed_words: 2 to 35 */
        uint64_t sum[CUA_FIXED_MAX_WORDS] = {0};
        unsigned flag = 0;
        for (int t = 0; t < f->copies; t++) {
            const uint64_t *theirs = f->acc + (size_t)t * (size_t)size + e * f->step;
            words_add(sum, theirs, words, 0);
            if (f->split) words_add(sum, theirs + words, words, 1);
            flag |= f->flags[(size_t)t * (size_t)cells + e];
        }
        const double r = cua_fixed_result(
            cua_fixed_round(sum, words, 1, f->lo, f32 ? 24 : 53, f32 ? -149 : -1074, f32 ? 127 : 1023), flag);
        const double old = element(out, dtype, e);
        if (isnan(r) && isnan(old)) continue; /* keep the start value's NaN */
        if (f32) ((float *)out)[e] = (float)r;
        else ((double *)out)[e] = r;
    }
    fixed_free(f);
}

/* Updates [a, b) into one copy of the accumulators: rung 5's loop (atomic
 * adds of signed values) or rung 6's (plain adds, `narrow` or `split`). The
 * value and index types and negzero tracking are constants in each call
 * of exact_loop (exact_updates below), so the compiler makes a loop for
 * each without a per-update switch. */
static inline __attribute__((always_inline)) void exact_loop(const fixed_state *f, uint64_t *acc, unsigned *flags,
                                                             const void *idx, const void *vals,
                                                             const cua_scatter *s, int64_t a, int64_t b,
                                                             int64_t elo, int64_t ehi, const int f32, const int i64,
                                                             const int track)
{
    cursor c = cursor_at(s, a);
    const int words = f->words, lo = f->lo;
    const int64_t step = f->step;
    for (int64_t w = a; w < b; w++, cursor_next(&c, s->row)) {
        const int64_t e = exact_element(idx, s, c, i64);
        if (e < 0) {
            note_bad(s->bad, c.k);
            continue;
        }
        if ((uint64_t)(e - elo) >= (uint64_t)(ehi - elo)) continue; /* another thread's element */
        const uint64_t bits = exact_bits(vals, s, c, f32);
        if (f->narrow) narrow_add(acc + e * step, &flags[e], bits, lo, track, f32);
        else if (f->split) magnitude_add(acc + e * step, words, &flags[e], bits, lo, track, f32);
        else fixed_value(acc + e * step, words, &flags[e], bits, lo, track, f32, 1);
    }
}

/* Rung 6's loop on one value per element (row = 1) with the window under
 * 64 bits, the common case, with nothing but the update in it. */
static inline __attribute__((always_inline)) void narrow_loop(uint64_t *acc, unsigned *flags, const void *idx,
                                                              const void *vals, const cua_scatter *s, int lo,
                                                              int64_t a, int64_t b, int64_t elo, int64_t ehi,
                                                              const int f32, const int i64, const int track)
{
    const int64_t m = s->m, vk = s->vk;
    const uint64_t flip = s->negate ? 1ull << (f32 ? 31 : 63) : 0;
    for (int64_t w = a; w < b; w++) {
        int64_t e = i64 ? ((const int64_t *)idx)[w] : ((const int32_t *)idx)[w];
        e += e < 0 ? m : 0;
        if ((uint64_t)e >= (uint64_t)m) { /* a bad index: the caller left the check to this rung */
            note_bad(s->bad, w);
            continue;
        }
        if ((uint64_t)(e - elo) >= (uint64_t)(ehi - elo)) continue; /* another thread's element */
        const uint64_t bits = f32 ? ((const uint32_t *)vals)[w * vk] : ((const uint64_t *)vals)[w * vk];
        narrow_add(acc + 2 * e, &flags[e], bits ^ flip, lo, track, f32);
    }
}

/* The eight typings of the exact loops: (float32 values, int64 indices,
 * negzero tracking), each a constant in its instance. */
#define EACH_TYPING_(X) X(1, 1, 0) X(1, 0, 0) X(0, 1, 0) X(0, 0, 0) X(1, 1, 1) X(1, 0, 1) X(0, 1, 1) X(0, 0, 1)

/* Updates [a, b) of the elements [elo, ehi) (the others skipped). */
static void exact_updates(const fixed_state *f, uint64_t *acc, unsigned *flags, const void *idx, const void *vals,
                          const cua_scatter *s, int64_t a, int64_t b, int64_t elo, int64_t ehi)
{
    const int f32 = s->dtype == CUA_FLOAT32, i64 = s->idx_dtype == CUA_INT64, track = f->negzero;
#define NARROW_LOOP_(F32, I64, TRACK)                                                                  \
    if (f->narrow && s->row == 1 && f32 == F32 && i64 == I64 && track == TRACK)                      \
        return narrow_loop(acc, flags, idx, vals, s, f->lo, a, b, elo, ehi, F32, I64, TRACK);
#define EXACT_LOOP_(F32, I64, TRACK) \
    if (f32 == F32 && i64 == I64 && track == TRACK) return exact_loop(f, acc, flags, idx, vals, s, a, b, elo, ehi, F32, I64, TRACK);
    EACH_TYPING_(NARROW_LOOP_)
    EACH_TYPING_(EXACT_LOOP_)
#undef NARROW_LOOP_
#undef EXACT_LOOP_
}

/* What a piece of rung 5 reads and adds into. */
typedef struct {
    const void *idx, *vals;
    const cua_scatter *s;
    fixed_state *f;
} exact_ctx;

static void per_update_exact(const void *vctx, int64_t a, int64_t b)
{
    const exact_ctx *c = vctx;
    exact_updates(c->f, c->f->acc, c->f->flags, c->idx, c->vals, c->s, a, b, 0, c->f->cells);
}

/* Rung 5: one accumulator per element, shared by the OS threads, every
 * word added with an atomic fetch_add (its carry from the old value). */
static int at_exact(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = exact_fits(s, cfg);
    if (st) return st;
    if (s->bad) *s->bad = -1;
    cua_cpu_default_config(cfg, s->n * s->row);
    if (s->n * s->row == 0) return 0;
    fixed_state f;
    st = fixed_begin(&f, out, vals, s, cfg, 1, 0);
    if (st) return st;
    const exact_ctx c = {idx, vals, s, &f};
    st = each_piece(s, cfg, per_update_exact, &c);
    if (st || (s->bad && *s->bad >= 0)) { /* interrupted, or a bad index: `out` untouched */
        fixed_free(&f);
        return st;
    }
    fixed_end(&f, out, s->dtype, cfg->used_team);
    return 0;
}

/* Rung 6: each OS thread adds into accumulators of its own (plain integer
 * adds: the CPU's private memory is the GPU's shared memory), summed word
 * by word at the end. Where a copy would not stay in a core's cache, the
 * CPU's tiling: one copy, each thread the owner of a range of its
 * elements, reading every update and adding those into its range. */
static int at_exact_private(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = exact_private_fits(s, cfg);
    if (st) return st;
    if (s->bad) *s->bad = -1;
    const int64_t total = s->n * s->row;
    cua_cpu_default_config(cfg, total);
    if (total == 0) return 0;
    fixed_state f;
    st = fixed_begin(&f, out, vals, s, cfg, cua_cpu_team(cfg, total, cfg->blocks), 1);
    if (st) return st;
    const int team = f.owners ? f.owners : f.copies;
    cfg->used_team = team;
#pragma omp parallel num_threads(team)
    {
        /* The threads the runtime started share the updates (fewer than
         * asked leave copies of zeros, which the sum passes over) or the
         * elements. */
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo_u = 0, hi_u = total, elo = 0, ehi = f.cells;
        if (f.owners) cua_cpu_share(f.cells, nt, t, &elo, &ehi);
        else cua_cpu_share(total, nt, t, &lo_u, &hi_u);
        uint64_t *mine = f.acc + (f.owners ? 0 : (size_t)t * (size_t)(f.cells * f.step));
        unsigned *my_flags = f.flags + (f.owners ? 0 : (size_t)t * (size_t)f.cells);
        CUA_CPU_PIECES(cfg, lo_u, hi_u, a, b)
        exact_updates(&f, mine, my_flags, idx, vals, s, a, b, elo, ehi);
    }
    if (cfg->interrupted || (s->bad && *s->bad >= 0)) { /* interrupted, or a bad index: `out` untouched */
        fixed_free(&f);
        return CUA_CPU_DONE(cfg);
    }
    fixed_end(&f, out, s->dtype, team);
    return 0;
}

static int fits_any(const cua_scatter *s, cua_launch *cfg)
{
    (void)s;
    (void)cfg;
    return 0;
}

/* The first out-of-range index (-1: none), the OS threads scanning
 * contiguous shares (the first bad position of all is their least). */
int cua_cpu_scatter_check(const void *idx, int idx_dtype, int64_t n, int64_t m, int64_t *bad, cua_launch *cfg)
{
    int64_t first = n;
    const int team = cua_cpu_team(cfg, n, n); /* the rung records its own team after */
#pragma omp parallel num_threads(team) reduction(min : first)
    {
        int64_t lo, hi;
        cua_cpu_share(n, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
        for (int64_t k = lo; k < hi; k++) {
            const int64_t i = idx_dtype == CUA_INT64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
            if (i < -m || i >= m) {
                first = k;
                break;
            }
        }
    }
    *bad = first == n ? -1 : first;
    return 0;
}

static const cua_scatter_row at_rows[] = {
    {{"atomic", 1, "one atomic per update: C11 fetch_add/and/or/xor on integers, a compare-exchange loop for the rest", 0},
     at_atomic, fits_any},
    {{"cas", 2, "every op through a compare-exchange loop on the element's own width", 0}, at_cas, fits_any},
    {{"warp_aggregated", 3, "32 consecutive updates of a thread: those naming one element combined first, one atomic each", 0},
     at_warp_aggregated, fits_any},
    {{"shared", 4, "a private copy of the output per OS thread, plain stores, merged once with atomics", 0},
     at_shared, shared_fits},
    {{"exact", 5, "float add/subtract in one fixed-point integer accumulator per element, words added with atomic fetch_add: the GPU's bits",
      CUA_F_DETERMINISTIC | CUA_F_EXACT},
     at_exact, exact_fits},
    {{"exact_private", 6, "exact's accumulators private to each OS thread (plain adds), summed word by word and rounded once",
      CUA_F_DETERMINISTIC | CUA_F_EXACT},
     at_exact_private, exact_private_fits},
};
const cua_ladder cua_cpu_at_ladder = CUA_LADDER(at_rows);
