// exact.cu -- exact sums and dots: the rungs that keep every bit.
//
// The same three rungs end the sum ladder (steps 10-12) and the dot ladder
// (steps 6-8); the tables in sum.cu and dot.cu list them. Each adds its
// terms -- the values, or the exact products a[i]*b[i] -- into the
// superaccumulator of xacc.h (136 words of 32-bit digits). Integer adds
// are associative, so any grid, any order of blocks and any split into
// pieces gives the same words once normalized: the result is exact and
// deterministic, and the caller rounds it once. A non-finite term only
// sets bits of `special` (cua_xacc_term_of / cua_xacc_product_of decide).
//
//  exact_global  every element's term placed and its 3 digits (5 for the
//                exact product of two float64) added with 64-bit atomicAdd
//                to one accumulator in global memory. Exact, but data of
//                similar magnitude lands on the same three words, so every
//                add of the grid queues on three addresses.
//  exact_shared  one accumulator per block in shared memory: the digits go
//                there with shared 64-bit atomics, and each block adds its
//                nonzero words (about ten) to the global accumulator once.
//                The global queue is gone, but the 32 lanes of a warp
//                still land on the same shared word, three atomics per
//                element, and a 64-bit shared add is a CAS loop on sm_90
//                (ATOMS.CAST): a warp on one word retries up to 32 times.
//  exact         almost nothing goes to the superaccumulator. Each thread
//                sums its share in two floating-point expansions s + c
//                with error-free transformations, in registers, 16-byte
//                loads in flight, on the resident grid as the vector rung
//                does. Only a term whose exact addition cannot be proven on
//                the spot (rare: see the notes before ILP) goes to the
//                block's shared accumulator, and at the end each warp's
//                expansions, folded into one lane's.
//                It runs at the memory's speed, as `vector` does (on an
//                H200: float64 sum 3.9 TB/s a whole call, the float32
//                kernel at 92% of DRAM bandwidth); its FP64 work is 11
//                operations a term instead of 7. Integers, which have no
//                rounding error to carry, go the same way in 64-bit digit
//                sums (see "exact, integers"): a load and an add or two per
//                element, as the plain integer sum.
//
// Pieces. A word takes digits below 2^32 with their sign, so its value
// stays below 2^63 while it has taken fewer than 2^31 of them (xacc.h). The
// global accumulator of a launch receives, through the blocks' shared
// words, the sum of every digit added in that launch, so its words are
// bounded by the digits added per word per launch, in any order of blocks:
// exact_global and exact_shared add at most one digit per word per element
// (a term's digits land on distinct words), `exact` at most two (a float64
// product is two terms, p and e; see fold_and_flush). Each launch
// therefore covers at most CUA_XACC_PIECE elements
// (CUA_XACC_PIECE / 2 for `exact`) and adds into its own zeroed device
// accumulator; the host copies them all back after one wait, normalizes
// each and merges them (run_pieces; one piece with a call slot comes back
// by the result route instead). One piece is 2^30 elements: 8 GB of
// float64.
#include <cfloat>
#include <memory>
#include <new>
#include <type_traits>

#include "common.cuh"
#include "exact.cuh"

