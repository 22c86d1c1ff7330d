/* mutex.c -- the race demonstration and the spin locks on the CPU
 * (cuda/mutex.cu tells the lesson; here each step says what it does on a
 * CPU, what it costs there, and how it differs from the GPU rung of the
 * same name). Each of blocks*threads logical threads adds one to a single
 * counter; the OpenMP team runs the logical blocks.
 *
 * add_one:
 *  1. racy    a relaxed load, a widened window, then a relaxed store:
 *             workers that read the same old value overwrite each other's
 *             increment (a defined race in C11: the same loads and stores as
 *             a plain counter's, which would be undefined behaviour). The
 *             window is widened on purpose: a GPU runs thousands of threads
 *             through the two instructions at once, a CPU a handful, a few
 *             nanoseconds apart. The whole team runs it (however small the
 *             grid: a race needs two threads), starts together, and each
 *             thread spins in its windows for RACE_SPAN_NS in all, so that
 *             the threads overlap -- on free cores side by side, and on a
 *             busy machine, where two of them share a core, because the OS
 *             preempts one in the middle of a window while the other goes
 *             on: its store then undoes the other's increments.
 *  2. atomic  fetch_add: one indivisible read-modify-write; nothing lost.
 *  3. mutex   the same plain increment inside the CAS spin lock (spin.c):
 *             correct, the threads pass one at a time, and a waiter pauses,
 *             yields its core, then sleeps (the GPU's lock spins bare).
 * mutex_add_one:
 *  1. spin       the lock by itself, as in the tutorial: CAS 0 -> 1 until it
 *                succeeds, then a fence; increment; a fence, then an
 *                exchange back to 0. The same launcher as add_one's mutex.
 *  2. warp_lock  one lane takes the lock for its warp (32 logical threads of
 *                a block, as on the GPU) by test-and-test-and-set with
 *                backoff; inside, the lanes increment in turn, each adding
 *                its own one to the value the previous lane passed along,
 *                and the last stores it. Lock handoffs drop 32x; every
 *                increment is still made under the lock. The lanes are run
 *                one after another by one OS thread, where a GPU warp passes
 *                the value through register shuffles.
 */
#include <time.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

/* The racy rung's window between a load and its store: at least
 * RACE_WINDOW_NS, and long enough that each OS thread's increments take
 * RACE_SPAN_NS in all -- two ticks of a 250 Hz scheduler, longer than the
 * OS lets one thread run while another waits for its core, so that even the
 * tutorial's 10 x 16 races on a busy machine. (Measured on a loaded 2-core
 * machine, 8 processes each: a 2 ms span lost updates in 1 to 3 of 8 at
 * 10 x 16 and 64 x 256, 4 ms in 7 or 8 of 8 but at 10 x 16 only 1 to 3 of
 * 160, 8 ms in 8 of 8 with tens of updates lost.) */
#define RACE_WINDOW_NS 250
#define RACE_SPAN_NS 8000000

/* The tutorial's launch, add_one_kernel[10, 16]: the default grid. */
#define TUTORIAL_BLOCKS 10
#define TUTORIAL_THREADS 16

/* What the logical threads of one call share. */
typedef struct {
    _Atomic int64_t counter; /* racy and atomic */
    int64_t guarded;         /* the locking rungs': only touched inside the critical section */
    atomic_int mutex;
    int64_t window_ns;       /* racy: the window between a load and its store */
} counter_call;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------- one logical block per rung */

static void racy_block(counter_call *c, int64_t threads)
{
    for (int64_t t = 0; t < threads; t++) {
        int64_t seen = atomic_load_explicit(&c->counter, memory_order_relaxed);
        const int64_t until = now_ns() + c->window_ns;
        while (now_ns() < until) cua_cpu_pause(); /* the widened window: the core kept, the counter stale */
        atomic_store_explicit(&c->counter, seen + 1, memory_order_relaxed);
    }
}

static void atomic_block(counter_call *c, int64_t threads)
{
    for (int64_t t = 0; t < threads; t++) atomic_fetch_add_explicit(&c->counter, 1, memory_order_relaxed);
}

static void mutex_block(counter_call *c, int64_t threads)
{
    for (int64_t t = 0; t < threads; t++) {
        cua_cpu_lock(&c->mutex);
        c->guarded = c->guarded + 1;
        cua_cpu_unlock(&c->mutex);
    }
}

static void warp_lock_block(counter_call *c, int64_t threads)
{
    for (int64_t warp = 0; warp < threads; warp += CUA_CPU_WARP) {
        const int64_t lanes = threads - warp < CUA_CPU_WARP ? threads - warp : CUA_CPU_WARP;
        cua_cpu_lock_ttas(&c->mutex); /* the leader, for the whole warp */
        int64_t v = c->guarded;
        for (int64_t lane = 0; lane < lanes; lane++) v = v + 1; /* lane by lane, each its own increment */
        c->guarded = v;                                         /* the last lane's store */
        cua_cpu_unlock(&c->mutex);
    }
}

