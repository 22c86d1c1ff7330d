/* segmented.c -- reductions along axes on the CPU (cuda/segmented.cu tells
 * the lesson; here each step says what it does on a CPU). The input is
 * (outer, m, inner) in C order: output k = o * inner + i folds the m
 * elements at (o * m + j) * inner + i, j = 0 .. m-1, with the op, into 8
 * bytes of cua_reduce_kind (integers widened to 64 bits, floats as double).
 *
 *  1. atomic   every element combined into its output's cell atomically
 *              (reduce.c's cell ops: fetch_add for integer add, a
 *              compare-exchange loop for the rest): the tutorial's
 *              atomicAdd, one per element, applied per segment. Float sums
 *              come out in whatever order the threads got there.
 *  2. warp     one output at a time per thread (the GPU gives each a warp):
 *              its m elements folded in order, float add compensated (a
 *              double-double), so the result is deterministic and at least
 *              as accurate as NumPy's pairwise sum. A contiguous row
 *              (inner == 1) is folded by the flat reduce's SIMD lanes, as
 *              the GPU's warp folds it in 32 lanes; strided reads when
 *              inner > 1.
 *  3. columns  a thread takes a run of outputs side by side (consecutive
 *              i) and walks the axis row by row, folding each row's run of
 *              elements into the run's cells: contiguous reads whatever the
 *              axis (the GPU's threads along the output); compensated float
 *              add, deterministic.
 *  4. tiled    columns with the axis cut in chunks when there are fewer
 *              runs of outputs than threads (16 x 2^20 along axis 1, 2^20
 *              x 16 along axis 0): each (chunk, run) folds its rows into
 *              partials, and the chunks' partials are folded in chunk order
 *              by the calling thread -- deterministic for a given team, as
 *              the GPU's chunks are folded in chunk order by a second
 *              kernel.
 *  5. vector   the op and the element type compiled in (folds.c's typed
 *              loops), where the rungs above combine through a switch per
 *              element: a contiguous row by the flat reduce's SIMD folds
 *              (float add compensated, a float product as a
 *              double-double) -- rows of at most SHORT elements RUN at a
 *              time side by side, the rows as the lanes -- a strided axis
 *              RUN columns at a time with the columns as the SIMD lanes. The work is cut by the shape
 *              alone -- rows longer than SPAN into spans of SPAN, a strided
 *              axis with few runs of columns into chunks of rows -- and the
 *              partials folded in order: the same bits whatever the team.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* outputs a `columns` thread folds side by side: 4 KiB of cells (with their
 * compensation terms) stay in L1. */
#define RUN 256

static inline int is_float_add(int kind, int op) { return kind == CUA_FLOAT64 && op == CUA_REDUCE_ADD; }

/* One (chunk, run) of columns and tiled: rows [j0, j1) of the run of w
 * outputs from output o * inner + i0, folded into acc (sum for a float
 * add). */
static void fold_rows(const void *x, int dtype, int kind, int op, int64_t m, int64_t inner, int64_t o, int64_t i0,
                      int64_t w, int64_t j0, int64_t j1, cua_acc_t *acc, cua_dd *sum)
{
    const int fadd = is_float_add(kind, op);
    for (int64_t j = j0; j < j1; j++) {
        const int64_t row = (o * m + j) * inner + i0;
        if (fadd)
            for (int64_t c = 0; c < w; c++)
                sum[c] = cua_dd_add(sum[c], (cua_dd){cua_cpu_red_load(x, dtype, row + c).d, 0.0});
        else
            for (int64_t c = 0; c < w; c++)
                acc[c] = cua_cpu_red_combine(kind, op, acc[c], cua_cpu_red_load(x, dtype, row + c));
    }
}

