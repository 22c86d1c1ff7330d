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
//  6. exact_global  the exact dot (CUA_F_EXACT; integers too, at weight 2^0):
//              every product placed exactly (two float64 make 106 bits, five
//              digits of xacc.h's superaccumulator; two float32 are exact in
//              double) and added with 64-bit atomicAdd to one accumulator
//              in global memory; the caller rounds once. Any grid, the same
//              bits; every add queues on the same few words. At most 2^30
//              elements a launch (a word's digit budget).
//  7. exact_shared  one superaccumulator per block in shared memory, its
//              nonzero words added to global memory once per block. A
//              warp's lanes still queue on one shared word (a CAS loop for
//              64-bit adds on sm_90).
//  8. exact   the vector rung's streaming with error-free arithmetic: a
//              float64 product splits exactly into p + e (an FMA) unless it
//              is tiny, huge or non-finite; p and e go to two double
//              expansions per thread (TwoSum, then an exactness test of
//              adding its error); only what those cannot hold exactly goes
//              to the block's superaccumulator. Runs at `vector`'s speed
//              (2^28 float64 pairs on an H200: 4.2 TB/s). See exact.cu.
// Integers multiply and add modulo 2^64 (np.dot of intN wraps in N bits:
// the low bits of this sum); floats accumulate in their own type.
#include "common.cuh"
#include "exact.cuh"
#include "vector.cuh"

// Every rung's block result: products over a grid-stride loop, added in the
// shared-memory tree. Every thread must call it; valid in thread 0.
template <class T, class Acc>
__device__ Acc block_dot(const T *__restrict__ a, const T *__restrict__ b, int64_t n)
{
    Acc v = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v += (Acc)a[i] * (Acc)b[i];
    return cua_block_tree(v);
}

// ---------------------------------------------------------------- kernels

template <class T, class Acc>
__global__ void dot_partial_kernel(const T *__restrict__ a, const T *__restrict__ b, int64_t n, Acc *partials)
{
    Acc v = block_dot<T, Acc>(a, b, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

template <class T, class Acc>
__global__ void dot_mutex_kernel(const T *__restrict__ a, const T *__restrict__ b, int64_t n, Acc *total,
                                 int *mutex)
{
    Acc v = block_dot<T, Acc>(a, b, n);
    if (threadIdx.x != 0) return;
    cua_lock(mutex);
    // Volatile: the total was last written by another block; read it
    // from L2 and write it back there, not to this SM's L1.
    volatile Acc *t = total;
    *t = *t + v;
    cua_unlock(mutex);
}

template <class T, class Acc>
__global__ void dot_atomic_kernel(const T *__restrict__ a, const T *__restrict__ b, int64_t n, Acc *total)
{
    Acc v = block_dot<T, Acc>(a, b, n);
    if (threadIdx.x == 0) cua_atomic_add(total, v);
}

template <class T, class Acc>
__global__ void dot_cas_kernel(const T *__restrict__ a, const T *__restrict__ b, int64_t n, Acc *total)
{
    Acc v = block_dot<T, Acc>(a, b, n);
    if (threadIdx.x == 0) cua_cas_add(total, v);
}

// -------------------------------------------------------------- launchers

template <class T, class Acc>
static int dot_partial(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    const unsigned blocks = (unsigned)cfg->blocks;
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s, blocks));  // a partial per block
    dot_partial_kernel<<<blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(a, b, n, sc.partials);
    CUA_CHECK_LAUNCH();
    // The second pass, on the host: the block results added in block order.
    Acc *host = (Acc *)malloc(blocks * sizeof(Acc));
    if (!host) return CUA_ENOMEM;
    int e = (int)cudaMemcpyAsync(host, sc.partials, blocks * sizeof(Acc), cudaMemcpyDeviceToHost, s);
    if (e == 0) e = cua_wait(cfg);
    Acc sum = 0;
    for (unsigned i = 0; i < blocks; i++) sum += host[i];
    free(host);
    if (e) return e;
    *result = sum;
    return 0;
}

template <class T, class Acc>
static int dot_mutex(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s));  // total = 0, lock free
    dot_mutex_kernel<<<(unsigned)cfg->blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(a, b, n,
                                                                                                  sc.total, sc.lock);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int dot_atomic(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s));
    dot_atomic_kernel<<<(unsigned)cfg->blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(a, b, n,
                                                                                                   sc.total);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int dot_cas(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return cua_empty_sum(result);
    cua_reduce_scratch<Acc> sc;
    CUA_CHECK(sc.get(s));
    dot_cas_kernel<<<(unsigned)cfg->blocks, cfg->threads, cua_tree_bytes<Acc>(cfg->threads), s>>>(a, b, n,
                                                                                                sc.total);
    return cua_finish_total(result, sc.total, cfg);
}

template <class T, class Acc>
static int dot_vector(const T *a, const T *b, int64_t n, Acc *result, cua_launch *cfg)
{
    return vec::launch<T, Acc, true>(a, b, n, result, cfg);
}

// ----------------------------------------------------------- variant table

// A row's launcher: the call's element and accumulator types, then the
// rung's typed launcher.
#define DOT_ENTRY(RUNG, launcher)                                                                                 \
    static int dot_##RUNG(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg) \
    {                                                                                                             \
        return cua_dispatch_acc(dtype, acc, [&](auto t, auto c) -> int {                                          \
            using T = decltype(t);                                                                                \
            using Acc = decltype(c);                                                                              \
            return launcher<T, Acc>((const T *)a, (const T *)b, n, (Acc *)result, cfg);                           \
        });                                                                                                       \
    }
DOT_ENTRY(PARTIAL, dot_partial)
DOT_ENTRY(MUTEX, dot_mutex)
DOT_ENTRY(ATOMIC, dot_atomic)
DOT_ENTRY(CAS, dot_cas)
DOT_ENTRY(VECTOR, dot_vector)

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
    {{"exact_global", 6, "the exact dot: every exact product's digits atomically added to one superaccumulator in global memory (exact, order-free, but contended)",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact_global},
    {{"exact_shared", 7, "one superaccumulator per block in shared memory, added to global memory once per block: the global queue gone",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact_shared},
    {{"exact", 8, "products split exactly (FMA) into error-free double expansions per thread, only what they cannot hold to the superaccumulator: exact at the vector rung's speed",
      CUA_F_EXACT | CUA_F_DETERMINISTIC},
     dot_exact},
};
extern "C" const cua_ladder cua_cuda_dot_ladder = CUA_LADDER(dot_rows);
