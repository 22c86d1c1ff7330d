// common.cuh -- helpers shared by the kernel families: error handling,
// launch configuration, element-type dispatch, accumulator atomics and the
// shared-memory block reduction. Device code only includes this and the ABI.
#pragma once

#include <cuda_runtime.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuatomic_cuda.h"

// Return the CUDA error of `expr` from the enclosing launcher, if any. The
// runtime also remembers a non-sticky error as its "last error": reading it
// here clears it, so one failed call cannot fail the next one's launch check.
#define CUA_CHECK(expr)                        \
    do {                                       \
        cudaError_t cua_err_ = (expr);         \
        if (cua_err_ != cudaSuccess) {         \
            cudaGetLastError();                \
            return (int)cua_err_;              \
        }                                      \
    } while (0)

// Every kernel launch is followed by this: launch errors (bad configuration,
// no kernel image) surface here, execution errors at the next synchronization.
#define CUA_CHECK_LAUNCH() CUA_CHECK(cudaGetLastError())

typedef unsigned long long u64;

// Events for a call to wait on (memory.cu): take one of the current GPU's
// (made when it has no spare), give it back to that GPU when done.
extern "C" int cua_cuda_event_take(void **event, int *device);
extern "C" void cua_cuda_event_give(void *event, int device);

// The event a wait queries: recorded on the call's stream after everything
// the call queued there, given back when the wait ends. `e` stays null when
// none can be recorded (the wait then queries the stream itself, and any
// error is the stream's to report).
struct cua_call_event {
    cudaEvent_t e = nullptr;
    int device = -1;
    explicit cua_call_event(cudaStream_t s)
    {
        void *ev;
        if (cua_cuda_event_take(&ev, &device)) return;
        if (cudaEventRecord((cudaEvent_t)ev, s) != cudaSuccess) {
            cudaGetLastError();
            cudaEventDestroy((cudaEvent_t)ev);  // not back to the spares: the event may be what failed
            return;
        }
        e = (cudaEvent_t)ev;
    }
    cua_call_event(const cua_call_event &) = delete;  // one owner gives the event back, once
    cua_call_event &operator=(const cua_call_event &) = delete;
    ~cua_call_event() { cua_cuda_event_give((void *)e, device); }
    cudaError_t query(cudaStream_t s) const { return e ? cudaEventQuery(e) : cudaStreamQuery(s); }
};

// Wait for everything the call queued on its stream -- the one wait of every
// launcher. Only the call's own work: an event recorded after it is what is
// queried, not the stream, which other threads may be feeding (the legacy
// default stream is every thread's that passes no stream; see memory.cu's
// call events). Not cudaEventSynchronize, which cannot be interrupted: the
// event is queried in a loop (as the runtime's own spin-wait would), with
// a yield of the CPU after the first millisecond, and every 20 ms
// cfg->poll is asked whether the caller wants to stop (Ctrl-C). On a stop
// `on_stop` runs once (the spin kernels' launcher raises their abort flag
// there), the call's work is still waited for -- kernels that read the flag
// give up at once, the others end on their own -- and CUA_EINTR is returned.
// With `raised` (the host side of a result flag the call's kernel raises
// once the result is in the caller's mapped memory: cua_raise_flag) the
// wait also ends when the flag is up, before the event reports done; an
// error is still seen, as the event is queried on every turn too.
template <class F>
static inline int cua_wait(cua_launch *cfg, F on_stop, const volatile unsigned *raised = nullptr)
{
    cudaStream_t s = (cudaStream_t)cfg->stream;
    const cua_call_event done(s);
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int64_t next_poll = 1000000;  // ns since start: the first poll after 1 ms
    for (;;) {
        if (raised && *raised) {
            // The flag was written after the result (the kernel fenced at
            // system scope between them): the result is read after the flag.
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            return cfg->interrupted ? CUA_EINTR : 0;
        }
        cudaError_t e = done.query(s);
        if (e == cudaSuccess) return cfg->interrupted ? CUA_EINTR : 0;
        if (e != cudaErrorNotReady) {
            cudaGetLastError();
            return (int)e;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        const int64_t ns = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec);
        if (ns < 1000000) continue;  // spin: most calls end within a millisecond
        sched_yield();
        if (ns >= next_poll && !cfg->interrupted) {
            next_poll = ns + 20000000;
            if (cfg->poll && cfg->poll()) {
                cfg->interrupted = 1;
                on_stop();
            }
        }
    }
}
static inline int cua_wait(cua_launch *cfg)
{
    return cua_wait(cfg, [] {});
}
// The wait of a launcher whose kernel raised cfg->result.flag (when the
// caller gave one) after writing the result into cfg->result.device.
static inline int cua_wait_result(cua_launch *cfg)
{
    return cua_wait(cfg, [] {}, cfg->result.flag ? cfg->result.flag_host : nullptr);
}

