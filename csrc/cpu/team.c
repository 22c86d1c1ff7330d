/* team.c -- the logical grid on the OpenMP team: default launch
 * configurations, the OS threads a launch wakes, each logical worker's share
 * of the data, and the Ctrl-C poll every worker asks between pieces of work.
 */
#include <time.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int cua_cpu_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int cua_cpu_team(cua_launch *cfg, int64_t work, int64_t units)
{
    int64_t team = cua_cpu_threads();
    if (team > units) team = units;
    if (team > work / CUA_CPU_GRAIN) team = work / CUA_CPU_GRAIN;
    if (team < 1) team = 1;
    cfg->used_team = (int)team;
    return (int)team;
}

void cua_cpu_clamp_grid(cua_launch *cfg, int64_t n, int64_t per_block)
{
    const int64_t useful = n > per_block ? (n + per_block - 1) / per_block : 1;
    if (cfg->blocks > useful) cfg->blocks = useful;
    cfg->used_blocks = cfg->blocks;
}

void cua_cpu_default_config(cua_launch *cfg, int64_t n)
{
    if (cfg->threads <= 0) cfg->threads = CUA_CPU_BLOCK_THREADS;
    if (cfg->blocks <= 0) cfg->blocks = (int64_t)CUA_CPU_BLOCKS_PER_THREAD * cua_cpu_threads();
    cua_cpu_clamp_grid(cfg, n, (int64_t)cfg->threads * CUA_CPU_MIN_SHARE);
    cfg->used_threads = cfg->threads;
}

int64_t cua_cpu_busy(int64_t n, int64_t W)
{
    if (n <= 0 || W <= 0) return 0;
    const int64_t chunk = (n + W - 1) / W;
    return (n + chunk - 1) / chunk;
}

cua_grid cua_cpu_grid(cua_launch *cfg, int64_t n)
{
    cua_cpu_default_config(cfg, n);
    cua_grid g = {cfg->threads, cfg->blocks * cfg->threads, 0, 0};
    g.busy = cua_cpu_busy(n, g.workers);
    g.busy_blocks = (g.busy + g.threads - 1) / g.threads;
    g.team = cua_cpu_team(cfg, n, g.busy_blocks);
    return g;
}

/* Polled at most this often (the caller's thread takes the GIL back for a
 * moment each time). */
#define POLL_NS 20000000LL
/* The clock the poll reads, asked before every piece of work: the coarse
 * one (a scheduler tick's resolution, far finer than POLL_NS) costs a few
 * nanoseconds where the precise one costs tens -- per logical thread, when a
 * grid gives each element a thread of its own. */
#ifdef CLOCK_MONOTONIC_COARSE
#define POLL_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define POLL_CLOCK CLOCK_MONOTONIC
#endif

int cua_cpu_stop(cua_launch *cfg)
{
    if (__atomic_load_n(&cfg->interrupted, __ATOMIC_RELAXED)) return 1;
#ifdef _OPENMP
    if (omp_get_thread_num() != 0 || omp_get_level() > 1) return 0;
#endif
    if (!cfg->poll) return 0;
    static _Thread_local int64_t last;
    struct timespec ts;
    clock_gettime(POLL_CLOCK, &ts);
    const int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (now - last < POLL_NS) return 0;
    last = now;
    if (!cfg->poll()) return 0;
    __atomic_store_n(&cfg->interrupted, 1, __ATOMIC_RELAXED);
    return 1;
}

void cua_cpu_thread_range(int64_t n, int64_t blocks, int64_t busy, int nt, int t, int64_t *lo, int64_t *hi)
{
    int64_t first, end, unused;
    cua_cpu_share(busy, nt, t, &first, &end);
    *lo = *hi = 0;
    if (first >= end) return;
    cua_cpu_share(n, blocks, first, lo, &unused);
    cua_cpu_share(n, blocks, end - 1, &unused, hi);
}

void cua_cpu_share(int64_t n, int64_t W, int64_t w, int64_t *lo, int64_t *hi)
{
    int64_t chunk = (n + W - 1) / W;
    *lo = w * chunk < n ? w * chunk : n;
    *hi = *lo + chunk < n ? *lo + chunk : n;
}