/* ------------------------------------------------------------- the launch */

/* The tutorial's grid where none is given. */
static void counter_config(cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = TUTORIAL_BLOCKS;
    if (cfg->threads <= 0) cfg->threads = TUTORIAL_THREADS;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
}

/* Every logical block of the grid run by `block` on `team` OS threads. Each
 * runs a contiguous range of blocks and leaves it as soon as the call is to
 * stop: a grid of 2^41 increments can take hours, and Ctrl-C must end it in
 * well under a second. */
static int run_grid(void (*block)(counter_call *, int64_t), counter_call *c, cua_launch *cfg, int team)
{
    atomic_int ready = 0;
#pragma omp parallel num_threads(team)
    {
        /* A start line: the team's threads wake up one after another, tens
         * of microseconds apart, which is longer than a small grid takes.
         * Starting together, they really contend, as a GPU's threads do. */
        unsigned spins = 0;
        atomic_fetch_add_explicit(&ready, 1, memory_order_relaxed);
        while (atomic_load_explicit(&ready, memory_order_relaxed) < omp_get_num_threads())
            cua_cpu_relax(&spins); /* spin: a teammate has not started */
        int64_t lo, hi;
        cua_cpu_share(cfg->blocks, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
        for (int64_t b = lo; b < hi && !cua_cpu_stop(cfg); b++) block(c, cfg->threads);
    }
    return CUA_CPU_DONE(cfg);
}

/* The OS threads for the grid's blocks*threads increments (cua_cpu_team:
 * an increment counts as an element of work). */
static int increments_team(cua_launch *cfg)
{
    counter_config(cfg);
    return cua_cpu_team(cfg, cfg->blocks * cfg->threads, cfg->blocks);
}

/* The racy rung takes the whole team whatever the grid (at most a thread
 * per block): the race needs two threads. */
static int add_one_racy(int64_t *result, cua_launch *cfg)
{
    counter_call c = {0};
    counter_config(cfg);
    const int team = cua_cpu_team(cfg, INT64_MAX, cfg->blocks);
    const int64_t mine = (cfg->blocks + team - 1) / team * cfg->threads; /* increments of the busiest thread */
    const int64_t want = RACE_SPAN_NS / mine;
    c.window_ns = want > RACE_WINDOW_NS ? want : RACE_WINDOW_NS;
    const int st = run_grid(racy_block, &c, cfg, team);
    *result = atomic_load(&c.counter);
    return st;
}

static int add_one_atomic(int64_t *result, cua_launch *cfg)
{
    counter_call c = {0};
    const int st = run_grid(atomic_block, &c, cfg, increments_team(cfg));
    *result = atomic_load(&c.counter);
    return st;
}

static int add_one_mutex(int64_t *result, cua_launch *cfg)
{
    counter_call c = {0};
    const int st = run_grid(mutex_block, &c, cfg, increments_team(cfg));
    *result = c.guarded;
    return st;
}

static int mutex_add_one_warp_lock(int64_t *result, cua_launch *cfg)
{
    counter_call c = {0};
    const int st = run_grid(warp_lock_block, &c, cfg, increments_team(cfg));
    *result = c.guarded;
    return st;
}

/* ----------------------------------------------------------- variant tables */

static const cua_counter_row add_one_rows[] = {
    {{"racy", 1, "relaxed load, a widened pause, then store: concurrent increments overwrite each other",
      CUA_F_RACY},
     add_one_racy},
    {{"atomic", 2, "fetch_add: one indivisible read-modify-write",
      CUA_F_DETERMINISTIC},
     add_one_atomic},
    {{"mutex", 3, "the plain increment inside a CAS spin-lock critical section",
      CUA_F_DETERMINISTIC},
     add_one_mutex},
};
const cua_ladder cua_cpu_add_one_ladder = CUA_LADDER(add_one_rows);

static const cua_counter_row mutex_add_one_rows[] = {
    {{"spin", 1, "CAS 0->1 until acquired + fence; increment; fence + exchange back to 0",
      CUA_F_DETERMINISTIC},
     add_one_mutex},
    {{"warp_lock", 2, "one lane locks for its warp of 32 (test-and-test-and-set, backoff); lanes increment in turn inside",
      CUA_F_DETERMINISTIC},
     mutex_add_one_warp_lock},
};
const cua_ladder cua_cpu_mutex_add_one_ladder = CUA_LADDER(mutex_add_one_rows);