// A kernel's last word on a result it wrote into mapped host memory: raise
// the caller's flag (may be null). The calling thread must be the last
// writer of the result, or follow the other writers through a barrier
// after each of them fenced at system scope.
__device__ __forceinline__ void cua_raise_flag(unsigned *flag)
{
    if (!flag) return;
    __threadfence_system();  // the result reaches host memory before the flag does
    *(volatile unsigned *)flag = 1;
}
#define CUA_WAIT(cfg)                        \
    do {                                     \
        int cua_wst_ = cua_wait(cfg);        \
        if (cua_wst_) return cua_wst_;       \
    } while (0)

__host__ __device__ static inline int64_t cua_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dynamic shared memory a block may use without opting in: a kernel that
// needs more must raise cudaFuncAttributeMaxDynamicSharedMemorySize first
// (cua_allow_smem).
#define CUA_STATIC_SMEM_BYTES (48 * 1024)

// The default block of a rung that does not size its own: 256 threads,
// eight whole warps.
#define CUA_DEFAULT_THREADS 256

// The tutorial's default grid: 32 blocks per SM (cua_default_config).
#define CUA_DEFAULT_BLOCKS_PER_SM 32

// The longest sleep, in ns, of a thread that waits for a word another
// running block will write (a lock, a published tile state): the wait is
// short, so the sleeps stay short too.
#define CUA_SPIN_SLEEP_MAX_NS 256

static inline cudaStream_t cua_stream(const cua_launch *cfg)
{
    return (cudaStream_t)cfg->stream;
}

static inline int cua_refuse(cua_launch *cfg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cfg->msg, sizeof cfg->msg, fmt, ap);
    va_end(ap);
    return CUA_EINVAL;
}

static inline int cua_sm_count(int *sms)
{
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return 0;
}

// Blocks past the ones a grid-stride kernel has elements for would find
// nothing to do; they are not launched, so a grid of 2^31 - 1 blocks over
// ten elements ends at once instead of scheduling every empty block.
static inline void cua_clamp_grid(cua_launch *cfg, int64_t useful)
{
    if (useful < 1) useful = 1;
    if (cfg->blocks > useful) cfg->blocks = useful;
}

// Fill in a grid-stride method's defaults: `threads` as given, and
// `per_sm` blocks per SM, never more blocks than there are threads' worth of
// elements (given or not). Writes what will run into used_*.
static inline int cua_grid_config(cua_launch *cfg, int64_t n, int threads, int per_sm)
{
    if (cfg->threads <= 0) cfg->threads = threads;
    const int64_t want = cua_ceil_div(n > 0 ? n : 1, cfg->threads);
    if (cfg->blocks <= 0) {
        int sms;
        int st = cua_sm_count(&sms);
        if (st) return st;
        cfg->blocks = want < (int64_t)per_sm * sms ? want : (int64_t)per_sm * sms;
    }
    cua_clamp_grid(cfg, want);
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    return 0;
}

// The tutorial's sizing: 32 blocks per SM.
static inline int cua_default_config(cua_launch *cfg, int64_t n, int threads)
{
    return cua_grid_config(cfg, n, threads, CUA_DEFAULT_BLOCKS_PER_SM);
}

// Defaults for a rung whose every thread does one CAS on a single word:
// T contenders cost about T^2/2 attempts, so the default grid is one block
// per SM rather than 32.
static inline int cua_cas_config(cua_launch *cfg, int64_t n, int threads)
{
    return cua_grid_config(cfg, n, threads, 1);
}

// The last few answers a host thread got about a kernel on a GPU, for the
// queries that cost microseconds of every call: (kernel, GPU, threads,
// shared memory) -> value.
struct cua_kernel_memo {
    struct Entry {
        const void *kernel;
        int device, threads;
        size_t smem;
        int64_t value;
    };
    Entry seen[8] = {};
    unsigned next = 0;
    const Entry *find(const void *kernel, int device, int threads, size_t smem) const
    {
        for (const Entry &e : seen)
            if (e.kernel == kernel && e.device == device && e.threads == threads && e.smem == smem) return &e;
        return nullptr;
    }
    void put(const Entry &e) { seen[next++ % 8] = e; }
};

