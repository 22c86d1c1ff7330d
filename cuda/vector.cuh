// vector.cuh -- the `vector` rung shared by sum and dot: the reduction at
// the speed of the memory system.
//
// What it changes against `last_block`, and why:
//  - Each thread reads 16 bytes per load and issues UNROLL loads (per
//    input) before it adds any of them: the bytes in flight per SM, not the
//    thread count, decide how close a streaming kernel gets to the bandwidth.
//  - The grid is the resident grid (blocks per SM by occupancy x SMs), so
//    every block streams from start to end without waiting for a slot.
//  - Warps reduce with register shuffles; shared memory holds one value
//    per warp.
//  - The last block to take a ticket adds the block partials in block
//    order. The grid depends only on n and the device, so float results are
//    bit-identical from run to run.
//  - Floats are summed as accurately as NumPy's pairwise sum or better
//    (CUA_F_WIDE): the caller passes a double accumulator for float32 and
//    float64, and every thread sums in double with compensation -- it
//    carries the exact rounding errors of its additions (TwoSum) and, for a
//    float64 dot, of its products (an FMA; products of two floats are exact
//    in double), and the partials are combined the same way. The result is
//    rounded once. The extra arithmetic is a few FP64 instructions per
//    element: hidden behind the loads on a chip with full-rate FP64 (H100,
//    H200).
//  - Inputs of at most ONE_BLOCK_MAX_BYTES run as one block that writes the
//    result itself -- into the caller's page-locked slot when there is one
//    (cua_launch.result.device): one launch, no memset, no copy, and the
//    wait ends on the flag the kernel raises after the result.
// Constraints: any pointer alignment (a scalar head and tail around the
// 16-byte-aligned body; dot vectorizes only when both inputs share their
// offset within 16 bytes, and runs scalar otherwise); any block size (a
// block that is not whole warps reduces in the shared-memory tree).
#pragma once

#include <type_traits>

#include "common.cuh"

