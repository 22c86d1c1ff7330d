// argmin.cu -- the index of the smallest (argmin) or largest (argmax)
// element, as np.argmin/np.argmax of the flattened array: the first index
// on ties, the first NaN wins over every number.
//
// Every rung minimizes the same pair, (key, index), in lexicographic order.
// The key is an unsigned integer that orders the values as the op asks:
// integers with the sign bit flipped, floats as their IEEE bits made
// monotonic (negative values inverted, the sign bit set on the rest), -0.0
// taken as +0.0 (NumPy compares them equal), every NaN 0 (before every
// number); argmax inverts the non-NaN keys, so "largest first" is again a
// minimum. Integer order then gives the ties and the NaN rule exactly, with
// no float compare in any atomic.
//
//  1. cas         the cell holds the best index so far. Each element reads
//                 it, loads the element it names and compares their pairs;
//                 if its own pair comes first, atomicCAS swaps its index
//                 in, or retries against what another thread put there.
//                 Any type, any n. Most elements lose the compare and never
//                 write, but each pays two dependent loads.
//  2. packed      one 64-bit atomicMin per element on key << b | index,
//                 b = 64 - the key's bits: the packed-atomic lesson (CUTLASS
//                 and CCCL build float min/max from integer atomics the same
//                 way). One instruction does the compare and the swap, but
//                 every element queues on one address. Elements of at most 4
//                 bytes, n <= 2^b (2^32 for 4-byte elements); a 64-bit
//                 value leaves no bits for the index.
//  3. block_tree  each thread keeps its best pair in registers over its
//                 grid-stride share, the block's threads combine theirs in a
//                 shared-memory tree, and one CAS (rung 1's, on the index
//                 cell) per block: n atomics become `blocks`. Any type.
//  4. vector      the pass at the memory system's speed: 16-byte loads,
//                 UNROLL in flight per thread, keys compared in registers,
//                 warp shuffles, block partials and a last-block finish on
//                 the resident grid -- no atomic but the ticket.
//
// The result is the index as int64 on the host; n >= 1 (the glue refuses
// an empty array, as NumPy does).
#include <type_traits>

#include "common.cuh"
#include "vector.cuh"  // UNROLL and ONE_BLOCK_MAX_BYTES: sum's vector rung's, the same pass shape

