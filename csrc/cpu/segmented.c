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

static int seg_atomic(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op, void *out,
                      cua_launch *cfg)
{
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

static int seg_warp(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op, void *out,
                    cua_launch *cfg)
{
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

static int seg_columns(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op, void *out,
                       cua_launch *cfg)
{
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

static int seg_tiled(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op, void *out,
                     cua_launch *cfg)
{
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
};
const cua_ladder cua_cpu_segmented_ladder = CUA_LADDER(segmented_rows);
