// scatter.cu -- np.<op>.at(a, indices, b): many updates scattered into a
// large output, the atomics' everyday job (PyTorch's index_add_ and
// scatter_add_, JAX's .at[].add, embedding gradients, graph messages).
// Update k adds (or multiplies, mins, ...) its value into the element its
// index names; many updates may name one element, so every rung is about
// who wins the race for that element, and what it costs.
//
//  1. atomic          one atomic per update on its element, native where
//                     the GPU has the op (atomicAdd of 32- and 64-bit
//                     integers, float and double; atomicMin/Max and
//                     And/Or/Xor of 32- and 64-bit integers), else rung 2's
//                     CAS loop (multiply, float min/max, 8- and 16-bit
//                     types). Fast while the updates spread over many
//                     elements; updates of one element queue behind each
//                     other at the L2 (the contention cliff), and a float
//                     sum depends on the order they arrive in.
//  2. cas             every op built from atomicCAS (seed 001's double add):
//                     read the element, combine, swap the result in only if
//                     the element still holds what was read, else retry.
//                     Bits are compared, never floats (a NaN cannot spin);
//                     a combine that changes nothing skips the swap. 8- and
//                     16-bit elements swap the aligned 32-bit word that
//                     holds them (a 16-bit one, or a lock for a lone byte,
//                     at the output's ends). Losers back off; the slowest
//                     rung under contention.
//  3. warp_aggregated lanes of a warp whose updates name the same element
//                     find each other (__match_any_sync), combine their
//                     values with shuffles in a fixed tree, and the lowest
//                     lane applies one atomic for the group: up to 32x fewer
//                     atomics on a hot element. Costs a match and up to five
//                     shuffles per update where elements repeat in a warp;
//                     nothing where none does (one vote says so). sm_70.
//  4. shared          each block owns a private copy of the whole output in
//                     shared memory, starts it at the op's identity, applies
//                     its updates there with shared-memory atomics, and
//                     merges the elements it changed into the output: global
//                     atomics become at most one per element per block, and
//                     the hot elements' queue moves into the SM. Fits only
//                     an output whose elements (widened to 32 bits) fit a
//                     block's shared memory.
//  5. exact           deterministic float add and subtract: every element's
//                     start value and updates summed exactly in a
//                     fixed-point integer accumulator (fixed.h: 64-bit
//                     words, carries from each atomicAdd's old value;
//                     integer atomics, whose order does not matter), rounded
//                     once. The correctly rounded sum -- the same bits on
//                     every run, every grid and both backends, never less
//                     accurate than NumPy's sequential np.add.at. Costs a
//                     pass over the values to find the bits they span (the
//                     accumulator's width), one 64-bit atomic per update
//                     where that is under 64 bits (two where a value
//                     straddles two words, another per carry), and a pass
//                     to round. Contended elements queue as in rung 1.
//                     Fits float add and subtract only: every other op is
//                     exact with any rung.
//  6. exact_private   rung 5 with rung 4's privatization. Its common case
//                     (the whole output fits a block's shared memory, up to
//                     what a block may opt in to, and the updates' values
//                     lie within 63 bits of the window's lowest bit) has a
//                     kernel of its own, at_fixed_narrow_kernel: per
//                     element a positive and a negative 64-bit magnitude
//                     word in up to 32 copies, one shared atomicAdd per
//                     update, no match. Otherwise each block keeps
//                     accumulators in shared memory -- the whole output's
//                     where they fit in 48 KiB, else a cache of slots that
//                     the first update of an element claims (atomicCAS on
//                     the slot's key), so that hot elements stay in the SM
//                     and the rest go to the global accumulators -- and
//                     lanes of a warp naming one element first add their
//                     values as 128-bit integers in a fixed tree (rung 3's
//                     scan). Each block adds its slots into the global
//                     accumulators once. The same bits as rung 5. Costs the
//                     slots' start and merge per block and, where hot
//                     elements are few, a claim attempt per update (a
//                     warp whose first updates nearly all miss the cache
//                     stops trying it, one whose lanes never share an
//                     element stops matching them). sm_70.
//
// The caller has checked every index (cua_cuda_scatter_check, at the end of
// this file) before rungs 1-4 run, so a rung never writes out of bounds and
// a bad index leaves the output untouched; rungs 5 and 6, which write the
// output only after every update is in their accumulators, check them in
// their own pass (cua_scatter.bad) and then do not round. A rung reads the op at run time
// (one uniform branch per update) rather than as a template: one kernel per
// element type, not one per (type, op).
#include <cuda/std/limits>
#include <type_traits>

#include "common.cuh"
#include "fixed.h"
#include "ops.cuh"