namespace {

// ---------------------------------------------------------------- helpers

// A cua_xacc seen as the unsigned words atomicAdd and atomicOr take. The
// words are two's complement: adding 0 - d subtracts d.
__device__ __forceinline__ u64 *xacc_words(cua_xacc *acc) { return reinterpret_cast<u64 *>(acc->w); }
__device__ __forceinline__ u64 *xacc_special(cua_xacc *acc) { return reinterpret_cast<u64 *>(&acc->special); }

// A term's digits added to the words at w (global or shared memory), one
// 64-bit atomicAdd per nonzero digit.
__device__ __forceinline__ void atomic_add_term(u64 *w, const cua_xacc_term &t)
{
#pragma unroll
    for (int i = 0; i < 5; i++) {
        if (i < t.ndigits && t.digits[i]) {
            const u64 d = t.digits[i];
            atomicAdd(w + t.k + i, t.negative ? 0ull - d : d);
        }
    }
}

// One element's term: a value; the product of two float32, exact in double
// (24 + 24 bits, exponents far inside double's range), so placed as one
// value; the exact product of two float64 (106 bits, five digits).
__device__ __forceinline__ cua_xacc_term term_of(float x) { return cua_xacc_term_of((double)x); }
__device__ __forceinline__ cua_xacc_term term_of(double x) { return cua_xacc_term_of(x); }
__device__ __forceinline__ cua_xacc_term term_of(float a, float b)
{
    return cua_xacc_term_of(__dmul_rn((double)a, (double)b));
}
__device__ __forceinline__ cua_xacc_term term_of(double a, double b) { return cua_xacc_product_of(a, b); }

// An integer's sign and magnitude (below 2^64 whatever the type).
template <class I>
__device__ __forceinline__ bool int_negative(I x)
{
    if constexpr (std::is_signed<I>::value) return x < 0;
    return false;
}
template <class I>
__device__ __forceinline__ u64 int_magnitude(I x)
{
    const u64 bits = std::is_signed<I>::value ? (u64)(long long)x : (u64)x;
    return int_negative(x) ? 0ull - bits : bits;
}

// Floats as above; integers exactly at weight 2^0 (a product: 128 bits).
template <class T, bool DOT>
__device__ __forceinline__ cua_xacc_term element_term(const T *x, const T *y, int64_t i)
{
    if constexpr (std::is_floating_point<T>::value) {
        return DOT ? term_of(x[i], y[i]) : term_of(x[i]);
    } else {
        if (!DOT) return cua_xacc_term_of_int(int_magnitude(x[i]), int_negative(x[i]));
        return cua_xacc_int_product(int_magnitude(x[i]), int_magnitude(y[i]), int_negative(x[i]) != int_negative(y[i]));
    }
}

// A block's superaccumulator in shared memory: 136 words and the special
// bits of the terms the block's threads added.
struct BlockAcc {
    u64 w[CUA_XACC_WORDS];
    unsigned special;
};

// Every thread calls it before its first add.
__device__ __forceinline__ void block_acc_zero(BlockAcc &b)
{
    for (int k = threadIdx.x; k < CUA_XACC_WORDS; k += blockDim.x) b.w[k] = 0;
    if (threadIdx.x == 0) b.special = 0;
    __syncthreads();
}

// Every thread calls it after its last add: the block's nonzero words go to
// the launch's accumulator, one global atomicAdd each. No fence: nothing
// reads the accumulator before the kernel has ended.
__device__ __forceinline__ void block_acc_merge(BlockAcc &b, cua_xacc *acc)
{
    __syncthreads();  // every thread's adds to b are done
    for (int k = threadIdx.x; k < CUA_XACC_WORDS; k += blockDim.x)
        if (b.w[k]) atomicAdd(xacc_words(acc) + k, b.w[k]);
    if (threadIdx.x == 0 && b.special) atomicOr(xacc_special(acc), (u64)b.special);
}

// ---------------------------------------------------------------- exact_global

template <class T, bool DOT>
__global__ void exact_global_kernel(const T *__restrict__ x, const T *__restrict__ y, int64_t n, cua_xacc *acc)
{
    unsigned special = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const cua_xacc_term t = element_term<T, DOT>(x, y, i);
        atomic_add_term(xacc_words(acc), t);
        special |= t.special;
    }
    // The special bits once per thread, not per element: OR needs no order.
    if (special) atomicOr(xacc_special(acc), (u64)special);
}

// ---------------------------------------------------------------- exact_shared

template <class T, bool DOT>
__global__ void exact_shared_kernel(const T *__restrict__ x, const T *__restrict__ y, int64_t n, cua_xacc *acc)
{
    __shared__ BlockAcc blk;
    block_acc_zero(blk);
    unsigned special = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const cua_xacc_term t = element_term<T, DOT>(x, y, i);
        atomic_add_term(blk.w, t);
        special |= t.special;
    }
    if (special) atomicOr(&blk.special, special);
    block_acc_merge(blk, acc);
}