namespace {

using vec::ONE_BLOCK_MAX_BYTES;
using vec::UNROLL;

// ------------------------------------------------------------------- keys

template <class T>
using key_t = std::conditional_t<sizeof(T) == 8, u64, unsigned>;

// The bits the key of a T uses: a value's width.
template <class T>
constexpr int key_bits = 8 * (int)sizeof(T);

// The flip argmax applies to a non-NaN key: every bit of T's width.
template <class T>
__host__ __device__ constexpr key_t<T> flip_of(bool max)
{
    return max ? (key_t<T>)(key_bits<T> == 64 ? ~u64(0) : ((u64(1) << key_bits<T>) - 1)) : 0;
}

// A bool element: its byte, any nonzero value of which is True, as NumPy
// reads it (cua_dispatch hands bool over as uint8_t, whose 2 and 255 would
// order above 1).
struct boolean {
    unsigned char byte;
};

// The key of v: smaller is "comes first" (see the file's head).
__device__ __forceinline__ unsigned key_of(boolean v, unsigned flip) { return unsigned(v.byte != 0) ^ flip; }

template <class T>
__device__ __forceinline__ key_t<T> key_of(T v, key_t<T> flip)
{
    using K = key_t<T>;
    if constexpr (std::is_floating_point<T>::value) {
        K b;
        memcpy(&b, &v, sizeof b);
        constexpr K sign = K(1) << (key_bits<T> - 1);
        const K mag = b & ~sign;
        constexpr K inf = std::is_same<T, float>::value ? K(0x7F800000u) : K(0x7FF0000000000000ull);
        if (mag > inf) return 0;  // NaN: before every number, for argmin and argmax alike
        if (mag == 0) b = 0;      // -0.0 == +0.0
        return ((b & sign) ? ~b : (b | sign)) ^ flip;
    } else {
        using U = std::make_unsigned_t<T>;
        constexpr U top = std::is_signed<T>::value ? U(U(1) << (key_bits<T> - 1)) : U(0);
        return (K)(U)((U)v ^ top) ^ flip;
    }
}

// A (key, index) pair: the order every rung minimizes.
template <class K>
struct Best {
    K key;
    int64_t index;
};

template <class K>
__device__ __forceinline__ long long answer(Best<K> b)
{
    return b.index == INT64_MAX ? 0 : b.index;
}

template <class K>
__device__ __forceinline__ bool before(Best<K> a, Best<K> b)
{
    return a.key < b.key || (a.key == b.key && a.index < b.index);
}

template <class K>
__device__ __forceinline__ Best<K> first_of(Best<K> a, Best<K> b)
{
    return before(b, a) ? b : a;
}

// No element yet: after every real pair (indices are < 2^63). A thread
// keeps a pair only for a key below its best, so one whose keys are all the
// largest (argmin of UINT64_MAX, argmax of 0 as uint64) keeps this; when
// every thread does, the answer is index 0 (answer()).
template <class K>
__device__ __forceinline__ Best<K> none()
{
    return Best<K>{K(~K(0)), INT64_MAX};
}

// ------------------------------------------------------------ rung 1: cas

// Offer (key, i) to the cell holding the best index so far (it starts at 0,
// a valid index). Read the cell, key the element it names, stop if that
// pair comes first; else swap our index in only if the cell still holds
// what was read, or retry with what another thread put there. Losers sleep
// before they retry, twice as long each time up to 1 us, as cua_cas_loop:
// T contenders would otherwise make T^2/2 attempts. The elements never
// change during the call, so a key read once stays true.
template <class T>
__device__ void cas_offer(const T *__restrict__ x, key_t<T> flip, unsigned long long *cell, key_t<T> key,
                          int64_t i)
{
    unsigned long long cur = *(volatile unsigned long long *)cell;
    unsigned backoff = 32;
    for (;;) {
        const Best<key_t<T>> held{key_of(x[cur], flip), (int64_t)cur};
        if (!before(Best<key_t<T>>{key, i}, held)) return;
        const unsigned long long seen = atomicCAS(cell, cur, (unsigned long long)i);
        if (seen == cur) return;
        cur = seen;
        __nanosleep(backoff);
        backoff = backoff < 1024 ? 2 * backoff : 1024;
    }
}

template <class T>
__global__ void arg_cas_kernel(const T *__restrict__ x, int64_t n, key_t<T> flip, unsigned long long *cell)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) cas_offer(x, flip, cell, key_of(x[i], flip), i);
}

// --------------------------------------------------------- rung 2: packed

// The bits left for the index below a T's key.
template <class T>
constexpr int index_bits = 64 - key_bits<T>;

template <class T>
__global__ void arg_packed_kernel(const T *__restrict__ x, int64_t n, key_t<T> flip, unsigned long long *cell)
{
    static_assert(index_bits<T> > 0, "a 64-bit element leaves no bits for the index: the launcher refuses it");
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride())
        atomicMin(cell, (unsigned long long)key_of(x[i], flip) << index_bits<T> | (unsigned long long)i);
}

// ----------------------------------------------------- rung 3: block_tree

// The block's best pair by the tutorial's shared-memory tree: every thread
// stores its pair, then half the threads keep the first of theirs and the
// other half's, halving until one remains. Any blockDim; valid in thread 0.
template <class K>
__device__ Best<K> block_tree(Best<K> v)
{
    Best<K> *cache = reinterpret_cast<Best<K> *>(cua_smem);
    const unsigned tid = threadIdx.x;
    cache[tid] = v;
    __syncthreads();
    unsigned s = 1;
    while (s * 2 < blockDim.x) s *= 2;
    for (; s > 0; s >>= 1) {
        if (tid < s && tid + s < blockDim.x) cache[tid] = first_of(cache[tid], cache[tid + s]);
        __syncthreads();
    }
    return cache[0];
}

