/* filter.c -- stream compaction on the CPU (cuda/filter.cu tells the
 * lesson; here each step says what it does on a CPU, what it costs there,
 * and how it differs from the GPU rung of the same name).
 *
 *  1. atomic   push_back, as on the GPU: the old value of fetch_add on a
 *              shared counter is the output slot. One pass, unordered, and
 *              every kept element is one atomic on one cache line.
 *  2. ordered  count the keepers of each logical block's contiguous share,
 *              exclusive scan of the counts (by the calling thread), then
 *              each block copies its keepers to its offset. A block runs on
 *              one OS thread, so it ranks its keepers with a running index
 *              where the GPU ranks them with warp ballots. Reads the input
 *              twice; keeps order.
 *  3. lookback single pass (decoupled look-back, as cuda/filter.cu): an
 *              OpenMP thread takes the next tile number, compacts the tile
 *              branch-free into a private buffer while it is in cache,
 *              publishes its count, reads its predecessors' published values
 *              backwards -- one at a time, where a GPU block reads a block's
 *              worth at once -- until an inclusive prefix (acquire loads),
 *              publishes its own, and copies the buffer out. Reads the input
 *              once; keeps order. Tiles are numbered in the order threads
 *              take them, so a thread only waits for threads that are
 *              running; the waiter pauses, yields its core, then sleeps.
 *  4. warp_aggregated  atomic's push_back with one fetch_add per warp of
 *              CUA_CPU_WARP elements instead of one per kept element: a
 *              logical thread counts the keepers of its next 32 elements,
 *              reserves that many slots at once, and copies them there in
 *              order. Where the GPU's warp is 32 lanes voting in one ballot,
 *              here it is 32 consecutive elements of one thread's share.
 *              Up to 32x fewer atomics; unordered.
 *  5. pipelined  lookback with the next tile taken and staged (its count
 *              published) before the walk back for the current one, so the
 *              wait for predecessors overlaps work, as the GPU's block copies
 *              its next tile in (cp.async) while it looks back. Two tile
 *              buffers per thread; keeps order; takes any input (the GPU's
 *              needs sm_80 and aligned input).
 *
 * With pred->indices every rung writes the keepers' int64 indices instead
 * of the keepers (nonzero & co.): cua_cpu_emit, cua_cpu_out_size and the
 * typed loops of predicate.c choose.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* lookback's tile: the elements a thread compacts at a time. Its private
 * buffer (at most 128 KiB) stays in the core's L2 until it is copied out. */
#define TILE ((int64_t)1 << 14)
/* A tile's status word: 0 until published, then a flag in the top two bits
 * over a number in the rest. */
#define AGGREGATE ((uint64_t)1 << 62)     /* the number is the tile's own count */
#define INCLUSIVE ((uint64_t)2 << 62)     /* ... the count of this tile and all before it */
#define VALUE (((uint64_t)1 << 62) - 1) /* the bits of the number */

static int filter_atomic(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                         cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic int64_t next = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++)
            if (cua_cpu_keep(x, dtype, pred, i)) {
                int64_t slot = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
                cua_cpu_emit(out, slot, x, dtype, pred, i);
            }
    }
    *count = atomic_load(&next);
    return CUA_CPU_DONE(cfg);
}

static int filter_warp_aggregated(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out,
                                  int64_t *count, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic int64_t next = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t warp = a; warp < b; warp += CUA_CPU_WARP) {
            const int64_t end = warp + CUA_CPU_WARP < b ? warp + CUA_CPU_WARP : b;
            const int64_t kept = cua_cpu_chunk_count(x, dtype, pred, warp, end);
            if (kept == 0) continue;
            /* One reservation for the warp: the old value is its first slot. */
            int64_t slot = atomic_fetch_add_explicit(&next, kept, memory_order_relaxed);
            for (int64_t i = warp; i < end; i++)
                if (cua_cpu_keep(x, dtype, pred, i)) cua_cpu_emit(out, slot++, x, dtype, pred, i);
        }
    }
    *count = atomic_load(&next);
    return CUA_CPU_DONE(cfg);
}