// ---------------------------------------------------------------- exact
//
// Each thread keeps ILP = 2 expansions: double pairs (s, c) whose exact sum
// is the exact sum of the terms they took. Every operation is an explicit
// _rn intrinsic, so nvcc can neither contract a product into an FMA nor
// reassociate; TwoSum itself has no product to contract.
//
// A term x enters expansion (s, c) in two error-free steps:
//   1. TwoSum (Knuth): t = s + x, and err with s + x = t + err exactly, for
//      any two finite doubles without overflow (6 operations, no branch).
//   2. u = fl(c + err). This addition is exact iff
//          fl(u - c) == err  and  fl(u - err) == c.
//      (If exact, both differences are exact. If not, let a be the operand
//      whose lowest set bit is the smaller, b the other: c + err is a
//      multiple of lsb(a), the rounded u is too, so u - b = a + d with d a
//      nonzero multiple of lsb(a) >= ulp(a), and a + d cannot round back
//      to a.) 3 operations and 2 compares instead of a second TwoSum
//      and a test of its residual.
// When both hold, the expansion becomes (t, u). Otherwise x itself goes to
// the block's superaccumulator, exactly, and the expansion is left as it
// was. For ordinary data that is rare: c + err is exact while c, a sum of
// rounding errors, spans fewer than 53 bits down to the lowest bit of the
// terms -- for terms of one magnitude, some 2^35 terms per thread. Data
// spread over hundreds of binades take the slow path often (measured on an
// H200, 2^28 values with exponents uniform over +-1000: float64 sum 6.5x,
// float32 sum 16x, float64 dot 8x slower than on normal data).
//
// Two terms go to the two expansions at once (add2) and are tested with
// one branch: the two chains are independent, so they interleave.
//
// Non-finite terms cost nothing extra: an inf or NaN x, and an s + x that
// overflows, make t non-finite and err NaN (inf - inf), so the compares
// fail and x takes the slow path, where cua_xacc_term_of classifies it (or
// places a finite x exactly). So s and c stay finite, and each expansion
// only ever holds finite terms.
//
// float32: four floats whose exponents lie within 27 binades sum exactly in
// double (24-bit mantissas, 2 bits of carry: at most 53 bits), so a 16-byte
// vector whose lanes pass that integer test (presum_exact) enters as one
// term: a quarter of the FP64 work. A vector that fails it (a wide spread,
// an inf or NaN) goes lane by lane. A dot of float32: each product is exact
// in double (48 bits; inf * 0 gives NaN, which the slow path classifies).
//
// A float64 product a*b = p + e exactly (e = fma(a, b, -p)) as long as the
// product's bits do not fall below 2^-1074: 2^-960 <= |p| <= DBL_MAX
// guarantees it (a*b > 2^-961 and m_a*m_b < 2^106 put its last bit at or
// above 2^-1066). Then p goes to expansion 0 and e to expansion 1 -- the
// errors sum among themselves, 53 bits below the products, as the products
// do; added into the products' own c they would almost never be exact. A
// smaller or zero product, a non-finite one, or one that overflows goes to
// the superaccumulator as cua_xacc_product_of(a, b).
//
// -0.0: s starts at -0.0, and a sum of doubles is -0.0 only if both are
// -0.0, so s is still -0.0 at the end only if every term it took was -0.0;
// then it adds no NOT_NEGZERO bit. (TwoSum of -0.0 and -0.0 gives err = 0,
// so such terms never leave the fast path.) c holds no sign: it starts at
// +0.0, and a zero c is never added as a term.
//
// At the end the 32 lanes of a warp fold their expansions into lane 0's
// (a shuffle tree, the same two steps), and only lane 0 sends its parts to
// the block's accumulator: shared 64-bit atomicAdd is a CAS loop on sm_90,
// and 256 threads sending theirs to the same few words cost tens of us.

constexpr int ILP = 2;     // independent expansions a thread (add2 feeds both)
// 16-byte loads in flight a thread: 4 (a dot: 2 of each input, so that its
// kernel fits the 64 registers of a 1024-thread block without spilling).
// Even: loads are taken in pairs.
template <bool DOT>
constexpr int UNROLL = DOT ? 2 : 4;

struct Thread {
    double s[ILP], c[ILP];
    unsigned special;  // of the terms this thread sent to the block's accumulator
    BlockAcc *blk;
};

// The slow path: the term goes to the block's superaccumulator as it is.
__device__ __forceinline__ void to_block(Thread &th, const cua_xacc_term &t)
{
    atomic_add_term(th.blk->w, t);
    th.special |= t.special;
}

// Is u = fl(a + b) exactly a + b? (a, b finite; see above.)
__device__ __forceinline__ bool exact_sum(double u, double a, double b)
{
    return __dsub_rn(u, a) == b && __dsub_rn(u, b) == a;
}

// Term x into expansion j, computed: the new (s, c) = (t, u), valid if ok.
struct Step {
    double t, u;
    bool ok;
};
__device__ __forceinline__ Step step(const Thread &th, int j, double x)
{
    const double s = th.s[j], c = th.c[j];
    const double t = __dadd_rn(s, x), z = __dsub_rn(t, s);
    const double err = __dadd_rn(__dsub_rn(s, __dsub_rn(t, z)), __dsub_rn(x, z));
    const double u = __dadd_rn(c, err);
    return Step{t, u, exact_sum(u, c, err)};
}
__device__ __forceinline__ void commit(Thread &th, int j, const Step &st)
{
    th.s[j] = st.t;
    th.c[j] = st.u;
}
// The step if it is exact, else the term to the block's accumulator.
__device__ __forceinline__ void settle(Thread &th, int j, const Step &st, double x)
{
    if (st.ok)
        commit(th, j, st);
    else
        to_block(th, cua_xacc_term_of(x));
}

__device__ __forceinline__ void add(Thread &th, int j, double x) { settle(th, j, step(th, j, x), x); }

// x0 into expansion 0 and x1 into expansion 1, one branch for both.
__device__ __forceinline__ void add2(Thread &th, double x0, double x1)
{
    const Step a = step(th, 0, x0), b = step(th, 1, x1);
    if (a.ok & b.ok) {
        commit(th, 0, a);
        commit(th, 1, b);
    } else {
        settle(th, 0, a, x0);
        settle(th, 1, b, x1);
    }
}

