// reduce.cu -- every element folded with one of NumPy's ufuncs (add,
// multiply, minimum, maximum, bitwise_and, bitwise_or, bitwise_xor), as
// np.<op>.reduce: from one atomic per element to one pass at the speed of
// the memory system.
//
//  1. atomic      one native atomic per element into one global cell:
//                 atomicAdd (integers in 64 bits, floats in double),
//                 atomicMin/atomicMax (integers), atomicAnd/Or/Xor; types
//                 narrower than 32 bits are widened to 32. multiply and
//                 float min/max have no atomic instruction: for them this
//                 rung runs rung 2's CAS loop, on the CAS rung's grid.
//                 Every element queues on one address.
//  2. cas         every op's atomic made from atomicCAS, one loop per
//                 element: read the cell, combine, swap the result in only
//                 if the cell still holds what was read, else retry with
//                 what is there now. The loop compares bit patterns, never
//                 floats, so a NaN cannot make it spin; float min/max
//                 combine in IEEE 754-2019's order (a NaN wins, -0.0 <
//                 +0.0). A value that would not change the cell skips the
//                 swap, so min, max, and, or soon stop writing; add,
//                 multiply and xor pay a round trip to L2 per element
//                 (about 0.5 us on an H200), and losers back off: the
//                 slowest rung. Default grid: 8 blocks of one warp (more
//                 contenders only queue longer).
//  3. block_tree  each thread folds its grid-stride share in a register,
//                 the block's threads combine theirs in a shared-memory
//                 tree, and one atomic per block (native, or CAS where rung
//                 1 uses it) folds the block into the cell: n atomics
//                 become `blocks`. Float add and multiply still depend on
//                 the order the blocks arrive in.
//  4. vector      the fold at the memory system's speed: 16-byte loads,
//                 UNROLL of them in flight per thread, warp shuffles, block
//                 partials and a last-block finish in block order on the
//                 resident grid -- no atomic but the ticket, so every op
//                 gives the same bits every call. Float min/max run as
//                 integer min/max on order-preserving keys; a float product
//                 carries each multiplication's rounding error (a
//                 double-double product); add is sum's vector kernel
//                 (vector.cuh: floats in compensated double). Inputs of at
//                 most vec::ONE_BLOCK_MAX_BYTES run as one block that
//                 writes the result itself.
//
// A thread folds into a "cell": the element's type widened to 32 bits (the
// narrowest the atomics take), 64-bit unsigned for integer add and
// multiply (wrapping modulo 2^64 like sum), double for float add and
// multiply. Every launcher writes its result as cua_reduce_kind(dtype, op)
// (cuatomic_abi.h): 8 bytes of int64, uint64 or double.
#include <cuda/std/limits>
#include <type_traits>

#include "common.cuh"
#include "ops.cuh"
#include "lanes.cuh"
#include "vector.cuh"

