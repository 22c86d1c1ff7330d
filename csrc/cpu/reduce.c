/* reduce.c -- the reduce ladder on the CPU (cuda/reduce.cu tells the
 * lesson; here each step says what it does on a CPU, what it costs there,
 * and how it differs from the GPU rung of the same name).
 *
 * Every value is 64 bits (cua_reduce_kind): integers sign- or
 * zero-extended, floats as double; one shared cell holds the running
 * result's bits.
 *
 *  1. atomic      every element combined into the cell atomically: C11's
 *                 fetch_add (integer add) and fetch_and/or/xor. A CPU has
 *                 no atomic min, max, multiply or float add (the GPU has
 *                 atomicMin/Max for integers and atomicAdd for floats), so
 *                 those go through rung 2's compare-exchange loop here.
 *                 Every element moves the cell's cache line between cores.
 *  2. cas         every op through a compare-exchange loop per element:
 *                 read the cell, combine, exchange only if the cell still
 *                 holds what was read, else retry with what is there now.
 *                 Bit patterns are compared (a NaN cannot make it spin); a
 *                 value that would not change the cell skips the exchange.
 *                 A failed exchange retries at once: with a few OS threads
 *                 collisions are rare, so there is no backoff as on the GPU.
 *  3. block_tree  each logical thread folds its share (one contiguous chunk,
 *                 the CPU form of a grid-stride loop) in SIMD lanes, a
 *                 logical block's threads combine in the tree the GPU builds
 *                 in shared memory -- here a loop over a stack array on the
 *                 one OS thread that runs the block -- then one atomic per
 *                 block (native or CAS, as in rung 1).
 *  4. vector      one contiguous chunk per OpenMP thread folded in SIMD
 *                 lanes (an AVX2 clone where the CPU has it), the chunks'
 *                 values combined in chunk order by the calling thread:
 *                 deterministic for a given team size. Float min/max as
 *                 integer min/max on order-preserving keys; a float product
 *                 as a double-double; add is sum's vector rung (vector.c:
 *                 compensated float64). Where the GPU rung keeps 16-byte
 *                 loads in flight and lets the last block finish, the CPU
 *                 leans on the prefetcher, SIMD lanes and a fork-join.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---------------------------------------------------------------- helpers */

/* The op's atomic made from compare-exchange: read, combine, and exchange
 * only if the cell still holds what we read; on failure `old` is refreshed
 * with what someone else wrote and we retry. Bits are compared, never
 * floats, so a NaN cannot make the loop spin forever. A combined value
 * equal to the cell's needs no exchange: applying the op there would
 * change nothing (min, max, and, or stop writing once the cell settles). */
void cua_cpu_cell_cas(int kind, int op, _Atomic uint64_t *cell, cua_acc_t v)
{
    uint64_t old = atomic_load_explicit(cell, memory_order_relaxed), next;
    do {
        cua_acc_t now = {.i = old};
        next = cua_cpu_red_combine(kind, op, now, v).i;
        if (next == old) return;
    } while (!atomic_compare_exchange_weak_explicit(cell, &old, next, memory_order_relaxed, memory_order_relaxed));
}

/* The atomics C11 has: integer add, and, or, xor; the rest as cell_cas. */
void cua_cpu_cell_atomic(int kind, int op, _Atomic uint64_t *cell, cua_acc_t v)
{
    switch (op) {
    case CUA_REDUCE_ADD:
        if (kind == CUA_FLOAT64) break;
        atomic_fetch_add_explicit(cell, v.i, memory_order_relaxed);
        return;
    case CUA_REDUCE_BITWISE_AND: atomic_fetch_and_explicit(cell, v.i, memory_order_relaxed); return;
    case CUA_REDUCE_BITWISE_OR: atomic_fetch_or_explicit(cell, v.i, memory_order_relaxed); return;
    case CUA_REDUCE_BITWISE_XOR: atomic_fetch_xor_explicit(cell, v.i, memory_order_relaxed); return;
    default: break;
    }
    cua_cpu_cell_cas(kind, op, cell, v); /* no such atomic on a CPU */
}

typedef void (*cell_fn)(int kind, int op, _Atomic uint64_t *cell, cua_acc_t v);

/* The result of an empty input: the op's identity, or NumPy's refusal
 * (minimum and maximum have none). */
static int empty_fold(int kind, int op, void *result, cua_launch *cfg)
{
    if (op == CUA_REDUCE_MINIMUM || op == CUA_REDUCE_MAXIMUM) {
        snprintf(cfg->msg, sizeof cfg->msg, "zero-size array to reduction operation %s which has no identity",
                 op == CUA_REDUCE_MINIMUM ? "minimum" : "maximum");
        return CUA_EINVAL;
    }
    const cua_acc_t r = cua_cpu_red_identity(kind, op);
    memcpy(result, &r.i, sizeof r.i);
    return CUA_OK;
}

/* Rungs 1 and 2: every logical thread combines each element of its share
 * into the cell with `apply`, a piece at a time (Ctrl-C is asked between
 * pieces). */
static int per_element(cell_fn apply, const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)
{
    const int kind = cua_reduce_kind(dtype, op);
    const cua_grid g = cua_cpu_grid(cfg, n);
    if (n == 0) return empty_fold(kind, op, result, cfg);
    _Atomic uint64_t cell = cua_cpu_red_identity(kind, op).i;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) apply(kind, op, &cell, cua_cpu_red_load(x, dtype, i));
    }
    const uint64_t bits = atomic_load(&cell);
    memcpy(result, &bits, sizeof bits);
    return CUA_CPU_DONE(cfg);
}

/* Logical block `block` of the launch: its threads fold their shares, then
 * combine in the tree of the CUDA rung. */