namespace {

using namespace cua_ops;  // the op ids, is_float, pick, atomic_int, float_pick (ops.cuh)

// Integer arithmetic is done unsigned (wrapping, as NumPy's, with no
// undefined signed overflow), in at least 32 bits (no promotion to int).
template <class T>
using wide_u = pick<sizeof(T) == 8, u64, unsigned>;

// ------------------------------------------------------------ the updates

// Update w of the call (w < n * row): the element it names and its value,
// negated for subtract.
template <class T>
struct Update {
    int64_t e;
    T v;
};

__device__ __forceinline__ int64_t index_at(const void *idx, int idx_dtype, int64_t k, int64_t m)
{
    const int64_t i = idx_dtype == CUA_INT64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
    return i < 0 ? i + m : i;  // the check passed: -m <= i < m
}

template <class T>
__device__ __forceinline__ T negated(T v)
{
    if constexpr (is_float<T>) return -v;
    else return (T)(wide_u<T>(0) - (wide_u<T>)v);
}

template <class T>
__device__ __forceinline__ Update<T> update_at(const void *idx, const T *vals, const cua_scatter &s, int64_t w)
{
    const int64_t k = s.row == 1 ? w : w / s.row, j = w - k * s.row;
    Update<T> u;
    u.e = index_at(idx, s.idx_dtype, k, s.m) * s.row + j;
    u.v = vals[k * s.vk + j * s.vj];
    if (s.negate) u.v = negated(u.v);
    return u;
}

// Update w read by an exact rung that checks the indices itself (`bad`
// not null, cua_scatter.bad): an index outside [-m, m) is noted -- its
// position, the least by atomicMin -- and the update skipped (false); the
// rounding then writes nothing.
template <class T>
__device__ __forceinline__ bool checked_update(const void *idx, const T *vals, const cua_scatter &s, int64_t w,
                                               unsigned long long *bad, Update<T> *u)
{
    if (bad) {
        const int64_t k = s.row == 1 ? w : w / s.row;
        const int64_t i = s.idx_dtype == CUA_INT64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
        if (i < -s.m || i >= s.m) {
            atomicMin(bad, (unsigned long long)k);
            return false;
        }
    }
    *u = update_at(idx, vals, s, w);
    return true;
}

// ------------------------------------------------------------ the ops

// a OP b in T, as NumPy's ufunc computes it.
template <class T>
__device__ __forceinline__ T combine(int op, T a, T b)
{
    if constexpr (is_float<T>) {
        switch (op) {
        case ADD: return a + b;
        case MUL: return a * b;
        default: return float_pick(op, a, b);
        }
    } else {
        using W = wide_u<T>;
        switch (op) {
        case ADD: return (T)((W)a + (W)b);
        case MUL: return (T)((W)a * (W)b);
        case MIN: return b < a ? b : a;
        case MAX: return a < b ? b : a;
        case AND: return a & b;
        case OR: return a | b;
        default: return a ^ b;
        }
    }
}

template <class W, class T>
__device__ __forceinline__ W bits_of(T v)
{
    W w = 0;
    memcpy(&w, &v, sizeof v);
    return w;
}

template <class T, class W>
__device__ __forceinline__ T value_of(W w)
{
    T v;
    memcpy(&v, &w, sizeof v);
    return v;
}

// atomicCAS on a 32- or 64-bit word until `next` of what the word holds is
// swapped in; a next equal to what is there needs no swap (min, max, and,
// or soon stop writing). A loser sleeps before it retries, twice as long
// each time up to 1 us, which spreads the retries of a hot word out.
template <class W, class F>
__device__ __forceinline__ void cas_word(W *word, F next)
{
    unsigned backoff = 32;
    W old = *(volatile W *)word;
    while (true) {
        const W want = next(old);
        if (want == old) return;
        const W seen = atomicCAS(word, old, want);
        if (seen == old) return;
        old = seen;
        __nanosleep(backoff);
        backoff = backoff < 1024 ? 2 * backoff : 1024;
    }
}

// The output's bytes [lo, hi), and a lock word (zeroed by the launcher) for
// the 8-bit elements that no aligned word of their own fits around.
struct Span {
    const char *lo = nullptr, *hi = nullptr;
    int *lock = nullptr;
};

// *p = *p OP v with atomicCAS. An 8- or 16-bit element has no CAS of its
// own width (16-bit atomicCAS needs sm_70, 8-bit none): it is swapped as
// part of the aligned 32-bit word that holds it, or the aligned 16-bit one
// where the 32-bit word would reach past the output's ends (a buffer of 97
// bytes ends inside its last word; a view may start inside its first). A
// byte that not even its 16-bit word fits around is updated under a lock.
// Every byte of one word takes the same path, so no two paths write one
// byte.
template <class S, class T>
__device__ __forceinline__ void cas_part(S *word, T *p, T v, int op)
{
    using B = pick<sizeof(T) == 1, uint8_t, uint16_t>;
    const int shift = (int)((uintptr_t)p - (uintptr_t)word) * 8;
    const S mask = (S)((((1u << (8 * sizeof(T))) - 1) << shift));
    cas_word(word, [&](S old) {
        const T now = value_of<T>((B)((old & mask) >> shift));
        const S next = (S)bits_of<B>(combine(op, now, v));
        return (S)((old & ~mask) | ((S)(next << shift) & mask));
    });
}

template <class T>
__device__ __forceinline__ void cas_apply(T *p, T v, int op, const Span &out = Span())
{
    if constexpr (sizeof(T) >= 4) {
        using W = pick<sizeof(T) == 8, u64, unsigned>;
        cas_word((W *)p, [&](W old) { return bits_of<W>(combine(op, value_of<T>(old), v)); });
    } else {
        const uintptr_t a = (uintptr_t)p, w4 = a & ~(uintptr_t)3, w2 = a & ~(uintptr_t)1;
        const uintptr_t lo = (uintptr_t)out.lo, hi = (uintptr_t)out.hi;
        if (w4 >= lo && w4 + 4 <= hi) {
            cas_part((unsigned *)w4, p, v, op);
        } else if (w2 >= lo && w2 + 2 <= hi) {
            cas_part((unsigned short *)w2, p, v, op);
        } else {
            // The lock's fences order the byte's read and write with the
            // previous and next holder's.
            cua_lock(out.lock);
            *(volatile T *)p = combine(op, *(volatile T *)p, v);
            cua_unlock(out.lock);
        }
    }
}

// *p = *p OP v with the instruction the GPU has for it, else a CAS loop.
// Works on global and shared memory alike (the address space is generic).
template <class T>
__device__ __forceinline__ void native_apply(T *p, T v, int op, const Span &out = Span())
{
    if constexpr (sizeof(T) < 4) {
        cas_apply(p, v, op, out);
    } else if constexpr (is_float<T>) {
        if (op == ADD) atomicAdd(p, v);
        else cas_apply(p, v, op);
    } else {
        using A = atomic_int<T>;
        using U = wide_u<T>;
        switch (op) {
        case ADD: atomicAdd((U *)p, (U)v); break;
        case MIN: atomicMin((A *)p, (A)v); break;
        case MAX: atomicMax((A *)p, (A)v); break;
        case AND: atomicAnd((U *)p, (U)v); break;
        case OR: atomicOr((U *)p, (U)v); break;
        case XOR: atomicXor((U *)p, (U)v); break;
        default: cas_apply(p, v, op);
        }
    }
}

// ------------------------------------------------------------ rungs 1-3

template <class T>
__global__ void at_atomic_kernel(T *out, const void *idx, const T *vals, cua_scatter s, Span span)
{
    const int64_t total = s.n * s.row;
    for (int64_t w = cua_global_id(); w < total; w += cua_grid_stride()) {
        const Update<T> u = update_at(idx, vals, s, w);
        native_apply(out + u.e, u.v, s.op, span);
    }
}

template <class T>
__global__ void at_cas_kernel(T *out, const void *idx, const T *vals, cua_scatter s, Span span)
{
    const int64_t total = s.n * s.row;
    for (int64_t w = cua_global_id(); w < total; w += cua_grid_stride()) {
        const Update<T> u = update_at(idx, vals, s, w);
        cas_apply(out + u.e, u.v, s.op, span);
    }
}

// Every lane of a warp takes the same turns of the loop (the turn is the
// warp's first update), so all meet at each match and shuffle; lanes past
// the end carry element -1 and apply nothing. `members` (the lanes this
// warp has: a block of 48 threads has a half warp) is read at entry.
template <class T>
__global__ void at_warp_aggregated_kernel(T *out, const void *idx, const T *vals, cua_scatter s, Span span)
{
    const unsigned members = __activemask();
    const int lane = threadIdx.x & 31;
    const int64_t total = s.n * s.row;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u);
    for (int64_t w0 = first; w0 < total; w0 += cua_grid_stride()) {
        const int64_t w = w0 + lane;
        Update<T> u{-1, T(0)};
        if (w < total) u = update_at(idx, vals, s, w);
        const unsigned peers = __match_any_sync(members, (unsigned long long)u.e);
        // One vote: where no element repeats in this warp, no shuffles.
        if (!__all_sync(members, peers == (1u << lane))) {
            // An inclusive scan toward the group's lowest lane: at step d
            // each lane takes the value of the group member d ranks above
            // it (found by clearing the lowest set bits of the members
            // above it), so after five steps the lowest lane holds the
            // group's values combined in a fixed tree.
            unsigned above = peers & ~((2u << lane) - 1u);
            int cleared = 0;
            for (int d = 1; d < 32; d <<= 1) {
                for (; cleared < d - 1 && above; cleared++) above &= above - 1;
                const int src = above ? __ffs(above) - 1 : lane;
                const T theirs = __shfl_sync(members, u.v, src);
                if (above) u.v = combine(s.op, u.v, theirs);
            }
        }
        if (u.e >= 0 && (peers & ((1u << lane) - 1u)) == 0) native_apply(out + u.e, u.v, s.op, span);
    }
}