template <class T>
__global__ void arg_block_tree_kernel(const T *__restrict__ x, int64_t n, key_t<T> flip, unsigned long long *cell)
{
    using K = key_t<T>;
    Best<K> b = none<K>();
    // A thread's indices rise: a strictly smaller key is the only way a
    // later element can come first.
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const K k = key_of(x[i], flip);
        if (k < b.key) b = Best<K>{k, i};
    }
    b = block_tree(b);
    if (threadIdx.x == 0 && b.index < n) cas_offer(x, flip, cell, b.key, b.index);
}

// --------------------------------------------------------- rung 4: vector

template <class K>
__device__ __forceinline__ Best<K> warp_first(Best<K> v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const Best<K> other{__shfl_down_sync(0xffffffffu, v.key, o), __shfl_down_sync(0xffffffffu, v.index, o)};
        v = first_of(v, other);
    }
    return v;
}

// The block's best pair: shuffles within warps, one pair per warp in shared
// memory, the first warp's shuffles over those. A block that is not whole
// warps takes the shared-memory tree. Valid in thread 0.
template <class K>
__device__ Best<K> block_first(Best<K> v)
{
    if (blockDim.x % 32) return block_tree(v);
    __shared__ Best<K> warps[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_first(v);
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_first(lane < blockDim.x / 32 ? warps[lane] : none<K>());
    __syncthreads();
    return v;
}

// Keep the first of this thread's pair and the 16 bytes at element `base`:
// the smallest of their keys first, and only when it beats the pair the
// lane that holds it (the first such lane). On most data the running best
// soon stops improving, so the common path is keys and minima only. Bytes
// are keyed four at a time (one XOR per word: the sign bits of signed bytes
// and argmax's flip) and minimized with __vminu4.
template <class T>
__device__ __forceinline__ void scan_vector(Best<key_t<T>> &b, uint4 bits, int64_t base, key_t<T> flip)
{
    using K = key_t<T>;
    constexpr int V = 16 / sizeof(T);
    if constexpr (sizeof(T) == 1) {
        const unsigned mask = (std::is_signed<T>::value ? 0x80808080u : 0u) ^ (flip ? 0xFFFFFFFFu : 0u);
        unsigned w[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if constexpr (std::is_same<T, boolean>::value) w[k] = __vcmpne4(w[k], 0u) & 0x01010101u;  // True is 1
            w[k] ^= mask;
        }
        const unsigned m4 = __vminu4(__vminu4(w[0], w[1]), __vminu4(w[2], w[3]));
        const unsigned m = min(min(m4 & 0xFFu, (m4 >> 8) & 0xFFu), min((m4 >> 16) & 0xFFu, m4 >> 24));
        if (m < b.key) {
#pragma unroll
            for (int k = 0; k < V; k++) {
                if (((w[k / 4] >> (8 * (k % 4))) & 0xFFu) == m) {
                    b = Best<K>{m, base + k};
                    break;
                }
            }
        }
    } else {
        T v[V];
        memcpy(v, &bits, 16);
        K key[V];
#pragma unroll
        for (int k = 0; k < V; k++) key[k] = key_of(v[k], flip);
        K m = key[0];
#pragma unroll
        for (int k = 1; k < V; k++) m = key[k] < m ? key[k] : m;
        if (m < b.key) {
#pragma unroll
            for (int k = 0; k < V; k++) {
                if (key[k] == m) {
                    b = Best<K>{m, base + k};
                    break;
                }
            }
        }
    }
}

// This thread's best pair over its grid-stride share, 16 bytes a load: a
// scalar head up to the first 16-byte boundary, the aligned body, a scalar
// tail. The three parts' indices rise in that order and within each, so a
// strictly smaller key is again the only way a later element comes first.
template <class T>
__device__ Best<key_t<T>> thread_best(const T *__restrict__ x, int64_t n, key_t<T> flip)
{
    using K = key_t<T>;
    constexpr int V = 16 / sizeof(T);
    const int64_t gid = cua_global_id(), stride = cua_grid_stride();
    const uintptr_t offset = (uintptr_t)x & 15;
    int64_t head = offset % sizeof(T) == 0 ? (int64_t)(((16 - offset) & 15) / sizeof(T)) : n;
    head = head < n ? head : n;
    const int64_t nvec = (n - head) / V, tail = head + nvec * V;

    Best<K> b = none<K>();
    for (int64_t i = gid; i < head; i += stride) {
        const K k = key_of(x[i], flip);
        if (k < b.key) b = Best<K>{k, i};
    }
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + head);
    int64_t i = gid;
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        uint4 a[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) a[u] = __ldg(xv + i + u * stride);  // all loads first
#pragma unroll
        for (int u = 0; u < UNROLL; u++) scan_vector<T>(b, a[u], head + (i + u * stride) * V, flip);
    }
    for (; i < nvec; i += stride) scan_vector<T>(b, __ldg(xv + i), head + i * V, flip);
    for (int64_t j = tail + gid; j < n; j += stride) {
        const K k = key_of(x[j], flip);
        if (k < b.key) b = Best<K>{k, j};
    }
    return b;
}