namespace vec {

constexpr int UNROLL = 4;
// The largest input (both inputs' bytes, for dot) that runs as one block
// by default. Its own number: it is not the size of a call slot
// (CUA_SLOT_BYTES), though a host input that fits in a slot fits here too.
constexpr int64_t ONE_BLOCK_MAX_BYTES = 64 * 1024;

// A float64 value and the summed rounding errors of the additions that made
// it (the value is s + c). Explicit _rn intrinsics: the compiler may not
// fuse or reorder them, which would break the error terms.
struct Comp {
    double s, c;
};

__device__ __forceinline__ Comp comp_add(Comp a, double x)
{
    const double t = __dadd_rn(a.s, x), z = __dsub_rn(t, a.s);
    a.c = __dadd_rn(a.c, __dadd_rn(__dsub_rn(a.s, __dsub_rn(t, z)), __dsub_rn(x, z)));
    a.s = t;
    return a;
}
__device__ __forceinline__ Comp comp_add(Comp a, Comp b)
{
    a = comp_add(a, b.s);
    a.c = __dadd_rn(a.c, b.c);
    return a;
}

// How a thread accumulates: in Acc, except float data in a double
// accumulator, which is compensated.
template <class T, class Acc>
struct Lane {
    using type = Acc;
};
template <>
struct Lane<double, double> {
    using type = Comp;
};
template <>
struct Lane<float, double> {
    using type = Comp;
};

__device__ __forceinline__ void zero(Comp &v) { v = Comp{0.0, 0.0}; }
template <class A>
__device__ __forceinline__ void zero(A &v) { v = A(0); }

template <class A, class X>
__device__ __forceinline__ A plus(A v, X x) { return v + (A)x; }
__device__ __forceinline__ Comp plus(Comp v, double x) { return comp_add(v, x); }
__device__ __forceinline__ Comp plus(Comp v, float x) { return comp_add(v, (double)x); }
__device__ __forceinline__ Comp plus(Comp v, Comp x) { return comp_add(v, x); }

// One term of a dot product: x*y, and for a compensated lane the product's
// rounding error too (exact, from an FMA).
template <class A, class T>
__device__ __forceinline__ A plus_product(A v, T x, T y) { return v + (A)x * (A)y; }
__device__ __forceinline__ Comp plus_product(Comp v, double x, double y)
{
    const double p = __dmul_rn(x, y);
    v.c = __dadd_rn(v.c, __fma_rn(x, y, -p));
    return comp_add(v, p);
}
// Two floats multiply exactly in double: no product error to keep.
__device__ __forceinline__ Comp plus_product(Comp v, float x, float y)
{
    return comp_add(v, __dmul_rn((double)x, (double)y));
}

// The final value, rounded once. Once s is infinite or NaN the error terms
// are NaN (inf - inf) and mean nothing: s alone is the answer, as in NumPy.
template <class A>
__device__ __forceinline__ A value(A v) { return v; }
__device__ __forceinline__ double value(Comp v) { return isfinite(v.s) ? __dadd_rn(v.s, v.c) : v.s; }

// float64 data summed as float32 (sum(x, dtype=float32) of a device
// array): NumPy rounds every element to float32 first, and so does this
// lane; then it sums compensated in double like the others.
struct Narrow : Comp {
};
template <>
struct Lane<double, float> {
    using type = Narrow;
};
__device__ __forceinline__ Narrow narrow(Comp c)
{
    Narrow r;
    r.s = c.s;
    r.c = c.c;
    return r;
}
__device__ __forceinline__ void zero(Narrow &v) { v.s = v.c = 0.0; }
__device__ __forceinline__ Narrow plus(Narrow v, double x) { return narrow(comp_add(v, (double)(float)x)); }
__device__ __forceinline__ Narrow plus(Narrow v, Narrow w) { return narrow(comp_add((Comp)v, (Comp)w)); }
__device__ __forceinline__ Narrow plus_product(Narrow v, double x, double y)
{
    return narrow(comp_add(v, __dmul_rn((double)(float)x, (double)(float)y)));  // exact in double
}
__device__ __forceinline__ double value(Narrow v) { return value((Comp)v); }

__device__ __forceinline__ Comp shfl_down(Comp v, int offset)
{
    return Comp{__shfl_down_sync(0xffffffffu, v.s, offset), __shfl_down_sync(0xffffffffu, v.c, offset)};
}
__device__ __forceinline__ Narrow shfl_down(Narrow v, int offset) { return narrow(shfl_down((Comp)v, offset)); }
template <class A>
__device__ __forceinline__ A shfl_down(A v, int offset) { return __shfl_down_sync(0xffffffffu, v, offset); }

template <class A>
__device__ __forceinline__ A warp_sum(A v)
{
    for (int offset = 16; offset > 0; offset >>= 1) v = plus(v, shfl_down(v, offset));
    return v;
}

// The block's total, valid in thread 0; the same order every time. A block
// that is not whole warps reduces in a shared-memory tree.
template <class A>
__device__ A block_sum(A v)
{
    if (blockDim.x % 32 != 0) {  // uniform per block
        A *cache = reinterpret_cast<A *>(cua_smem);
        cache[threadIdx.x] = v;
        __syncthreads();
        unsigned s = 1;
        while (s * 2 < blockDim.x) s *= 2;
        for (; s > 0; s >>= 1) {
            if (threadIdx.x < s && threadIdx.x + s < blockDim.x) cache[threadIdx.x] = plus(cache[threadIdx.x], cache[threadIdx.x + s]);
            __syncthreads();
        }
        A total = cache[0];
        __syncthreads();
        return total;
    }
    __shared__ A warp_sums[32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        A w;
        zero(w);
        v = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : w);
    }
    __syncthreads();  // warp_sums may be refilled by the caller's next call
    return v;
}