// ------------------------------------------------------------ rung 4

// The private copy's cells: 32 bits at least (the narrowest shared-memory
// atomics), the value widened with its sign; float and double as they are.
template <class T>
using cell_t = pick<is_float<T>, T, pick<sizeof(T) == 8, T, pick<std::is_signed<T>::value, int, unsigned>>>;

// The op's identity as a cell: a private copy starts there, and a cell still
// holding it (bit for bit) has nothing to merge. Float add's is -0.0, which
// leaves every value as it is (+0.0 would turn -0.0 into +0.0).
template <class T, class C = cell_t<T>>
__device__ __forceinline__ C identity(int op)
{
    switch (op) {
    case MUL: return C(1);
    case AND: return C(~wide_u<T>(0));
    case MIN: return is_float<T> ? C(cuda::std::numeric_limits<T>::infinity()) : C(cuda::std::numeric_limits<T>::max());
    case MAX: return is_float<T> ? C(-cuda::std::numeric_limits<T>::infinity()) : C(cuda::std::numeric_limits<T>::lowest());
    case ADD: return is_float<T> ? C(-0.0) : C(0);
    default: return C(0);
    }
}

template <class T>
__global__ void at_shared_kernel(T *out, const void *idx, const T *vals, cua_scatter s, Span span)
{
    using C = cell_t<T>;
    C *mine = reinterpret_cast<C *>(cua_smem);
    const int64_t cells = s.m * s.row;
    const C start = identity<T>(s.op);
    for (int64_t e = threadIdx.x; e < cells; e += blockDim.x) mine[e] = start;
    __syncthreads();
    const int64_t total = s.n * s.row;
    for (int64_t w = cua_global_id(); w < total; w += cua_grid_stride()) {
        const Update<T> u = update_at(idx, vals, s, w);
        native_apply(mine + u.e, (C)u.v, s.op);
    }
    __syncthreads();  // every update of this block is in its copy
    for (int64_t e = threadIdx.x; e < cells; e += blockDim.x) {
        const C c = mine[e];
        if (bits_of<wide_u<C>>(c) != bits_of<wide_u<C>>(start)) native_apply(out + e, (T)c, s.op, span);
    }
}

// ------------------------------------------------------------ rungs 5-6

// What the pass over the data found: the window's lowest and highest bit,
// whether any element of `out` starts at -0.0, and the highest bit of the
// updates' values alone (the narrow kernel's test: an output's sums grow
// past its updates).
struct Window {
    int lo, hi, negzero, vhi;
};

// A float's layout: mantissa bits, exponent bias, the unsigned type of its
// bits.
template <class T>
struct Layout {
    static constexpr int mbits = sizeof(T) == 8 ? 52 : 23, bias = sizeof(T) == 8 ? 1023 : 127;
    static constexpr unsigned top = sizeof(T) == 8 ? 0x7ff : 0xff;  // the exponent field of inf and NaN
    using bits = pick<sizeof(T) == 8, u64, unsigned>;
};

// The window from exponent fields alone (the CPU's values_efields): a
// nonzero finite value with exponent field f has its bits in
// [2^(max(f, 1) - bias - mbits), 2^(f - bias)], so the least max(f, 1) and
// the greatest f over the values bound the window -- up to mbits below the
// lowest set bit, as exact, and a few integer ops per value where finding
// that bit took a conversion and a count of trailing zeros.
template <class T>
__device__ __forceinline__ void efield_of(typename Layout<T>::bits b, unsigned *least, unsigned *most)
{
    using L = Layout<T>;
    const typename L::bits mag = b & ~((typename L::bits)1 << (8 * sizeof(T) - 1));
    const unsigned f = (unsigned)(mag >> L::mbits);
    if (mag == 0 || f == L::top) return;
    *least = min(*least, f ? f : 1u);
    *most = max(*most, f);
}

// A warp's least and greatest (all 32 lanes take part).
__device__ __forceinline__ void warp_least_most(unsigned *least, unsigned *most)
{
    for (int d = 16; d; d >>= 1) {
        *least = min(*least, __shfl_xor_sync(0xffffffffu, *least, d));
        *most = max(*most, __shfl_xor_sync(0xffffffffu, *most, d));
    }
}

// One pass over the values the updates read (one a broadcast repeats is
// read once; contiguous ones four 16-byte loads at a time) and the
// output's start values: each thread its exponent fields, the warp's by
// shuffles, the block's by shared atomics (one per warp), one global
// atomicMin/Max per block, as bit positions. Launched with whole warps.
template <class T>
__global__ void at_window_kernel(const T *out, const T *vals, cua_scatter s, Window *win)
{
    using L = Layout<T>;
    using B = typename L::bits;
    __shared__ unsigned block[4];  // least and most of the values, and of the start values
    __shared__ int block_negzero;
    if (threadIdx.x == 0) {
        block[0] = block[2] = UINT_MAX;
        block[1] = block[3] = 0;
        block_negzero = 0;
    }
    __syncthreads();
    unsigned least = UINT_MAX, most = 0;
    const int64_t rows = s.vk ? s.n : 1, per = s.vj ? s.row : 1, cells = s.m * s.row, G = cua_grid_stride();
    const B *bits = reinterpret_cast<const B *>(vals);
    if (per == 1 || (s.vj == 1 && s.vk == per)) {  // rows * per values, `step` apart
        const int64_t count = rows * per, step = per == 1 ? s.vk : 1;
        constexpr int V = 16 / sizeof(B);
        int64_t done = 0;
        if (step == 1 && reinterpret_cast<uintptr_t>(vals) % 16 == 0) {
            const uint4 *vec = reinterpret_cast<const uint4 *>(vals);
            const int64_t nvec = count / V;
            int64_t v = cua_global_id();
            for (; v + 3 * G < nvec; v += 4 * G) {  // four loads in flight per thread
                uint4 q[4] = {vec[v], vec[v + G], vec[v + 2 * G], vec[v + 3 * G]};
                B x[4 * V];
                memcpy(x, q, sizeof q);
                for (int i = 0; i < 4 * V; i++) efield_of<T>(x[i], &least, &most);
            }
            for (; v < nvec; v += G) {
                B x[V];
                memcpy(x, &vec[v], 16);
                for (int i = 0; i < V; i++) efield_of<T>(x[i], &least, &most);
            }
            done = nvec * V;
        }
        for (int64_t i = done + cua_global_id(); i < count; i += G) efield_of<T>(bits[i * step], &least, &most);
    } else {
        for (int64_t w = cua_global_id(); w < rows * per; w += G)
            efield_of<T>(bits[(w / per) * s.vk + (w % per) * s.vj], &least, &most);
    }
    unsigned sleast = UINT_MAX, smost = 0;
    int negzero = 0;
    const B *start = reinterpret_cast<const B *>(out);
    for (int64_t e = cua_global_id(); e < cells; e += G) {
        efield_of<T>(start[e], &sleast, &smost);
        negzero |= start[e] == (B)1 << (8 * sizeof(T) - 1);
    }
    warp_least_most(&least, &most);
    warp_least_most(&sleast, &smost);
    if ((threadIdx.x & 31) == 0) {
        atomicMin(&block[0], least);
        atomicMax(&block[1], most);
        atomicMin(&block[2], sleast);
        atomicMax(&block[3], smost);
    }
    if (negzero) block_negzero = 1;
    __syncthreads();
    if (threadIdx.x == 0) {
        const int shift = L::bias + L::mbits;
        if (block[0] != UINT_MAX) {
            atomicMin(&win->lo, (int)block[0] - shift);
            atomicMax(&win->hi, (int)block[1] - L::bias);
            atomicMax(&win->vhi, (int)block[1] - L::bias);
        }
        if (block[2] != UINT_MAX) {
            atomicMin(&win->lo, (int)block[2] - shift);
            atomicMax(&win->hi, (int)block[3] - L::bias);
        }
        if (block_negzero) atomicOr(&win->negzero, 1);
    }
}

