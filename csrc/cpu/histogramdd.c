/* histogramdd.c -- the histogram ladder in several dimensions on the CPU
 * (cuda/histogramdd.cu tells the lesson; here each step says what it does on
 * a CPU and how it differs from the GPU rung of the same name). A point's
 * cell is its bin in every dimension (np.histogram's rule, bins.c), in C
 * order; a point outside any dimension's edges is dropped.
 *
 *  1. global  every point's cell incremented with an atomic fetch_add on the
 *             shared 64-bit counts: threads meet on popular cells, whose
 *             cache lines bounce between cores.
 *  2. shared  each OpenMP thread counts its share of the points into a
 *             private copy of all cells (plain increments: no atomics while
 *             counting), then adds each nonzero cell to the shared counts
 *             with one atomic add. A CPU has no shared-memory limit: any
 *             number of cells (the GPU's refuses more than fit).
 *  3. tiled   shared, a tile of cells at a time: the cells are cut into
 *             tiles of TILE_CELLS and every thread counts, for each tile,
 *             the points of its share whose cell lies in it. Reads (and
 *             bins) the points once per tile, to keep each private copy
 *             within a cache; one tile is the shared rung. On a CPU the bin
 *             search of every coordinate costs more than a counter's miss in
 *             L2 (256 x 256 cells of 2^22 points, 2 threads: 2 tiles of 2^15
 *             cells 620 ms, one 417 ms), so a tile is 8 MiB of counters,
 *             not the GPU's shared memory's worth.
 *  4. cluster the GPU's distributed shared memory, on a CPU's threads: the
 *             cells are cut over the team, each thread's part allocated and
 *             zeroed by that thread (first touch: its own memory on a NUMA
 *             machine), and every point is added with an atomic add into
 *             the part of the thread that owns its cell. One pass over the
 *             points and no merge -- the GPU's cluster too writes each
 *             count once, from the block that holds it. As there, cells
 *             that one private copy holds (a tile) are refused: shared's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* 8 MiB of 64-bit counters: a last-level cache's share. */
#define TILE_CELLS ((int64_t)1 << 20)

/* The cell of point i, or -1 when a coordinate is outside its bins. */
static inline int64_t cell_of(const cua_sample *s, const int64_t *place, size_t size, int dtype, int64_t i)
{
    int64_t cell = 0;
    for (int d = 0; d < s->ndim; d++) {
        const char *at = (const char *)s->cols[d] + (size_t)(i * s->strides[d]) * size;
        const int64_t b = cua_cpu_bin(at, dtype, &s->bins[d], 0);
        if (b < 0) return -1;
        cell += b * place[d];
    }
    return cell;
}

/* The cells of a sample and each dimension's place value in the cell index. */
static int64_t places(const cua_sample *s, int64_t *place)
{
    int64_t cells = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        place[d] = cells;
        cells *= s->bins[d].nbins;
    }
    return cells;
}

static void to_double(const uint64_t *counts, int64_t cells, double *hist)
{
    for (int64_t c = 0; c < cells; c++) hist[c] = (double)counts[c];
}

static int dd_global(const cua_sample *s, int64_t n, int dtype, double *hist, cua_launch *cfg)
{
    int64_t place[CUA_DD_MAX];
    const int64_t cells = places(s, place);
    const size_t size = cua_dtype_size(dtype);
    _Atomic uint64_t *counts = calloc((size_t)cells, sizeof *counts);
    if (!counts) return CUA_ENOMEM;
    const cua_grid g = cua_cpu_grid(cfg, n);
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) {
            const int64_t c = cell_of(s, place, size, dtype, i);
            if (c >= 0) atomic_fetch_add_explicit(&counts[c], 1, memory_order_relaxed);
        }
    }
    to_double((const uint64_t *)counts, cells, hist);
    free(counts);
    return CUA_CPU_DONE(cfg);
}

/* shared and tiled: each OpenMP thread's share of the points counted into
 * a private copy of the cells [first, first + width), a tile at a time,
 * each copy added into the shared counts with one atomic add per nonzero
 * cell. */