// Add the lanes of one 16-byte vector of x (times the same lanes of y).
template <class T, class A, bool DOT>
__device__ __forceinline__ A add_lanes(A v, uint4 xs, uint4 ys)
{
    constexpr int V = 16 / sizeof(T);
    T a[V], b[V];
    memcpy(a, &xs, 16);
    memcpy(b, &ys, 16);
#pragma unroll
    for (int k = 0; k < V; k++) v = DOT ? plus_product(v, a[k], b[k]) : plus(v, a[k]);
    return v;
}

// This thread's grid-stride share of sum(x) or sum(x*y), 16 bytes a load.
template <class T, class A, bool DOT>
__device__ A thread_share(const T *__restrict__ x, const T *__restrict__ y, int64_t n)
{
    constexpr int V = 16 / sizeof(T);
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();
    const uintptr_t offset = (uintptr_t)x & 15;
    const bool wide = offset % sizeof(T) == 0 && (!DOT || ((uintptr_t)y & 15) == offset);
    int64_t head = wide ? (int64_t)(((16 - offset) & 15) / sizeof(T)) : n;
    head = head < n ? head : n;
    const int64_t nvec = (n - head) / V, tail = head + nvec * V;

    A v;
    zero(v);
    for (int64_t i = gid; i < head; i += stride) v = DOT ? plus_product(v, x[i], y[i]) : plus(v, x[i]);
    for (int64_t i = tail + gid; i < n; i += stride) v = DOT ? plus_product(v, x[i], y[i]) : plus(v, x[i]);

    const uint4 *xv = reinterpret_cast<const uint4 *>(x + head);
    const uint4 *yv = DOT ? reinterpret_cast<const uint4 *>(y + head) : nullptr;
    int64_t i = gid;
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        uint4 a[UNROLL], b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {  // all loads first: UNROLL (x2) in flight
            a[u] = __ldg(xv + i + u * stride);
            b[u] = DOT ? __ldg(yv + i + u * stride) : a[u];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) v = add_lanes<T, A, DOT>(v, a[u], b[u]);
    }
    for (; i < nvec; i += stride) v = add_lanes<T, A, DOT>(v, __ldg(xv + i), DOT ? __ldg(yv + i) : uint4());
    return v;
}

template <class A>
__device__ __forceinline__ A load_volatile(const volatile A *p) { return *p; }
__device__ __forceinline__ Comp load_volatile(const volatile Comp *p) { return Comp{p->s, p->c}; }
__device__ __forceinline__ Narrow load_volatile(const volatile Narrow *p) { return narrow(Comp{p->s, p->c}); }

// The result, rounded once -- or, asked for the pair (cua_launch.result.pair) of a
// compensated double lane, the value and its error term, unrounded.
template <class Acc, class A>
__device__ __forceinline__ void store(Acc *out, A v, bool) { *out = value(v); }
__device__ __forceinline__ void store(double *out, Comp v, bool pair)
{
    if (pair) {
        out[0] = v.s;
        out[1] = v.c;
    } else {
        *out = value(v);
    }
}

// partials/ticket are unused (may be null) for a one-block grid. The ticket
// is zero at launch (the launcher clears it). `flag` (may be null) is raised
// once the result is in `out`, the caller's mapped memory.
template <class T, class Acc, bool DOT, class A = typename Lane<T, Acc>::type>
__global__ void reduce_kernel(const T *__restrict__ x, const T *__restrict__ y, int64_t n, A *partials,
                              unsigned *ticket, Acc *out, bool pair, unsigned *flag)
{
    __shared__ bool last;
    A v = block_sum(thread_share<T, A, DOT>(x, y, n));
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) {
            store(out, v, pair);
            cua_raise_flag(flag);
        }
        return;
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        // The partial must be visible device-wide before the ticket says it
        // is there: the last block reads it right after its own ticket.
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the reads of the partials come after the ticket
    // Volatile: the partials were written by other blocks; read them from
    // L2, not from a stale L1 line.
    const volatile A *p = partials;
    A s;
    zero(s);
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) s = plus(s, load_volatile(p + b));
    s = block_sum(s);
    if (threadIdx.x == 0) {
        store(out, s, pair);
        cua_raise_flag(flag);
    }
}

