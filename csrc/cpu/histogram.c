/* histogram.c -- the histogram ladder on the CPU (cuda/histogram.cu tells
 * the lesson; here each step says what it does on a CPU, what it costs
 * there, and how it differs from the GPU rung of the same name).
 *
 *  1. global  every element's bin incremented with an atomic fetch_add on
 *             the shared 64-bit counts, as on the GPU: threads contend on
 *             popular bins, and their cache lines bounce between cores.
 *  2. shared  each logical block counts its share into a private histogram,
 *             then adds each bin to the shared counts with one atomic add
 *             per bin per block. The block's threads run one after another
 *             on one OS thread, so the private counts are plain increments
 *             (the GPU's block shares them through shared-memory atomics),
 *             and the private histogram is a heap buffer per OpenMP thread,
 *             cleared for each of its blocks: no limit on bins.
 *  3. warp_private  one private histogram per OpenMP thread -- per OS
 *             thread, not per warp: a warp's lanes would all run on that
 *             one thread, so copies per warp would only add work -- for the
 *             shares of all its logical blocks (one logical thread each, by
 *             default one block per OpenMP thread); merged into the counts
 *             in thread order after the team, without atomics (the GPU
 *             flushes each block's copies with atomics).
 *  4. thread_counters  no atomics, and skew costs nothing: as warp_private,
 *             but counted into CUA_CPU_HIST_COPIES interleaved 32-bit copies
 *             per OpenMP thread, element i into copy i % COPIES, so that a
 *             run of one value (skewed text) is that many independent chains
 *             of increments, not one chain of store-to-load dependencies
 *             (what skew costs a CPU; on the GPU it is contention, and each
 *             logical thread has 8-bit counters of its own). Branch-free
 *             (values outside the bins count into a spare bin); bytes are
 *             read 8 per load and counted by value, then binned once per
 *             piece by the bin rule (bins.c). The copies are
 *             added into the thread's 64-bit histogram after every piece of
 *             2^22 elements, long before they can overflow.
 *  5. bytes   the tutorial's case only (1-byte data in bins of width one;
 *             anything else is refused): a counter per byte value per
 *             OpenMP thread, in four interleaved 32-bit copies, so a byte is
 *             a load and an increment -- no bin rule, no range check, no
 *             spare bin. The counters of the byte values inside the bins
 *             are added to the bins once, after the team. (The GPU keeps
 *             the 256 counters per warp in shared memory.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
#endif

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "atomic counters must overlay plain ones");

/* Inputs of fewer elements are counted by one thread into one private
 * histogram by default: a team would spend longer starting and merging. */
#define ONE_BLOCK_BELOW ((int64_t)1 << 16)
/* thread_counters' interleaved copies (see cua_cpu_chunk_hist8). */
#define COPIES CUA_CPU_HIST_COPIES
/* Their 32-bit counters are flushed after every piece of a share: a piece
 * must be too short to overflow one. */
_Static_assert(CUA_CPU_PIECE <= UINT32_MAX, "a piece cannot overflow a 32-bit copy");