static int dd_tiles(const cua_sample *s, int64_t n, int dtype, double *hist, int64_t tile, cua_launch *cfg)
{
    int64_t place[CUA_DD_MAX];
    const int64_t cells = places(s, place);
    const size_t size = cua_dtype_size(dtype);
    if (tile > cells) tile = cells;
    if (cfg->blocks <= 0) cfg->blocks = cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_threads = 1;
    cua_cpu_clamp_grid(cfg, n, CUA_CPU_MIN_SHARE);
    const int64_t B = cua_cpu_busy(n, cfg->blocks);
    const int team = cua_cpu_team(cfg, n, B);
    _Atomic uint64_t *counts = calloc((size_t)cells, sizeof *counts);
    if (!counts) return CUA_ENOMEM;
    int failed = 0;
#pragma omp parallel num_threads(team)
    {
        uint64_t *mine = malloc((size_t)tile * sizeof *mine);
        if (!mine) {
#pragma omp atomic write
            failed = 1;
        }
        for (int64_t first = 0; first < cells; first += tile) {
            const int64_t width = cells - first < tile ? cells - first : tile;
#pragma omp for schedule(static)
            for (int64_t b = 0; b < B; b++) {
                if (!mine || cua_cpu_stop(cfg)) continue;
                int64_t lo, hi;
                cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
                memset(mine, 0, (size_t)width * sizeof *mine);
                CUA_CPU_PIECES(cfg, lo, hi, a, e)
                for (int64_t i = a; i < e; i++) {
                    const int64_t c = cell_of(s, place, size, dtype, i) - first;
                    /* (unsigned: a dropped point's -1 - first wraps past width) */
                    if ((uint64_t)c < (uint64_t)width) mine[c]++;
                }
                for (int64_t c = 0; c < width; c++)
                    if (mine[c]) atomic_fetch_add_explicit(&counts[first + c], mine[c], memory_order_relaxed);
            }
        }
        free(mine);
    }
    to_double((const uint64_t *)counts, cells, hist);
    free(counts);
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

static int dd_shared(const cua_sample *s, int64_t n, int dtype, double *hist, cua_launch *cfg)
{
    return dd_tiles(s, n, dtype, hist, INT64_MAX, cfg);
}

static int dd_tiled(const cua_sample *s, int64_t n, int dtype, double *hist, cua_launch *cfg)
{
    return dd_tiles(s, n, dtype, hist, TILE_CELLS, cfg);
}

/* cluster takes what one private copy cannot hold, as on the GPU: cells
 * that fit one tile are shared's (one read, no atomics while counting,
 * faster on a CPU: 2^22 points in 256 x 256 cells, 2 threads, 97 ms against
 * cluster's 137). */
static int dd_fits_cluster(const cua_sample *s, int dtype, cua_launch *cfg)
{
    (void)dtype;
    int64_t place[CUA_DD_MAX];
    const int64_t cells = places(s, place);
    if (cells <= TILE_CELLS) {
        snprintf(cfg->msg, sizeof cfg->msg,
                 "method 'cluster' spreads cells over the threads: %lld fit one thread's copy (%lld), use "
                 "method='shared' (or 'tiled')", (long long)cells, (long long)TILE_CELLS);
        return CUA_EINVAL;
    }
    return CUA_OK;
}

static int dd_cluster(const cua_sample *s, int64_t n, int dtype, double *hist, cua_launch *cfg)
{
    int st = dd_fits_cluster(s, dtype, cfg);
    if (st) return st;
    int64_t place[CUA_DD_MAX];
    const int64_t cells = places(s, place);
    const size_t size = cua_dtype_size(dtype);
    const cua_grid g = cua_cpu_grid(cfg, n);
    const int team = g.team > 0 ? g.team : 1;
    const int64_t part = (cells + team - 1) / team;
    _Atomic uint64_t **parts = calloc((size_t)team, sizeof *parts);
    if (!parts) return CUA_ENOMEM;
    int failed = 0;
#pragma omp parallel num_threads(team)
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        /* A team smaller than asked for: the first thread holds the parts nobody took. */
        for (int p = t; p < team; p += nt) {
            const int64_t width = cells - p * part < part ? (cells - p * part > 0 ? cells - p * part : 0) : part;
            parts[p] = calloc((size_t)(width > 0 ? width : 1), sizeof **parts);
            if (!parts[p]) {
#pragma omp atomic write
                failed = 1;
            }
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t w = 0; w < g.busy; w++) {
            if (failed || cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, g.workers, w, &lo, &hi);
            CUA_CPU_PIECES(cfg, lo, hi, a, b)
            for (int64_t i = a; i < b; i++) {
                const int64_t c = cell_of(s, place, size, dtype, i);
                if (c >= 0) atomic_fetch_add_explicit(&parts[c / part][c % part], 1, memory_order_relaxed);
            }
        }
    }
    for (int p = 0; !failed && p < team; p++)
        for (int64_t c = p * part; c < cells && c < (p + 1) * part; c++)
            hist[c] = (double)atomic_load_explicit(&parts[p][c - p * part], memory_order_relaxed);
    for (int p = 0; p < team; p++) free(parts[p]);
    free(parts);
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

/* Every CPU rung takes any sample. */
static int dd_fits_any(const cua_sample *s, int dtype, cua_launch *cfg)
{
    (void)s, (void)dtype, (void)cfg;
    return CUA_OK;
}

/* histogramdd's weighted form: every point's cell (cells for a point that
 * is dropped), which the weighted ladder then sums the weights of. */
int cua_cpu_histdd_cells(const cua_sample *s, int64_t n, int dtype, int64_t *out)
{
    int64_t place[CUA_DD_MAX];
    const int64_t cells = places(s, place);
    const size_t size = cua_dtype_size(dtype);
#pragma omp parallel for schedule(static) num_threads(cua_cpu_threads()) if (n > ((int64_t)1 << 16))
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = cell_of(s, place, size, dtype, i);
        out[i] = c >= 0 ? c : cells;
    }
    return CUA_OK;
}

static const cua_histdd_row histogramdd_rows[] = {
    {{"global", 1, "one atomic fetch_add per point on its cell's shared counter", 0}, dd_global, dd_fits_any},
    {{"shared", 2, "private counts of every cell per thread, one atomic add per nonzero cell to merge", 0}, dd_shared,
     dd_fits_any},
    {{"tiled", 3, "shared a tile of cells at a time (8 MiB of counters), the points read once per tile", 0},
     dd_tiled, dd_fits_any},
    {{"cluster", 4, "the cells cut over the team's threads, each part its owner's memory, atomic adds into the owner's part", 0},
     dd_cluster, dd_fits_cluster},
};
const cua_ladder cua_cpu_histogramdd_ladder = CUA_LADDER(histogramdd_rows);
