// dot.cu -- the dot-product ladder: how the blocks' results meet.
//
// Every rung computes products over a grid-stride loop and combines a
// block's products in the shared-memory tree; they differ in how the block
// results become one number.
//  1. partial  each block writes its result to its own slot; the host adds
//              the slots in order. No atomics at all, deterministic, but a
//              second pass (and a copy of `blocks` values) on the host.
//  2. mutex    thread 0 of each block adds its result to the total inside a
//              critical section guarded by the CAS spin lock, with fences:
//              the tutorial's way to do any read-modify-write that has no
//              atomic instruction. Blocks queue for the lock.
//  3. atomic   one native atomicAdd of the block result: the lock's work done
//              in one instruction at the L2.
//  4. cas      the block result added by an atomicCAS loop on the bit
//              pattern (float, double and 64-bit integer): the add that
//              rung 3 uses, built by hand. The loop compares integers, so a
//              NaN result cannot make it spin forever.
//  5. vector  the reduction at the memory system's speed: 16-byte loads of
//              both inputs in flight, warp shuffles, the resident grid, and
//              the last block adds the block results in order: no host pass,
//              deterministic (see vector.cuh).
// Integers multiply and add modulo 2^64 (np.dot of intN wraps in N bits:
// the low bits of this sum); floats accumulate in their own type.
#include "common.cuh"
#include "vector.cuh"

enum DotRung { PARTIAL, MUTEX, ATOMIC, CAS };

template <int R, class T, class Acc>
__global__ void dot_kernel(const T *__restrict__ a, const T *__restrict__ b, int64_t n, Acc *total,
                           Acc *partials, int *mutex)
{
    Acc v = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v += (Acc)a[i] * (Acc)b[i];
    v = cua_block_tree(v);
    if (threadIdx.x != 0) return;
    if constexpr (R == PARTIAL) {
        partials[blockIdx.x] = v;
    } else if constexpr (R == MUTEX) {
        cua_lock(mutex);
        // Volatile: the total was last written by another block; read it
        // from L2 and write it back there, not to this SM's L1.
        volatile Acc *t = total;
        *t = *t + v;
        cua_unlock(mutex);
    } else if constexpr (R == ATOMIC) {
        cua_atomic_add(total, v);
    } else {
        cua_cas_add(total, v);
    }
}

template <int R, class T, class Acc>
static int dot_typed(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, 256);
    if (st) return st;
    if (n == 0) {
        *result = 0;
        return 0;
    }
    const unsigned blocks = (unsigned)cfg->blocks;
    const int threads = cfg->threads;
    const size_t smem = (size_t)threads * sizeof(Acc);
    // Scratch: total, mutex, then one partial per block.
    size_t bytes = 16 + (R == PARTIAL ? blocks * sizeof(Acc) : 0);
    cua_scratch scratch;
    CUA_CHECK(scratch.get(bytes, s));
    char *base = (char *)scratch.ptr;
    Acc *total = (Acc *)base;
    int *mutex = (int *)(base + 8);
    Acc *partials = (Acc *)(base + 16);
    CUA_CHECK(cudaMemsetAsync(base, 0, bytes, s));  // total = 0, mutex unlocked

    dot_kernel<R, T, Acc><<<blocks, threads, smem, s>>>(a, b, n, total, partials, mutex);
    CUA_CHECK_LAUNCH();
    if constexpr (R == PARTIAL) {
        Acc *host = (Acc *)malloc(blocks * sizeof(Acc));
        if (!host) return CUA_ENOMEM;
        int e = (int)cudaMemcpyAsync(host, partials, blocks * sizeof(Acc), cudaMemcpyDeviceToHost, s);
        if (e == 0) e = cua_wait(cfg);
        Acc sum = 0;
        for (unsigned i = 0; i < blocks; i++) sum += host[i];
        free(host);
        if (e) return e;
        *result = sum;
    } else {
        CUA_CHECK(cudaMemcpyAsync(result, total, sizeof(Acc), cudaMemcpyDeviceToHost, s));
        CUA_WAIT(cfg);
    }
    return 0;
}

template <int R>
static int dot_run(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto c) -> int {
        using T = decltype(t);
        using Acc = decltype(c);
        return dot_typed<R, T, Acc>((const T *)a, (const T *)b, n, (Acc *)result, cfg);
    });
}

#define DOT_LAUNCHER(R)                                                                            \
    static int dot_##R(const void *a, const void *b, int64_t n, int d, int acc, void *r, cua_launch *c) \
    {                                                                                              \
        return dot_run<R>(a, b, n, d, acc, r, c);                                                  \
    }
DOT_LAUNCHER(PARTIAL)
DOT_LAUNCHER(MUTEX)
DOT_LAUNCHER(ATOMIC)
DOT_LAUNCHER(CAS)

static int dot_VECTOR(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto c) -> int {
        using T = decltype(t);
        using Acc = decltype(c);
        return vec::launch<T, Acc, true>((const T *)a, (const T *)b, n, (Acc *)result, cfg);
    });
}

static const cua_dot_row dot_rows[] = {
    {{"partial", 1, "block results to their own slots, final sum on the host: no atomics, deterministic",
      CUA_F_DETERMINISTIC},
     dot_PARTIAL},
    {{"mutex", 2, "block result added under the CAS spin lock, fenced: any read-modify-write made safe",
      0},
     dot_MUTEX},
    {{"atomic", 3, "block result added with one native atomicAdd: the lock's work in one instruction",
      0},
     dot_ATOMIC},
    {{"cas", 4, "block result added by an atomicCAS loop on the bit pattern (NaN-safe integer compare)",
      0},
     dot_CAS},
    {{"vector", 5, "16-byte loads of both inputs, exact products in compensated double, last block adds in order: deterministic",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     dot_VECTOR},
};
extern "C" const cua_ladder cua_cuda_dot_ladder = CUA_LADDER(dot_rows);