static int hist_global(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic uint64_t *shared = (_Atomic uint64_t *)counts;
    memset(counts, 0, (size_t)bins->nbins * sizeof *counts);
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) {
            int64_t k = cua_cpu_bin(x, dtype, bins, i);
            if (k >= 0) atomic_fetch_add_explicit(&shared[k], 1, memory_order_relaxed);
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int hist_shared(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                       cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t B = cua_cpu_busy(n, cfg->blocks), nb = bins->nbins; /* blocks with elements */
    const int team = cua_cpu_team(cfg, n, B);
    _Atomic uint64_t *shared = (_Atomic uint64_t *)counts;
    int failed = 0;
    memset(counts, 0, (size_t)nb * sizeof *counts);
#pragma omp parallel num_threads(team)
    {
        uint64_t *local = malloc((size_t)nb * sizeof *local);
        if (!local) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            if (!local || cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            /* The block's contiguous share of the data, counted as one
             * chunk: its threads would run one after another here anyway. */
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
            memset(local, 0, (size_t)nb * sizeof *local);
            cua_cpu_chunk_hist(x, dtype, bins, lo, hi, local);
            for (int64_t k = 0; k < nb; k++)
                if (local[k]) atomic_fetch_add_explicit(&shared[k], local[k], memory_order_relaxed);
        }
        free(local);
    }
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

/* Rungs 3 and 4: one logical thread per block, by default one block per
 * OpenMP thread (one in all for small inputs), and a private histogram per
 * OpenMP thread that gets blocks to count (memory: one histogram per OS
 * thread, however many logical blocks). */
typedef struct {
    int64_t blocks;  /* logical blocks with elements */
    int team;        /* OpenMP threads that get some */
    uint64_t *local; /* team * nbins counters, zeroed: thread t's at t * nbins */
} private_histograms;

static int private_open(private_histograms *p, cua_launch *cfg, int64_t n, int64_t nb)
{
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_BLOCK_BELOW ? 1 : cua_cpu_threads();
    cfg->threads = 1;
    cfg->used_threads = 1;
    cua_cpu_clamp_grid(cfg, n, CUA_CPU_MIN_SHARE);
    p->blocks = cua_cpu_busy(n, cfg->blocks);
    p->team = cua_cpu_team(cfg, n, p->blocks);
    p->local = calloc((size_t)p->team * (size_t)nb, sizeof *p->local);
    return p->local ? CUA_OK : CUA_ENOMEM;
}

/* After the team has finished: the private histograms added into counts in
 * thread order, without atomics. */
static void private_merge(private_histograms *p, uint64_t *counts, int64_t nb)
{
    memset(counts, 0, (size_t)nb * sizeof *counts);
    for (int t = 0; t < p->team; t++)
        for (int64_t k = 0; k < nb; k++) counts[k] += p->local[(size_t)t * (size_t)nb + k];
    free(p->local);
}

static int hist_warp_private(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                             cua_launch *cfg)
{
    const int64_t nb = bins->nbins;
    private_histograms p;
    if (private_open(&p, cfg, n, nb)) return CUA_ENOMEM;
#pragma omp parallel num_threads(p.team)
    {
        uint64_t *mine = p.local + (size_t)omp_get_thread_num() * (size_t)nb;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < p.blocks; b++) {
            if (cua_cpu_stop(cfg)) continue;
            int64_t lo, hi;
            cua_cpu_share(n, cfg->blocks, b, &lo, &hi);
            CUA_CPU_PIECES(cfg, lo, hi, start, stop) cua_cpu_chunk_hist(x, dtype, bins, start, stop, mine);
        }
    }
    private_merge(&p, counts, nb);
    return CUA_CPU_DONE(cfg);
}

static int hist_thread_counters(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts,
                                cua_launch *cfg)
{
    const int64_t nb = bins->nbins;
    private_histograms p;
    if (private_open(&p, cfg, n, nb)) return CUA_ENOMEM;
    int failed = 0;
#pragma omp parallel num_threads(p.team)
    {
        const int t = omp_get_thread_num();
        uint64_t *mine = p.local + (size_t)t * (size_t)nb;
        uint32_t *copies = malloc((size_t)(COPIES * (nb + 1)) * sizeof *copies);
        if (!copies) {
#pragma omp atomic write
            failed = 1;
        }
        /* The thread's run of blocks is one contiguous range, counted at
         * once: the copies are the thread's, not a block's, and clearing and
         * flushing them per block would cost more than a small block's
         * elements. They are flushed after every piece (2^22 elements), long
         * before they could overflow. */
        int64_t lo, hi;
        cua_cpu_thread_range(n, cfg->blocks, p.blocks, omp_get_num_threads(), t, &lo, &hi);
        if (copies) CUA_CPU_PIECES(cfg, lo, hi, start, stop) {
                memset(copies, 0, (size_t)(COPIES * (nb + 1)) * sizeof *copies);
                cua_cpu_chunk_hist8(x, dtype, bins, start, stop, copies);
                for (int64_t k = 0; k < nb; k++)
                    for (int c = 0; c < COPIES; c++) mine[k] += copies[COPIES * k + c];
            }
        free(copies);
    }
    private_merge(&p, counts, nb);
    return failed ? CUA_ENOMEM : CUA_CPU_DONE(cfg);
}

/* Rung 5's limits (the GPU's): 1-byte data in bins of width one. */
static int bytes_fits(const cua_bins *bins, int dtype, cua_launch *cfg)
{
    if (cua_dtype_size(dtype) != 1)
        snprintf(cfg->msg, sizeof cfg->msg, CUA_BYTES_ONLY, (int)cua_dtype_size(dtype));
    else if (!cua_byte_bins(bins))
        snprintf(cfg->msg, sizeof cfg->msg, "%s", CUA_BYTE_BINS_ONLY);
    else
        return CUA_OK;
    return CUA_EINVAL;
}

/* Bytes [lo, hi) counted by value into by_value[256]: byte i into copy
 * i % 4 of 32-bit counters (a piece is too short to overflow one), so a
 * run of one value is four chains of increments, not one. */
static void count_bytes(const uint8_t *p, int64_t lo, int64_t hi, uint64_t *by_value)
{
    uint32_t c[4][256];
    memset(c, 0, sizeof c);
    int64_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        for (int k = 0; k < 8; k++) c[k & 3][(w >> (8 * k)) & 0xFF]++;
    }
    for (; i < hi; i++) c[0][p[i]]++;
    for (int v = 0; v < 256; v++) by_value[v] += (uint64_t)c[0][v] + c[1][v] + c[2][v] + c[3][v];
}