static int seg_atomic(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                      const cua_seg_out *dest, cua_launch *cfg)
{
    void *out = dest->values; /* kind values: the glue finishes them on the host */
    const int kind = cua_reduce_kind(dtype, op);
    const int64_t outs = outer * inner, n = outs * m;
    _Atomic uint64_t *cells = (_Atomic uint64_t *)out;
    const uint64_t id = cua_cpu_red_identity(kind, op).i;
    for (int64_t k = 0; k < outs; k++) atomic_init(&cells[k], id);
    const cua_grid g = cua_cpu_grid(cfg, n);
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t e = a; e < b; e++) {
            /* element e = (o * m + j) * inner + i belongs to output o * inner + i */
            const int64_t i = e % inner, o = e / inner / m;
            cua_cpu_cell_atomic(kind, op, &cells[o * inner + i], cua_cpu_red_load(x, dtype, e));
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int seg_warp(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                    const cua_seg_out *dest, cua_launch *cfg)
{
    void *out = dest->values; /* kind values: the glue finishes them on the host */
    const int kind = cua_reduce_kind(dtype, op);
    const int64_t outs = outer * inner;
    uint64_t *res = (uint64_t *)out;
    const int team = cua_cpu_team(cfg, outs * m, outs);
    cfg->used_blocks = outs;
    cfg->used_threads = 1;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t k = 0; k < outs; k++) {
        if ((k & 1023) == 0 && cua_cpu_stop(cfg)) continue;
        const int64_t o = k / inner, i = k % inner, base = o * m * inner + i;
        if (inner == 1) { /* a contiguous row: the flat reduce's SIMD folds */
            if (is_float_add(kind, op)) {
                const double v = cua_dd_value(cua_cpu_float_sum_dd(x, dtype, base, base + m));
                memcpy(&res[k], &v, 8);
            } else {
                res[k] = cua_cpu_red_fold(x, dtype, op, base, base + m).i;
            }
            continue;
        }
        if (is_float_add(kind, op)) {
            cua_dd s = {0.0, 0.0};
            for (int64_t j = 0; j < m; j++) s = cua_dd_add(s, (cua_dd){cua_cpu_red_load(x, dtype, base + j * inner).d, 0.0});
            const double v = cua_dd_value(s);
            memcpy(&res[k], &v, 8);
        } else {
            cua_acc_t acc = cua_cpu_red_identity(kind, op);
            for (int64_t j = 0; j < m; j++)
                acc = cua_cpu_red_combine(kind, op, acc, cua_cpu_red_load(x, dtype, base + j * inner));
            res[k] = acc.i;
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int seg_columns(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                       const cua_seg_out *dest, cua_launch *cfg)
{
    void *out = dest->values; /* kind values: the glue finishes them on the host */
    const int kind = cua_reduce_kind(dtype, op);
    const int64_t runs_per_row = (inner + RUN - 1) / RUN, runs = outer * runs_per_row;
    uint64_t *res = (uint64_t *)out;
    const int team = cua_cpu_team(cfg, outer * inner * m, runs);
    cfg->used_blocks = runs;
    cfg->used_threads = 1;
    const int fadd = is_float_add(kind, op);
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t r = 0; r < runs; r++) {
        if (cua_cpu_stop(cfg)) continue;
        const int64_t o = r / runs_per_row, i0 = (r % runs_per_row) * RUN;
        const int64_t w = inner - i0 < RUN ? inner - i0 : RUN;
        cua_acc_t acc[RUN];
        cua_dd sum[RUN];
        for (int64_t c = 0; c < w; c++) {
            acc[c] = cua_cpu_red_identity(kind, op);
            sum[c] = (cua_dd){0.0, 0.0};
        }
        fold_rows(x, dtype, kind, op, m, inner, o, i0, w, 0, m, acc, sum);
        for (int64_t c = 0; c < w; c++) {
            if (fadd) {
                const double v = cua_dd_value(sum[c]);
                memcpy(&res[o * inner + i0 + c], &v, 8);
            } else {
                res[o * inner + i0 + c] = acc[c].i;
            }
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int seg_tiled(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                     const cua_seg_out *dest, cua_launch *cfg)
{
    void *out = dest->values; /* kind values: the glue finishes them on the host */
    const int kind = cua_reduce_kind(dtype, op);
    const int fadd = is_float_add(kind, op);
    const int64_t outs = outer * inner, runs_per_row = (inner + RUN - 1) / RUN, runs = outer * runs_per_row;
    if (outs == 0) return CUA_OK;
    const int threads = cua_cpu_threads();
    int64_t chunks = runs >= threads ? 1 : (threads + runs - 1) / runs;
    const int64_t most = (m + 4095) / 4096; /* a chunk of at least 4096 rows */
    if (chunks > most) chunks = most;
    if (chunks < 1) chunks = 1;
    const int64_t rows = (m + chunks - 1) / chunks;
    cua_acc_t *acc = malloc((size_t)(chunks * outs > 0 ? chunks * outs : 1) * sizeof *acc);
    cua_dd *sum = malloc((size_t)(chunks * outs > 0 ? chunks * outs : 1) * sizeof *sum);
    if (!acc || !sum) {
        free(acc);
        free(sum);
        return CUA_ENOMEM;
    }
    const int team = cua_cpu_team(cfg, outs * m, chunks * runs);
    cfg->used_blocks = chunks * runs;
    cfg->used_threads = 1;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t t = 0; t < chunks * runs; t++) {
        if (cua_cpu_stop(cfg)) continue;
        const int64_t c = t / runs, r = t % runs, o = r / runs_per_row, i0 = (r % runs_per_row) * RUN;
        const int64_t w = inner - i0 < RUN ? inner - i0 : RUN;
        cua_acc_t *a = acc + c * outs + o * inner + i0;
        cua_dd *d = sum + c * outs + o * inner + i0;
        for (int64_t q = 0; q < w; q++) {
            a[q] = cua_cpu_red_identity(kind, op);
            d[q] = (cua_dd){0.0, 0.0};
        }
        const int64_t j0 = c * rows, j1 = j0 + rows < m ? j0 + rows : m;
        fold_rows(x, dtype, kind, op, m, inner, o, i0, w, j0, j1, a, d);
    }
    uint64_t *res = (uint64_t *)out;
    for (int64_t k = 0; k < outs && !cfg->interrupted; k++) {
        if (fadd) {
            cua_dd s = sum[k];
            for (int64_t c = 1; c < chunks; c++) s = cua_dd_add(s, sum[c * outs + k]);
            const double v = cua_dd_value(s);
            memcpy(&res[k], &v, 8);
        } else {
            cua_acc_t a = acc[k];
            for (int64_t c = 1; c < chunks; c++) a = cua_cpu_red_combine(kind, op, a, acc[c * outs + k]);
            res[k] = a.i;
        }
    }
    free(acc);
    free(sum);
    return CUA_CPU_DONE(cfg);
}

/* vector's cut: a row longer than SPAN elements is folded in spans of
 * SPAN; a strided axis is cut into chunks of rows when it has fewer than
 * CUT runs of columns (at least CHUNK_ROWS rows a chunk), and into chunks
 * of at most CUA_CPU_PIECE / VRUN rows anyway (a piece between two polls of
 * Ctrl-C stays short). Constants, not
 * the team's size: the partials, and so the bits, are the same on any
 * machine. */
#define SPAN ((int64_t)1 << 16)
/* vector's run of columns (or of short rows): CUA_CPU_RUN, wider than the
 * older rungs' RUN -- a row's run spans whole pages, which the strided axis
 * streams better on two cores (about 80 KiB of each worker's stack). */
#define VRUN CUA_CPU_RUN
#define CUT 64
#define CHUNK_ROWS 1024
/* Contiguous rows of at most SHORT elements are folded VRUN rows side by
 * side (the rows as the lanes), not one call of a row fold each. */
#define SHORT 64

/* One piece's fold: a kind value, or the double-double of a float add or
 * multiply. */
typedef struct {
    cua_acc_t v;
    cua_dd d;
} partial;

static partial vector_row(const void *x, int dtype, int op, int dd, int64_t lo, int64_t hi)
{
    partial r = {{0}, {0.0, 0.0}};
    if (!dd) r.v = cua_cpu_red_fold(x, dtype, op, lo, hi);
    else if (op == CUA_REDUCE_ADD) r.d = cua_cpu_float_sum_dd(x, dtype, lo, hi);
    else r.d = cua_cpu_red_product(x, dtype, lo, hi);
    return r;
}

static partial merge(int kind, int op, int dd, partial a, partial b)
{
    if (!dd) a.v = cua_cpu_red_combine(kind, op, a.v, b.v);
    else if (op == CUA_REDUCE_ADD) a.d = cua_dd_add(a.d, b.d);
    else a.d = cua_cpu_dd_mul(a.d, b.d);
    return a;
}

static uint64_t value_bits(int op, int dd, partial p)
{
    if (!dd) return p.v.i;
    const double v = op == CUA_REDUCE_ADD ? cua_dd_value(p.d) : cua_cpu_dd_product_value(p.d);
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static int seg_vector(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                      const cua_seg_out *dest, cua_launch *cfg)
{
    void *out = dest->values; /* kind values: the glue finishes them on the host */
    const int kind = cua_reduce_kind(dtype, op);
    const int dd = kind == CUA_FLOAT64 && (op == CUA_REDUCE_ADD || op == CUA_REDUCE_MULTIPLY);
    const int64_t outs = outer * inner;
    const size_t es = cua_dtype_size(dtype);
    uint64_t *res = (uint64_t *)out;
    if (outs == 0) return CUA_OK;
    if (m == 0) {
        const uint64_t id = cua_cpu_red_identity(kind, op).i;
        for (int64_t k = 0; k < outs; k++) res[k] = id;
        return CUA_OK;
    }
    /* pieces: (output run, chunk) pairs; runs of VRUN columns on a strided axis, single rows on a contiguous one
     * (runs of VRUN short rows) */
    const int side = inner == 1 && m <= SHORT;
    const int64_t runs_per_row = inner == 1 ? 1 : (inner + VRUN - 1) / VRUN;
    const int64_t runs = side ? (outer + VRUN - 1) / VRUN : outer * runs_per_row;
    int64_t chunks = 1;
    if (inner == 1) chunks = (m + SPAN - 1) / SPAN;
    else if (runs < CUT) {
        chunks = (CUT + runs - 1) / runs;
        const int64_t most = (m + CHUNK_ROWS - 1) / CHUNK_ROWS;
        chunks = chunks < most ? chunks : most;
        chunks = chunks > 0 ? chunks : 1;
    }
    /* at most CUA_CPU_PIECE elements a piece between two polls of Ctrl-C: chunks of at most CUA_CPU_PIECE /
     * VRUN rows on a strided axis (their partials: one per output and chunk, 1/2048 of the elements) */
    const int64_t piece_rows = CUA_CPU_PIECE / VRUN;
    if (inner > 1 && chunks < (m + piece_rows - 1) / piece_rows) chunks = (m + piece_rows - 1) / piece_rows;
    const int64_t rows = inner == 1 ? SPAN : (m + chunks - 1) / chunks;
    partial *part = NULL;
    if (chunks > 1 && !(part = malloc((size_t)chunks * (size_t)outs * sizeof *part))) return CUA_ENOMEM;
    const int team = cua_cpu_team(cfg, outs * m, chunks * runs);
    cfg->used_blocks = chunks * runs;
    cfg->used_threads = 1;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t t = 0; t < chunks * runs; t++) {
        if (cua_cpu_stop(cfg)) continue;
        const int64_t r = t / chunks, c = t % chunks, j0 = c * rows, j1 = j0 + rows < m ? j0 + rows : m;
        cua_acc_t v[VRUN];
        cua_dd d[VRUN];
        if (side) { /* rows r * VRUN ... side by side, whole (chunks == 1) */
            const int64_t r0 = r * VRUN, w = outer - r0 < VRUN ? outer - r0 : VRUN;
            cua_cpu_red_columns((const char *)x + (size_t)(r0 * m) * es, dtype, op, 1, m, m, w, v, d);
            for (int64_t q = 0; q < w; q++) {
                partial p;
                if (dd) p.d = d[q];
                else p.v = v[q];
                res[r0 + q] = value_bits(op, dd, p);
            }
            continue;
        }
        if (inner == 1) { /* row r, span c */
            const partial p = vector_row(x, dtype, op, dd, r * m + j0, r * m + j1);
            if (part) part[r * chunks + c] = p;
            else res[r] = value_bits(op, dd, p);
            continue;
        }
        const int64_t o = r / runs_per_row, i0 = (r % runs_per_row) * VRUN, w = inner - i0 < VRUN ? inner - i0 : VRUN;
        cua_cpu_red_columns((const char *)x + (size_t)((o * m + j0) * inner + i0) * es, dtype, op, inner, 1, j1 - j0,
                            w, v, d);
        for (int64_t q = 0; q < w; q++) {
            const int64_t k = o * inner + i0 + q;
            partial p;
            if (dd) p.d = d[q];
            else p.v = v[q];
            if (part) part[k * chunks + c] = p;
            else res[k] = value_bits(op, dd, p);
        }
    }
    if (part) {
#pragma omp parallel for schedule(static) num_threads(team)
        for (int64_t k = 0; k < outs; k++) {
            if (cfg->interrupted) continue;
            partial p = part[k * chunks];
            for (int64_t c = 1; c < chunks; c++) p = merge(kind, op, dd, p, part[k * chunks + c]);
            res[k] = value_bits(op, dd, p);
        }
        free(part);
    }
    return CUA_CPU_DONE(cfg);
}

static const cua_segmented_row segmented_rows[] = {
    {{"atomic", 1, "every element combined into its output's cell atomically (fetch_add, CAS): per-segment atomics", 0},
     seg_atomic},
    {{"warp", 2, "one output per thread, its axis folded in order, float add compensated", CUA_F_DETERMINISTIC},
     seg_warp},
    {{"columns", 3, "a run of neighbouring outputs per thread, the axis walked row by row: contiguous reads",
      CUA_F_DETERMINISTIC},
     seg_columns},
    {{"tiled", 4, "columns with the axis cut in chunks when outputs are few; partials folded in chunk order",
      CUA_F_DETERMINISTIC},
     seg_tiled},
    {{"vector", 5, "the op and type compiled in: rows by the flat reduce's SIMD folds, a strided axis with the "
      "columns as SIMD lanes; cut by the shape alone, partials folded in order", CUA_F_DETERMINISTIC},
     seg_vector},
};
const cua_ladder cua_cpu_segmented_ladder = CUA_LADDER(segmented_rows);