// acc (word i at acc[i * stride]) += (-1)^neg (t1:t0) * 2^(64k), word by
// word: each atomicAdd returns the word's old value, which says whether the
// add carried (a subtraction: borrowed), and the next word is touched only
// with something to add. Generic addresses: shared or global words alike.
__device__ __forceinline__ void fixed_add(u64 *acc, int64_t stride, int words, int k, u64 t0, u64 t1, bool neg)
{
    u64 part = t0, later = t1;
    for (int i = k; i < words; i++) {
        const u64 old = atomicAdd(acc + i * stride, neg ? 0 - part : part);
        const u64 carry = neg ? old < part : old + part < old;
        part = later + carry;  // later < 2^52: no overflow
        later = 0;
        if (!part) return;
    }
}

// The same without atomics, for one writer (an element's start value).
__device__ __forceinline__ void fixed_add_plain(u64 *acc, int64_t stride, int words, int k, u64 t0, u64 t1, bool neg)
{
    u64 part = t0, later = t1;
    for (int i = k; i < words; i++) {
        const u64 old = acc[i * stride];
        acc[i * stride] = neg ? old - part : old + part;
        const u64 carry = neg ? old < part : old + part < old;
        part = later + carry;
        later = 0;
        if (!part) return;
    }
}

// A finite value's place: false for a zero (nothing to add).
__device__ __forceinline__ bool placed(double x, int lo, int *k, u64 *t0, u64 *t1, bool *neg)
{
    uint64_t m;
    int ex, n;
    cua_fixed_split(x, &m, &ex, &n);
    if (!m) return false;
    uint64_t p0, p1;
    cua_fixed_place(m, ex, lo, k, &p0, &p1);
    *t0 = p0;
    *t1 = p1;
    *neg = n;
    return true;
}

// The accumulators start at the output's values: element e's word i is at
// acc[i * cells + e] (coalesced for the passes over elements), its flags at
// flags[e].
template <class T>
__global__ void at_fixed_start_kernel(const T *out, int64_t cells, int lo, int words, u64 *acc, unsigned *flags)
{
    for (int64_t e = cua_global_id(); e < cells; e += cua_grid_stride()) {
        const double x = (double)out[e];
        for (int i = 0; i < words; i++) acc[i * cells + e] = 0;
        flags[e] = cua_fixed_classify(x);
        int k;
        u64 t0, t1;
        bool neg;
        if (isfinite(x) && placed(x, lo, &k, &t0, &t1, &neg)) fixed_add_plain(acc + e, cells, words, k, t0, t1, neg);
    }
}

// A non-finite value sets its flags; so does, where some element started at
// -0.0 (`negzero`), every value that is not -0.0. True: a finite value,
// to be added.
__device__ __forceinline__ bool flagged(double x, int negzero, unsigned *flag)
{
    if (!isfinite(x)) {
        atomicOr(flag, cua_fixed_classify(x));
        return false;
    }
    if (negzero && !(x == 0.0 && signbit(x))) atomicOr(flag, (unsigned)CUA_FIXED_NOT_NEGZERO);
    return true;
}

// Rung 5: every update's value added to its element's accumulator with
// global atomics.
template <class T>
__global__ void at_fixed_add_kernel(const void *idx, const T *vals, cua_scatter s, int lo, int words, int negzero,
                                    u64 *acc, unsigned *flags, unsigned long long *bad)
{
    const int64_t total = s.n * s.row, cells = s.m * s.row;
    for (int64_t w = cua_global_id(); w < total; w += cua_grid_stride()) {
        Update<T> u;
        if (!checked_update(idx, vals, s, w, bad, &u)) continue;
        const double x = (double)u.v;
        int k;
        u64 t0, t1;
        bool neg;
        if (flagged(x, negzero, flags + u.e) && placed(x, lo, &k, &t0, &t1, &neg))
            fixed_add(acc + u.e, cells, words, k, t0, t1, neg);
    }
}

// Rung 6's block-private accumulators in shared memory: `slots` of them,
// word i of slot j at words[i * slots + j]. With `direct`, slot e is element
// e (the whole output fits). Otherwise a direct-mapped cache: an element's
// slot is a hash of its index, claimed by the first update that finds it
// empty (atomicCAS on its key); an update whose slot another element holds
// goes to the global accumulator, as in rung 5. Hot elements claim slots
// early and keep them: their updates stay in the SM.
constexpr unsigned long long EMPTY = ~0ull;
constexpr int PROBE_TURNS = 8;  // a warp's turns that fill the cache, then as many that measure it

// *found says whether the element already held its slot (a claim is not
// counted: while the cache fills every first update claims).
__device__ __forceinline__ int slot_of(int64_t e, int slots, bool direct, unsigned long long *keys, bool *found)
{
    *found = true;
    if (direct) return (int)e;
    const int j = (int)(((unsigned long long)e * 0x9E3779B97F4A7C15ull) >> 40) & (slots - 1);
    const unsigned long long held = keys[j];
    if (held == (unsigned long long)e) return j;
    *found = false;
    if (held != EMPTY) return -1;
    const unsigned long long was = atomicCAS(keys + j, EMPTY, (unsigned long long)e);
    *found = was == (unsigned long long)e;
    return was == EMPTY || was == (unsigned long long)e ? j : -1;
}

// A 128-bit two's complement value (lo, hi) as magnitude and sign.
__device__ __forceinline__ void magnitude(u64 lo, u64 hi, u64 *t0, u64 *t1, bool *neg)
{
    *neg = (long long)hi < 0;
    *t0 = *neg ? 0 - lo : lo;
    *t1 = *neg ? ~hi + (lo == 0) : hi;
}