// Blocks of `kernel` that can be resident on the device at once with
// `threads` threads and `smem` bytes of dynamic shared memory each: the
// largest grid for which a grid-wide wait cannot deadlock.
template <class K>
static inline int cua_max_resident_blocks(K kernel, int threads, size_t smem, int64_t *out)
{
    static thread_local cua_kernel_memo memo;
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    if (const cua_kernel_memo::Entry *e = memo.find((const void *)kernel, dev, threads, smem)) {
        *out = e->value;
        return 0;
    }
    int per_sm = 0, sms = 0;
    CUA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    int st = cua_sm_count(&sms);
    if (st) return st;
    *out = (int64_t)per_sm * sms;
    memo.put({(const void *)kernel, dev, threads, smem, *out});
    return 0;
}

// The dynamic shared memory a block of `kernel` may have on the current GPU:
// the GPU's opt-in most less the kernel's static shared memory. Past
// CUA_STATIC_SMEM_BYTES a block must opt in, before it is launched or its
// occupancy is asked. The opt-in is one ceiling per kernel and GPU, shared
// by every thread of the process, and each setting replaces the last: so it
// is raised once, here, to all of this room (never lowered, which would fail
// another call's launch), and the room is remembered per kernel and GPU.
template <class K>
static inline int cua_smem_room(K kernel, size_t *room)
{
    static thread_local cua_kernel_memo memo;
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    if (const cua_kernel_memo::Entry *e = memo.find((const void *)kernel, dev, 0, 0)) {
        *room = (size_t)e->value;
        return 0;
    }
    int optin = 0;
    cudaFuncAttributes attr;
    CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    CUA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    *room = (size_t)optin > attr.sharedSizeBytes ? (size_t)optin - attr.sharedSizeBytes : 0;
    // (raised whenever the GPU allows more than a block has without asking:
    // static and dynamic together are held to CUA_STATIC_SMEM_BYTES until then)
    if ((size_t)optin > CUA_STATIC_SMEM_BYTES)
        CUA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*room));
    memo.put({(const void *)kernel, dev, 0, 0, (int64_t)*room});
    return 0;
}