// The exact product a*b of two float64: p to expansion 0, e to expansion 1.
__device__ __forceinline__ void add_product(Thread &th, double a, double b)
{
    const double p = __dmul_rn(a, b), e = __fma_rn(a, b, -p);
    const Step sp = step(th, 0, p), se = step(th, 1, e);
    const bool split = fabs(p) >= 0x1p-960 && fabs(p) <= DBL_MAX;  // false for NaN
    if (split & sp.ok & se.ok) {
        commit(th, 0, sp);
        commit(th, 1, se);
    } else if (!split) {
        to_block(th, cua_xacc_product_of(a, b));
    } else {
        settle(th, 0, sp, p);  // p + e is the exact product: each may go its own way
        settle(th, 1, se, e);
    }
}

__device__ __forceinline__ double lo_double(uint4 v) { return __hiloint2double((int)v.y, (int)v.x); }
__device__ __forceinline__ double hi_double(uint4 v) { return __hiloint2double((int)v.w, (int)v.z); }
__device__ __forceinline__ double lane_float(unsigned bits) { return (double)__uint_as_float(bits); }

// Do the four floats of v sum exactly in double, and are they all finite?
// With e_hi the largest exponent field and e_lo the smallest of the nonzero
// lanes (at least 1: subnormals have their last bit at 2^-149 too), every
// lane is a multiple of 2^(e_lo - 150) and the sum is below 2^(e_hi - 124):
// e_hi - e_lo + 26 <= 53 bits. Zeros add exactly anywhere, so they are left
// out of e_lo (the magnitude minus 1, unsigned, makes 0 the largest).
__device__ __forceinline__ bool presum_exact(uint4 v)
{
    const unsigned a = v.x & 0x7fffffffu, b = v.y & 0x7fffffffu, c = v.z & 0x7fffffffu, d = v.w & 0x7fffffffu;
    const unsigned hi = max(max(a, b), max(c, d));
    const unsigned lo = min(min(a - 1, b - 1), min(c - 1, d - 1)) + 1;  // 0 if all are zero
    const int e_hi = (int)(hi >> 23), e_lo = max((int)(lo >> 23), 1);
    return e_hi < 255 && e_hi - e_lo <= 27;
}
__device__ __forceinline__ double presum(uint4 v)
{
    return __dadd_rn(__dadd_rn(lane_float(v.x), lane_float(v.y)), __dadd_rn(lane_float(v.z), lane_float(v.w)));
}

// How each kind of input enters: one element at i (head and tail), one
// 16-byte vector of x (and of y), two vectors.
template <class T, bool DOT>
struct Take;

template <>
struct Take<double, false> {
    __device__ static void one(Thread &th, const double *x, const double *, int64_t i) { add(th, 0, x[i]); }
    __device__ static void vec(Thread &th, uint4 x, uint4) { add2(th, lo_double(x), hi_double(x)); }
    __device__ static void vec2(Thread &th, uint4 x0, uint4 x1, uint4, uint4)
    {
        vec(th, x0, x0);
        vec(th, x1, x1);
    }
};

template <>
struct Take<float, false> {
    __device__ static void one(Thread &th, const float *x, const float *, int64_t i) { add(th, 0, (double)x[i]); }
    __device__ static void lanes(Thread &th, uint4 x)
    {
        add2(th, lane_float(x.x), lane_float(x.y));
        add2(th, lane_float(x.z), lane_float(x.w));
    }
    __device__ static void vec(Thread &th, uint4 x, uint4)
    {
        if (presum_exact(x))
            add(th, 0, presum(x));
        else
            lanes(th, x);
    }
    __device__ static void vec2(Thread &th, uint4 x0, uint4 x1, uint4, uint4)
    {
        if (presum_exact(x0) & presum_exact(x1)) {
            add2(th, presum(x0), presum(x1));
        } else {
            lanes(th, x0);
            lanes(th, x1);
        }
    }
};

template <>
struct Take<double, true> {
    __device__ static void one(Thread &th, const double *x, const double *y, int64_t i) { add_product(th, x[i], y[i]); }
    __device__ static void vec(Thread &th, uint4 x, uint4 y)
    {
        add_product(th, lo_double(x), lo_double(y));
        add_product(th, hi_double(x), hi_double(y));
    }
    __device__ static void vec2(Thread &th, uint4 x0, uint4 x1, uint4 y0, uint4 y1)
    {
        vec(th, x0, y0);
        vec(th, x1, y1);
    }
};

template <>
struct Take<float, true> {
    __device__ static double product(unsigned a, unsigned b) { return __dmul_rn(lane_float(a), lane_float(b)); }
    __device__ static void one(Thread &th, const float *x, const float *y, int64_t i)
    {
        add(th, 0, __dmul_rn((double)x[i], (double)y[i]));  // exact
    }
    __device__ static void vec(Thread &th, uint4 x, uint4 y)
    {
        add2(th, product(x.x, y.x), product(x.y, y.y));
        add2(th, product(x.z, y.z), product(x.w, y.w));
    }
    __device__ static void vec2(Thread &th, uint4 x0, uint4 x1, uint4 y0, uint4 y1)
    {
        vec(th, x0, y0);
        vec(th, x1, y1);
    }
};