template <class T>
__global__ void at_fixed_private_kernel(const void *idx, const T *vals, cua_scatter s, int lo, int words,
                                        int negzero, u64 *acc, unsigned *flags, int slots, int direct,
                                        unsigned long long *bad)
{
    unsigned long long *keys = reinterpret_cast<unsigned long long *>(cua_smem);
    u64 *mine = reinterpret_cast<u64 *>(keys + (direct ? 0 : slots));
    for (int j = threadIdx.x; j < slots; j += blockDim.x) {
        if (!direct) keys[j] = EMPTY;
        for (int i = 0; i < words; i++) mine[i * slots + j] = 0;
    }
    __syncthreads();
    const unsigned members = __activemask();
    const int lane = threadIdx.x & 31;
    const int64_t total = s.n * s.row, cells = s.m * s.row;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u);
    int tries = 0, hits = 0, shared = 0, turns = 0;
    bool bypass = false, aggregate = true;
    for (int64_t w0 = first; w0 < total; w0 += cua_grid_stride()) {
        const int64_t w = w0 + lane;
        int64_t e = -1;
        int k = 0;
        u64 t0 = 0, t1 = 0;
        bool neg = false, add = false;
        Update<T> u;
        if (w < total && checked_update(idx, vals, s, w, bad, &u)) {
            const double x = (double)u.v;
            e = u.e;
            add = flagged(x, negzero, flags + e) && placed(x, lo, &k, &t0, &t1, &neg);
        }
        // Lanes adding to one element at word 0 combine first, as 128-bit
        // two's complement integers, in a fixed tree (warp_aggregated's
        // scan): the lowest lane of each group adds the group's sum.
        const bool joins = add && k == 0;
        unsigned peers = 1u << lane;
        if (aggregate) peers = __match_any_sync(members, joins ? (unsigned long long)e : ~0ull - lane);
        if (aggregate && !__all_sync(members, peers == (1u << lane))) {
            u64 slo = neg ? 0 - t0 : t0, shi = neg ? ~t1 + (t0 == 0) : t1;
            unsigned above = peers & ~((2u << lane) - 1u);
            int cleared = 0;
            for (int d = 1; d < 32; d <<= 1) {
                for (; cleared < d - 1 && above; cleared++) above &= above - 1;
                const int src = above ? __ffs(above) - 1 : lane;
                const u64 olo = __shfl_sync(members, slo, src), ohi = __shfl_sync(members, shi, src);
                if (above && joins) {
                    const u64 sum = slo + olo;
                    shi += ohi + (sum < slo);
                    slo = sum;
                }
            }
            if (joins) magnitude(slo, shi, &t0, &t1, &neg);
            if (joins && (peers & ((1u << lane) - 1u))) add = false;  // a higher lane: its group's leader adds
            if (joins && add && t0 == 0 && t1 == 0) add = false;
        }
        // A cache that misses nearly always (updates spread over far more
        // elements than it has slots) only adds a lookup to every update,
        // and a match that finds no peers only its cost: each warp counts,
        // over its turns PROBE_TURNS to 2 * PROBE_TURNS, the updates whose
        // element already held its slot and those that had peers (by
        // ballot, so the whole warp decides alike); under one in 32, it
        // sends the rest straight to the global accumulators, or stops
        // matching.
        int j = -1;
        bool found = false;
        if (add && !bypass) j = slot_of(e, slots, direct, keys, &found);
        if (turns < 2 * PROBE_TURNS) {
            if (turns >= PROBE_TURNS) {  // the first turns fill the cache: not counted
                tries += __popc(__ballot_sync(members, add));
                hits += __popc(__ballot_sync(members, add && found));
                shared += __popc(__ballot_sync(members, joins && peers != (1u << lane)));
            }
            if (++turns == 2 * PROBE_TURNS) {
                bypass = !direct && hits * 32 < tries;
                aggregate = shared * 32 >= tries;
            }
        }
        if (!add) continue;
        if (j >= 0) fixed_add(mine + j, slots, words, k, t0, t1, neg);
        else fixed_add(acc + e, cells, words, k, t0, t1, neg);
    }
    __syncthreads();  // every update of this block is in its accumulators
    // Each slot's integer added to its element's, word by word with carries
    // (the two's complement of a negative sum carries through every word).
    for (int j = threadIdx.x; j < slots; j += blockDim.x) {
        const int64_t e = direct ? j : (keys[j] == EMPTY ? -1 : (int64_t)keys[j]);
        if (e < 0) continue;
        u64 carry = 0;
        for (int i = 0; i < words; i++) {
            const u64 v = mine[i * slots + j], part = v + carry;
            carry = part < v;
            if (!part) continue;
            const u64 old = atomicAdd(acc + i * cells + e, part);
            carry += old + part < old;
        }
    }
}

// Rung 6 on its common case: the whole output's accumulators fit in
// shared memory and the updates' values lie within 63 bits of the window's
// lowest bit (most float32 data), so that every value is one integer under
// 2^63 in word 0. Then an element
// needs no carry chain per update: each block keeps, per element, the
// magnitudes of its positive and of its negative terms in one 64-bit word
// each (no branch on the sign, no borrow), in `copies` copies that lane l
// uses copy l % copies of (lanes of a warp naming one element no longer
// queue on one word, so no match is needed), and one shared atomicAdd per
// update (a 64-bit one: on sm_90 a compare-and-swap loop in the hardware's
// own SASS, ATOMS.CAST.SPIN.64, which bounds this kernel; four updates in
// flight per thread were slower, 690 against 494 us for 2^26 updates on an
// H100); the rare add that overflows a word (its old value says so) adds
// its 2^64 to the element's global accumulator (from word 1) at once. Each
// block merges its copies into the global accumulators at the end: the
// same integers, so the same bits as rungs 5 and 6.
template <class T>
__global__ void at_fixed_narrow_kernel(const void *idx, const T *vals, cua_scatter s, int lo, int words, int negzero,
                                       u64 *acc, unsigned *flags, int copies, unsigned long long *bad)
{
    using L = Layout<T>;
    u64 *mine = reinterpret_cast<u64 *>(cua_smem);  // element e's sign g, copy c at [(2e + g) * copies + c]
    const int64_t total = s.n * s.row, cells = s.m * s.row;
    for (int64_t j = threadIdx.x; j < 2 * cells * copies; j += blockDim.x) mine[j] = 0;
    __syncthreads();
    const int c = (int)(threadIdx.x & (unsigned)(copies - 1));
    for (int64_t w = cua_global_id(); w < total; w += cua_grid_stride()) {
        Update<T> u;
        if (!checked_update(idx, vals, s, w, bad, &u)) continue;
        const typename L::bits b = bits_of<typename L::bits>(u.v);
        const unsigned f = (unsigned)(b >> L::mbits) & L::top;
        if (f == L::top || negzero) {  // a NaN or inf (or -0.0 to tell apart): flags
            if (!flagged((double)u.v, negzero, flags + u.e)) continue;
        }
        const u64 m = (u64)(b & (((typename L::bits)1 << L::mbits) - 1)) | (f ? 1ull << L::mbits : 0);
        if (!m) continue;
        const int neg = (int)(b >> (8 * sizeof(T) - 1));
        const u64 add = m << ((int)(f ? f : 1) - L::bias - L::mbits - lo);
        const u64 old = atomicAdd(mine + (2 * u.e + neg) * copies + c, add);
        if (old + add < old) fixed_add(acc + u.e, cells, words, 1, 1, 0, neg);  // +-2^64: from word 1 up
    }
    __syncthreads();  // every update of this block is in its copies
    for (int64_t e = threadIdx.x; e < cells; e += blockDim.x) {
        u64 sum[2][2] = {{0, 0}, {0, 0}};  // per sign: (low, high) of the copies' total
        for (int g = 0; g < 2; g++)
            for (int k = 0; k < copies; k++) {
                const u64 v = mine[(2 * e + g) * copies + k];
                sum[g][0] += v;
                sum[g][1] += sum[g][0] < v;
            }
        const u64 dlo = sum[0][0] - sum[1][0], dhi = sum[0][1] - sum[1][1] - (sum[0][0] < sum[1][0]);
        u64 t0, t1;
        bool neg;
        magnitude(dlo, dhi, &t0, &t1, &neg);  // positive minus negative terms
        if (t0 || t1) fixed_add(acc + e, cells, words, 0, t0, t1, neg);
    }
}

