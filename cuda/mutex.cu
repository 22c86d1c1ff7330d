// mutex.cu -- the race demonstration and the CAS spin lock.
//
// add_one: every one of blocks*threads threads adds one to a single counter.
//  1. racy    counter = counter + 1 with a plain load and store: threads that
//             read the same old value overwrite each other's increment, so
//             the result is at most blocks*threads and usually less.
//  2. atomic  atomicAdd: the read-modify-write is one indivisible operation
//             at the L2; nothing is lost.
//  3. mutex   the same plain increment as `racy`, but inside a critical
//             section guarded by the CAS spin lock (see common.cuh): correct,
//             and the threads pass through one at a time.
// mutex_add_one:
//  1. spin    the tutorial's lesson by itself: lock (CAS 0 -> 1 until it
//             succeeds, then a fence), increment, unlock (a fence, then an
//             atomic exchange back to 0).
//  2. warp_lock one lane takes the lock for its whole warp, with
//             test-and-test-and-set and backoff (spin on a plain read, try
//             the CAS only when the lock looks free, sleep between tries);
//             inside the critical section the warp's lanes increment in
//             lane order, each adding its own one to the value the previous
//             lane passed along, and the last lane stores it. Lock handoffs
//             drop 32x; every increment is still made under the lock.
#include "common.cuh"

enum CounterRung { RACY, ATOMIC, MUTEX, WARP_LOCK };

// Test-and-test-and-set: waiting threads only read the lock word (served
// from L2, no write traffic) and try the CAS when it reads free, sleeping
// longer after each failed try.
__device__ __forceinline__ void lock_ttas(int *mutex)
{
    unsigned backoff = 32;
    while (true) {
        while (*(volatile int *)mutex != 0) __nanosleep(backoff);  // spin: the lock is held
        if (atomicCAS(mutex, 0, 1) == 0) break;
        __nanosleep(backoff);  // another waiter won the race: back off
        backoff = backoff < 256 ? 2 * backoff : 256;
    }
    __threadfence();  // reads of the protected counter come after the acquire
}

template <int R>
__global__ void add_one_kernel(u64 *counter, int *mutex)
{
    // Volatile: the load and the store really go to memory, so the race is
    // the hardware's, not something the compiler folded away.
    volatile u64 *c = counter;
    if constexpr (R == RACY) {
        *c = *c + 1;
    } else if constexpr (R == ATOMIC) {
        atomicAdd(counter, 1ULL);
    } else if constexpr (R == MUTEX) {
        cua_lock(mutex);
        *c = *c + 1;
        cua_unlock(mutex);
    } else {
        const unsigned active = __activemask(), lane = threadIdx.x & 31;
        const int leader = __ffs(active) - 1, last = 31 - __clz(active);
        if ((int)lane == leader) lock_ttas(mutex);
        __syncwarp(active);  // nobody reads the counter before the leader holds the lock
        u64 v = (int)lane == leader ? *c : 0;
        v = __shfl_sync(active, v, leader);
        for (int l = 0; l < 32; l++) {  // the same trip count in every lane
            if (!((active >> l) & 1)) continue;
            if ((int)lane == l) v = v + 1;  // lane l's own increment
            v = __shfl_sync(active, v, l);  // passed to the next lane
        }
        if ((int)lane == last) {
            *c = v;
            __threadfence();  // the new value is visible before the lock is seen free
        }
        __syncwarp(active);
        if ((int)lane == leader) cua_unlock(mutex);
    }
}

template <int R>
static int add_one_run(int64_t *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    if (cfg->blocks <= 0) cfg->blocks = 10;  // the tutorial's add_one_kernel[10, 16]
    if (cfg->threads <= 0) cfg->threads = 16;
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    cua_scratch scratch;
    CUA_CHECK(scratch.get(16, s));
    u64 *counter = (u64 *)scratch.ptr;
    int *mutex = (int *)((char *)scratch.ptr + 8);
    CUA_CHECK(cudaMemsetAsync(scratch.ptr, 0, 16, s));  // counter = 0, lock free
    add_one_kernel<R><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(counter, mutex);
    CUA_CHECK_LAUNCH();
    u64 host = 0;
    CUA_CHECK(cudaMemcpyAsync(&host, counter, sizeof host, cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    *result = (int64_t)host;
    return 0;
}

static int add_one_RACY(int64_t *r, cua_launch *c) { return add_one_run<RACY>(r, c); }
static int add_one_ATOMIC(int64_t *r, cua_launch *c) { return add_one_run<ATOMIC>(r, c); }
static int add_one_MUTEX(int64_t *r, cua_launch *c) { return add_one_run<MUTEX>(r, c); }
static int add_one_WARP_LOCK(int64_t *r, cua_launch *c) { return add_one_run<WARP_LOCK>(r, c); }

extern "C" const cua_variant cua_cuda_add_one_variants[] = {
    {"racy", 1, "plain load + store on one counter: concurrent increments overwrite each other", 0,
     (cua_fn)add_one_RACY},
    {"atomic", 2, "atomicAdd: one indivisible read-modify-write, no update lost", CUA_F_DEFAULT,
     (cua_fn)add_one_ATOMIC},
    {"mutex", 3, "the plain increment inside a CAS spin-lock critical section", 0, (cua_fn)add_one_MUTEX},
};
extern "C" const int cua_cuda_add_one_nvariants =
    sizeof cua_cuda_add_one_variants / sizeof cua_cuda_add_one_variants[0];

extern "C" const cua_variant cua_cuda_mutex_add_one_variants[] = {
    {"spin", 1, "CAS 0->1 until acquired + fence; increment; fence + atomicExch back to 0", 0,
     (cua_fn)add_one_MUTEX},
    {"warp_lock", 2, "one lane locks for its warp (test-and-test-and-set, backoff); lanes increment in turn inside",
     CUA_F_DEFAULT, (cua_fn)add_one_WARP_LOCK},
};
extern "C" const int cua_cuda_mutex_add_one_nvariants =
    sizeof cua_cuda_mutex_add_one_variants / sizeof cua_cuda_mutex_add_one_variants[0];