// This thread's grid-stride share, 16 bytes a load: a scalar head up to the
// first 16-byte boundary, the aligned body, a scalar tail (the layout of
// vec::thread_share). A dot whose inputs sit at different offsets within
// 16 bytes runs scalar. one(i) takes element i; group(a, b) U vectors of x
// (and of y), loaded before any is taken; vec(a, b) one vector.
template <class T, bool DOT, int U, class One, class Group, class Vec>
__device__ __forceinline__ void each_share(const T *__restrict__ x, const T *__restrict__ y, int64_t n, One one,
                                           Group group, Vec vec)
{
    constexpr int V = 16 / sizeof(T);
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();
    const uintptr_t offset = (uintptr_t)x & 15;
    const bool wide = offset % sizeof(T) == 0 && (!DOT || ((uintptr_t)y & 15) == offset);
    int64_t head = wide ? (int64_t)(((16 - offset) & 15) / sizeof(T)) : n;
    head = head < n ? head : n;
    const int64_t nvec = (n - head) / V, tail = head + nvec * V;

    for (int64_t i = gid; i < head; i += stride) one(i);
    for (int64_t i = tail + gid; i < n; i += stride) one(i);

    const uint4 *xv = reinterpret_cast<const uint4 *>(x + head);
    const uint4 *yv = DOT ? reinterpret_cast<const uint4 *>(y + head) : nullptr;
    int64_t i = gid;
    for (; i + (U - 1) * stride < nvec; i += U * stride) {
        uint4 a[U], b[U];
#pragma unroll
        for (int u = 0; u < U; u++) {  // all loads first: U (x2) in flight
            a[u] = __ldg(xv + i + u * stride);
            b[u] = DOT ? __ldg(yv + i + u * stride) : a[u];
        }
        group(a, b);
    }
    for (; i < nvec; i += stride) vec(__ldg(xv + i), DOT ? __ldg(yv + i) : uint4());
}

template <class T, bool DOT>
__device__ __forceinline__ void thread_share(Thread &th, const T *__restrict__ x, const T *__restrict__ y, int64_t n)
{
    using In = Take<T, DOT>;
    constexpr int U = UNROLL<DOT>;
    each_share<T, DOT, U>(
        x, y, n, [&](int64_t i) { In::one(th, x, y, i); },
        [&](const uint4 *a, const uint4 *b) {
#pragma unroll
            for (int u = 0; u < U; u += 2) In::vec2(th, a[u], a[u + 1], b[u], b[u + 1]);
        },
        [&](uint4 a, uint4 b) { In::vec(th, a, b); });
}

// The calling thread's lane and the lanes of its warp that take part in a
// shuffle: all 32, or only those of a block's partial last warp (`width` of
// them, `mask` their bits).
struct WarpPart {
    unsigned lane, width, mask;
};
__device__ __forceinline__ WarpPart warp_part()
{
    const unsigned lane = threadIdx.x & 31, width = min(32u, blockDim.x - (threadIdx.x - lane));
    return {lane, width, width == 32 ? 0xffffffffu : (1u << width) - 1u};
}

// A zero c is no term (adding +0.0 would turn an s of -0.0 into +0.0).
__device__ __forceinline__ double part(double c) { return c != 0 ? c : -0.0; }

// The warp's expansions folded into lane 0's (a tree: at each level the
// lanes below `offset` take the expansions of the lanes `offset` above
// them), and lane 0 sends its parts to the block's accumulator. Every
// thread of the block calls it. Only the receiving lanes add: a lane that
// has given its expansions away must not add them again, since its slow
// path writes to the block's accumulator. A block that is not whole warps
// ends in a partial warp: only its lanes take part.
__device__ __forceinline__ void fold_and_flush(Thread &th)
{
    const WarpPart w = warp_part();
    const unsigned lane = w.lane, width = w.width, mask = w.mask;
    for (unsigned offset = 16; offset > 0; offset >>= 1) {
        const double s0 = __shfl_down_sync(mask, th.s[0], offset), s1 = __shfl_down_sync(mask, th.s[1], offset);
        const double c0 = __shfl_down_sync(mask, th.c[0], offset), c1 = __shfl_down_sync(mask, th.c[1], offset);
        if (lane < offset && lane + offset < width) {
            add2(th, s0, s1);
            add2(th, part(c0), part(c1));
        }
    }
    if (lane != 0) return;
    // The words' bound: every term of the launch (an element, a float32
    // vector's presum, a float64 product's p or e) goes to the block's
    // accumulator at most once, itself or inside an expansion's parts: an
    // expansion has no more nonzero parts than terms it took (s is nonzero
    // only after one term, and c only after two: the first term lands in s
    // exactly), whether the parts go to the block here or, above, into
    // another expansion as its terms. So each word takes at most one digit
    // per term: two per element at most.
#pragma unroll
    for (int j = 0; j < ILP; j++) {
        th.special |= cua_xacc_classify(th.s[j]) & CUA_XACC_NOT_NEGZERO;  // s is -0.0 only if its terms all were
        if (th.s[j] != 0) to_block(th, cua_xacc_term_of(th.s[j]));
        if (th.c[j] != 0) to_block(th, cua_xacc_term_of(th.c[j]));
    }
}

