// segmented.cu -- reductions along axes (sum, prod, min, max, reduce, mean
// with axis=): segmented reductions. The input is (outer, m, inner) in C
// order; output k = o * inner + i folds the m elements x[(o * m + j) *
// inner + i], j = 0 .. m-1, with one of reduce's ops, into 8 bytes of
// cua_reduce_kind (integers in 64 bits, floats in double).
//
//  1. atomic   the tutorial's rung applied per segment: one thread per
//              element, one atomic into its output's cell (atomicAdd for
//              add, atomicMin/Max for integer min/max, atomicAnd/Or/Xor;
//              multiply and float min/max from an atomicCAS loop). Float
//              sums come out in the order the atomics ran.
//  2. warp     one warp per output: its lanes walk the axis (lane j takes
//              elements j, j + 32, ...), then shuffles combine the lanes in
//              a fixed order. Deterministic; float add in compensated
//              double. Coalesced when the axis is contiguous (inner == 1);
//              a strided axis costs a 32-byte sector per element.
//  3. columns  one thread per output, threads side by side along the
//              output: a warp's 32 neighbouring outputs read 32
//              neighbouring elements of each row, coalesced when the axis
//              is strided (inner >= 32). Deterministic, compensated float
//              add; a long axis with few outputs leaves the GPU mostly
//              idle (the split over blocks is the next rung's).
//  4. tiled    a block takes a tile of BX neighbouring outputs and BY
//              threads along the axis for each (BX x BY = 256): BX = 32
//              along a strided axis (coalesced rows), 1 along a long
//              contiguous one (the block walks the row), 32 rows at a time
//              for short contiguous rows. When the tiles alone would leave
//              the GPU idle (few outputs, a long axis: 16 x 2^20, or 2^20 x
//              16 along axis 0), a second grid dimension cuts the axis into
//              chunks; each block folds its part in registers, its BY
//              threads combine in shared memory in a fixed order, and the
//              chunks' partials are folded in chunk order by a second
//              kernel. No atomics: deterministic, compensated float add.
//  5. vector   tiled at the speed of the memory system. What `tiled` still
//              costs: one 4-byte load per thread and iteration (one load in
//              flight), the op chosen by a switch per element, and a second
//              kernel whose single thread per output walks every chunk's
//              partial. Here the op and the element type are compiled in
//              (reduce's vector lanes, lanes.cuh: float min/max as integer
//              min/max on order-preserving keys, float add in compensated
//              double, a float product as a double-double), every load is
//              16 bytes with UNROLL of them issued before any is folded, and
//              a warp per output folds the chunks' partials. A contiguous
//              axis gives each row a group of G threads (a power of two up
//              to a warp, each with at least UNROLL vectors of the row;
//              shuffles within the group), or -- when the rows alone would
//              leave the GPU idle -- a block per (row, chunk). A strided
//              axis gives each thread V = 16 / sizeof(T) neighbouring
//              outputs (one 16-byte load covers them, when the row length
//              and the address allow it; else V scalar loads) and tiles of
//              bx such threads x 256 / bx along the axis, chunked as tiled.
//              The grid depends on the shape and the GPU only: the same
//              bits every call.
//
// Rungs 1-4 act on the kind at run time (one kernel per element type and
// rung: 40 kernels, not 280 with the op compiled in); rung 5 compiles the
// op in (two kernels per element type and op).
#include "common.cuh"
#include "lanes.cuh"
#include "ops.cuh"