static int hist_bytes(const void *x, int64_t n, int dtype, const cua_bins *bins, uint64_t *counts, cua_launch *cfg)
{
    int st = bytes_fits(bins, dtype, cfg);
    if (st) return st;
    const int64_t nb = bins->nbins;
    private_histograms p;
    if (private_open(&p, cfg, n, 256)) return CUA_ENOMEM; /* 256 counters per thread: one per byte value */
#pragma omp parallel num_threads(p.team)
    {
        const int t = omp_get_thread_num();
        int64_t lo, hi;
        cua_cpu_thread_range(n, cfg->blocks, p.blocks, omp_get_num_threads(), t, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, start, stop) count_bytes(x, start, stop, p.local + (size_t)t * 256);
    }
    /* Byte value v is the number (int8 or uint8) v reads as; bin v - lo,
     * and the closed top edge lo + nb in the last bin. */
    memset(counts, 0, (size_t)nb * sizeof *counts);
    for (int v = 0; v < 256; v++) {
        const int64_t j = (dtype == CUA_INT8 ? (int64_t)(int8_t)v : (int64_t)v) - bins->ilo;
        if (j < 0 || j > nb) continue;
        for (int t = 0; t < p.team; t++) counts[j < nb ? j : nb - 1] += p.local[(size_t)t * 256 + v];
    }
    free(p.local);
    return CUA_CPU_DONE(cfg);
}

static const cua_hist_row histogram_rows[] = {
    {{"global", 1, "one atomic fetch_add on the shared counts per element",
      CUA_F_DETERMINISTIC},
     hist_global, cua_cpu_hist_fits_any},
    {{"shared", 2, "private histogram per block (plain increments: one OS thread runs a block), one atomic add per bin per block",
      CUA_F_DETERMINISTIC},
     hist_shared, cua_cpu_hist_fits_any},
    {{"warp_private", 3, "a private histogram per OpenMP thread, not per warp, for all its blocks' shares; merged without atomics",
      CUA_F_DETERMINISTIC},
     hist_warp_private, cua_cpu_hist_fits_any},
    {{"thread_counters", 4, "eight interleaved 32-bit copies per OpenMP thread (not 8-bit counters per thread), branch-free: runs of one value do not serialize",
      CUA_F_DETERMINISTIC},
     hist_thread_counters, cua_cpu_hist_fits_any},
    {{"bytes", 5, "bytes in bins of width one: a counter per byte value per OpenMP thread (four interleaved copies), no bin rule",
      CUA_F_DETERMINISTIC},
     hist_bytes, bytes_fits},
};
const cua_ladder cua_cpu_histogram_ladder = CUA_LADDER(histogram_rows);
