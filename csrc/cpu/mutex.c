/* mutex.c -- the race demonstration and the spin lock on the CPU (see
 * cuda/mutex.cu). Each of blocks*threads logical workers adds one.
 *
 * add_one: racy (relaxed load, then relaxed store: concurrent workers
 * overwrite each other's increment, a defined race in C11), atomic
 * (fetch_add), mutex (a plain increment inside the CAS spin lock).
 * mutex_add_one: spin (the lock by itself, as in the tutorial), warp_lock
 * (the first of each group of 32 logical threads takes the lock once and the
 * group's increments are made inside it, one after another).
 */
#include "cpu.h"

enum { RACY, ATOMIC, MUTEX, WARP_LOCK };

static int add_one_run(int rung, int64_t *result, cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = 10;
    if (cfg->threads <= 0) cfg->threads = 16;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    const int64_t W = cfg->blocks * cfg->threads;
    _Atomic int64_t counter = 0;
    int64_t guarded = 0; /* only touched inside the critical section */
    atomic_int mutex = 0;
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < W; w++) {
        if (rung == RACY) {
            int64_t seen = atomic_load_explicit(&counter, memory_order_relaxed);
            atomic_store_explicit(&counter, seen + 1, memory_order_relaxed);
        } else if (rung == ATOMIC) {
            atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
        } else if (rung == MUTEX) {
            cua_cpu_lock(&mutex);
            guarded = guarded + 1;
            cua_cpu_unlock(&mutex);
        } else if (w % 32 == 0) { /* WARP_LOCK: the group's leader */
            const int64_t members = W - w < 32 ? W - w : 32;
            cua_cpu_lock(&mutex);
            for (int64_t m = 0; m < members; m++) guarded = guarded + 1; /* each member's increment */
            cua_cpu_unlock(&mutex);
        }
    }
    *result = rung >= MUTEX ? guarded : atomic_load(&counter);
    return CUA_OK;
}

static int add_one_racy(int64_t *r, cua_launch *c) { return add_one_run(RACY, r, c); }
static int add_one_atomic(int64_t *r, cua_launch *c) { return add_one_run(ATOMIC, r, c); }
static int add_one_mutex(int64_t *r, cua_launch *c) { return add_one_run(MUTEX, r, c); }
static int add_one_warp_lock(int64_t *r, cua_launch *c) { return add_one_run(WARP_LOCK, r, c); }

const cua_variant cua_cpu_add_one_variants[] = {
    {"racy", 1, "relaxed load then store: concurrent increments overwrite each other", 0, (cua_fn)add_one_racy},
    {"atomic", 2, "fetch_add: one indivisible read-modify-write", CUA_F_DEFAULT, (cua_fn)add_one_atomic},
    {"mutex", 3, "the plain increment inside a CAS spin-lock critical section", 0, (cua_fn)add_one_mutex},
};
const int cua_cpu_add_one_nvariants = sizeof cua_cpu_add_one_variants / sizeof cua_cpu_add_one_variants[0];

const cua_variant cua_cpu_mutex_add_one_variants[] = {
    {"spin", 1, "CAS 0->1 until acquired + fence; increment; fence + exchange back to 0", 0,
     (cua_fn)add_one_mutex},
    {"warp_lock", 2, "one lock acquisition per group of 32; the group's increments made inside it in turn",
     CUA_F_DEFAULT, (cua_fn)add_one_warp_lock},
};
const int cua_cpu_mutex_add_one_nvariants =
    sizeof cua_cpu_mutex_add_one_variants / sizeof cua_cpu_mutex_add_one_variants[0];