// Each block's best pair goes to partials[blockIdx.x]; the block that draws
// the last ticket takes the first of the partials. partials/ticket are
// unused (may be null) for a one-block grid; the ticket is zero at launch
// (the launcher clears it).
template <class T>
__global__ void arg_vector_kernel(const T *__restrict__ x, int64_t n, key_t<T> flip, Best<key_t<T>> *partials,
                                  unsigned *ticket, long long *out)
{
    using K = key_t<T>;
    __shared__ bool last;
    Best<K> b = block_first(thread_best(x, n, flip));
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) *out = answer(b);
        return;
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = b;
        // The partial must be visible device-wide before the ticket says it
        // is there: the last block reads it right after its own ticket.
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the reads of the partials come after the ticket
    Best<K> s = none<K>();
    for (unsigned k = threadIdx.x; k < gridDim.x; k += blockDim.x) {
        const volatile Best<K> *p = partials + k;
        s = first_of(s, Best<K>{p->key, p->index});
    }
    s = block_first(s);
    if (threadIdx.x == 0) *out = answer(s);
}

// -------------------------------------------------------------- launchers

// Rungs 1-3 work on one device cell that starts as `start`; the index is
// the cell's low `keep` bits.
template <class T>
static int into_cell(void (*kernel)(const T *, int64_t, key_t<T>, unsigned long long *), size_t smem, const T *x,
                     int64_t n, bool max, unsigned long long start, int keep, int64_t *index, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    cua_scratch cell;
    CUA_CHECK(cell.get(sizeof start, s));
    // From pageable memory: the start is staged before the call returns.
    CUA_CHECK(cudaMemcpyAsync(cell.ptr, &start, sizeof start, cudaMemcpyHostToDevice, s));
    kernel<<<(unsigned)cfg->blocks, cfg->threads, smem, s>>>(x, n, flip_of<T>(max), (unsigned long long *)cell.ptr);
    unsigned long long got;
    const int st = cua_finish_total(&got, (const unsigned long long *)cell.ptr, cfg);
    if (st) return st;
    *index = (int64_t)(keep == 64 ? got : got & ((1ull << keep) - 1));
    return 0;
}

template <class T>
static int arg_cas(const T *x, int64_t n, bool max, int64_t *index, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st : into_cell<T>(arg_cas_kernel<T>, 0, x, n, max, 0, 64, index, cfg);
}