// Each element rounded once and written back; a NaN result keeps the
// start value's NaN (its payload) where the start value was one.
template <class T>
__global__ void at_fixed_round_kernel(T *out, int64_t cells, int lo, int words, const u64 *acc, const unsigned *flags,
                                      const unsigned long long *bad)
{
    if (bad && *bad != ~0ull) return;  // a bad index: `out` stays as it was
    constexpr int prec = sizeof(T) == 8 ? 53 : 24, emin = sizeof(T) == 8 ? -1074 : -149,
                  emax = sizeof(T) == 8 ? 1023 : 127;
    for (int64_t e = cua_global_id(); e < cells; e += cua_grid_stride()) {
        const double r = cua_fixed_result(cua_fixed_round((const uint64_t *)acc + e, words, cells, lo, prec, emin, emax), flags[e]);
        if (!(isnan(r) && isnan(out[e]))) out[e] = (T)r;
    }
}

// ------------------------------------------------------------ launchers

// The span of `out` for rungs 1-4, and for 8- and 16-bit elements its lock
// word, zeroed on the call's stream (never trusted from a previous call).
template <class T>
struct SpanOf {
    cua_scratch lock;
    Span span;
    cudaError_t get(T *out, const cua_scatter *s, cudaStream_t stream)
    {
        span.lo = (const char *)out;
        span.hi = (const char *)(out + s->m * s->row);
        if (sizeof(T) >= 4) return cudaSuccess;
        cudaError_t e = lock.get(sizeof(int), stream);
        if (e != cudaSuccess) return e;
        span.lock = (int *)lock.ptr;
        return cudaMemsetAsync(lock.ptr, 0, sizeof(int), stream);
    }
};

// Rungs 1-3: the default grid, the output's span, one kernel, the wait.
template <class T, class K>
static int per_update_launch(K kernel, T *out, const void *idx, const T *vals, const cua_scatter *s,
                             cua_launch *cfg)
{
    int st = cua_default_config(cfg, s->n * s->row, CUA_DEFAULT_THREADS);
    if (st || s->n * s->row == 0) return st;
    SpanOf<T> span;
    CUA_CHECK(span.get(out, s, cua_stream(cfg)));
    kernel<<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(out, idx, vals, *s, span.span);
    CUA_CHECK_LAUNCH();
    CUA_WAIT(cfg);
    return 0;
}

template <class T>
static int at_atomic(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    return per_update_launch(at_atomic_kernel<T>, out, idx, vals, s, cfg);
}

template <class T>
static int at_cas(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    return per_update_launch(at_cas_kernel<T>, out, idx, vals, s, cfg);
}

static int warp_fits(const cua_scatter *s, cua_launch *cfg)
{
    (void)s;
    int major;
    int st = cua_cc_major(&major);
    if (st) return st;
    if (major < 7)
        return cua_refuse(cfg, "method 'warp_aggregated' needs __match_any_sync: a GPU of compute capability 7.0 "
                               "or newer (this one is %d.x)", major);
    return 0;
}

template <class T>
static int at_warp_aggregated(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    const int st = warp_fits(s, cfg);
    return st ? st : per_update_launch(at_warp_aggregated_kernel<T>, out, idx, vals, s, cfg);
}

// Bytes of rung 4's private copy.
static size_t private_bytes(const cua_scatter *s)
{
    const size_t cell = cua_dtype_size(s->dtype) == 8 ? 8 : 4;
    return (size_t)(s->m * s->row) * cell;
}

static int shared_fits(const cua_scatter *s, cua_launch *cfg)
{
    int dev, optin;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const size_t need = private_bytes(s);
    if (s->m > (int64_t)optin || need > (size_t)optin)
        return cua_refuse(cfg, "method 'shared' keeps a private copy of the output in shared memory: %lld elements "
                               "need %llu bytes, more than this GPU's %d per block; use method='warp_aggregated'",
                          (long long)(s->m * s->row), (unsigned long long)need, optin);
    return 0;
}

template <class T>
static int at_shared(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = shared_fits(s, cfg);
    if (st) return st;
    const size_t smem = private_bytes(s);
    // Two blocks per SM by default: each block pays for its copy's start
    // and merge, so more blocks than can be resident would only add merges.
    st = cua_grid_config(cfg, s->n * s->row, CUA_DEFAULT_THREADS, 2);
    if (st || s->n * s->row == 0) return st;
    st = cua_allow_smem(at_shared_kernel<T>, smem);
    if (st) return st;
    SpanOf<T> span;
    CUA_CHECK(span.get(out, s, cua_stream(cfg)));
    at_shared_kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, cua_stream(cfg)>>>(out, idx, vals, *s, span.span);
    CUA_CHECK_LAUNCH();
    CUA_WAIT(cfg);
    return 0;
}

/* The exact rungs' limit: float add and subtract. */
static int float_add_only(const cua_scatter *s, cua_launch *cfg, const char *name)
{
    static const char *const ops[] = {"add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or",
                                      "bitwise_xor"};
    const bool is_float = s->dtype == CUA_FLOAT32 || s->dtype == CUA_FLOAT64;
    if (!is_float || s->op != ADD) {
        const char *dt = s->dtype == CUA_FLOAT32 ? "float32" : s->dtype == CUA_FLOAT64 ? "float64" : "integer";
        return cua_refuse(cfg, CUA_EXACT_SCATTER_ONLY, name, dt,
                          s->op >= 0 && s->op < CUA_NREDUCE_OPS ? (s->negate ? "subtract" : ops[s->op]) : "?");
    }
    return 0;
}