static int filter_ordered(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                          cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cua_cpu_busy(n, cfg->blocks); /* blocks with elements; shares as for cfg->blocks */
    const int team = cua_cpu_team(cfg, n, B);
    const size_t size = cua_cpu_out_size(dtype, pred);
    int64_t *offsets = calloc((size_t)(B > 0 ? B : 1), sizeof *offsets);
    if (!offsets) return CUA_ENOMEM;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t b = 0; b < B; b++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
        offsets[b] = cua_cpu_chunk_count(x, dtype, pred, lo, hi);
    }
    int64_t total = 0;
    for (int64_t b = 0; b < B; b++) { /* exclusive scan: where each block's keepers start */
        int64_t c = offsets[b];
        offsets[b] = total;
        total += c;
    }
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t b = 0; b < B; b++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
        cua_cpu_chunk_compact(x, dtype, pred, lo, hi, (char *)out + offsets[b] * size);
    }
    free(offsets);
    *count = total;
    return CUA_CPU_DONE(cfg);
}

/* A tile of lookback or pipelined: its number and the keepers staged in
 * `buf`, their count published as the tile's aggregate. */
typedef struct {
    int64_t t;
    uint64_t kept;
    char *buf;
} tile;

/* Take the next tile number and stage its keepers (0: none left). */
static int tile_take(tile *tl, _Atomic int64_t *next_tile, int64_t ntiles, const void *x, int64_t n, int dtype,
                     const cua_pred *pred, _Atomic uint64_t *status)
{
    tl->t = atomic_fetch_add_explicit(next_tile, 1, memory_order_relaxed);
    if (tl->t >= ntiles) return 0;
    const int64_t lo = tl->t * TILE, hi = lo + TILE < n ? lo + TILE : n;
    tl->kept = (uint64_t)cua_cpu_chunk_stage(x, dtype, pred, lo, hi, tl->buf);
    /* Release: the count is published for successors walking back. */
    if (tl->t > 0) atomic_store_explicit(&status[tl->t], AGGREGATE | tl->kept, memory_order_release);
    return 1;
}

/* Walk back from the tile before tl to an inclusive prefix, publish tl's own
 * and copy its keepers out; returns the number kept before and in tl. A tile
 * not yet published belongs to a thread that took its number before us and
 * is running (or has staged it and is about to walk back), so the wait ends. */
static uint64_t tile_finish(const tile *tl, _Atomic uint64_t *status, void *out, size_t size)
{
    uint64_t prefix = 0;
    unsigned spins = 0;
    for (int64_t p = tl->t - 1; p >= 0;) {
        const uint64_t st = atomic_load_explicit(&status[p], memory_order_acquire);
        if (st == 0) {
            cua_cpu_relax(&spins); /* spin: tile p has not published */
            continue;
        }
        prefix += st & VALUE;
        if (st & INCLUSIVE) break;
        p--;
    }
    atomic_store_explicit(&status[tl->t], INCLUSIVE | (prefix + tl->kept), memory_order_release);
    memcpy((char *)out + prefix * size, tl->buf, tl->kept * size);
    return prefix + tl->kept;
}

/* What lookback and pipelined share: the grid (blocks are the logical
 * workers taking tiles; the OS threads that run them are never more than the
 * OpenMP team, than there are tiles, nor than the work is worth), the status
 * words, and the team that runs `walk` -- each thread with `buffers` tile
 * buffers -- and the total the last tile leaves. */
typedef void (*tile_walk)(tile *tiles, _Atomic int64_t *next_tile, int64_t ntiles, const void *x, int64_t n,
                          int dtype, const cua_pred *pred, _Atomic uint64_t *status, void *out, uint64_t *total,
                          cua_launch *cfg);

static int look_back(tile_walk walk, int buffers, const void *x, int64_t n, int dtype, const cua_pred *pred,
                     void *out, int64_t *count, cua_launch *cfg)
{
    const int64_t ntiles = (n + TILE - 1) / TILE;
    if (cfg->blocks <= 0) cfg->blocks = cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_threads = 1;
    cua_cpu_clamp_grid(cfg, n, TILE); /* a worker takes whole tiles */
    const int team = cua_cpu_team(cfg, n, cfg->blocks);
    const size_t size = cua_cpu_out_size(dtype, pred);
    _Atomic uint64_t *status = calloc((size_t)(ntiles > 0 ? ntiles : 1), sizeof *status);
    if (!status) return CUA_ENOMEM;
    _Atomic int64_t next_tile = 0;
    int failed = 0;
    uint64_t total = 0;
#pragma omp parallel num_threads(team)
    {
        tile tiles[2] = {{0, 0, NULL}, {0, 0, NULL}};
        int ok = 1;
        for (int b = 0; b < buffers; b++) ok = ok && (tiles[b].buf = malloc((size_t)TILE * size)) != NULL;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        } else {
            walk(tiles, &next_tile, ntiles, x, n, dtype, pred, status, out, &total, cfg);
        }
        for (int b = 0; b < buffers; b++) free(tiles[b].buf);
    }
    free(status);
    *count = (int64_t)total;
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

