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
//
// Ctrl-C: a spin kernel can run for minutes (2^31 blocks of 1024 threads
// queue on one lock), and a running kernel cannot be stopped from the host.
// So every thread reads an abort flag in device memory before it takes its
// turn and while it waits for the lock, and gives up when it is set. The
// host raises it when the caller is interrupted, with a copy on a stream of
// its own (the copy engine writes it while the kernel runs; no SM is
// needed). And a grid is launched in pieces of at most PIECE blocks, with
// the host waiting (and polling) between pieces, so what is left to drain
// after an abort is one piece of threads that each read the flag and
// return.
#include <atomic>
#include <mutex>

#include "common.cuh"

constexpr int64_t PIECE = 1 << 16;

// The abort flags: one per concurrent call on a GPU, from that GPU's pool of
// 64 device ints (slot 64 is never raised: the flag of a call that found the
// pool empty). A kernel reads the flag of the GPU it runs on, so each GPU
// has its pool (and its stream for raising one), made by its first call.
constexpr int FLAGS = 64;
constexpr int MAX_GPUS = 64;
struct FlagPool {
    int *flags;                 // FLAGS + 1 device ints
    cudaStream_t abort_stream;  // non-blocking: runs beside the call's stream
    std::atomic<u64> busy;
    std::once_flag once;
    cudaError_t error;
};
static FlagPool pools[MAX_GPUS];
static int *one_host;  // a page-locked 1 to copy into a flag (portable: every GPU copies from it)
static std::once_flag one_once;
static cudaError_t one_error = cudaSuccess;

// A call's flag: its GPU's pool and its slot there.
struct AbortFlag {
    FlagPool *pool = nullptr;
    int slot = FLAGS;
    int *device() const { return pool->flags + slot; }
};

// A free slot of the current GPU's pool, its flag cleared on the call's
// stream (before the kernels).
static int flag_take(AbortFlag *f, cudaStream_t s)
{
    std::call_once(one_once, [] {
        one_error = cudaHostAlloc((void **)&one_host, sizeof(int), cudaHostAllocPortable);
        if (one_error == cudaSuccess) *one_host = 1;
        else cudaGetLastError();
    });
    if (one_error != cudaSuccess) return (int)one_error;
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    if (dev >= MAX_GPUS) return (int)cudaErrorInvalidDevice;
    FlagPool *p = &pools[dev];
    std::call_once(p->once, [p] {
        p->error = cudaMalloc((void **)&p->flags, (FLAGS + 1) * sizeof(int));
        if (p->error == cudaSuccess) p->error = cudaMemset(p->flags, 0, (FLAGS + 1) * sizeof(int));
        if (p->error == cudaSuccess) p->error = cudaStreamCreateWithFlags(&p->abort_stream, cudaStreamNonBlocking);
        if (p->error != cudaSuccess) cudaGetLastError();
    });
    if (p->error != cudaSuccess) return (int)p->error;
    f->pool = p;
    u64 busy = p->busy.load();
    do {
        if (busy == ~0ULL) {
            f->slot = FLAGS;
            return 0;
        }
        f->slot = __builtin_ctzll(~busy);
    } while (!p->busy.compare_exchange_weak(busy, busy | (1ULL << f->slot)));
    return (int)cudaMemsetAsync(f->device(), 0, sizeof(int), s);
}

static void flag_raise(const AbortFlag &f)
{
    if (f.slot < FLAGS)
        cudaMemcpyAsync(f.device(), one_host, sizeof(int), cudaMemcpyHostToDevice, f.pool->abort_stream);
}

// After the call's stream has drained: a raise still in flight lands
// before the slot is reused (the next call clears it on its own stream).
static void flag_give(const AbortFlag &f)
{
    if (f.slot >= FLAGS) return;
    cudaStreamSynchronize(f.pool->abort_stream);
    cudaGetLastError();
    f.pool->busy.fetch_and(~(1ULL << f.slot));
}

// Test-and-test-and-set: waiting threads only read the lock word (served
// from L2, no write traffic) and try the CAS when it reads free, sleeping
// longer after each failed try. Returns false, without the lock, once the
// call is aborted.
__device__ __forceinline__ bool lock_ttas(int *mutex, const volatile int *abort)
{
    unsigned backoff = 32;
    while (true) {
        while (*(volatile int *)mutex != 0) {  // spin: the lock is held
            if (*abort) return false;
            __nanosleep(backoff);
        }
        if (atomicCAS(mutex, 0, 1) == 0) break;
        __nanosleep(backoff);  // another waiter won the race: back off
        backoff = backoff < CUA_SPIN_SLEEP_MAX_NS ? 2 * backoff : CUA_SPIN_SLEEP_MAX_NS;
    }
    __threadfence();  // reads of the protected counter come after the acquire
    return true;
}

// The tutorial's lock (cua_lock) with a way out: false, without the lock,
// once the call is aborted. The flag is read every 32 failed tries only,
// so that the spin stays on the lock word.
__device__ __forceinline__ bool lock_or_abort(int *mutex, const volatile int *abort)
{
    for (unsigned tries = 1; atomicCAS(mutex, 0, 1) != 0; tries++) {
        // spin: another thread owns the critical section
        if (tries % 32 == 0 && *abort) return false;
    }
    __threadfence();  // as cua_lock: our reads of the counter come after the acquire
    return true;
}