namespace {

using namespace cua_lanes;  // cells, kinds, the ops, the vector rung's lanes (lanes.cuh)

// ------------------------------------------------------------------ cells

// The 8 result bytes of an empty input: the identity, or (minimum,
// maximum) NumPy's refusal.
template <int OP, class T>
static int empty_fold(void *result, cua_launch *cfg)
{
    if (OP == MIN || OP == MAX)
        return cua_refuse(cfg, "zero-size array to reduction operation %s which has no identity",
                          OP == MIN ? "minimum" : "maximum");
    const kind_t<OP, T> k = to_kind<OP, T>(identity<OP, T>());
    memcpy(result, &k, sizeof k);
    return 0;
}

// ------------------------------------------------------------ the atomics

template <class W>
using bits_t = pick<sizeof(W) == 4, unsigned, u64>;

// The op's atomic made from atomicCAS: read the cell, combine, and swap the
// result in only if the cell still holds what was read; otherwise retry
// with what is there now. The loop compares bit patterns, never floats, so
// a NaN in the cell cannot make it spin forever. A combined value equal to
// the cell's needs no swap at all: applying the op there would change
// nothing (min, max, and, or stop writing once the cell settles). Losers
// sleep before they retry, twice as long each time up to 1 us, as in
// cua_cas_loop: T contenders would otherwise make T^2/2 attempts.
template <int OP, class W>
__device__ void cas_combine(W *cell, W v)
{
    using B = bits_t<W>;
    B *word = reinterpret_cast<B *>(cell);
    B old = *(volatile B *)word;
    unsigned backoff = 32;
    for (;;) {
        const B next = same_bits<B>(combine<OP>(same_bits<W>(old), v));
        if (next == old) return;
        const B seen = atomicCAS(word, old, next);
        if (seen == old) return;
        old = seen;
        __nanosleep(backoff);
        backoff = backoff < 1024 ? 2 * backoff : 1024;
    }
}

// Which ops have an atomic instruction for their cell: none multiplies,
// and none takes the min or max of floats.
template <int OP, class W>
constexpr bool has_atomic = OP != MUL && !((OP == MIN || OP == MAX) && is_float<W>);

// The op's native atomic where the GPU has one, else the CAS loop.
template <int OP, class W>
__device__ __forceinline__ void atomic_combine(W *cell, W v)
{
    if constexpr (!has_atomic<OP, W>) cas_combine<OP>(cell, v);
    else if constexpr (OP == ADD) atomicAdd(cell, v);
    else if constexpr (OP == MIN) atomicMin(cell, v);
    else if constexpr (OP == MAX) atomicMax(cell, v);
    else if constexpr (OP == AND) atomicAnd(cell, v);
    else if constexpr (OP == OR) atomicOr(cell, v);
    else atomicXor(cell, v);
}

// The shared-memory tree of the tutorial with the op in place of +: every
// thread stores its cell, then half the threads combine the other half's,
// halving until one remains. Any blockDim; valid in thread 0. Uses
// blockDim * sizeof(W) bytes of dynamic shared memory.
template <int OP, class W>
__device__ W block_tree(W v)
{
    W *cache = reinterpret_cast<W *>(cua_smem);
    const unsigned tid = threadIdx.x;
    cache[tid] = v;
    __syncthreads();
    unsigned s = 1;
    while (s * 2 < blockDim.x) s *= 2;
    for (; s > 0; s >>= 1) {
        if (tid < s && tid + s < blockDim.x) cache[tid] = combine<OP>(cache[tid], cache[tid + s]);
        __syncthreads();
    }
    return cache[0];
}

// --------------------------------------------------------------- kernels

template <int OP, class T, class W = cell_t<OP, T>>
__global__ void reduce_atomic_kernel(const T *__restrict__ x, int64_t n, W *cell)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) atomic_combine<OP>(cell, (W)x[i]);
}

template <int OP, class T, class W = cell_t<OP, T>>
__global__ void reduce_cas_kernel(const T *__restrict__ x, int64_t n, W *cell)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) cas_combine<OP>(cell, (W)x[i]);
}

template <int OP, class T, class W = cell_t<OP, T>>
__global__ void reduce_block_tree_kernel(const T *__restrict__ x, int64_t n, W *cell)
{
    W v = identity<OP, T>();
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v = combine<OP>(v, (W)x[i]);
    v = block_tree<OP>(v);
    if (threadIdx.x == 0) atomic_combine<OP>(cell, v);
}

// Each block's fold goes to partials[blockIdx.x]; the block that draws the
// last ticket folds the partials in block order. partials/ticket are unused
// (may be null) for a one-block grid; the ticket is zero at launch (the
// launcher clears it).
template <int OP, class T, class L = Lane<OP, T>>
__global__ void reduce_vector_kernel(const T *__restrict__ x, int64_t n, typename L::A *partials,
                                     unsigned *ticket, kind_t<OP, T> *out)
{
    using A = typename L::A;
    __shared__ bool last;
    A a = block_fold<L>(fold_span<L>(x, n, cua_global_id(), cua_grid_stride()));
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) L::finish(a, out);
        return;
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = a;
        // The partial must be visible device-wide before the ticket says it
        // is there: the last block reads it right after its own ticket.
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the reads of the partials come after the ticket
    A s = L::start();
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) s = L::merge(s, L::reload(partials + b));
    s = block_fold<L>(s);
    if (threadIdx.x == 0) L::finish(s, out);
}

// -------------------------------------------------------------- launchers

template <int OP, class T, class W = cell_t<OP, T>>
using cell_kernel = void (*)(const T *, int64_t, W *);

