// lanes.cuh -- how a thread folds with one of reduce's ops, the op and the
// element type compiled in: the cells the atomics act on, the result's 8
// bytes (cua_reduce_kind), and the lanes of the vector rungs -- what a
// thread carries, folds, merges, moves across a warp and finishes, its
// share of a span of memory in 16-byte loads, and the block's fold. The
// flat reduce ladder (reduce.cu) and the segmented one (segmented.cu)
// share them.
#pragma once

#include <cuda/std/limits>
#include <type_traits>

#include "common.cuh"
#include "ops.cuh"
#include "vector.cuh"

namespace cua_lanes {

using namespace cua_ops;  // the op ids, is_float, pick, atomic_int, float_pick (ops.cuh)

template <class To, class From>
__device__ __forceinline__ To same_bits(From v)
{
    static_assert(sizeof(To) == sizeof(From), "a reinterpretation keeps the size");
    To r;
    memcpy(&r, &v, sizeof r);
    return r;
}

// ------------------------------------------------------------------ cells

// What a thread folds into and the atomics act on. Bitwise ops act on the
// bits of the sign- (or zero-) extended value, which are the extension of
// the op's result.
template <int OP, class T>
using cell_t = pick<OP == ADD || OP == MUL, pick<is_float<T>, double, u64>,
                    pick<is_float<T>, T, pick<OP == MIN || OP == MAX, atomic_int<T>, pick<sizeof(T) == 8, u64, unsigned>>>>;

// The result's type, cua_reduce_kind(dtype, op) as a C type.
template <int OP, class T>
using kind_t = pick<is_float<T>, double, pick<OP == ADD || OP == MUL || !std::is_signed<T>::value, u64, long long>>;

// The op on two cells.
template <int OP, class W>
__device__ __forceinline__ W combine(W a, W b)
{
    if constexpr (OP == ADD) return a + b;
    else if constexpr (OP == MUL) return a * b;
    else if constexpr (OP == AND) return a & b;
    else if constexpr (OP == OR) return a | b;
    else if constexpr (OP == XOR) return a ^ b;
    else if constexpr (is_float<W>) return float_pick(OP, a, b);
    else return (OP == MIN ? b < a : a < b) ? b : a;
}

// The op's identity as a cell of T data: what an empty share folds to, and
// the cell's start. Minimum and maximum have none in NumPy; theirs here is
// T's largest (smallest) value, never seen by a caller (n >= 1).
template <int OP, class T, class W = cell_t<OP, T>>
__host__ __device__ __forceinline__ W identity()
{
    if constexpr (OP == MUL) return W(1);
    else if constexpr (OP == AND) return W(~W(0));
    else if constexpr (OP == MIN) return W(is_float<T> ? cuda::std::numeric_limits<T>::infinity() : cuda::std::numeric_limits<T>::max());
    else if constexpr (OP == MAX) return W(is_float<T> ? -cuda::std::numeric_limits<T>::infinity() : cuda::std::numeric_limits<T>::lowest());
    else return W(0);
}

// A cell as the result's 8 bytes: narrowed back to T first where it is
// T's value widened (exact), kept as it is for add and multiply.
template <int OP, class T, class W>
__host__ __device__ __forceinline__ kind_t<OP, T> to_kind(W w)
{
    if constexpr (OP == ADD || OP == MUL) return (kind_t<OP, T>)w;
    else return (kind_t<OP, T>)(T)w;
}

// ------------------------------------------------------------------ lanes

// How a thread of the vector rung folds: A is what it carries; take()
// folds one element in, merge() two carries, shfl_down() moves a carry
// across a warp, reload() reads another block's partial from L2, and
// finish() writes the result's 8 bytes. By default a thread carries the
// op's cell.
template <int OP, class T, class = void>
struct Lane {
    using A = cell_t<OP, T>;
    static __device__ A start() { return identity<OP, T>(); }
    static __device__ A take(A a, T x) { return combine<OP>(a, (A)x); }
    static __device__ A merge(A a, A b) { return combine<OP>(a, b); }
    static __device__ A shfl_down(A a, int offset, int width = 32) { return __shfl_down_sync(0xffffffffu, a, offset, width); }
    static __device__ A reload(const A *p) { return __ldcg(p); }
    static __device__ void finish(A a, kind_t<OP, T> *out) { *out = to_kind<OP, T>(a); }
};

// Float minimum and maximum as integer min/max: a float's bits as a signed
// integer, with the magnitude bits flipped when the sign is set, order the
// values as IEEE 754-2019 does (-inf < ... < -0.0 < +0.0 < ... < +inf),
// and a NaN is given the key that wins (the smallest for minimum, the
// largest for maximum) -- both keys are themselves NaN bit patterns, so
// the winner decodes to a NaN. One integer min per element, no float
// compare.
template <int OP, class T>
struct Lane<OP, T, typename std::enable_if<is_float<T> && (OP == MIN || OP == MAX)>::type> {
    using A = pick<sizeof(T) == 4, int, long long>;
    static constexpr A MAG = cuda::std::numeric_limits<A>::max();       // the magnitude bits
    static constexpr A INF = (A)(sizeof(T) == 4 ? 0x7f800000LL : 0x7ff0000000000000LL);
    static constexpr A NAN_KEY = OP == MIN ? cuda::std::numeric_limits<A>::min() : MAG;
    static __device__ A start() { return OP == MIN ? MAG : cuda::std::numeric_limits<A>::min(); }
    static __device__ A key(T x)
    {
        const A s = same_bits<A>(x);
        return (s & MAG) > INF ? NAN_KEY : s ^ ((s >> (8 * sizeof(A) - 1)) & MAG);
    }
    static __device__ A take(A a, T x) { return merge(a, key(x)); }
    static __device__ A merge(A a, A b) { return (OP == MIN ? b < a : a < b) ? b : a; }
    static __device__ A shfl_down(A a, int offset, int width = 32) { return __shfl_down_sync(0xffffffffu, a, offset, width); }
    static __device__ A reload(const A *p) { return __ldcg(p); }
    static __device__ void finish(A a, double *out) { *out = (double)same_bits<T>(a ^ ((a >> (8 * sizeof(A) - 1)) & MAG)); }
};

// A float product as a double-double: hi + lo, where every multiplication's
// rounding error (exact, from an FMA) is carried in lo, so the product is
// rounded about once instead of once per element -- as accurate as NumPy's
// or better. Explicit _rn intrinsics: the compiler may not fuse or reorder
// them.
struct Product {
    double hi, lo;
};

template <class T>
struct Lane<MUL, T, typename std::enable_if<is_float<T>>::type> {
    using A = Product;
    static __device__ A start() { return Product{1.0, 0.0}; }
    static __device__ A take(A a, T x)
    {
        const double h = __dmul_rn(a.hi, (double)x);
        return Product{h, __fma_rn(a.lo, (double)x, __fma_rn(a.hi, (double)x, -h))};
    }
    static __device__ A merge(A a, A b)
    {
        const double h = __dmul_rn(a.hi, b.hi);
        return Product{h, __fma_rn(a.hi, b.lo, __fma_rn(a.lo, b.hi, __fma_rn(a.hi, b.hi, -h)))};
    }
    static __device__ A shfl_down(A a, int offset, int width = 32)
    {
        return Product{__shfl_down_sync(0xffffffffu, a.hi, offset, width),
                       __shfl_down_sync(0xffffffffu, a.lo, offset, width)};
    }
    static __device__ A reload(const A *p) { return Product{__ldcg(&p->hi), __ldcg(&p->lo)}; }
    // A zero keeps its sign; past the range (inf, NaN) the error terms mean
    // nothing and hi alone is the answer.
    static __device__ void finish(A a, double *out) { *out = a.hi == 0 || !isfinite(a.hi) ? a.hi : __dadd_rn(a.hi, a.lo); }
};

// A float sum in compensated double (vector.cuh's Comp: the rounding error
// of every addition carried): what the segmented vector rung folds a float
// add in. (reduce's own add runs sum's kernel, which is the same sum.)
template <class T>
struct Lane<ADD, T, typename std::enable_if<is_float<T>>::type> {
    using A = vec::Comp;
    static __device__ A start() { return A{0.0, 0.0}; }
    static __device__ A take(A a, T x) { return vec::comp_add(a, (double)x); }
    static __device__ A merge(A a, A b) { return vec::comp_add(a, b); }
    static __device__ A shfl_down(A a, int offset, int width = 32)
    {
        return A{__shfl_down_sync(0xffffffffu, a.s, offset, width), __shfl_down_sync(0xffffffffu, a.c, offset, width)};
    }
    static __device__ A reload(const A *p) { return A{__ldcg(&p->s), __ldcg(&p->c)}; }
    static __device__ void finish(A a, double *out) { *out = vec::value(a); }
};

constexpr int UNROLL = 4;

// Fold the lanes of one 16-byte vector.
template <class L, class T>
__device__ __forceinline__ typename L::A take_vector(typename L::A a, uint4 w)
{
    constexpr int V = 16 / sizeof(T);
    T e[V];
    memcpy(e, &w, 16);
#pragma unroll
    for (int k = 0; k < V; k++) a = L::take(a, e[k]);
    return a;
}

// One output's UNROLL elements (rows apart: the strided segmented path)
// folded into its carry in order -- except a float sum's, which adds them
// in plain double first, pairwise (exact for floats within 2^27 of each
// other's magnitude; else at most three double roundings, 2^-29 of a
// float's ulp), then once into the compensated carry: a quarter of the
// compensated additions, whose work (and registers: the 64 of four blocks
// an SM spilled) held the strided float sum to 80% of an H100's bandwidth
// where the minimum reached 92%.
template <class L, class T>
__device__ __forceinline__ typename L::A take_rows(typename L::A a, const T (&e)[UNROLL])
{
    if constexpr (std::is_same<L, Lane<ADD, float>>::value) {
        static_assert(UNROLL == 4, "the float sum's rows are added pairwise, four at a time");
        return vec::comp_add(a, __dadd_rn(__dadd_rn((double)e[0], (double)e[1]), __dadd_rn((double)e[2], (double)e[3])));
    } else {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) a = L::take(a, e[u]);
        return a;
    }
}