static cua_acc_t block_value(const void *x, int64_t n, int dtype, int op, int kind, const cua_launch *cfg,
                             int64_t block)
{
    cua_acc_t lanes[CUA_CPU_MAX_BLOCK_THREADS];
    const int T = cfg->threads;
    const int64_t W = cfg->blocks * T;
    for (int t = 0; t < T; t++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, block * T + t, &lo, &hi);
        lanes[t] = cua_cpu_red_fold(x, dtype, op, lo, hi);
    }
    /* The tree: halve the active lanes, each combining its partner's value. */
    int s = 1;
    while (s * 2 < T) s *= 2;
    for (; s > 0; s >>= 1)
        for (int t = 0; t < s && t + s < T; t++) lanes[t] = cua_cpu_red_combine(kind, op, lanes[t], lanes[t + s]);
    return lanes[0];
}

/* ------------------------------------------------------------------ rungs */

static int reduce_atomic(const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)
{
    return per_element(cua_cpu_cell_atomic, x, n, dtype, op, result, cfg);
}

static int reduce_cas(const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)
{
    return per_element(cua_cpu_cell_cas, x, n, dtype, op, result, cfg);
}

static int reduce_block_tree(const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)
{
    const int kind = cua_reduce_kind(dtype, op);
    const cua_grid g = cua_cpu_grid(cfg, n);
    if (n == 0) return empty_fold(kind, op, result, cfg);
    _Atomic uint64_t cell = cua_cpu_red_identity(kind, op).i;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t k = 0; k < g.busy_blocks; k++)
        if (!cua_cpu_stop(cfg)) cua_cpu_cell_atomic(kind, op, &cell, block_value(x, n, dtype, op, kind, cfg, k));
    const uint64_t bits = atomic_load(&cell);
    memcpy(result, &bits, sizeof bits);
    return CUA_CPU_DONE(cfg);
}

/* Inputs of fewer elements are one chunk, folded by the calling thread
 * (as vector.c's): waking the team would cost more than it saves. */
#define ONE_CHUNK_BELOW ((int64_t)1 << 15)

/* One chunk of the vector rung, a piece at a time (Ctrl-C is asked
 * between pieces): into *v, or for a float product into *p. */
static void vector_chunk(const void *x, int dtype, int op, int kind, int64_t lo, int64_t hi, cua_launch *cfg,
                         cua_acc_t *v, cua_dd *p)
{
    CUA_CPU_PIECES(cfg, lo, hi, a, b) {
        if (p) *p = cua_cpu_dd_mul(*p, cua_cpu_red_product(x, dtype, a, b));
        else *v = cua_cpu_red_combine(kind, op, *v, cua_cpu_red_fold(x, dtype, op, a, b));
    }
}

static int reduce_vector(const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)
{
    const int kind = cua_reduce_kind(dtype, op);
    if (op == CUA_REDUCE_ADD) /* add is sum: its result is already this kind's */
        return cua_cpu_vector_reduce(x, NULL, n, dtype, kind == CUA_FLOAT64 ? CUA_ACC_FLOAT64 : CUA_ACC_INT64,
                                     result, cfg);
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_CHUNK_BELOW ? 1 : cua_cpu_threads();
    cfg->used_threads = cfg->threads = CUA_CPU_FOLD_LANES; /* a block's threads are the fold's lanes */
    cua_cpu_clamp_grid(cfg, n, (int64_t)CUA_CPU_FOLD_LANES * CUA_CPU_MIN_SHARE);
    if (n == 0) return empty_fold(kind, op, result, cfg);
    const int product = op == CUA_REDUCE_MULTIPLY && kind == CUA_FLOAT64;
    const int64_t B = cfg->blocks, busy = cua_cpu_busy(n, B);
    const int team = cua_cpu_team(cfg, n, busy);
    cua_acc_t *values = malloc((size_t)busy * sizeof *values);
    cua_dd *products = malloc((size_t)busy * sizeof *products);
    if (!values || !products) {
        free(values);
        free(products);
        return CUA_ENOMEM;
    }
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t k = 0; k < busy; k++) {
        int64_t lo, hi;
        cua_cpu_share(n, B, k, &lo, &hi);
        values[k] = cua_cpu_red_identity(kind, op);
        products[k] = (cua_dd){1.0, 0.0};
        vector_chunk(x, dtype, op, kind, lo, hi, cfg, &values[k], product ? &products[k] : NULL);
    }
    cua_acc_t total = values[0];
    cua_dd p = products[0];
    for (int64_t k = 1; k < busy; k++) {
        total = cua_cpu_red_combine(kind, op, total, values[k]);
        p = cua_cpu_dd_mul(p, products[k]);
    }
    if (product) total.d = cua_cpu_dd_product_value(p);
    free(values);
    free(products);
    memcpy(result, &total.i, sizeof total.i);
    return CUA_CPU_DONE(cfg);
}

/* ----------------------------------------------------------- variant table */

static const cua_reduce_row reduce_rows[] = {
    {{"atomic", 1, "one atomic per element: fetch_add/and/or/xor; min, max, multiply and float add have none on a CPU: a CAS loop",
      0},
     reduce_atomic},
    {{"cas", 2, "every op through a compare-exchange loop per element: bits compared, no exchange when nothing changes",
      0},
     reduce_cas},
    {{"block_tree", 3, "a logical block's lanes combine in a tree (a loop on one OS thread), one atomic per block",
      0},
     reduce_block_tree},
    {{"vector", 4, "a chunk per OpenMP thread in SIMD lanes, chunks combined in order: deterministic; float min/max on integer keys, float add/multiply compensated",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     reduce_vector},
};
const cua_ladder cua_cpu_reduce_ladder = CUA_LADDER(reduce_rows);