// The launcher of both rungs: y is null for sum. Not static: reduce's
// vector add is sum's vector rung, and calls the instances sum.cu makes
// (VEC_SUM_PAIRS below) rather than compiling the same kernels again.
template <class T, class Acc, bool DOT>
int launch(const T *x, const T *y, int64_t n, Acc *result, cua_launch *cfg)
{
    using A = typename Lane<T, Acc>::type;
    cudaStream_t s = cua_stream(cfg);
    auto kernel = reduce_kernel<T, Acc, DOT>;
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int threads = cfg->threads;
    const size_t smem = threads % 32 ? (size_t)threads * sizeof(A) : 0;
    if (cfg->blocks <= 0) {
        const int64_t bytes = n * (int64_t)sizeof(T) * (DOT ? 2 : 1);
        cfg->blocks = 1;
        if (bytes > ONE_BLOCK_MAX_BYTES) {
            int64_t resident;
            int st = cua_max_resident_blocks(kernel, threads, smem, &resident);
            if (st) return st;
            const int64_t want = cua_ceil_div(n, (int64_t)threads * (16 / sizeof(T)));
            cfg->blocks = want < resident ? want : resident;
            if (cfg->blocks < 1) cfg->blocks = 1;
        }
    }
    cua_clamp_grid(cfg, cua_ceil_div(n, (int64_t)threads * (16 / sizeof(T))));
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = threads;
    if (n == 0) {
        *result = 0;
        return 0;
    }
    const unsigned blocks = (unsigned)cfg->blocks;
    const bool pair = cfg->result.pair && std::is_same<A, Comp>::value;  // 16 bytes back: never the slot
    Acc *out = pair ? nullptr : (Acc *)cfg->result.device;
    A *partials = nullptr;
    unsigned *ticket = nullptr;
    cua_scratch scratch;
    if (blocks > 1 || !out) {
        // Scratch: the ticket, the total (when there is no slot; 16 bytes
        // for a pair), the partials.
        CUA_CHECK(scratch.get(32 + (size_t)blocks * sizeof(A), s));
        ticket = (unsigned *)scratch.ptr;
        partials = (A *)((char *)scratch.ptr + 32);
        if (!out) out = (Acc *)((char *)scratch.ptr + 16);
        CUA_CHECK(cudaMemsetAsync(ticket, 0, sizeof(unsigned), s));
    }
    const bool in_slot = out == cfg->result.device;
    kernel<<<blocks, threads, smem, s>>>(x, y, n, partials, ticket, out, pair, in_slot ? cfg->result.flag : nullptr);
    CUA_CHECK_LAUNCH();
    if (!in_slot) {
        CUA_CHECK(cudaMemcpyAsync(result, out, pair ? 2 * sizeof(double) : sizeof(Acc), cudaMemcpyDeviceToHost, s));
        return cua_wait(cfg);
    }
    return cua_wait_result(cfg);
}

}  // namespace vec

// The (element, accumulator) pairs of sum's vector rung that reduce's
// vector add also runs (reduce.cu's kind_t of add: uint64 bits for
// integers, double for floats). sum.cu instantiates launch<T, Acc, false>
// for each (VEC_SUM_INSTANTIATE); reduce.cu declares them extern
// (VEC_SUM_EXTERN), so each of these kernels is compiled once, in sum.cu,
// not once more in reduce.cu (10 kernels per arch).
#define VEC_SUM_PAIRS(X)                                                                              \
    X(int8_t, u64) X(uint8_t, u64) X(int16_t, u64) X(uint16_t, u64) X(int32_t, u64) X(uint32_t, u64) \
    X(int64_t, u64) X(uint64_t, u64) X(float, double) X(double, double)
#define VEC_SUM_INSTANTIATE(T, Acc) template int vec::launch<T, Acc, false>(const T *, const T *, int64_t, Acc *, cua_launch *);
#define VEC_SUM_EXTERN(T, Acc) \
    extern template int vec::launch<T, Acc, false>(const T *, const T *, int64_t, Acc *, cua_launch *);