/* lookback: take a tile, stage it, walk back, copy out; the next. Stop only
 * between tiles: a tile number once taken is always published, or its
 * successors would wait for it forever. */
static void walk_one(tile *tiles, _Atomic int64_t *next_tile, int64_t ntiles, const void *x, int64_t n, int dtype,
                     const cua_pred *pred, _Atomic uint64_t *status, void *out, uint64_t *total, cua_launch *cfg)
{
    const size_t size = cua_cpu_out_size(dtype, pred);
    while (!cua_cpu_stop(cfg) && tile_take(&tiles[0], next_tile, ntiles, x, n, dtype, pred, status)) {
        const uint64_t upto = tile_finish(&tiles[0], status, out, size);
        if (tiles[0].t == ntiles - 1) *total = upto;
    }
}

/* pipelined: the next tile is taken and staged -- its count published --
 * before the walk back for the current one, so the walk's wait overlaps
 * the next tile's work, and successors can pass over both. Two tile
 * numbers held at once is safe: the earlier one's aggregate is published
 * before the later one is taken, and each is finished in order. Stop only
 * between tiles, never leaving a taken tile unpublished. */
static void walk_two(tile *tiles, _Atomic int64_t *next_tile, int64_t ntiles, const void *x, int64_t n, int dtype,
                     const cua_pred *pred, _Atomic uint64_t *status, void *out, uint64_t *total, cua_launch *cfg)
{
    const size_t size = cua_cpu_out_size(dtype, pred);
    int cur = 0;
    int have = !cua_cpu_stop(cfg) && tile_take(&tiles[cur], next_tile, ntiles, x, n, dtype, pred, status);
    while (have) {
        const int next = !cua_cpu_stop(cfg) &&
                         tile_take(&tiles[1 - cur], next_tile, ntiles, x, n, dtype, pred, status);
        const uint64_t upto = tile_finish(&tiles[cur], status, out, size);
        if (tiles[cur].t == ntiles - 1) *total = upto;
        cur = 1 - cur;
        have = next;
    }
}

static int filter_lookback(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                           cua_launch *cfg)
{
    return look_back(walk_one, 1, x, n, dtype, pred, out, count, cfg);
}

static int filter_pipelined(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                            cua_launch *cfg)
{
    return look_back(walk_two, 2, x, n, dtype, pred, out, count, cfg);
}

/* nonzero's coordinates: flat C-order indices into `shape` (ndim <=
 * CUA_UNRAVEL_MAX_DIMS),
 * coordinate d of index j into out[d][j * stride] -- cuda/layout.cu's
 * unravel, on the team's threads. */
int cua_cpu_unravel(const int64_t *flat, int64_t k, int ndim, const int64_t *shape, int64_t *const *out,
                    int64_t stride)
{
    if (ndim < 1 || ndim > CUA_UNRAVEL_MAX_DIMS) return CUA_EINVAL;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 1) return CUA_EINVAL; /* an index into an empty axis cannot exist */
#pragma omp parallel for schedule(static) num_threads(cua_cpu_threads()) if (k > ((int64_t)1 << 16))
    for (int64_t j = 0; j < k; j++) {
        int64_t rem = flat[j];
        for (int d = ndim - 1; d > 0; --d) {
            out[d][j * stride] = rem % shape[d];
            rem /= shape[d];
        }
        out[0][j * stride] = rem;
    }
    return CUA_OK;
}

/* Every CPU rung takes any input. */
static int filter_fits_any(const void *x, int dtype, cua_launch *cfg)
{
    (void)x, (void)dtype, (void)cfg;
    return CUA_OK;
}

static const cua_filter_row filter_rows[] = {
    {{"atomic", 1, "push_back: fetch_add's old value is the output slot (unordered)",
      0},
     filter_atomic, filter_fits_any},
    {{"ordered", 2, "count per block, scan, each block copies its keepers to its offset (a running index, no ballots): keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_ordered, filter_fits_any},
    {{"lookback", 3, "single pass: tiles publish counts, predecessors' prefixes read back one at a time; keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_lookback, filter_fits_any},
    {{"warp_aggregated", 4, "push_back with one fetch_add per 32 elements of a thread's share, reserving their keepers' slots at once (unordered)",
      0},
     filter_warp_aggregated, filter_fits_any},
    {{"pipelined", 5, "lookback with the next tile taken and staged before the walk back for the current one; keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_pipelined, filter_fits_any},
};
const cua_ladder cua_cpu_filter_ladder = CUA_LADDER(filter_rows);