// Thread t's share of x[0:n] among `stride` threads (t, t + stride, ...
// in 16-byte vectors), 16 bytes a load: a scalar head up to the first
// 16-byte boundary and a scalar tail, the body in vectors with UNROLL loads
// issued before any is folded (the bytes in flight, not the thread count,
// decide how close a streaming kernel gets to the bandwidth). A pointer
// that is not even aligned to its element takes the scalar head/tail path
// for every element (no vector load); the loads are still of T, so such a
// pointer must not reach a GPU kernel at all -- the glue's inputs are
// aligned to their element. The flat vector
// rung's grid-stride share (t = global id, stride = grid) and a segmented
// row's share among its group of threads are both this.
template <class L, class T>
__device__ typename L::A fold_span(const T *__restrict__ x, int64_t n, int64_t t, int64_t stride)
{
    constexpr int V = 16 / sizeof(T);
    const uintptr_t offset = (uintptr_t)x & 15;
    int64_t head = offset % sizeof(T) == 0 ? (int64_t)(((16 - offset) & 15) / sizeof(T)) : n;
    head = head < n ? head : n;
    const int64_t nvec = (n - head) / V, tail = head + nvec * V;

    typename L::A a = L::start();
    for (int64_t i = t; i < head; i += stride) a = L::take(a, x[i]);
    for (int64_t i = tail + t; i < n; i += stride) a = L::take(a, x[i]);

    const uint4 *xv = reinterpret_cast<const uint4 *>(x + head);
    int64_t i = t;
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        uint4 w[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) w[u] = __ldg(xv + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; u++) a = take_vector<L, T>(a, w[u]);
    }
    for (; i < nvec; i += stride) a = take_vector<L, T>(a, __ldg(xv + i));
    return a;
}

