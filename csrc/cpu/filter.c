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
    const size_t size = cua_dtype_size(dtype);
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
                memcpy((char *)out + slot * size, (const char *)x + i * size, size);
            }
    }
    *count = atomic_load(&next);
    return CUA_CPU_DONE(cfg);
}

static int filter_warp_aggregated(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out,
                                  int64_t *count, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    const size_t size = cua_dtype_size(dtype);
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
                if (cua_cpu_keep(x, dtype, pred, i))
                    memcpy((char *)out + slot++ * size, (const char *)x + i * size, size);
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
    const size_t size = cua_dtype_size(dtype);
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

static int filter_lookback(const void *x, int64_t n, int dtype, const cua_pred *pred, void *out, int64_t *count,
                           cua_launch *cfg)
{
    const int64_t ntiles = (n + TILE - 1) / TILE;
    if (cfg->blocks <= 0) cfg->blocks = cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_threads = 1;
    cua_cpu_clamp_grid(cfg, n, TILE); /* a worker takes whole tiles */
    /* blocks are the logical workers taking tiles; the OS threads that run
     * them are never more than the OpenMP team (OMP_NUM_THREADS, by default
     * the cores), than there are tiles, nor than the work is worth
     * (cua_cpu_team). */
    const int team = cua_cpu_team(cfg, n, cfg->blocks);
    const size_t size = cua_dtype_size(dtype);
    _Atomic uint64_t *status = calloc((size_t)(ntiles > 0 ? ntiles : 1), sizeof *status);
    if (!status) return CUA_ENOMEM;
    _Atomic int64_t next_tile = 0;
    int failed = 0;
    uint64_t total = 0;
#pragma omp parallel num_threads(team)
    {
        char *buf = malloc((size_t)TILE * size);
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
        /* Stop only between tiles: a tile number once taken is always
         * published, or its successors would wait for it forever. */
        while (buf && !cua_cpu_stop(cfg)) {
            const int64_t t = atomic_fetch_add_explicit(&next_tile, 1, memory_order_relaxed);
            if (t >= ntiles) break;
            const int64_t lo = t * TILE, hi = lo + TILE < n ? lo + TILE : n;
            const uint64_t mine = (uint64_t)cua_cpu_chunk_stage(x, dtype, pred, lo, hi, buf);
            uint64_t prefix = 0;
            if (t > 0) {
                /* Release: the count is published. Then walk back; a tile
                 * not yet published belongs to a thread that took its number
                 * before us and is running, so the wait ends. */
                atomic_store_explicit(&status[t], AGGREGATE | mine, memory_order_release);
                unsigned spins = 0;
                for (int64_t p = t - 1; p >= 0;) {
                    const uint64_t st = atomic_load_explicit(&status[p], memory_order_acquire);
                    if (st == 0) {
                        cua_cpu_relax(&spins); /* spin: tile p has not published */
                        continue;
                    }
                    prefix += st & VALUE;
                    if (st & INCLUSIVE) break;
                    p--;
                }
            }
            atomic_store_explicit(&status[t], INCLUSIVE | (prefix + mine), memory_order_release);
            memcpy((char *)out + prefix * size, buf, mine * size);
            if (t == ntiles - 1) total = prefix + mine;
        }
        free(buf);
    }
    free(status);
    *count = (int64_t)total;
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

static const cua_filter_row filter_rows[] = {
    {{"atomic", 1, "push_back: fetch_add's old value is the output slot (unordered)",
      0},
     filter_atomic},
    {{"ordered", 2, "count per block, scan, each block copies its keepers to its offset (a running index, no ballots): keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_ordered},
    {{"lookback", 3, "single pass: tiles publish counts, predecessors' prefixes read back one at a time; keeps input order",
      CUA_F_ORDERED | CUA_F_DETERMINISTIC},
     filter_lookback},
    {{"warp_aggregated", 4, "push_back with one fetch_add per 32 elements of a thread's share, reserving their keepers' slots at once (unordered)",
      0},
     filter_warp_aggregated},
};
const cua_ladder cua_cpu_filter_ladder = CUA_LADDER(filter_rows);
