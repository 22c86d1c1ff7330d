/* mutex.c -- the race demonstration and the spin lock on the CPU (see
 * cuda/mutex.cu). Each of blocks*threads logical workers adds one.
 *
 * add_one: racy (relaxed load, a widened window, then relaxed store:
 * concurrent workers overwrite each other's increment, a defined race in
 * C11), atomic
 * (fetch_add), mutex (a plain increment inside the CAS spin lock).
 * mutex_add_one: spin (the lock by itself, as in the tutorial), warp_lock
 * (the first of each group of 32 logical threads takes the lock once and the
 * group's increments are made inside it, one after another).
 */
#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

enum { RACY, ATOMIC, MUTEX, WARP_LOCK };

/* Pauses between the racy rung's load and its store. On a GPU thousands of
 * threads run the two instructions at once; here a handful of OpenMP
 * threads do, and the two instructions are a few nanoseconds apart, so
 * without help the threads rarely interleave inside that window and the
 * lesson would show no lost update. The window is widened on purpose, so
 * that what can happen does happen often enough to see. */
#define RACE_WINDOW 16

/* The tutorial's launch, add_one_kernel[10, 16]: the default grid. */
#define TUTORIAL_BLOCKS 10
#define TUTORIAL_THREADS 16

static void increment(int rung, int64_t w, int64_t W, _Atomic int64_t *counter, int64_t *guarded,
                      atomic_int *mutex)
{
    if (rung == RACY) {
        int64_t seen = atomic_load_explicit(counter, memory_order_relaxed);
        unsigned spins = 0;
        for (int k = 0; k < RACE_WINDOW; k++) cua_cpu_relax(&spins); /* the widened window */
        atomic_store_explicit(counter, seen + 1, memory_order_relaxed);
    } else if (rung == ATOMIC) {
        atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    } else if (rung == MUTEX) {
        cua_cpu_lock(mutex);
        *guarded = *guarded + 1;
        cua_cpu_unlock(mutex);
    } else if (w % CUA_CPU_WARP == 0) { /* WARP_LOCK: the group's leader */
        const int64_t members = W - w < CUA_CPU_WARP ? W - w : CUA_CPU_WARP;
        cua_cpu_lock(mutex);
        for (int64_t m = 0; m < members; m++) *guarded = *guarded + 1; /* each member's increment */
        cua_cpu_unlock(mutex);
    }
}

static int add_one_run(int rung, int64_t *result, cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = TUTORIAL_BLOCKS;
    if (cfg->threads <= 0) cfg->threads = TUTORIAL_THREADS;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    const int64_t B = cfg->blocks, T = cfg->threads, W = B * T;
    _Atomic int64_t counter = 0;
    int64_t guarded = 0; /* only touched inside the critical section */
    atomic_int mutex = 0;
    /* Each OpenMP thread runs a contiguous range of logical blocks and
     * leaves it as soon as the call is to stop: a grid of 2^41 increments
     * can take hours, and Ctrl-C must end it in well under a second. */
    atomic_int ready = 0;
#pragma omp parallel
    {
        /* A start line: the team's threads wake up one after another, tens
         * of microseconds apart, which is longer than a small grid takes.
         * Starting together, they really contend, as a GPU's threads do. */
        unsigned spins = 0;
        atomic_fetch_add_explicit(&ready, 1, memory_order_relaxed);
        while (atomic_load_explicit(&ready, memory_order_relaxed) < omp_get_num_threads())
            cua_cpu_relax(&spins); /* spin: a teammate has not started */
        int64_t lo, hi;
        cua_cpu_share(B, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
        for (int64_t b = lo; b < hi && !cua_cpu_stop(cfg); b++)
            for (int64_t t = 0; t < T; t++) increment(rung, b * T + t, W, &counter, &guarded, &mutex);
    }
    *result = rung >= MUTEX ? guarded : atomic_load(&counter);
    return CUA_CPU_DONE(cfg);
}

static int add_one_racy(int64_t *r, cua_launch *c) { return add_one_run(RACY, r, c); }
static int add_one_atomic(int64_t *r, cua_launch *c) { return add_one_run(ATOMIC, r, c); }
static int add_one_mutex(int64_t *r, cua_launch *c) { return add_one_run(MUTEX, r, c); }
static int add_one_warp_lock(int64_t *r, cua_launch *c) { return add_one_run(WARP_LOCK, r, c); }

static const cua_counter_row add_one_rows[] = {
    {{"racy", 1, "relaxed load then store: concurrent increments overwrite each other",
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
    {{"warp_lock", 2, "one lock acquisition per group of 32; the group's increments made inside it in turn",
      CUA_F_DETERMINISTIC},
     add_one_warp_lock},
};
const cua_ladder cua_cpu_mutex_add_one_ladder = CUA_LADDER(mutex_add_one_rows);