static int exact_fits(const cua_scatter *s, cua_launch *cfg) { return float_add_only(s, cfg, "exact"); }

// What rungs 5 and 6 add into: the window, the accumulators and flags,
// and (a rung that checks the indices itself: cua_scatter.bad) the device
// word of the first bad position, else null.
struct Fixed {
    Window w;
    int words;
    u64 *acc;
    unsigned *flags;
    unsigned long long *bad;
};

// The window and the bad position's word, on the device.
struct Head {
    Window w;
    unsigned long long bad;
};

// Rungs 5 and 6: the window, the accumulators started at the output's
// values, the updates (`add` launches rung 5's or rung 6's kernel), the
// rounding -- skipped where an update's index was bad. One wait after the
// window (its 16 bytes size the accumulators), one at the end.
template <class T, class Add>
static int fixed_point_run(T *out, const T *vals, const cua_scatter *s, cua_launch *cfg, Add add)
{
    const int64_t cells = s->m * s->row;
    const cudaStream_t stream = cua_stream(cfg);
    cua_scratch wmem;
    CUA_CHECK(wmem.get(sizeof(Head), stream));
    Head *head = (Head *)wmem.ptr, h = {{INT_MAX, INT_MIN, 0, INT_MIN}, ~0ull};
    CUA_CHECK(cudaMemcpyAsync(head, &h, sizeof h, cudaMemcpyHostToDevice, stream));
    Window *win = &head->w, w = h.w;
    cua_launch pass = *cfg;
    pass.blocks = pass.threads = 0;
    int st = cua_default_config(&pass, s->n * s->row > cells ? s->n * s->row : cells, CUA_DEFAULT_THREADS);
    if (st) return st;
    const unsigned grid = (unsigned)pass.blocks;
    at_window_kernel<<<grid, pass.threads, 0, stream>>>(out, vals, *s, win);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaMemcpyAsync(&w, win, sizeof w, cudaMemcpyDeviceToHost, stream));
    CUA_WAIT(cfg);
    if (w.lo > w.hi) w.lo = w.hi = 0;  // no finite nonzero value: the flags decide
    const int words = cua_fixed_words(w.lo, w.hi);
    cua_scratch amem;
    CUA_CHECK(amem.get((size_t)cells * words * sizeof(u64) + (size_t)cells * sizeof(unsigned), stream));
    u64 *acc = (u64 *)amem.ptr;
    unsigned *flags = (unsigned *)(acc + cells * words);
    at_fixed_start_kernel<<<grid, pass.threads, 0, stream>>>(out, cells, w.lo, words, acc, flags);
    CUA_CHECK_LAUNCH();
    const Fixed f = {w, words, acc, flags, s->bad ? &head->bad : nullptr};
    st = add(f);
    if (st) return st;
    at_fixed_round_kernel<<<grid, pass.threads, 0, stream>>>(out, cells, w.lo, words, acc, flags, f.bad);
    CUA_CHECK_LAUNCH();
    if (f.bad) CUA_CHECK(cudaMemcpyAsync(&h.bad, f.bad, sizeof h.bad, cudaMemcpyDeviceToHost, stream));
    CUA_WAIT(cfg);
    if (s->bad) *s->bad = h.bad == ~0ull ? -1 : (int64_t)h.bad;
    return 0;
}

template <class T>
static int at_exact(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = cua_default_config(cfg, s->n * s->row, CUA_DEFAULT_THREADS);
    if (st || s->n * s->row == 0) return st;
    return fixed_point_run(out, vals, s, cfg, [&](const Fixed &f) -> int {
        at_fixed_add_kernel<<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(
            idx, vals, *s, f.w.lo, f.words, f.w.negzero, f.acc, f.flags, f.bad);
        CUA_CHECK_LAUNCH();
        return 0;
    });
}

// Rung 6's shared memory: the whole output's accumulators when they take
// at most PRIVATE_BYTES, else a cache of slots (a key and the words each)
// in that much. A power of two of slots, at least 64.
constexpr size_t PRIVATE_BYTES = 48 * 1024;

static void private_plan(int64_t cells, int words, int *slots, int *direct, size_t *smem)
{
    if ((size_t)cells * words * 8 <= PRIVATE_BYTES) {
        *direct = 1;
        *slots = (int)(cells > 0 ? cells : 1);
        *smem = (size_t)*slots * words * 8;
        return;
    }
    int n = 64;
    while ((size_t)(2 * n) * (words + 1) * 8 <= PRIVATE_BYTES) n *= 2;
    *direct = 0;
    *slots = n;
    *smem = (size_t)n * (words + 1) * 8;
}

// The narrow kernel's copies of the output in shared memory: the most (a
// power of two, at most a warp's 32) whose two words per element fit
// PRIVATE_BYTES; past that one copy, in as much as a block may opt in to
// (BIG_THREADS threads then keep the SM's one block busy); 0 where one copy
// does not fit or a value reaches 63 bits above the window's lowest (the
// general kernel then runs, its slots a cache of the hot elements).
constexpr int BIG_THREADS = 1024;

static int narrow_copies(int64_t cells, const Window &w, int *copies)
{
    *copies = 0;
    if (w.vhi > w.lo + 62) return 0;  // (vhi is INT_MIN where no update adds anything: any kernel will do)
    if (cells * 16 > (int64_t)PRIVATE_BYTES) {
        int dev, optin;
        CUA_CHECK(cudaGetDevice(&dev));
        CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (cells * 16 <= (int64_t)optin - 1024) *copies = 1;  // 1 KiB for the kernel's own and the runtime's
        return 0;
    }
    *copies = 1;
    while (*copies < 32 && cells * 16 * (2 * *copies) <= (int64_t)PRIVATE_BYTES) *copies *= 2;
    return 0;
}

// Resident blocks by default, as the general kernel (at_exact_private).
template <class T>
static int narrow_launch(const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg, const Fixed &f,
                         int copies)
{
    const size_t smem = (size_t)(s->m * s->row) * 16 * copies;
    int threads = cfg->threads > 0 ? cfg->threads : smem > PRIVATE_BYTES ? BIG_THREADS : CUA_DEFAULT_THREADS;
    int64_t resident = 0;
    int st = cua_allow_smem(at_fixed_narrow_kernel<T>, smem);
    if (!st) st = cua_max_resident_blocks(at_fixed_narrow_kernel<T>, threads, smem, &resident);
    if (!st && !resident && threads == BIG_THREADS && cfg->threads <= 0) {  // its registers would not fit 1024
        threads = CUA_DEFAULT_THREADS;
        st = cua_max_resident_blocks(at_fixed_narrow_kernel<T>, threads, smem, &resident);
    }
    int sms;
    if (!st) st = cua_sm_count(&sms);
    if (!st) st = cua_grid_config(cfg, s->n * s->row, threads, (int)(resident / sms > 0 ? resident / sms : 1));
    if (st) return st;
    at_fixed_narrow_kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, cua_stream(cfg)>>>(
        idx, vals, *s, f.w.lo, f.words, f.w.negzero, f.acc, f.flags, copies, f.bad);
    CUA_CHECK_LAUNCH();
    return 0;
}