// Rungs 1-3 fold into one device cell that starts as the op's identity:
// after its grid config, each launches its kernel once with `smem` bytes of
// shared memory and reads the cell back.
template <int OP, class T, class W = cell_t<OP, T>>
static int fold_into_cell(cell_kernel<OP, T> kernel, size_t smem, const T *x, int64_t n, void *result,
                          cua_launch *cfg)
{
    if (n == 0) return empty_fold<OP, T>(result, cfg);
    cudaStream_t s = cua_stream(cfg);
    const W start = identity<OP, T>();
    cua_scratch cell;
    CUA_CHECK(cell.get(sizeof(W), s));
    // From pageable memory: the start is staged before the call returns.
    CUA_CHECK(cudaMemcpyAsync(cell.ptr, &start, sizeof start, cudaMemcpyHostToDevice, s));
    kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, s>>>(x, n, (W *)cell.ptr);
    W w;
    const int st = cua_finish_total(&w, (const W *)cell.ptr, cfg);
    if (st) return st;
    const kind_t<OP, T> k = to_kind<OP, T>(w);
    memcpy(result, &k, sizeof k);
    return 0;
}

// The default grid of a CAS loop per element: every success needs a round
// trip to L2, whatever the grid, and more contenders only lengthen the
// queue each success waits in (add of 2^20 int32 on an H200: 3.8 us per
// element on 132 x 256 threads, 0.5 us on 8 x 32, 0.7 us on 132 x 32). So:
// CAS_LOOP_BLOCKS blocks of one warp.
constexpr int CAS_LOOP_BLOCKS = 8;

static int cas_loop_config(cua_launch *cfg, int64_t n)
{
    if (cfg->threads <= 0) cfg->threads = 32;
    if (cfg->blocks <= 0) cfg->blocks = CAS_LOOP_BLOCKS;
    cua_clamp_grid(cfg, cua_ceil_div(n > 0 ? n : 1, cfg->threads));
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    return 0;
}

// Ops made from the CAS loop run on the CAS rung's grid.
template <int OP, class T>
static int reduce_atomic(const T *x, int64_t n, void *result, cua_launch *cfg)
{
    int st = has_atomic<OP, cell_t<OP, T>> ? cua_default_config(cfg, n, CUA_DEFAULT_THREADS)
                                           : cas_loop_config(cfg, n);
    return st ? st : fold_into_cell<OP, T>(reduce_atomic_kernel<OP, T>, 0, x, n, result, cfg);
}

template <int OP, class T>
static int reduce_cas(const T *x, int64_t n, void *result, cua_launch *cfg)
{
    int st = cas_loop_config(cfg, n);
    return st ? st : fold_into_cell<OP, T>(reduce_cas_kernel<OP, T>, 0, x, n, result, cfg);
}

template <int OP, class T>
static int reduce_block_tree(const T *x, int64_t n, void *result, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st
              : fold_into_cell<OP, T>(reduce_block_tree_kernel<OP, T>, (size_t)cfg->threads * sizeof(cell_t<OP, T>),
                                      x, n, result, cfg);
}