// ---------------------------------------------------------------- kernels
//
// Every kernel takes the counter, the lock word and the call's abort flag,
// so that one launcher runs them all; `racy` and `atomic` neither lock nor
// wait, and ignore the last two.
//
// Volatile counter: the load and the store really go to memory, so the race
// is the hardware's, not something the compiler folded away.

__global__ void add_one_racy_kernel(u64 *counter, int *, const volatile int *)
{
    volatile u64 *c = counter;
    *c = *c + 1;
}

__global__ void add_one_atomic_kernel(u64 *counter, int *, const volatile int *)
{
    atomicAdd(counter, 1ULL);
}

__global__ void add_one_mutex_kernel(u64 *counter, int *mutex, const volatile int *abort)
{
    volatile u64 *c = counter;
    if (*abort || !lock_or_abort(mutex, abort)) return;  // Ctrl-C: this thread's turn never comes
    *c = *c + 1;
    cua_unlock(mutex);
}

__global__ void add_one_warp_lock_kernel(u64 *counter, int *mutex, const volatile int *abort)
{
    volatile u64 *c = counter;
    const unsigned active = __activemask(), lane = threadIdx.x & 31;
    const int leader = __ffs(active) - 1, last = 31 - __clz(active);
    int locked = 0;
    if ((int)lane == leader) locked = !*abort && lock_ttas(mutex, abort);
    // The leader's answer is the warp's; this also orders every lane
    // after the acquire: nobody reads the counter before the leader holds
    // the lock.
    if (!__shfl_sync(active, locked, leader)) return;  // aborted: the whole warp leaves
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

// -------------------------------------------------------------- launchers

typedef void (*counter_kernel)(u64 *counter, int *mutex, const volatile int *abort);

// What every rung's launcher does with its kernel: the tutorial's grid by
// default, a zeroed counter and a free lock, the grid in pieces with the
// call's abort flag, and the counter back to the host.
static int add_one_run(counter_kernel kernel, int64_t *result, cua_launch *cfg)
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
    AbortFlag flag;
    int st = flag_take(&flag, s);
    if (st) {
        if (flag.pool) flag_give(flag);  // a slot taken, its clearing failed: back to the pool
        return st;
    }
    // The grid in pieces, each waited for: the wait polls for Ctrl-C and
    // raises this call's abort flag, which ends the piece in flight early.
    for (int64_t done = 0; !st && done < cfg->blocks; done += PIECE) {
        const int64_t piece = cfg->blocks - done < PIECE ? cfg->blocks - done : PIECE;
        kernel<<<(unsigned)piece, cfg->threads, 0, s>>>(counter, mutex, flag.device());
        st = (int)cudaGetLastError();
        if (!st) st = cua_wait(cfg, [&flag] { flag_raise(flag); });
    }
    u64 host = 0;
    if (!st) st = (int)cudaMemcpyAsync(&host, counter, sizeof host, cudaMemcpyDeviceToHost, s);
    if (!st) st = cua_wait(cfg);
    flag_give(flag);
    *result = (int64_t)host;
    return st;
}

static int add_one_RACY(int64_t *r, cua_launch *c) { return add_one_run(add_one_racy_kernel, r, c); }
static int add_one_ATOMIC(int64_t *r, cua_launch *c) { return add_one_run(add_one_atomic_kernel, r, c); }
static int add_one_MUTEX(int64_t *r, cua_launch *c) { return add_one_run(add_one_mutex_kernel, r, c); }
static int add_one_WARP_LOCK(int64_t *r, cua_launch *c) { return add_one_run(add_one_warp_lock_kernel, r, c); }

static const cua_counter_row add_one_rows[] = {
    {{"racy", 1, "plain load + store on one counter: concurrent increments overwrite each other",
      CUA_F_RACY},
     add_one_RACY},
    {{"atomic", 2, "atomicAdd: one indivisible read-modify-write, no update lost",
      CUA_F_DETERMINISTIC},
     add_one_ATOMIC},
    {{"mutex", 3, "the plain increment inside a CAS spin-lock critical section",
      CUA_F_DETERMINISTIC},
     add_one_MUTEX},
};
extern "C" const cua_ladder cua_cuda_add_one_ladder = CUA_LADDER(add_one_rows);

static const cua_counter_row mutex_add_one_rows[] = {
    {{"spin", 1, "CAS 0->1 until acquired + fence; increment; fence + atomicExch back to 0",
      CUA_F_DETERMINISTIC},
     add_one_MUTEX},
    {{"warp_lock", 2, "one lane locks for its warp (test-and-test-and-set, backoff); lanes increment in turn inside",
      CUA_F_DETERMINISTIC},
     add_one_WARP_LOCK},
};
extern "C" const cua_ladder cua_cuda_mutex_add_one_ladder = CUA_LADDER(mutex_add_one_rows);