static int private_fits(const cua_scatter *s, cua_launch *cfg)
{
    int st = float_add_only(s, cfg, "exact_private");
    if (st) return st;
    int major;
    st = cua_cc_major(&major);
    if (st) return st;
    if (major < 7)
        return cua_refuse(cfg, "method 'exact_private' needs __match_any_sync: a GPU of compute capability 7.0 or "
                               "newer (this one is %d.x)", major);
    return 0;
}

template <class T>
static int at_exact_private(T *out, const void *idx, const T *vals, const cua_scatter *s, cua_launch *cfg)
{
    const int64_t total = s->n * s->row;
    if (total == 0) return cua_grid_config(cfg, total, CUA_DEFAULT_THREADS, 1);
    return fixed_point_run(out, vals, s, cfg, [&](const Fixed &f) -> int {
        int copies;
        int st = narrow_copies(s->m * s->row, f.w, &copies);
        if (st) return st;
        if (copies) return narrow_launch(idx, vals, s, cfg, f, copies);
        int slots, direct;
        size_t smem;
        private_plan(s->m * s->row, f.words, &slots, &direct, &smem);
        // By default as many blocks as can be resident (the slots' size,
        // known only now, decides how many): each block pays for starting
        // and merging its slots, so more would only add merges, and fewer
        // leave the SMs too few warps to hide the atomics' latency.
        int64_t resident = 0;
        st = cua_max_resident_blocks(at_fixed_private_kernel<T>, cfg->threads > 0 ? cfg->threads
                                                                                      : CUA_DEFAULT_THREADS,
                                         smem, &resident);
        if (st) return st;
        int sms;
        st = cua_sm_count(&sms);
        if (!st) st = cua_grid_config(cfg, total, CUA_DEFAULT_THREADS, (int)(resident / sms > 0 ? resident / sms : 1));
        if (st) return st;
        at_fixed_private_kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, cua_stream(cfg)>>>(
            idx, vals, *s, f.w.lo, f.words, f.w.negzero, f.acc, f.flags, slots, direct, f.bad);
        CUA_CHECK_LAUNCH();
        return 0;
    });
}

static int fits_any(const cua_scatter *s, cua_launch *cfg)
{
    (void)s;
    (void)cfg;
    return 0;
}

#define AT_ENTRY(RUNG, launcher)                                                                           \
    static int at_##RUNG(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg) \
    {                                                                                                        \
        return cua_dispatch(s->dtype, [&](auto t) -> int {                                                   \
            using T = decltype(t);                                                                           \
            return launcher<T>((T *)out, idx, (const T *)vals, s, cfg);                                      \
        });                                                                                                  \
    }
AT_ENTRY(ATOMIC, at_atomic)
AT_ENTRY(CAS, at_cas)
AT_ENTRY(WARP_AGGREGATED, at_warp_aggregated)
AT_ENTRY(SHARED, at_shared)

// exact and exact_private take floats only: their fits refuse the rest
// before any dispatch.
static int at_EXACT(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = exact_fits(s, cfg);
    if (st) return st;
    if (s->dtype == CUA_FLOAT32) return at_exact<float>((float *)out, idx, (const float *)vals, s, cfg);
    return at_exact<double>((double *)out, idx, (const double *)vals, s, cfg);
}

static int at_EXACT_PRIVATE(void *out, const void *idx, const void *vals, const cua_scatter *s, cua_launch *cfg)
{
    int st = private_fits(s, cfg);
    if (st) return st;
    if (s->dtype == CUA_FLOAT32) return at_exact_private<float>((float *)out, idx, (const float *)vals, s, cfg);
    return at_exact_private<double>((double *)out, idx, (const double *)vals, s, cfg);
}

// ------------------------------------------------------------ the check

// The first position k whose index is outside [-m, m), by atomicMin.
__global__ void at_check_kernel(const void *idx, int idx_dtype, int64_t n, int64_t m, unsigned long long *bad)
{
    for (int64_t k = cua_global_id(); k < n; k += cua_grid_stride()) {
        const int64_t i = idx_dtype == CUA_INT64 ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
        if (i < -m || i >= m) atomicMin(bad, (unsigned long long)k);
    }
}

}  // namespace

extern "C" int cua_cuda_scatter_check(const void *idx, int idx_dtype, int64_t n, int64_t m, int64_t *bad,
                                      cua_launch *cfg)
{
    *bad = -1;
    if (n == 0) return 0;
    if (idx_dtype != CUA_INT32 && idx_dtype != CUA_INT64) return CUA_EINTERNAL;
    const cudaStream_t stream = cua_stream(cfg);
    cua_scratch mem;
    CUA_CHECK(mem.get(sizeof(unsigned long long), stream));
    unsigned long long *word = (unsigned long long *)mem.ptr, none = ~0ull;
    CUA_CHECK(cudaMemcpyAsync(word, &none, sizeof none, cudaMemcpyHostToDevice, stream));
    cua_launch grid = *cfg;
    grid.blocks = grid.threads = 0;
    int st = cua_default_config(&grid, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    at_check_kernel<<<(unsigned)grid.blocks, grid.threads, 0, stream>>>(idx, idx_dtype, n, m, word);
    CUA_CHECK_LAUNCH();
    unsigned long long found;
    CUA_CHECK(cudaMemcpyAsync(&found, word, sizeof found, cudaMemcpyDeviceToHost, stream));
    CUA_WAIT(cfg);
    *bad = found == ~0ull ? -1 : (int64_t)found;
    return 0;
}

static const cua_scatter_row at_rows[] = {
    {{"atomic", 1, "one atomic per update on its element: native atomicAdd/Min/Max/And/Or/Xor where the GPU has the op, a CAS loop where not",
      0},
     at_ATOMIC, fits_any},
    {{"cas", 2, "every op built from atomicCAS: read, combine, swap if unchanged (8- and 16-bit elements through their 32-bit word)",
      0},
     at_CAS, fits_any},
    {{"warp_aggregated", 3, "lanes naming the same element combine by shuffles (__match_any_sync), the lowest lane applies one atomic",
      0},
     at_WARP_AGGREGATED, warp_fits},
    {{"shared", 4, "a private copy of the output per block in shared memory, merged once: contention moves into the SM",
      0},
     at_SHARED, shared_fits},
    {{"exact", 5, "float add/subtract summed exactly in fixed-point integer accumulators, rounded once: deterministic, correctly rounded",
      CUA_F_DETERMINISTIC | CUA_F_EXACT},
     at_EXACT, exact_fits},
    {{"exact_private", 6, "exact's accumulators privatized in shared memory: per sign and lane copy, one shared atomic per update, where the output fits and the values lie within 63 bits; else a cache of hot elements, warp-combined first",
      CUA_F_DETERMINISTIC | CUA_F_EXACT},
     at_EXACT_PRIVATE, private_fits},
};
extern "C" const cua_ladder cua_cuda_at_ladder = CUA_LADDER(at_rows);