// The vector rung's fold: the one-block grid for small inputs, else the
// resident grid (never more blocks than there are 16-byte vectors per
// thread); scratch for the ticket, the partials and (without a call slot)
// the result.
template <int OP, class T, class L = Lane<OP, T>>
static int fold_vector(const T *x, int64_t n, void *result, cua_launch *cfg)
{
    using A = typename L::A;
    using K = kind_t<OP, T>;
    cudaStream_t s = cua_stream(cfg);
    auto kernel = reduce_vector_kernel<OP, T>;
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int threads = cfg->threads;
    const size_t smem = threads % 32 ? (size_t)threads * sizeof(A) : 0;
    const int64_t want = cua_ceil_div(n, (int64_t)threads * (16 / sizeof(T)));
    if (cfg->blocks <= 0) {
        cfg->blocks = 1;
        if (n * (int64_t)sizeof(T) > vec::ONE_BLOCK_MAX_BYTES) {
            int64_t resident;
            int st = cua_max_resident_blocks(kernel, threads, smem, &resident);
            if (st) return st;
            cfg->blocks = want < resident ? want : resident;
            if (cfg->blocks < 1) cfg->blocks = 1;
        }
    }
    cua_clamp_grid(cfg, want);
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = threads;
    if (n == 0) return empty_fold<OP, T>(result, cfg);
    const unsigned blocks = (unsigned)cfg->blocks;
    K *out = (K *)cfg->result.device;
    A *partials = nullptr;
    unsigned *ticket = nullptr;
    cua_scratch scratch;
    if (blocks > 1 || !out) {
        // The ticket, the result (when there is no slot), the partials.
        CUA_CHECK(scratch.get(32 + (size_t)blocks * sizeof(A), s));
        ticket = (unsigned *)scratch.ptr;
        partials = (A *)((char *)scratch.ptr + 32);
        if (!out) out = (K *)((char *)scratch.ptr + 16);
        CUA_CHECK(cudaMemsetAsync(ticket, 0, sizeof(unsigned), s));
    }
    kernel<<<blocks, threads, smem, s>>>(x, n, partials, ticket, out);
    CUA_CHECK_LAUNCH();
    if (out != cfg->result.device) CUA_CHECK(cudaMemcpyAsync(result, out, sizeof(K), cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    return 0;
}

}  // namespace

// add is sum: the vector rung runs sum's vector kernel, which writes the
// result in the same type (uint64 bits for integers, double for floats)
// and the compensated pair when cfg->result.pair asks for it. Its launcher
// and kernels are sum.cu's instances, compiled there (vector.cuh).
VEC_SUM_PAIRS(VEC_SUM_EXTERN)

namespace {

template <int OP, class T>
static int reduce_vector(const T *x, int64_t n, void *result, cua_launch *cfg)
{
    if constexpr (OP == ADD)
        return vec::launch<T, kind_t<OP, T>, false>(x, nullptr, n, (kind_t<OP, T> *)result, cfg);
    else
        return fold_vector<OP, T>(x, n, result, cfg);
}

// ----------------------------------------------------------- variant table

// Call f(T(), op) with T the element type of `dtype` and op the ufunc as a
// compile-time constant. Bitwise ops on floats reach no kernel (NumPy has
// no such loop; the glue refuses them first).
template <class F>
static int dispatch_fold(int dtype, int op, F &&f)
{
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        auto bitwise = [&](auto o) -> int {
            if constexpr (is_float<T>) return CUA_EINTERNAL;
            else return f(t, o);
        };
        switch (op) {
        case ADD: return f(t, std::integral_constant<int, ADD>());
        case MUL: return f(t, std::integral_constant<int, MUL>());
        case MIN: return f(t, std::integral_constant<int, MIN>());
        case MAX: return f(t, std::integral_constant<int, MAX>());
        case AND: return bitwise(std::integral_constant<int, AND>());
        case OR: return bitwise(std::integral_constant<int, OR>());
        case XOR: return bitwise(std::integral_constant<int, XOR>());
        default: return CUA_EINTERNAL;
        }
    });
}

// A row's launcher: the call's element type and op, then the rung's typed
// launcher.
#define REDUCE_ENTRY(RUNG, launcher)                                                                        \
    static int reduce_##RUNG(const void *x, int64_t n, int dtype, int op, void *result, cua_launch *cfg)   \
    {                                                                                                       \
        return dispatch_fold(dtype, op, [&](auto t, auto o) -> int {                                        \
            using T = decltype(t);                                                                          \
            return launcher<decltype(o)::value, T>((const T *)x, n, result, cfg);                           \
        });                                                                                                 \
    }
REDUCE_ENTRY(ATOMIC, reduce_atomic)
REDUCE_ENTRY(CAS, reduce_cas)
REDUCE_ENTRY(BLOCK_TREE, reduce_block_tree)
REDUCE_ENTRY(VECTOR, reduce_vector)

}  // namespace

static const cua_reduce_row reduce_rows[] = {
    {{"atomic", 1, "one native atomic per element (atomicAdd/Min/Max/And/Or/Xor, narrow types widened); multiply and float min/max have none: a CAS loop",
      0},
     reduce_ATOMIC},
    {{"cas", 2, "every op's atomic built from an atomicCAS loop per element: NaN-safe compare on the bits, no swap when nothing changes",
      0},
     reduce_CAS},
    {{"block_tree", 3, "grid-stride fold in a register, shared-memory tree per block, one atomic per block",
      0},
     reduce_BLOCK_TREE},
    {{"vector", 4, "16-byte loads in flight, warp shuffles, last-block finish in block order: deterministic; float min/max on integer keys, float add/multiply compensated",
      CUA_F_WIDE | CUA_F_DETERMINISTIC},
     reduce_VECTOR},
};
extern "C" const cua_ladder cua_cuda_reduce_ladder = CUA_LADDER(reduce_rows);