// packed's limits (cua_packed_index_bits), for the row's fits and the
// launcher alike.
static int packed_limit(int64_t n, size_t elem_size, cua_launch *cfg)
{
    const int bits = cua_packed_index_bits(elem_size);
    if (bits == 0) return cua_refuse(cfg, CUA_PACKED_NO_INDEX_BITS, (int)elem_size);
    if (bits < 63 && n > (int64_t(1) << bits)) return cua_refuse(cfg, CUA_PACKED_TOO_MANY, bits, (long long)n, bits);
    return 0;
}

template <class T>
static int arg_packed(const T *x, int64_t n, bool max, int64_t *index, cua_launch *cfg)
{
    int st = packed_limit(n, sizeof(T), cfg);
    if (st) return st;
    if constexpr (index_bits<T> == 0) {
        return CUA_EINTERNAL;  // not reached: refused above (and no kernel is instantiated for it)
    } else {
        st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
        return st ? st : into_cell<T>(arg_packed_kernel<T>, 0, x, n, max, ~0ull, index_bits<T>, index, cfg);
    }
}

template <class T>
static int arg_block_tree(const T *x, int64_t n, bool max, int64_t *index, cua_launch *cfg)
{
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    return st ? st
              : into_cell<T>(arg_block_tree_kernel<T>, (size_t)cfg->threads * sizeof(Best<key_t<T>>), x, n, max, 0,
                             64, index, cfg);
}