// Every block size up to 1024 must launch: 64 registers at most.
template <class T, bool DOT>
__global__ void __launch_bounds__(1024) exact_kernel(const T *__restrict__ x, const T *__restrict__ y, int64_t n,
                                                      cua_xacc *acc)
{
    __shared__ BlockAcc blk;
    block_acc_zero(blk);
    Thread th;
#pragma unroll
    for (int j = 0; j < ILP; j++) {
        th.s[j] = -0.0;
        th.c[j] = 0.0;
    }
    // ANY means "at least one term"; a launch has at least one (n > 0), so
    // one thread says it instead of every element.
    th.special = cua_global_id() == 0 ? CUA_XACC_ANY : 0u;
    th.blk = &blk;
    thread_share<T, DOT>(th, x, y, n);
    fold_and_flush(th);
    if (th.special) atomicOr(&blk.special, th.special);
    block_acc_merge(blk, acc);
}
// ------------------------------------------------------- exact, integers
//
// Integers carry no rounding error, so `exact` sums them in registers as
// they are. A term (a value, or the exact product of two) is split into
// 32-bit digits -- the lower ones unsigned, the top one signed for signed
// data -- and each thread adds digit j into its own 64-bit sum j: a sum of
// fewer than 2^31 digits below 2^32 in magnitude cannot overflow, and a
// thread's share of a launch is at most a piece (CUA_XACC_PIECE / 2
// elements). A value of up to 32 bits, or the product of two 16-bit ones,
// is one digit sum; a 64-bit value or the product of two 32-bit ones, two;
// the 128-bit product of two 64-bit values, four. At the end each warp
// adds its threads' sums, and they go to the block's accumulator as terms
// at weights 2^(32j) and 2^(32j + 32): a few shared atomics per warp
// instead of three per element, so the loop is a load and an add or two,
// as the plain integer sum is. (Each word still takes fewer digits per
// launch than elements: two terms per digit sum per warp.)
template <class T, bool DOT>
struct IntSums {
    static constexpr int K = sizeof(T) == 8 ? (DOT ? 4 : 2) : sizeof(T) == 4 && DOT ? 2 : 1;
    using Wide = typename std::conditional<std::is_signed<T>::value, long long, unsigned long long>::type;
    long long s[K];

    __device__ IntSums()
    {
#pragma unroll
        for (int j = 0; j < K; j++) s[j] = 0;
    }
    // A 64-bit term in two digits: low unsigned, high signed for signed data.
    __device__ __forceinline__ void add64(Wide t)
    {
        s[0] += (long long)(t & 0xffffffffull);
        s[1] += (long long)(t >> 32);  // arithmetic shift for signed data
    }
    __device__ __forceinline__ void add(T a, T b)
    {
        if constexpr (K == 1) {
            s[0] += DOT ? (long long)a * (long long)b : (long long)a;
        } else if constexpr (K == 2) {
            add64(DOT ? (Wide)a * (Wide)b : (Wide)a);
        } else {
            const unsigned long long lo = (unsigned long long)a * (unsigned long long)b;
            unsigned long long hi;
            if constexpr (std::is_signed<T>::value) hi = (unsigned long long)__mul64hi((long long)a, (long long)b);
            else hi = __umul64hi((unsigned long long)a, (unsigned long long)b);
            s[0] += (long long)(lo & 0xffffffffull);
            s[1] += (long long)(lo >> 32);
            s[2] += (long long)(hi & 0xffffffffull);
            s[3] += std::is_signed<T>::value ? (long long)hi >> 32 : (long long)(hi >> 32);
        }
    }
    // The sums to the block's accumulator. A sum is split into its low 32
    // bits (unsigned) and the rest (signed, below 2^31 in magnitude: a sum
    // stays below 2^63); a warp adds each half across its lanes -- 32 of
    // them stay below 2^37 -- and its first lane places the two as terms
    // at weights 2^(32j) and 2^(32j + 32). So a block's shared atomics are
    // a few per warp instead of a few per thread, all on the same words.
    // Every thread of the block calls it; a block that is not whole warps
    // ends in a partial warp, whose lanes alone take part.
    __device__ __forceinline__ void flush(BlockAcc &blk) const
    {
        const WarpPart w = warp_part();
        const unsigned lane = w.lane, width = w.width, mask = w.mask;
#pragma unroll
        for (int j = 0; j < K; j++) {
            long long lo = (long long)((u64)s[j] & 0xffffffffull), hi = s[j] >> 32;
#pragma unroll
            for (unsigned o = 16; o; o >>= 1) {
                const long long lo_above = __shfl_down_sync(mask, lo, o), hi_above = __shfl_down_sync(mask, hi, o);
                if (lane + o < width) {
                    lo += lo_above;
                    hi += hi_above;
                }
            }
            if (lane == 0) {
                if (lo) atomic_add_term(blk.w, cua_xacc_place(0, (u64)lo, 32 * j, 0, 3, 0u));
                if (hi) atomic_add_term(blk.w, cua_xacc_place(0, hi < 0 ? 0ull - (u64)hi : (u64)hi, 32 * j + 32, hi < 0, 3, 0u));
            }
        }
    }
};