// Let `kernel` use `smem` bytes of dynamic shared memory (cua_smem_room). A
// request past the room is passed on for the runtime to refuse.
template <class K>
static inline int cua_allow_smem(K kernel, size_t smem)
{
    if (smem <= CUA_STATIC_SMEM_BYTES) return 0;
    size_t room = 0;
    const int st = cua_smem_room(kernel, &room);
    if (st || smem <= room) return st;
    CUA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

// Whether a block of `kernel` can have `smem` bytes of dynamic shared
// memory on the current GPU (cua_smem_room has raised its ceiling: if it can, it may).
template <class K>
static inline int cua_smem_fits(K kernel, size_t smem, bool *fits)
{
    size_t room = 0;
    *fits = false;
    const int st = cua_smem_room(kernel, &room);
    if (st) return st;
    *fits = smem <= room;
    return 0;
}

// The current GPU's compute capability major version (kept per host thread
// for the last GPU asked about).
static inline int cua_cc_major(int *major)
{
    static thread_local int seen_device = -1, seen_major;
    int dev;
    CUA_CHECK(cudaGetDevice(&dev));
    if (dev != seen_device) {
        CUA_CHECK(cudaDeviceGetAttribute(&seen_major, cudaDevAttrComputeCapabilityMajor, dev));
        seen_device = dev;
    }
    *major = seen_major;
    return 0;
}

// Scratch memory from cuatomic's stream-ordered pool (memory.cu):
// allocation and release are queued on the stream, so a call neither blocks
// on cudaMalloc nor on cudaFree, and the pool reuses the memory across calls.
struct cua_scratch {
    void *ptr = nullptr;
    cudaStream_t stream = 0;
    // A launcher that returns before its kernels end (the histogram ladders)
    // sets it: the free is only queued, since settling the pool would wait
    // for the device here; the result route settles after its wait.
    bool queued = false;
    ~cua_scratch()
    {
        if (!ptr) return;
        int over;
        if (queued) cua_cuda_free_queued(ptr, stream, &over);
        else cua_cuda_free_async(ptr, stream);
    }
    cudaError_t get(size_t nbytes, cudaStream_t s)
    {
        stream = s;
        return (cudaError_t)cua_cuda_malloc_async(&ptr, nbytes, s);
    }
};

// ---------------------------------------------------------------- dispatch

// Call f(T()) with T the C type of a cua_dtype (CUA_DTYPES' ctype). Bool is
// read as its bytes.
template <class F>
static inline int cua_dispatch(int dtype, F &&f)
{
#define CUA_DISPATCH_CASE_(id, name, ctype, ...) \
    case id: return f(ctype());
    switch (dtype) {
        CUA_DTYPES(CUA_DISPATCH_CASE_)
    default: return CUA_EINTERNAL;
    }
#undef CUA_DISPATCH_CASE_
}

// Call f(T(), Acc()) for the supported (element, accumulator) pairs:
// integers accumulate in 64-bit unsigned (wrap-around keeps the bits of the
// exact sum modulo 2^64), floats in float or double. Only those pairs are
// instantiated: the floats have returned before the integer dispatch, so
// f(float(), u64()) and f(double(), u64()) would be launchers and kernels
// no call reaches (two per rung of sum, dot and prod: 30 kernels per arch
// that cost build time only).
template <class F>
static inline int cua_dispatch_acc(int dtype, int acc, F &&f)
{
    if (dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64) {
        auto g = [&](auto t) -> int {
            using T = decltype(t);
            if (acc == CUA_ACC_FLOAT32) return f(T(), float());
            if (acc == CUA_ACC_FLOAT64) return f(T(), double());
            return CUA_EINTERNAL;
        };
        return dtype == CUA_FLOAT32 ? g(float()) : g(double());
    }
    if (acc != CUA_ACC_INT64) return CUA_EINTERNAL;
    return cua_dispatch(dtype, [&](auto t) -> int {
        if constexpr (std::is_integral<decltype(t)>::value) return f(t, u64());
        else return CUA_EINTERNAL;  // not reached: the floats returned above
    });
}

// ------------------------------------------------------ accumulator atomics

// Native atomicAdd for each accumulator type (double needs sm_60+).
__device__ __forceinline__ void cua_atomic_add(u64 *p, u64 v) { atomicAdd(p, v); }
__device__ __forceinline__ void cua_atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void cua_atomic_add(double *p, double v) { atomicAdd(p, v); }

// The same adds built from atomicCAS: read, compute, and swap in the new
// value only if nobody changed the word meanwhile; otherwise retry with what
// they wrote. The loop compares integer bit patterns, never floats, so a NaN
// (which compares unequal to itself) cannot make it spin forever.
// Under contention every round lets one of T contenders through and makes
// the rest retry: T^2/2 attempts in all (measured on an H200: 1M threads on
// one word did not finish in 50 s). A loser therefore sleeps before its
// retry, twice as long each time (up to 1 us), which spreads the retries out.
template <class W, class F>
__device__ __forceinline__ void cua_cas_loop(W *word, F next)
{
    unsigned backoff = 32;
    W old = *(volatile W *)word, assumed;
    while (true) {
        assumed = old;
        old = atomicCAS(word, assumed, next(assumed));
        if (old == assumed) return;
        __nanosleep(backoff);
        backoff = backoff < 1024 ? 2 * backoff : 1024;
    }
}

__device__ __forceinline__ void cua_cas_add(u64 *p, u64 v)
{
    cua_cas_loop(p, [v](u64 a) { return a + v; });
}

__device__ __forceinline__ void cua_cas_add(float *p, float v)
{
    cua_cas_loop((unsigned int *)p, [v](unsigned int a) { return __float_as_uint(__uint_as_float(a) + v); });
}

__device__ __forceinline__ void cua_cas_add(double *p, double v)
{
    cua_cas_loop((u64 *)p, [v](u64 a) {
        return (u64)__double_as_longlong(__longlong_as_double((long long)a) + v);
    });
}

// Multiply, which no GPU has as an atomic instruction, built the same way.
__device__ __forceinline__ void cua_cas_mul(u64 *p, u64 v)
{
    cua_cas_loop(p, [v](u64 a) { return a * v; });
}

__device__ __forceinline__ void cua_cas_mul(float *p, float v)
{
    cua_cas_loop((unsigned int *)p, [v](unsigned int a) { return __float_as_uint(__uint_as_float(a) * v); });
}

__device__ __forceinline__ void cua_cas_mul(double *p, double v)
{
    cua_cas_loop((u64 *)p, [v](u64 a) {
        return (u64)__double_as_longlong(__longlong_as_double((long long)a) * v);
    });
}

// ------------------------------------------------------ block reduction

// Dynamic shared memory, reinterpreted by each kernel for its own type.
extern __shared__ __align__(16) unsigned char cua_smem[];

// The shared-memory tree of the tutorial: every thread stores its value,
// then half the threads add the other half's, halving until one remains.
// Works for any blockDim (the first step starts at the power of two below
// blockDim and skips partners past the end). Every thread must call it;
// the block total is valid in thread 0. Uses blockDim * sizeof(Acc) bytes.
template <class Acc>
__device__ Acc cua_block_tree(Acc v)
{
    Acc *cache = reinterpret_cast<Acc *>(cua_smem);
    unsigned tid = threadIdx.x;
    cache[tid] = v;
    __syncthreads();
    unsigned s = 1;
    while (s * 2 < blockDim.x) s *= 2;
    for (; s > 0; s >>= 1) {
        if (tid < s && tid + s < blockDim.x) cache[tid] += cache[tid + s];
        __syncthreads();
    }
    Acc total = cache[0];
    __syncthreads();  // cache may be reused by the caller right after
    return total;
}

// Dynamic shared memory of cua_block_tree for a block of `threads`.
template <class Acc>
static inline size_t cua_tree_bytes(int threads)
{
    return (size_t)threads * sizeof(Acc);
}

// One call's scratch for the sum and dot ladders, zeroed on the call's
// stream: the total and a lock word in the first 16 bytes, then `nparts`
// block partials, then `words` barrier counters or flags. Locks, counters
// and flags start at zero on every call: never trust what a previous launch
// left behind.
template <class Acc>
struct cua_reduce_scratch {
    cua_scratch mem;
    Acc *total = nullptr, *partials = nullptr;
    int *lock = nullptr;
    unsigned *sync = nullptr;
    cudaError_t get(cudaStream_t s, size_t nparts = 0, size_t words = 0)
    {
        const size_t off_sync = 16 + nparts * sizeof(Acc), bytes = off_sync + words * sizeof(unsigned);
        cudaError_t e = mem.get(bytes, s);
        if (e != cudaSuccess) return e;
        char *base = (char *)mem.ptr;
        total = (Acc *)base;
        lock = (int *)(base + 8);
        partials = (Acc *)(base + 16);
        sync = (unsigned *)(base + off_sync);
        return cudaMemsetAsync(base, 0, bytes, s);
    }
};

// The end of a launcher whose kernel leaves the answer in `total`: the
// launch checked, the total copied to the host, the one wait.
template <class Acc>
static inline int cua_finish_total(Acc *result, const Acc *total, cua_launch *cfg)
{
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaMemcpyAsync(result, total, sizeof(Acc), cudaMemcpyDeviceToHost, cua_stream(cfg)));
    CUA_WAIT(cfg);
    return 0;
}

// The sum of no elements, answered without a launch.
template <class Acc>
static inline int cua_empty_sum(Acc *result)
{
    *result = 0;
    return 0;
}

__device__ __forceinline__ int64_t cua_grid_stride() { return (int64_t)gridDim.x * blockDim.x; }
__device__ __forceinline__ int64_t cua_global_id() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }

// ------------------------------------------------------------ CAS spin lock

// Lock: swap 0 -> 1 until the swap succeeds. Independent thread scheduling
// (sm_70+) lets the lock holder progress even when it shares a warp with
// spinning threads, so per-thread locking cannot deadlock a warp.
__device__ __forceinline__ void cua_lock(int *mutex)
{
    while (atomicCAS(mutex, 0, 1) != 0) {
        // spin: another thread owns the critical section
    }
    // Fence after acquiring: our reads of the protected data must not be
    // served from before we owned the lock.
    __threadfence();
}

__device__ __forceinline__ void cua_unlock(int *mutex)
{
    // Fence before releasing: our writes to the protected data must be
    // visible device-wide before the next owner can enter.
    __threadfence();
    atomicExch(mutex, 0);
}