namespace {

using namespace cua_ops;

// An element as its kind's 8 bytes: integers sign- or zero-extended,
// floats as double.
template <class T>
__device__ __forceinline__ u64 load_kind(const T *x, int64_t e)
{
    const T v = x[e];
    if constexpr (is_float<T>) return (u64)__double_as_longlong((double)v);
    else if constexpr (std::is_signed<T>::value) return (u64)(int64_t)v;
    else return (u64)v;
}

__device__ __forceinline__ double as_d(u64 b) { return __longlong_as_double((long long)b); }
__device__ __forceinline__ u64 as_b(double d) { return (u64)__double_as_longlong(d); }

// a op b on kind bits (kind: CUA_FLOAT64, CUA_INT64 or CUA_UINT64).
__device__ __forceinline__ u64 combine(int kind, int op, u64 a, u64 b)
{
    const bool f = kind == CUA_FLOAT64, s = kind == CUA_INT64;
    switch (op) {
    case ADD: return f ? as_b(as_d(a) + as_d(b)) : a + b;
    case MUL: return f ? as_b(as_d(a) * as_d(b)) : a * b;
    case MIN: return f ? as_b(float_pick(MIN, as_d(a), as_d(b))) : (s ? (int64_t)b < (int64_t)a : b < a) ? b : a;
    case MAX: return f ? as_b(float_pick(MAX, as_d(a), as_d(b))) : (s ? (int64_t)a < (int64_t)b : a < b) ? b : a;
    case AND: return a & b;
    case OR: return a | b;
    default: return a ^ b;
    }
}

__host__ __device__ __forceinline__ u64 identity(int kind, int op)
{
    const bool f = kind == CUA_FLOAT64, s = kind == CUA_INT64;
    switch (op) {
    case MUL: return f ? 0x3FF0000000000000ull : 1;
    case AND: return ~0ull;
    case MIN: return f ? 0x7FF0000000000000ull : s ? (u64)INT64_MAX : ~0ull;
    case MAX: return f ? 0xFFF0000000000000ull : s ? (u64)INT64_MIN : 0;
    default: return 0;
    }
}

// Compensated double addition (Knuth's two-sum): s + c carries the sum
// and the rounding errors of its additions.
struct Pair {
    double s = 0.0, c = 0.0;
    __device__ __forceinline__ void add(double v)
    {
        const double t = s + v, bp = t - s;
        c += (s - (t - bp)) + (v - bp);
        s = t;
    }
    __device__ __forceinline__ void add(Pair o)
    {
        add(o.s);
        c += o.c;
    }
    __device__ __forceinline__ double value() const { return s - s == 0 ? s + c : s; }
};

// ------------------------------------------------------------- finishing

// An output's kind value as NumPy's result, on the device: a mean's
// division by `divisor` (< 0: none; 0, an empty axis: NaN, as NumPy's),
// then the cast to the result's type (integers keep their low bits, as
// NumPy's casts; bool is value != 0). `initial` and an integer mean's
// wrapping sum are the host's (cuatomic/_axis.py).
template <class Out>
__device__ __forceinline__ void finish_one(u64 v, int kind, double divisor, bool to_bool, Out *dst)
{
    if (divisor >= 0.0 || std::is_floating_point<Out>::value) {
        double d = kind == CUA_FLOAT64 ? as_d(v) : kind == CUA_INT64 ? (double)(int64_t)v : (double)v;
        if (divisor >= 0.0) d /= divisor;
        *dst = to_bool ? (Out)(d != 0.0) : (Out)d;
    } else if (to_bool) {
        *dst = (Out)(kind == CUA_FLOAT64 ? as_d(v) != 0.0 : v != 0);
    } else {
        *dst = kind == CUA_FLOAT64 ? (Out)(int64_t)as_d(v) : (Out)v;
    }
}

// cua_seg_out's finishing half, passed to kernels by value.
struct Finish {
    void *result;
    int dtype, kind;
    double divisor;
};

// Output k's kind value finished into f.result[k], f.dtype chosen at run
// time (one switch per output, not per element).
__device__ __forceinline__ void finish_store(u64 v, const Finish &f, int64_t k)
{
#define SEG_FINISH_CASE_(id, name, ctype, ...) \
    case id: finish_one<ctype>(v, f.kind, f.divisor, id == CUA_BOOL, (ctype *)f.result + k); break;
    switch (f.dtype) {
        CUA_DTYPES(SEG_FINISH_CASE_)
    default: break;  // (the glue checks the dtype)
    }
#undef SEG_FINISH_CASE_
}

// Rungs 1-4 write kind values; asked for a finished result, they write
// them to scratch and this kernel finishes them, queued behind theirs.
__global__ void finish_kernel(const u64 *src, int64_t n, Finish f)
{
    for (int64_t k = cua_global_id(); k < n; k += cua_grid_stride()) finish_store(src[k], f, k);
}

// Run `launch` (a rung's typed launcher, given where its kind values go)
// for dest: straight into dest->values, or into scratch that the finishing
// kernel turns into dest->result.
template <class Launch>
static int into(const cua_seg_out *dest, int64_t outs, cua_launch *cfg, Launch launch)
{
    if (!dest->result) return launch((u64 *)dest->values);
    cudaStream_t s = cua_stream(cfg);
    cua_scratch values;
    values.queued = true;
    CUA_CHECK(values.get((size_t)(outs > 0 ? outs : 1) * 8, s));
    int st = launch((u64 *)values.ptr);
    if (st || outs == 0) return st;
    int sms;
    st = cua_sm_count(&sms);
    if (st) return st;
    const int64_t want = cua_ceil_div(outs, CUA_DEFAULT_THREADS), most = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    finish_kernel<<<(unsigned)(want < most ? want : most), CUA_DEFAULT_THREADS, 0, s>>>(
        (const u64 *)values.ptr, outs, Finish{dest->result, dest->result_dtype, dest->kind, dest->divisor});
    CUA_CHECK_LAUNCH();
    return 0;
}

// ------------------------------------------------------------ 1. atomic

__device__ void atomic_combine(int kind, int op, u64 *cell, u64 v)
{
    const bool f = kind == CUA_FLOAT64, s = kind == CUA_INT64;
    if (op == ADD) {
        if (f) atomicAdd(reinterpret_cast<double *>(cell), as_d(v));
        else atomicAdd(cell, v);
        return;
    }
    if (op == AND) { atomicAnd(cell, v); return; }
    if (op == OR) { atomicOr(cell, v); return; }
    if (op == XOR) { atomicXor(cell, v); return; }
    if (!f && (op == MIN || op == MAX)) {
        if (s) {
            long long *c = reinterpret_cast<long long *>(cell);
            op == MIN ? atomicMin(c, (long long)v) : atomicMax(c, (long long)v);
        } else {
            op == MIN ? atomicMin(cell, v) : atomicMax(cell, v);
        }
        return;
    }
    // multiply, float min/max: a CAS loop on the bits (never comparing
    // floats, so a NaN cannot make it spin); a value that would not change
    // the cell skips the swap.
    u64 old = *reinterpret_cast<volatile u64 *>(cell);
    while (true) {
        const u64 next = combine(kind, op, old, v);
        if (next == old) return;
        const u64 seen = atomicCAS(cell, old, next);
        if (seen == old) return;
        old = seen;
    }
}

__global__ void fill_kernel(u64 *out, int64_t n, u64 value)
{
    for (int64_t k = cua_global_id(); k < n; k += cua_grid_stride()) out[k] = value;
}

template <class T>
__global__ void seg_atomic_kernel(const T *__restrict__ x, int64_t m, int64_t inner, int64_t n, int kind, int op,
                                  u64 *cells)
{
    for (int64_t e = cua_global_id(); e < n; e += cua_grid_stride()) {
        const int64_t i = e % inner, o = e / inner / m;  // element e belongs to output o * inner + i
        atomic_combine(kind, op, &cells[o * inner + i], load_kind(x, e));
    }
}

// -------------------------------------------------------------- 2. warp

template <class T>
__global__ void seg_warp_kernel(const T *__restrict__ x, int64_t m, int64_t inner, int64_t outs, int kind, int op,
                                u64 *out)
{
    const unsigned lane = threadIdx.x & 31;
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    const bool fadd = kind == CUA_FLOAT64 && op == ADD;
    for (int64_t k = cua_global_id() >> 5; k < outs; k += warps) {
        const int64_t base = (k / inner) * m * inner + k % inner;
        if (fadd) {
            Pair p;
            for (int64_t j = lane; j < m; j += 32) p.add(as_d(load_kind(x, base + j * inner)));
            for (int o = 16; o; o >>= 1) {
                Pair q;
                q.s = __shfl_xor_sync(0xffffffffu, p.s, o);
                q.c = __shfl_xor_sync(0xffffffffu, p.c, o);
                // lanes combine as the lower lane's pair plus the higher's: one order for every run
                if (lane & o) { Pair t = q; t.add(p); p = t; } else { p.add(q); }
            }
            if (lane == 0) out[k] = as_b(p.value());
        } else {
            u64 acc = identity(kind, op);
            for (int64_t j = lane; j < m; j += 32) acc = combine(kind, op, acc, load_kind(x, base + j * inner));
            for (int o = 16; o; o >>= 1) {
                const u64 other = __shfl_xor_sync(0xffffffffu, acc, o);
                acc = (lane & o) ? combine(kind, op, other, acc) : combine(kind, op, acc, other);
            }
            if (lane == 0) out[k] = acc;
        }
    }
}

// ----------------------------------------------------------- 3. columns

template <class T>
__global__ void seg_columns_kernel(const T *__restrict__ x, int64_t m, int64_t inner, int64_t outs, int kind, int op,
                                   u64 *out)
{
    const bool fadd = kind == CUA_FLOAT64 && op == ADD;
    for (int64_t k = cua_global_id(); k < outs; k += cua_grid_stride()) {
        const int64_t base = (k / inner) * m * inner + k % inner;
        if (fadd) {
            Pair p;
            for (int64_t j = 0; j < m; j++) p.add(as_d(load_kind(x, base + j * inner)));
            out[k] = as_b(p.value());
        } else {
            u64 acc = identity(kind, op);
            for (int64_t j = 0; j < m; j++) acc = combine(kind, op, acc, load_kind(x, base + j * inner));
            out[k] = acc;
        }
    }
}

// ------------------------------------------------------------- 4. tiled

constexpr int TILE_THREADS = 256;

// A partial of one output: the kind's bits, or a compensated pair for a
// float add.
struct Partial {
    u64 v;
    double c;
};

template <class T>
__global__ __launch_bounds__(TILE_THREADS) void seg_tiled_kernel(const T *__restrict__ x, int64_t m, int64_t inner,
                                                                 int64_t outs, int kind, int op, int bx,
                                                                 int64_t rows, Partial *part)
{
    __shared__ Partial cache[TILE_THREADS];
    const int by = TILE_THREADS / bx, tx = threadIdx.x % bx, ty = threadIdx.x / bx;
    const int64_t k = (int64_t)blockIdx.x * bx + tx;
    const int64_t j0 = (int64_t)blockIdx.y * rows, j1 = j0 + rows < m ? j0 + rows : m;
    const bool fadd = kind == CUA_FLOAT64 && op == ADD;
    Pair p;
    u64 acc = identity(kind, op);
    if (k < outs) {
        const int64_t base = (k / inner) * m * inner + k % inner;
        if (fadd)
            for (int64_t j = j0 + ty; j < j1; j += by) p.add(as_d(load_kind(x, base + j * inner)));
        else
            for (int64_t j = j0 + ty; j < j1; j += by) acc = combine(kind, op, acc, load_kind(x, base + j * inner));
    }
    cache[threadIdx.x] = fadd ? Partial{as_b(p.s), p.c} : Partial{acc, 0.0};
    __syncthreads();
    // The by partials of each output (stride bx in cache) folded in a
    // fixed order: a tree over ty.
    for (int half = by / 2; half > 0; half >>= 1) {
        if (ty < half) {
            Partial a = cache[threadIdx.x], b = cache[threadIdx.x + half * bx];
            if (fadd) {
                Pair q;
                q.s = as_d(a.v);
                q.c = a.c;
                Pair r;
                r.s = as_d(b.v);
                r.c = b.c;
                q.add(r);
                a = Partial{as_b(q.s), q.c};
            } else {
                a.v = combine(kind, op, a.v, b.v);
            }
            cache[threadIdx.x] = a;
        }
        __syncthreads();
    }
    if (ty == 0 && k < outs) part[(int64_t)blockIdx.y * outs + k] = cache[tx];
}

// The chunks' partials of every output folded in chunk order into its
// kind's 8 bytes.
__global__ void seg_chunks_kernel(const Partial *part, int64_t chunks, int64_t outs, int kind, int op, u64 *out)
{
    const bool fadd = kind == CUA_FLOAT64 && op == ADD;
    for (int64_t k = cua_global_id(); k < outs; k += cua_grid_stride()) {
        if (fadd) {
            Pair p;
            for (int64_t c = 0; c < chunks; c++) {
                Pair q;
                q.s = as_d(part[c * outs + k].v);
                q.c = part[c * outs + k].c;
                p.add(q);
            }
            out[k] = as_b(p.value());
        } else {
            u64 acc = identity(kind, op);
            for (int64_t c = 0; c < chunks; c++) acc = combine(kind, op, acc, part[c * outs + k].v);
            out[k] = acc;
        }
    }
}

// ------------------------------------------------------------ launchers

// Every launcher returns once its kernels are queued on cua_stream(cfg),
// without waiting (as the histogram's): the glue waits once, after the
// finish kernel or with the copy of the outputs to the host. Scratch
// memory is freed in stream order (queued: its free does not settle the
// pool, which would wait here).
static int queued(cua_launch *cfg)
{
    (void)cfg;
    CUA_CHECK_LAUNCH();
    return 0;
}

template <class T>
static int seg_atomic(const T *x, int64_t outer, int64_t m, int64_t inner, int kind, int op, u64 *out,
                      cua_launch *cfg)
{
    const int64_t outs = outer * inner, n = outs * m;
    int st = cua_default_config(cfg, n > outs ? n : outs, CUA_DEFAULT_THREADS);
    if (st) return st;
    cudaStream_t s = cua_stream(cfg);
    if (outs > 0) fill_kernel<<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(out, outs, identity(kind, op));
    if (n > 0) seg_atomic_kernel<T><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(x, m, inner, n, kind, op, out);
    return queued(cfg);
}

template <class T>
static int seg_warp(const T *x, int64_t outer, int64_t m, int64_t inner, int kind, int op, u64 *out,
                    cua_launch *cfg)
{
    const int64_t outs = outer * inner;
    int st = cua_default_config(cfg, outs * 32, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (cfg->threads % 32) return cua_refuse(cfg, "method 'warp' runs whole warps: threads=%d is not a multiple of 32",
                                             cfg->threads);
    if (outs > 0)
        seg_warp_kernel<T><<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(x, m, inner, outs, kind, op,
                                                                                         out);
    return queued(cfg);
}

template <class T>
static int seg_columns(const T *x, int64_t outer, int64_t m, int64_t inner, int kind, int op, u64 *out,
                       cua_launch *cfg)
{
    const int64_t outs = outer * inner;
    int st = cua_default_config(cfg, outs, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (outs > 0)
        seg_columns_kernel<T><<<(unsigned)cfg->blocks, cfg->threads, 0, cua_stream(cfg)>>>(x, m, inner, outs, kind,
                                                                                            op, out);
    return queued(cfg);
}

// tiled's plan: outputs per block (bx) and threads along the axis (256 /
// bx), then chunks of the axis until the grid fills the GPU (at least
// 8 * by rows a chunk, so a chunk is worth its partial).
template <class T>
static int seg_tiled(const T *x, int64_t outer, int64_t m, int64_t inner, int kind, int op, u64 *out,
                     cua_launch *cfg)
{
    const int64_t outs = outer * inner;
    cudaStream_t s = cua_stream(cfg);
    if (cfg->threads > 0 && cfg->threads != TILE_THREADS)
        return cua_refuse(cfg, "method 'tiled' runs blocks of %d threads (got threads=%d)", TILE_THREADS,
                          cfg->threads);
    int bx = 32;
    if (inner > 1 && inner < 32) {
        bx = 1;
        while (bx < inner) bx *= 2;
    } else if (inner == 1 && m >= TILE_THREADS) {
        bx = 1;
    }
    const int by = TILE_THREADS / bx;
    const int64_t tiles = cua_ceil_div(outs > 0 ? outs : 1, bx);
    int sms;
    int st = cua_sm_count(&sms);
    if (st) return st;
    const int64_t want = cfg->blocks > 0 ? cfg->blocks : (int64_t)8 * sms;
    int64_t chunks = tiles >= want ? 1 : cua_ceil_div(want, tiles);
    const int64_t most = cua_ceil_div(m > 0 ? m : 1, (int64_t)8 * by);
    if (chunks > most) chunks = most;
    if (chunks > 65535) chunks = 65535;
    if (tiles > INT32_MAX) return cua_refuse(cfg, "method 'tiled': %lld outputs are too many tiles", (long long)outs);
    const int64_t rows = cua_ceil_div(m > 0 ? m : 1, chunks);
    cfg->threads = TILE_THREADS;
    cfg->used_threads = TILE_THREADS;
    cfg->used_blocks = tiles * chunks;
    if (outs == 0) return 0;
    cua_scratch scratch;
    scratch.queued = true;
    CUA_CHECK(scratch.get((size_t)chunks * outs * sizeof(Partial), s));
    Partial *part = (Partial *)scratch.ptr;
    seg_tiled_kernel<T><<<dim3((unsigned)tiles, (unsigned)chunks), TILE_THREADS, 0, s>>>(x, m, inner, outs, kind, op,
                                                                                       bx, rows, part);
    CUA_CHECK_LAUNCH();
    const int64_t fb = cua_ceil_div(outs, CUA_DEFAULT_THREADS), fmost = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    seg_chunks_kernel<<<(unsigned)(fb < fmost ? fb : fmost), CUA_DEFAULT_THREADS, 0, s>>>(part, chunks, outs, kind, op,
                                                                                        out);
    return queued(cfg);
}


// ------------------------------------------------------------ 5. vector

namespace ln = cua_lanes;

constexpr int VEC_THREADS = 256;

template <int OP, class T>
using VLane = ln::Lane<OP, T>;
template <int OP, class T>
using VCarry = typename ln::Lane<OP, T>::A;
template <int OP, class T>
using VKind = ln::kind_t<OP, T>;

// One output's (or one chunk's) fold: the value itself with one chunk,
// else the partial at part[k * chunks + chunk].
template <class L, class K>
__device__ __forceinline__ void vector_store(typename L::A a, int64_t k, unsigned chunk, unsigned chunks,
                                             typename L::A *part, K *out, const Finish &fin)
{
    if (chunks > 1) {
        part[k * chunks + chunk] = a;
    } else if (!fin.result) {
        L::finish(a, out + k);
    } else {  // finished in this store: no kind values, no second kernel
        K v;
        L::finish(a, &v);
        u64 bits;
        memcpy(&bits, &v, 8);
        finish_store(bits, fin, k);
    }
}

// V elements of T at p (V consecutive outputs of one row), by one 16-byte
// load when `packed`, else one load each from its own output's row start
// (row j of output k + v is at base(k + v) + j * inner).
template <class T, int V>
struct Pack {
    T e[V];
};

// Blocks of VEC_THREADS an SM must hold: 4 (at most 64 registers a thread:
// the occupancy that hides the loads' latency behind a float sum's double
// arithmetic, measured on an H100) for elements of 4 and 8 bytes, 2 for the
// narrow ones, whose 8 or 16 outputs a thread would spill at 64.
template <int OP, class T>
constexpr int vector_min_blocks()
{
    return sizeof(T) >= 4 ? 4 : 2;
}

template <int OP, class T>
__global__ __launch_bounds__(VEC_THREADS, vector_min_blocks<OP, T>()) void seg_vector_kernel(const T *__restrict__ x, int64_t rows_or_outs,
                                                                 int64_t m, int64_t inner, int group, bool packed,
                                                                 int64_t span, VCarry<OP, T> *part,
                                                                 VKind<OP, T> *out, Finish fin)
{
    using L = VLane<OP, T>;
    using A = typename L::A;
    constexpr int V = 16 / sizeof(T);
    const unsigned chunk = blockIdx.y, chunks = gridDim.y;
    const int64_t j0 = (int64_t)chunk * span, j1 = j0 + span < m ? j0 + span : m;
    if (inner == 1) {
        // A contiguous axis: rows_or_outs rows of m elements, `group`
        // threads a row (group == VEC_THREADS: the block takes one row, its
        // chunk blockIdx.y of span elements).
        const int64_t rows = rows_or_outs;
        if (group == VEC_THREADS) {
            const int64_t r = blockIdx.x;
            A a = ln::block_fold<L>(ln::fold_span<L>(x + r * m + j0, j1 - j0, threadIdx.x, VEC_THREADS));
            if (threadIdx.x == 0) vector_store<L>(a, r, chunk, chunks, part, out, fin);
            return;
        }
        const int lane = threadIdx.x & 31, per_warp = 32 / group, g = lane / group, t = lane % group;
        const int64_t warps = cua_grid_stride() >> 5;
        // r0 is the same for the whole warp: every lane reaches the shuffles
        for (int64_t r0 = (cua_global_id() >> 5) * per_warp; r0 < rows; r0 += warps * per_warp) {
            const int64_t r = r0 + g;
            A a = r < rows ? ln::fold_span<L>(x + r * m, m, t, group) : L::start();
            for (int off = group / 2; off > 0; off >>= 1) a = L::merge(a, L::shfl_down(a, off, group));
            if (t == 0 && r < rows) vector_store<L>(a, r, 0, 1, part, out, fin);
        }
        return;
    }
    // A strided axis: thread (tx, ty) of a bx x by tile folds outputs
    // kv * V .. kv * V + V - 1 over rows j0 + ty, j0 + ty + by, ... < j1.
    const int64_t outs = rows_or_outs, nvec = cua_ceil_div(outs, (int64_t)V);
    const int bx = group, by = VEC_THREADS / bx, tx = threadIdx.x % bx, ty = threadIdx.x / bx;
    const int64_t kv = (int64_t)blockIdx.x * bx + tx, k0 = kv * V;
    A a[V];
#pragma unroll
    for (int v = 0; v < V; v++) a[v] = L::start();
    if (kv < nvec) {
        int64_t base[V];
#pragma unroll
        for (int v = 0; v < V; v++) {
            const int64_t k = k0 + v < outs ? k0 + v : outs - 1;  // (a last, partial vector repeats an output: unstored)
            base[v] = (k / inner) * m * inner + k % inner;
        }
        auto load = [&](int64_t j) {
            Pack<T, V> w;
            if (packed) {
                const uint4 u = __ldg(reinterpret_cast<const uint4 *>(x + base[0] + j * inner));
                memcpy(w.e, &u, 16);
            } else {
#pragma unroll
                for (int v = 0; v < V; v++) w.e[v] = __ldg(x + base[v] + j * inner);
            }
            return w;
        };
        int64_t j = j0 + ty;
        for (; j + (ln::UNROLL - 1) * by < j1; j += ln::UNROLL * by) {
            Pack<T, V> w[ln::UNROLL];
#pragma unroll
            for (int u = 0; u < ln::UNROLL; u++) w[u] = load(j + u * by);
#pragma unroll
            for (int v = 0; v < V; v++) {
                T e[ln::UNROLL];
#pragma unroll
                for (int u = 0; u < ln::UNROLL; u++) e[u] = w[u].e[v];
                a[v] = ln::take_rows<L>(a[v], e);
            }
        }
        for (; j < j1; j += by) {
            const Pack<T, V> w = load(j);
#pragma unroll
            for (int v = 0; v < V; v++) a[v] = L::take(a[v], w.e[v]);
        }
    }
    if (by > 1) {  // uniform per block: the by carries of each output folded over ty in a fixed tree
        __shared__ A cache[V][VEC_THREADS];
#pragma unroll
        for (int v = 0; v < V; v++) cache[v][threadIdx.x] = a[v];
        __syncthreads();
        for (int half = by / 2; half > 0; half >>= 1) {
            if (ty < half)
#pragma unroll
                for (int v = 0; v < V; v++)
                    cache[v][threadIdx.x] = L::merge(cache[v][threadIdx.x], cache[v][threadIdx.x + half * bx]);
            __syncthreads();
        }
#pragma unroll
        for (int v = 0; v < V; v++) a[v] = cache[v][threadIdx.x];
    }
    if (ty == 0 && kv < nvec)
#pragma unroll
        for (int v = 0; v < V; v++)
            if (k0 + v < outs) vector_store<L>(a[v], k0 + v, chunk, chunks, part, out, fin);
}

// The chunks' partials of each output folded in a fixed order: a warp per
// output, lane l folds chunks l, l + 32, ..., then the lanes' carries by
// shuffles (where tiled's second kernel walks them with one thread). A
// lane's partials are read CHUNK_BATCH at a time before any is folded, so
// that their loads are in flight together (the same order, the same bits).
// Not measured to help: Nsight Compute, which empties the caches before a
// kernel, timed this one at 10-11 us for the 16 outputs of 2^20 x 16 along
// axis 0 (528 chunks each, an H100) before and after.
constexpr int CHUNK_BATCH = 8;

template <int OP, class T>
__global__ void seg_vector_chunks_kernel(const VCarry<OP, T> *part, int64_t outs, int64_t chunks, VKind<OP, T> *out,
                                         Finish fin)
{
    using L = VLane<OP, T>;
    const int lane = threadIdx.x & 31;
    // k is the same for the whole warp: every lane reaches the shuffles
    for (int64_t k = cua_global_id() >> 5; k < outs; k += cua_grid_stride() >> 5) {
        typename L::A a = L::start();
        for (int64_t c0 = lane; c0 < chunks; c0 += 32 * CHUNK_BATCH) {
            typename L::A p[CHUNK_BATCH];
#pragma unroll
            for (int b = 0; b < CHUNK_BATCH; b++)
                if (c0 + 32 * b < chunks) p[b] = L::reload(part + k * chunks + c0 + 32 * b);
#pragma unroll
            for (int b = 0; b < CHUNK_BATCH; b++)
                if (c0 + 32 * b < chunks) a = L::merge(a, p[b]);
        }
        for (int off = 16; off > 0; off >>= 1) a = L::merge(a, L::shfl_down(a, off));
        if (lane == 0) vector_store<L>(a, k, 0, 1, nullptr, out, fin);
    }
}

// vector's plan. Contiguous axis: the group is the smallest power of two
// (up to a warp) giving each thread at most UNROLL vectors of its row; if
// the rows' groups would not fill the resident grid and the rows are long
// (UNROLL vectors for each of a block's threads), a block per row and
// chunks of the row up to the resident grid. Strided axis: bx = the
// smallest power of two covering a row's vectors of outputs (at most 256),
// then chunks of the axis as tiled (at least UNROLL rows a thread).
template <int OP, class T>
static int seg_vector(const T *x, int64_t outer, int64_t m, int64_t inner, int kind, const cua_seg_out *dest,
                      cua_launch *cfg)
{
    using A = VCarry<OP, T>;
    using K = VKind<OP, T>;
    static_assert(sizeof(K) == 8, "a kind is 8 bytes");
    constexpr int V = 16 / sizeof(T);
    K *out = reinterpret_cast<K *>(dest->values);
    const Finish fin{dest->result, dest->result_dtype, dest->kind, dest->divisor};
    const int64_t outs = outer * inner;
    cudaStream_t s = cua_stream(cfg);
    if (cfg->threads > 0 && cfg->threads != VEC_THREADS)
        return cua_refuse(cfg, "method 'vector' runs blocks of %d threads (got threads=%d)", VEC_THREADS,
                          cfg->threads);
    auto kernel = seg_vector_kernel<OP, T>;
    int64_t want = cfg->blocks;
    if (want <= 0) {
        int st = cua_max_resident_blocks(kernel, VEC_THREADS, 0, &want);
        if (st) return st;
    }
    cfg->threads = cfg->used_threads = VEC_THREADS;
    cfg->used_blocks = 0;
    if (outs == 0) return 0;
    if (m == 0) {  // every output is the op's identity
        cfg->used_blocks = 1;
        return into(dest, outs, cfg, [&](u64 *values) {
            fill_kernel<<<1, VEC_THREADS, 0, s>>>(values, outs, identity(kind, OP));
            return queued(cfg);
        });
    }
    int group;
    int64_t blocks, chunks = 1, span = m;
    bool packed = false;
    if (inner == 1) {
        const int64_t nv = cua_ceil_div(m, (int64_t)V);  // a row's 16-byte vectors
        group = 1;
        while (group < 32 && (int64_t)group * ln::UNROLL < nv) group *= 2;
        const int64_t threads = outer * group;
        if (threads < want * VEC_THREADS && nv >= (int64_t)ln::UNROLL * VEC_THREADS && outer <= 65535) {
            group = VEC_THREADS;
            chunks = cua_ceil_div(want, outer);
            const int64_t most = cua_ceil_div(nv, (int64_t)ln::UNROLL * VEC_THREADS);
            chunks = chunks < most ? chunks : most;
            span = cua_ceil_div(cua_ceil_div(m, chunks), (int64_t)V) * V;  // chunks start on a vector of the row
            chunks = cua_ceil_div(m, span);
            blocks = outer;
        } else {
            const int64_t need = cua_ceil_div(threads, (int64_t)VEC_THREADS);
            blocks = need < want ? need : want;
        }
        if (chunks > 65535) return cua_refuse(cfg, "method 'vector': too many chunks");
    } else {
        packed = inner % V == 0 && (uintptr_t)x % 16 == 0;
        const int64_t row_vecs = cua_ceil_div(inner, (int64_t)V);
        group = 1;
        while (group < VEC_THREADS && group < row_vecs) group *= 2;
        const int by = VEC_THREADS / group;
        blocks = cua_ceil_div(cua_ceil_div(outs, (int64_t)V), (int64_t)group);
        if (blocks > INT32_MAX)
            return cua_refuse(cfg, "method 'vector': %lld outputs are too many tiles", (long long)outs);
        if (2 * blocks <= want) {  // (a grid within a factor of two of the resident one is left whole)
            chunks = cua_ceil_div(want, blocks);
            // a chunk of at least UNROLL rows a thread and 32 in all, so that its partials stay a small
            // fraction of the bytes it reads
            const int64_t least = (int64_t)ln::UNROLL * by > 32 ? (int64_t)ln::UNROLL * by : 32;
            const int64_t most = cua_ceil_div(m, least);
            chunks = chunks < most ? chunks : most;
            if (chunks > 65535) chunks = 65535;
            span = cua_ceil_div(m, chunks);
            chunks = cua_ceil_div(m, span);
        }
    }
    cfg->used_blocks = blocks * chunks;
    cua_scratch scratch;
    scratch.queued = true;
    A *part = nullptr;
    if (chunks > 1) {
        CUA_CHECK(scratch.get((size_t)chunks * outs * sizeof(A), s));
        part = (A *)scratch.ptr;
    }
    kernel<<<dim3((unsigned)blocks, (unsigned)chunks), VEC_THREADS, 0, s>>>(x, inner == 1 ? outer : outs, m, inner,
                                                                           group, packed, span, part, out, fin);
    if (chunks > 1) {
        CUA_CHECK_LAUNCH();
        const int64_t fb = cua_ceil_div(outs * 32, (int64_t)VEC_THREADS);
        seg_vector_chunks_kernel<OP, T><<<(unsigned)(fb < want ? fb : want), VEC_THREADS, 0, s>>>(part, outs, chunks,
                                                                                                   out, fin);
    }
    return queued(cfg);
}

}  // namespace

// ----------------------------------------------------------- variant table

#define SEG_ENTRY(RUNG, launcher)                                                                          \
    static int seg_##RUNG(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,          \
                          const cua_seg_out *dest, cua_launch *cfg)                                        \
    {                                                                                                      \
        const int kind = cua_reduce_kind(dtype, op);                                                       \
        if (kind < 0 || outer < 0 || m < 0 || inner < 0) return CUA_EINTERNAL;                            \
        return cua_dispatch(dtype, [&](auto t) -> int {                                                    \
            using T = decltype(t);                                                                         \
            return into(dest, outer * inner, cfg, [&](u64 *values) {                                       \
                return launcher<T>((const T *)x, outer, m, inner, kind, op, values, cfg);                  \
            });                                                                                            \
        });                                                                                                \
    }
SEG_ENTRY(ATOMIC, seg_atomic)
SEG_ENTRY(WARP, seg_warp)
SEG_ENTRY(COLUMNS, seg_columns)
SEG_ENTRY(TILED, seg_tiled)

// vector compiles the op in: the element type, then the op as a constant
// (bitwise ops on floats reach no kernel: NumPy has no such loop, and
// cua_reduce_kind refuses them above).
static int seg_VECTOR(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                      const cua_seg_out *dest, cua_launch *cfg)
{
    const int kind = cua_reduce_kind(dtype, op);
    if (kind < 0 || outer < 0 || m < 0 || inner < 0) return CUA_EINTERNAL;
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        auto run = [&](auto o) -> int {
            constexpr int OP = decltype(o)::value;
            if constexpr (is_float<T> && (OP == AND || OP == OR || OP == XOR)) return CUA_EINTERNAL;
            else return seg_vector<OP, T>((const T *)x, outer, m, inner, kind, dest, cfg);
        };
        switch (op) {
        case ADD: return run(std::integral_constant<int, ADD>());
        case MUL: return run(std::integral_constant<int, MUL>());
        case MIN: return run(std::integral_constant<int, MIN>());
        case MAX: return run(std::integral_constant<int, MAX>());
        case AND: return run(std::integral_constant<int, AND>());
        case OR: return run(std::integral_constant<int, OR>());
        case XOR: return run(std::integral_constant<int, XOR>());
        default: return CUA_EINTERNAL;
        }
    });
}

static const cua_segmented_row segmented_rows[] = {
    {{"atomic", 1, "one atomic per element into its output's cell: the tutorial's atomicAdd, per segment", 0},
     seg_ATOMIC},
    {{"warp", 2, "a warp per output, lanes along the axis, shuffles in a fixed order; compensated float add",
      CUA_F_DETERMINISTIC},
     seg_WARP},
    {{"columns", 3, "a thread per output, threads side by side along the outputs: coalesced on a strided axis",
      CUA_F_DETERMINISTIC},
     seg_COLUMNS},
    {{"tiled", 4, "a tile of outputs x 256/tile threads along the axis, the axis cut in chunks when outputs are few; "
      "partials folded in chunk order", CUA_F_DETERMINISTIC},
     seg_TILED},
    {{"vector", 5, "tiled at the memory system's speed: the op compiled in, 16-byte loads with several in flight, "
      "a row per thread group or (long rows) per block chunk; chunks folded by a warp per output",
      CUA_F_DETERMINISTIC},
     seg_VECTOR},
};
extern "C" const cua_ladder cua_cuda_segmented_ladder = CUA_LADDER(segmented_rows);