// This thread's grid-stride share (each_share), into its digit sums.
template <class T, bool DOT>
__global__ void __launch_bounds__(1024) exact_integers_kernel(const T *__restrict__ x, const T *__restrict__ y,
                                                               int64_t n, cua_xacc *acc)
{
    __shared__ BlockAcc blk;
    block_acc_zero(blk);
    IntSums<T, DOT> sums;
    constexpr int V = 16 / sizeof(T), U = 4;
    auto take = [&](uint4 a, uint4 b) {
        T va[V], vb[V];
        memcpy(va, &a, 16);
        memcpy(vb, &b, 16);
#pragma unroll
        for (int k = 0; k < V; k++) sums.add(va[k], vb[k]);
    };
    each_share<T, DOT, U>(
        x, y, n, [&](int64_t i) { sums.add(x[i], DOT ? y[i] : T()); },
        [&](const uint4 *a, const uint4 *b) {
#pragma unroll
            for (int u = 0; u < U; u++) take(a[u], b[u]);
        },
        take);
    sums.flush(blk);
    // A launch has at least one term, and an integer sum is never -0.0.
    if (cua_global_id() == 0) atomicOr(&blk.special, (unsigned)(CUA_XACC_ANY | CUA_XACC_NOT_NEGZERO));
    block_acc_merge(blk, acc);
}

// -------------------------------------------------------------- launchers

// The name of a dtype id, for a refusal.
static const char *dtype_name(int dtype)
{
#define EXACT_DTYPE_NAME_(id, name, ...) \
    case id: return name;
    switch (dtype) {
        CUA_DTYPES(EXACT_DTYPE_NAME_)
    default: return "an unknown dtype";
    }
#undef EXACT_DTYPE_NAME_
}

// Call f(T()) for data of any dtype; refuse an id that names none.
template <class F>
static int exact_dispatch(int dtype, cua_launch *cfg, F &&f)
{
    const int st = cua_dispatch(dtype, f);
    if (st == CUA_EINTERNAL) return cua_refuse(cfg, "exact sums and dots take NumPy's numbers, not %s", dtype_name(dtype));
    return st;
}