// The one-block grid for small inputs, else the resident grid (never more
// blocks than there are 16-byte vectors per thread); scratch for the
// ticket, the result and the partials.
template <class T>
static int arg_vector(const T *x, int64_t n, bool max, int64_t *index, cua_launch *cfg)
{
    using B = Best<key_t<T>>;
    cudaStream_t s = cua_stream(cfg);
    auto kernel = arg_vector_kernel<T>;
    if (cfg->threads <= 0) cfg->threads = CUA_DEFAULT_THREADS;
    const int threads = cfg->threads;
    const size_t smem = threads % 32 ? (size_t)threads * sizeof(B) : 0;
    const int64_t want = cua_ceil_div(n, (int64_t)threads * (16 / sizeof(T)));
    if (cfg->blocks <= 0) {
        cfg->blocks = 1;
        if (n * (int64_t)sizeof(T) > ONE_BLOCK_MAX_BYTES) {
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
    const unsigned blocks = (unsigned)cfg->blocks;
    // The ticket, the result, the partials.
    cua_scratch scratch;
    CUA_CHECK(scratch.get(32 + (size_t)blocks * sizeof(B), s));
    unsigned *ticket = (unsigned *)scratch.ptr;
    long long *out = (long long *)((char *)scratch.ptr + 16);
    B *partials = (B *)((char *)scratch.ptr + 32);
    if (blocks > 1) CUA_CHECK(cudaMemsetAsync(ticket, 0, sizeof(unsigned), s));
    kernel<<<blocks, threads, smem, s>>>(x, n, flip_of<T>(max), partials, ticket, out);
    CUA_CHECK_LAUNCH();
    long long got;
    CUA_CHECK(cudaMemcpyAsync(&got, out, sizeof got, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    *index = got;
    return 0;
}

// ----------------------------------------------------------- variant table

// A row's launcher: the call's element type, then the rung's typed launcher.
#define ARG_ENTRY(RUNG, launcher)                                                                          \
    static int arg_##RUNG(const void *x, int64_t n, int dtype, int max, int64_t *index, cua_launch *cfg)   \
    {                                                                                                      \
        if (dtype == CUA_BOOL) return launcher<boolean>((const boolean *)x, n, max != 0, index, cfg);      \
        return cua_dispatch(dtype, [&](auto t) -> int {                                                    \
            using T = decltype(t);                                                                         \
            return launcher<T>((const T *)x, n, max != 0, index, cfg);                                     \
        });                                                                                                \
    }
ARG_ENTRY(CAS, arg_cas)
ARG_ENTRY(PACKED, arg_packed)
ARG_ENTRY(BLOCK_TREE, arg_block_tree)
ARG_ENTRY(VECTOR, arg_vector)

// packed's limits, for auto to pass it by.
static int packed_fits(int64_t n, int dtype, cua_launch *cfg)
{
    return packed_limit(n, cua_dtype_size(dtype), cfg);
}

}  // namespace

static const cua_arg_row argmin_rows[] = {
    {{"cas", 1, "the cell holds the best index: each element compares its value with the one it names and atomicCAS-es its index in",
      CUA_F_DETERMINISTIC},
     arg_CAS, nullptr},
    {{"packed", 2, "one 64-bit atomicMin per element on one word, the order-preserving key above the index: ties and NaN by integer order",
      CUA_F_DETERMINISTIC},
     arg_PACKED, packed_fits},
    {{"block_tree", 3, "best (key, index) per thread in registers, shared-memory tree per block, one CAS per block",
      CUA_F_DETERMINISTIC},
     arg_BLOCK_TREE, nullptr},
    {{"vector", 4, "16-byte loads, UNROLL in flight, warp shuffles, block partials, last-block finish: no atomic but the ticket",
      CUA_F_DETERMINISTIC},
     arg_VECTOR, nullptr},
};

extern "C" const cua_ladder cua_cuda_argmin_ladder = CUA_LADDER(argmin_rows);

// ------------------------------------------------------------ along an axis

// argmin/argmax along an axis (cuatomic/_argmin.py) is the segmented
// ladder's minimum over 8-byte words made of these keys: x is seen as
// (outer, m, inner) in C order and element e, at position j = e / inner %
// m of its output's axis, becomes
//   ARGKEYS_PACKED  key << 32 | j: the packed lesson per segment, for
//                   elements of at most 4 bytes and m <= 2^32 -- the least
//                   word holds the least key and, among equal keys, the
//                   first index;
//   ARGKEYS_KEY     the key alone (8-byte elements leave no bits for j), a
//                   first pass whose minimum is each output's least key;
//   ARGKEYS_MATCH   j where the key equals its output's least key (best[o *
//                   inner + i], the first pass's), else m: the second pass,
//                   whose minimum is the first index holding it.
namespace {

template <class T, class K>
__global__ void argkeys_kernel(const T *__restrict__ x, int64_t n, int64_t m, int64_t inner, K flip, int mode,
                               const u64 *__restrict__ best, u64 *__restrict__ out)
{
    for (int64_t e = cua_global_id(); e < n; e += cua_grid_stride()) {
        const u64 key = (u64)key_of(x[e], flip), j = (u64)(e / inner % m);
        if (mode == CUA_ARGKEYS_PACKED) out[e] = key << 32 | j;
        else if (mode == CUA_ARGKEYS_KEY) out[e] = key;
        else out[e] = key == best[e / (m * inner) * inner + e % inner] ? j : (u64)m;
    }
}

template <class T>
static int argkeys(const T *x, int64_t outer, int64_t m, int64_t inner, bool max, int mode, const u64 *best,
                   u64 *out, cudaStream_t s)
{
    const int64_t n = outer * m * inner;
    if (n == 0) return 0;
    int sms;
    int st = cua_sm_count(&sms);
    if (st) return st;
    const int64_t want = cua_ceil_div(n, CUA_DEFAULT_THREADS), most = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    argkeys_kernel<<<(unsigned)(want < most ? want : most), CUA_DEFAULT_THREADS, 0, s>>>(x, n, m, inner,
                                                                                      flip_of<T>(max), mode, best, out);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

}  // namespace

extern "C" int cua_cuda_argkeys(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int max, int mode,
                                const void *best, void *out, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (dtype == CUA_BOOL)
        return argkeys((const boolean *)x, outer, m, inner, max != 0, mode, (const u64 *)best, (u64 *)out, s);
    return cua_dispatch(dtype, [&](auto t) -> int {
        using T = decltype(t);
        return argkeys((const T *)x, outer, m, inner, max != 0, mode, (const u64 *)best, (u64 *)out, s);
    });
}