// The block's fold, valid in thread 0, in the same order every call: warp
// shuffles, then the first warp folds one carry per warp. A block that is
// not whole warps folds in the shared-memory tree (blockDim * sizeof(A)
// bytes of dynamic shared memory).
template <class L>
__device__ typename L::A block_fold(typename L::A a)
{
    using A = typename L::A;
    if (blockDim.x % 32 != 0) {  // uniform per block
        A *cache = reinterpret_cast<A *>(cua_smem);
        cache[threadIdx.x] = a;
        __syncthreads();
        unsigned s = 1;
        while (s * 2 < blockDim.x) s *= 2;
        for (; s > 0; s >>= 1) {
            if (threadIdx.x < s && threadIdx.x + s < blockDim.x)
                cache[threadIdx.x] = L::merge(cache[threadIdx.x], cache[threadIdx.x + s]);
            __syncthreads();
        }
        a = cache[0];
        __syncthreads();  // the cache may be refilled by the caller's next call
        return a;
    }
    __shared__ A warps[32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int offset = 16; offset > 0; offset >>= 1) a = L::merge(a, L::shfl_down(a, offset));
    if (lane == 0) warps[warp] = a;
    __syncthreads();
    if (warp == 0) {
        a = lane < blockDim.x / 32 ? warps[lane] : L::start();
        for (int offset = 16; offset > 0; offset >>= 1) a = L::merge(a, L::shfl_down(a, offset));
    }
    __syncthreads();  // warps may be refilled by the caller's next call
    return a;
}

}  // namespace cua_lanes