// The launches of one call: launch(offset, count, acc) for each piece of
// at most `piece` elements, each into its own zeroed device accumulator;
// one wait; the accumulators copied back, normalized and merged into
// *result. No input: a zeroed result, no launch. One piece with a call
// slot (cfg->result.device, the mapped alias of *result) takes the result
// route (route.cu): a kernel publishes the accumulator into the slot and
// the wait ends on its flag, instead of a copy engine's transfer into
// pageable memory after the stream is done -- the plain sums' way back,
// which that transfer held exact sums some 10-25 us behind per call (an
// H100 and an H200, 2^28 elements, the kernels level).
template <class L>
static int run_pieces(int64_t n, int64_t piece, cua_xacc *result, cua_launch *cfg, L launch)
{
    memset(result, 0, sizeof *result);
    if (n == 0) return 0;
    cudaStream_t s = cua_stream(cfg);
    const int64_t pieces = cua_ceil_div(n, piece);
    // One piece comes back into *result itself; more into a host array.
    std::unique_ptr<cua_xacc[]> parts;
    if (pieces > 1) {
        parts.reset(new (std::nothrow) cua_xacc[pieces]);
        if (!parts) return CUA_ENOMEM;
    }
    cua_xacc *back = pieces > 1 ? parts.get() : result;
    const size_t bytes = (size_t)pieces * sizeof(cua_xacc);
    cua_scratch dev;
    CUA_CHECK(dev.get(bytes, s));
    cua_xacc *acc = (cua_xacc *)dev.ptr;
    CUA_CHECK(cudaMemsetAsync(acc, 0, bytes, s));
    for (int64_t p = 0; p < pieces; p++) {
        const int64_t off = p * piece;
        launch(off, n - off < piece ? n - off : piece, acc + p);
        CUA_CHECK_LAUNCH();
    }
    if (pieces == 1 && cfg->result.device) {
        const int st = cua_cuda_deliver(acc, bytes, result, cfg);
        if (st) return st;
        cua_xacc_normalize(result);
        return 0;
    }
    CUA_CHECK(cudaMemcpyAsync(back, acc, bytes, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    if (pieces == 1) {
        cua_xacc_normalize(result);
        return 0;
    }
    for (int64_t p = 0; p < pieces; p++) {
        cua_xacc_normalize(&parts[p]);
        cua_xacc_merge(result, &parts[p]);
    }
    return 0;
}

template <class T>
using xacc_kernel = void (*)(const T *, const T *, int64_t, cua_xacc *);

// exact_global and exact_shared: the tutorial's grid (32 blocks per SM),
// one launch of `kernel` per piece. y is null for a sum.
template <class T, bool DOT>
static int per_element(xacc_kernel<T> kernel, const T *x, const T *y, int64_t n, cua_xacc *result, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    const unsigned blocks = (unsigned)cfg->blocks;
    const int threads = cfg->threads;
    cudaStream_t s = cua_stream(cfg);
    return run_pieces(n, CUA_XACC_PIECE, result, cfg, [&](int64_t off, int64_t m, cua_xacc *acc) {
        kernel<<<blocks, threads, 0, s>>>(x + off, DOT ? y + off : nullptr, m, acc);
    });
}

template <class T, bool DOT>
static int exact_global(const T *x, const T *y, int64_t n, cua_xacc *result, cua_launch *cfg)
{
    return per_element<T, DOT>(exact_global_kernel<T, DOT>, x, y, n, result, cfg);
}

template <class T, bool DOT>
static int exact_shared(const T *x, const T *y, int64_t n, cua_xacc *result, cua_launch *cfg)
{
    return per_element<T, DOT>(exact_shared_kernel<T, DOT>, x, y, n, result, cfg);
}

// `exact`: the resident grid (as the vector rung), never more blocks than
// there are threads' worth of 16-byte vectors. Floats in expansions
// (exact_kernel), integers in digit sums (exact_integers_kernel).
template <class T, bool DOT>
static int exact_fast(const T *x, const T *y, int64_t n, cua_xacc *result, cua_launch *cfg)
{
    xacc_kernel<T> kernel;
    if constexpr (std::is_floating_point<T>::value) kernel = exact_kernel<T, DOT>;
    else kernel = exact_integers_kernel<T, DOT>;
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int threads = cfg->threads;
    const int64_t want = cua_ceil_div(n > 0 ? n : 1, (int64_t)threads * (16 / sizeof(T)));
    if (cfg->blocks <= 0) {
        int64_t resident;
        int st = cua_max_resident_blocks(kernel, threads, 0, &resident);
        if (st) return st;
        cfg->blocks = want < resident ? want : resident;
        if (cfg->blocks < 1) cfg->blocks = 1;
    }
    cua_clamp_grid(cfg, want);
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = threads;
    const unsigned blocks = (unsigned)cfg->blocks;
    cudaStream_t s = cua_stream(cfg);
    return run_pieces(n, CUA_XACC_PIECE / 2, result, cfg, [&](int64_t off, int64_t m, cua_xacc *acc) {
        kernel<<<blocks, threads, 0, s>>>(x + off, DOT ? y + off : nullptr, m, acc);
    });
}

}  // namespace

// ------------------------------------------------------ the tables' entries

#define EXACT_SUM_ENTRY(name, launcher)                                                                  \
    int name(const void *x, int64_t n, int dtype, int, void *result, cua_launch *cfg)                    \
    {                                                                                                    \
        return exact_dispatch(dtype, cfg, [&](auto t) -> int {                                           \
            using T = decltype(t);                                                                       \
            return launcher<T, false>((const T *)x, nullptr, n, (cua_xacc *)result, cfg);                \
        });                                                                                              \
    }
#define EXACT_DOT_ENTRY(name, launcher)                                                                  \
    int name(const void *a, const void *b, int64_t n, int dtype, int, void *result, cua_launch *cfg)     \
    {                                                                                                    \
        return exact_dispatch(dtype, cfg, [&](auto t) -> int {                                           \
            using T = decltype(t);                                                                       \
            return launcher<T, true>((const T *)a, (const T *)b, n, (cua_xacc *)result, cfg);            \
        });                                                                                              \
    }
EXACT_SUM_ENTRY(sum_exact_global, exact_global)
EXACT_SUM_ENTRY(sum_exact_shared, exact_shared)
EXACT_SUM_ENTRY(sum_exact, exact_fast)
EXACT_DOT_ENTRY(dot_exact_global, exact_global)
EXACT_DOT_ENTRY(dot_exact_shared, exact_shared)
EXACT_DOT_ENTRY(dot_exact, exact_fast)
