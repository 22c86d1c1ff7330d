// unique.cu -- np.unique: the distinct values of an array, how often each
// occurs, where each first occurs, and every element's value as an index
// into them. atomicCAS beyond counters: the lock-free hash table, where a
// CAS claims an empty slot for a key, atomicAdd counts it and atomicMin
// keeps its first index (cuCollections' static_map, WarpCore).
//
//  1. sort            the peers' way (CuPy's and PyTorch's unique): radix
//                     sort the keys (with their indices, when first indices
//                     or the inverse are wanted), then the runs of equal
//                     keys are the distinct values, their lengths the
//                     counts, a run's first index its smallest (the sort is
//                     stable), and each element's run number its inverse.
//                     The reference: every element moves through memory
//                     four or eight times (one pass per 8 bits of key), and
//                     the whole input is sorted to find what may be a
//                     handful of values.
//  2. global          one open-addressing table in global memory, every
//                     element inserted on its own: read the slot its hash
//                     names; an empty one is claimed with atomicCAS (whoever
//                     loses the CAS reads the winner's key from its return
//                     value), a slot holding the key is counted with
//                     atomicAdd (and atomicMin keeps the first index), any
//                     other key sends the thread on to the next slot (linear
//                     probing: neighbours share a cache sector). One pass
//                     over the input; the table is sized to stay at most
//                     half full, where a probe ends after 1.5 slots on
//                     average (2.5 for a new key). Every element is a global
//                     atomic: few distinct values mean millions of atomics
//                     queued on a few slots.
//  3. shared          a block-private table in shared memory in front of the
//                     global one: the block counts its share there with
//                     shared-memory atomics and merges each slot into the
//                     global table once, at its end. For few distinct values
//                     the contention moves into the SM and the global
//                     atomics fall to (blocks x values). A block table at its
//                     load limit takes no new keys: those go straight to the
//                     global table (many distinct values pay for the shared
//                     probe and the global insert).
//  4. warp_aggregated lanes of a warp holding equal keys find each other
//                     (__match_any_sync): the lowest lane inserts once, with
//                     the group's size as the count and its own index (the
//                     group's smallest) as the first index. Up to 32x fewer
//                     atomics on a hot key, a match per element where keys
//                     do not repeat in a warp. sm_70.
//  5. vector          the fast rung: 16-byte loads (four int32 or float32
//                     keys, two of 8 bytes, per thread and step, from the
//                     first 16-byte boundary of the data on) into rung 3's
//                     block tables, 1024 threads a block. Its one table
//                     has 2^14 slots, built over a prefix of the input
//                     first; where it overflows (more than about 2^13
//                     distinct values) rung 1's sort runs instead, which
//                     measured faster than every table with that many
//                     distinct values (docs/unique.md).
//
// Every hash rung shares the table's protocol (table_add), its growth and
// the finish. A table past its load limit (half full) raises an overflow
// word; the kernel's threads see it and stop, and the launcher builds again
// in a table four times larger (grow_and_build): a count is never taken
// from a table that filled, and a build always ends (a table of 2n slots
// holds any input of n elements under its limit). The first table has 2^20
// slots (rungs 2-4: fewer builds thrown away) or 2^14 (vector, whose one
// table is for few distinct values).
//
// The finish (cua_cuda_unique_finish) turns a table into NumPy's outputs:
// the occupied slots listed in slot order (CUB DeviceSelect), for sorted
// output only those keys radix-sorted (never the input), each value's
// count and first index gathered beside it, and for the inverse a pass over
// the input that looks each key up again and writes its value's rank.
//
// Keys are order-keeping words (cuatomic_abi.h); the all-ones word marks an
// empty slot, and the one key equal to it is counted in the side cell.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <type_traits>

#include "common.cuh"

namespace {

// ------------------------------------------------------------------ keys

// NumPy's bool, one byte, any nonzero byte True (cua_dispatch reads bool as
// uint8_t: its own type here, so its key is 0 or 1).
struct bool8 {
    uint8_t v;
};

// The word a key is kept in: 32 bits for elements of up to 4 bytes, 64 for 8.
template <class T>
using word_of = typename std::conditional<(sizeof(T) > 4), u64, unsigned>::type;

template <class W>
__host__ __device__ constexpr W empty_word() { return (W)~(W)0; }

// The element as its order-keeping word (cuatomic_abi.h): -0.0 as 0.0, every
// NaN as the canonical one, signed integers with their sign bit flipped (the
// narrow ones within their own width: int8 in the low 8 bits), floats with
// the sign bit flipped (positive) or all bits (negative).
template <class T>
__device__ __forceinline__ word_of<T> to_word(T v)
{
    using W = word_of<T>;
    if constexpr (std::is_same<T, float>::value) {
        // On the bits (integer compares and selects, no float unit): a zero
        // of either sign is 0, anything above the infinity's magnitude a NaN.
        unsigned b = __float_as_uint(v);
        const unsigned mag = b & 0x7FFFFFFFu;
        b = mag == 0 ? 0u : mag > 0x7F800000u ? 0x7FC00000u : b;
        return (b & 0x80000000u) ? ~b : b | 0x80000000u;
    } else if constexpr (std::is_same<T, double>::value) {
        u64 b = (u64)__double_as_longlong(v);
        const u64 mag = b & 0x7FFFFFFFFFFFFFFFull;
        b = mag == 0 ? 0ull : mag > 0x7FF0000000000000ull ? 0x7FF8000000000000ull : b;
        return (b & 0x8000000000000000ull) ? ~b : b | 0x8000000000000000ull;
    } else if constexpr (std::is_same<T, bool8>::value) {
        return (W)(v.v != 0);
    } else if constexpr (std::is_signed<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return (W)(U)((U)v ^ ((U)1 << (8 * sizeof(T) - 1)));
    } else {
        return (W)v;
    }
}

template <class T>
__device__ __forceinline__ T from_word(word_of<T> w)
{
    if constexpr (std::is_same<T, float>::value) {
        return __uint_as_float((w & 0x80000000u) ? w ^ 0x80000000u : ~w);
    } else if constexpr (std::is_same<T, double>::value) {
        return __longlong_as_double((long long)((w & 0x8000000000000000ull) ? w ^ 0x8000000000000000ull : ~w));
    } else if constexpr (std::is_same<T, bool8>::value) {
        return bool8{(uint8_t)w};
    } else if constexpr (std::is_signed<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return (T)(U)((U)w ^ ((U)1 << (8 * sizeof(T) - 1)));
    } else {
        return (T)w;
    }
}

// cua_dispatch with bool as bool8.
template <class F>
static inline int unique_dispatch(int dtype, F &&f)
{
    if (dtype == CUA_BOOL) return f(bool8());
    return cua_dispatch(dtype, f);
}

// The bits of a key's word that can differ between keys (the sort's end bit).
template <class T>
constexpr int key_bits()
{
    return std::is_floating_point<T>::value ? 8 * (int)sizeof(word_of<T>) : std::is_same<T, bool8>::value ? 1 : 8 * (int)sizeof(T);
}

// murmur3's 32-bit finalizer, for the block tables' 4-byte keys: two 32-bit
// multiplies where mix() takes two 64-bit ones (several instructions each on
// a GPU). The block tables have at most 2^14 slots.
__device__ __forceinline__ unsigned mix32(unsigned k)
{
    k ^= k >> 16;
    k *= 0x85ebca6bu;
    k ^= k >> 13;
    k *= 0xc2b2ae35u;
    k ^= k >> 16;
    return k;
}

// murmur3's 64-bit finalizer: every key bit reaches the low bits a table of
// 2^k slots reads (consecutive integers would otherwise fill runs of slots).
__device__ __forceinline__ u64 mix(u64 k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

template <class W>
__device__ __forceinline__ unsigned block_hash(W w)
{
    if constexpr (sizeof(W) == 4) return mix32(w);
    else return (unsigned)mix((u64)w);
}

// ----------------------------------------------------------- the table

// The global table as the kernels see it.
template <class W>
struct table {
    W *keys;
    u64 *counts, *first, *ctl;
    u64 mask, limit;  // cap - 1; the most slots claimed before it counts as full
};

__device__ __forceinline__ bool overflowed(const u64 *ctl)
{
    return *(const volatile u64 *)&ctl[CUA_UNIQUE_CTL_OVERFLOW] != 0;
}

// overflowed() as one answer for the whole warp (lane 0 reads the word):
// lanes that read it at different moments would leave the warp's
// collectives half attended. Called where every lane is.
__device__ __forceinline__ bool warp_overflowed(const u64 *ctl, unsigned lane)
{
    return __any_sync(0xffffffffu, lane == 0 && overflowed(ctl));
}

// A warp's sum of small counts (__reduce_add_sync is sm_80's).
__device__ __forceinline__ unsigned warp_sum(unsigned v)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The key equal to the empty word: counted beside the table.
template <bool FIRST>
__device__ __forceinline__ void side_add(u64 *ctl, u64 count, u64 index)
{
    atomicAdd((unsigned long long *)&ctl[CUA_UNIQUE_CTL_SIDE_COUNT], (unsigned long long)count);
    if (FIRST) atomicMin((unsigned long long *)&ctl[CUA_UNIQUE_CTL_SIDE_FIRST], (unsigned long long)index);
}

// Insert `count` occurrences of key w (not the empty word), the first at
// `index`. The probe starts at the slot the hash names and walks on one slot
// at a time. A slot read empty is claimed with atomicCAS: the CAS returns
// what the slot held, so a thread that lost the race learns the winner's key
// from it and goes on exactly as if it had read that key. The claim that
// takes the table past its limit raises the overflow word (the count is
// still taken: the build is thrown away anyway); from then on no thread
// claims a slot, and a thread deep in a probe looks at the word every 8
// slots, so no probe walks a table that filled.
// A probe that has seen every slot (a table that is full) raises it too and
// gives up, so no thread spins.
template <bool FIRST, class W>
__device__ __forceinline__ void table_add(const table<W> &t, W w, u64 count, u64 index)
{
    u64 slot = mix((u64)w) & t.mask;
    for (u64 probes = 0; probes <= t.mask; probes++, slot = (slot + 1) & t.mask) {
        W k = *(volatile W *)&t.keys[slot];
        if (k == empty_word<W>()) {
            // A table past its limit takes no new key: the build is thrown
            // away, and a table left to fill up would make every later new
            // key probe all of its slots before giving up (seconds, measured
            // on an H100 with 10^6 keys in the first 2^14 slots).
            if (overflowed(t.ctl)) return;
            k = atomicCAS(&t.keys[slot], empty_word<W>(), w);
            if (k == empty_word<W>()) {  // claimed
                k = w;
                if (atomicAdd((unsigned long long *)&t.ctl[CUA_UNIQUE_CTL_FILLED], 1ull) + 1 > t.limit)
                    atomicExch((unsigned long long *)&t.ctl[CUA_UNIQUE_CTL_OVERFLOW], 1ull);
            }
        }
        if (k == w) {
            atomicAdd((unsigned long long *)&t.counts[slot], (unsigned long long)count);
            if (FIRST) atomicMin((unsigned long long *)&t.first[slot], (unsigned long long)index);
            return;
        }
        // Claims in flight when the limit is passed can overshoot it (one
        // per thread racing; a grid of 270K threads filled a 2^14-slot table
        // whole, and every later new key then probed all of it: 0.7 s for
        // 2^26 keys on an H200). A long probe therefore asks every 8 slots
        // whether the build is already thrown away. (A ticket taken before
        // the claim would bound the overshoot instead, but tickets held by
        // racing threads that then lose their CAS raise the word falsely.)
        if ((probes & 7) == 7 && overflowed(t.ctl)) return;
    }
    atomicExch((unsigned long long *)&t.ctl[CUA_UNIQUE_CTL_OVERFLOW], 1ull);
}

// The slot that holds key w, or -1 (the finish's lookups: the table is
// complete and no longer written).
template <class W>
__device__ __forceinline__ int64_t table_find(const table<W> &t, W w)
{
    u64 slot = mix((u64)w) & t.mask;
    for (u64 probes = 0; probes <= t.mask; probes++, slot = (slot + 1) & t.mask) {
        const W k = t.keys[slot];
        if (k == w) return (int64_t)slot;
        if (k == empty_word<W>()) return -1;
    }
    return -1;
}

// How often the grid-stride loops look at the overflow word: every this
// many steps (a volatile load is an L2 round trip).
#define CHECK_EVERY 4

// ---------------------------------------------------------- block tables

// A block's table in dynamic shared memory: `slots` keys, 32-bit counts
// (a block's share of one call stays far below 2^32: grids are sized so),
// and the first indices when wanted. At most half the slots take keys.
template <class W, bool FIRST>
struct block_table {
    W *keys;
    unsigned *counts;
    u64 *first;
    unsigned *filled;
    unsigned mask;

    __device__ block_table(unsigned slots)
    {
        first = (u64 *)cua_smem;  // 8-byte words first: each array stays aligned
        keys = (W *)(cua_smem + (FIRST ? (size_t)slots * 8 : 0));
        counts = (unsigned *)((char *)keys + (size_t)slots * sizeof(W));
        filled = counts + slots;
        mask = slots - 1;
        for (unsigned s = threadIdx.x; s < slots; s += blockDim.x) {
            keys[s] = empty_word<W>();
            counts[s] = 0;
            if (FIRST) first[s] = ~0ull;
        }
        if (threadIdx.x == 0) *filled = 0;
        __syncthreads();
    }

    // The global table's protocol with shared-memory atomics. False: the
    // key is not here and the table takes no more keys (the caller inserts
    // it in the global table).
    __device__ __forceinline__ bool add(W w, unsigned count, u64 index)
    {
        unsigned slot = block_hash(w) & mask;
        for (unsigned probes = 0; probes <= mask; probes++, slot = (slot + 1) & mask) {
            W k = *(volatile W *)&keys[slot];
            if (k == empty_word<W>()) {
                // Racy by design: a few claims past the limit (one per
                // thread at most) still leave empty slots to end probes.
                if (*(volatile unsigned *)filled >= (mask + 1) / 2) return false;
                k = atomicCAS(&keys[slot], empty_word<W>(), w);
                if (k == empty_word<W>()) {
                    k = w;
                    atomicAdd(filled, 1u);
                }
            }
            if (k == w) {
                atomicAdd(&counts[slot], count);
                if (FIRST) atomicMin((unsigned long long *)&first[slot], (unsigned long long)index);
                return true;
            }
        }
        return false;
    }

    // Every slot the block filled, into the global table (after a barrier);
    // nothing into a table already thrown away (one read decides for the
    // block, kept in `filled`, which the merge no longer needs).
    __device__ void merge(const table<W> &t)
    {
        __syncthreads();
        if (threadIdx.x == 0) *filled = overflowed(t.ctl);
        __syncthreads();
        if (*filled) return;
        for (unsigned s = threadIdx.x; s <= mask; s += blockDim.x)
            if (counts[s]) table_add<FIRST>(t, keys[s], counts[s], FIRST ? first[s] : 0);
    }
};

template <class W, bool FIRST>
constexpr size_t block_table_bytes(unsigned slots)
{
    return (size_t)slots * (sizeof(W) + 4 + (FIRST ? 8 : 0)) + 16;
}

// The block tables' size: 32 KiB of shared memory (four blocks of 256
// threads fit an SM beside each other).
template <class W, bool FIRST>
constexpr unsigned block_slots()
{
    return (unsigned)(32768 / (sizeof(W) + 4 + (FIRST ? 8 : 0)) >= 4096 ? 4096
                      : 32768 / (sizeof(W) + 4 + (FIRST ? 8 : 0)) >= 2048 ? 2048
                                                                            : 1024);
}

// -------------------------------------------------------------- kernels

// 2. global: every element inserted on its own.
template <bool FIRST, class T>
__global__ void global_kernel(const T *__restrict__ x, int64_t n, table<word_of<T>> t)
{
    using W = word_of<T>;
    int64_t step = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride(), step++) {
        if (step % CHECK_EVERY == 0 && overflowed(t.ctl)) return;
        const W w = to_word(x[i]);
        if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, (u64)i);
        else table_add<FIRST>(t, w, 1, (u64)i);
    }
}

// 3. shared: the block's table first, the global one for what it cannot take.
template <bool FIRST, class T>
__global__ void shared_kernel(const T *__restrict__ x, int64_t n, table<word_of<T>> t, unsigned slots)
{
    using W = word_of<T>;
    block_table<W, FIRST> b(slots);
    int64_t step = 0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride(), step++) {
        if (step % CHECK_EVERY == 0 && overflowed(t.ctl)) break;  // not return: the barrier in merge
        const W w = to_word(x[i]);
        if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, (u64)i);
        else if (!b.add(w, 1, (u64)i)) table_add<FIRST>(t, w, 1, (u64)i);
    }
    b.merge(t);
}

// 4. warp_aggregated: equal keys of a warp's 32 elements inserted once. The
// warp walks the input together (the loop bound is the warp's, so every lane
// reaches the match); lanes past the end hold no key and join no group.
template <bool FIRST, class T>
__global__ void warp_kernel(const T *__restrict__ x, int64_t n, table<word_of<T>> t)
{
    using W = word_of<T>;
    const unsigned lane = threadIdx.x & 31;
    const int64_t stride = cua_grid_stride();
    int64_t step = 0;
    for (int64_t base = cua_global_id() - lane; base < n; base += stride, step++) {
        if (step % CHECK_EVERY == 0 && warp_overflowed(t.ctl, lane)) return;
        const int64_t i = base + lane;
        const unsigned live = __ballot_sync(0xffffffffu, i < n);
        if (i >= n) continue;
        const W w = to_word(x[i]);
        const unsigned peers = __match_any_sync(live, w);
        if (lane != (unsigned)(__ffs(peers) - 1)) continue;  // the lowest lane: the group's first index
        const u64 count = (u64)__popc(peers);
        if (w == empty_word<W>()) side_add<FIRST>(t.ctl, count, (u64)i);
        else table_add<FIRST>(t, w, count, (u64)i);
    }
}

// 5. vector: a thread reads V keys at once (16 bytes) and inserts them one
// after another into the block's table (the global one for what it cannot
// take). Elements [0, n) of this launch are elements base + [0, n) of the
// call (the launcher runs a prefix first).
template <class T>
struct vec_of {
    static constexpr int size = 16 / sizeof(T) >= 1 ? 16 / sizeof(T) : 1;
    struct alignas(16) type {
        T v[size];
    };
};

template <bool FIRST, class T>
__global__ void vector_kernel(const T *__restrict__ x, int64_t n, int64_t base, table<word_of<T>> t, unsigned slots)
{
    using W = word_of<T>;
    constexpr int V = vec_of<T>::size;
    using VT = typename vec_of<T>::type;
    block_table<W, FIRST> b(slots);
    // Vectors from the first 16-byte boundary: the `head` elements before it
    // and the tail after the last whole vector are block 0's.
    const int64_t skip = (int64_t)(((16 - (uintptr_t)x % 16) % 16) / sizeof(T));
    const int64_t head = skip < n ? skip : n;
    const int64_t nvec = (n - head) / V;
    const VT *xv = (const VT *)(x + head);
    int64_t step = 0;
    for (int64_t j = cua_global_id(); j < nvec; j += cua_grid_stride(), step++) {
        if (step % CHECK_EVERY == 0 && overflowed(t.ctl)) break;
        const VT v = xv[j];
#pragma unroll
        for (int r = 0; r < V; r++) {
            const W w = to_word(v.v[r]);
            const u64 index = (u64)(base + head + j * V + r);
            if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, index);
            else if (!b.add(w, 1, index)) table_add<FIRST>(t, w, 1, index);
        }
    }
    if (blockIdx.x == 0)
        for (int64_t e = threadIdx.x; e < n - nvec * V; e += blockDim.x) {
            const int64_t i = e < head ? e : head + nvec * V + (e - head);
            const W w = to_word(x[i]);
            if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, (u64)(base + i));
            else if (!b.add(w, 1, (u64)(base + i))) table_add<FIRST>(t, w, 1, (u64)(base + i));
        }
    b.merge(t);
}

// ---------------------------------------------------------- the builds

// A table's memory, one allocation from cuatomic's pool: the control words,
// then keys, counts and first indices (each 256-byte aligned).
static size_t round_up(size_t b) { return (b + 255) & ~(size_t)255; }

static int table_alloc(cua_unique_tab *t, int64_t cap, cudaStream_t s)
{
    const size_t kb = round_up((size_t)cap * t->word), cb = round_up((size_t)cap * 8);
    const size_t fb = (t->want & CUA_UNIQUE_FIRST) ? round_up((size_t)cap * 8) : 0;
    void *p = nullptr;
    CUA_CHECK((cudaError_t)cua_cuda_malloc_async(&p, 256 + kb + cb + fb, s));
    t->ctl = (uint64_t *)p;
    t->keys = (char *)p + 256;
    t->counts = (uint64_t *)((char *)p + 256 + kb);
    t->first = fb ? (uint64_t *)((char *)p + 256 + kb + cb) : nullptr;
    t->cap = cap;
    return 0;
}

static void table_release(cua_unique_tab *t, cudaStream_t s)
{
    if (t->ctl) cua_cuda_free_async(t->ctl, s);
    t->ctl = nullptr;
    t->keys = nullptr;
    t->counts = t->first = nullptr;
    t->cap = 0;
}

// The empty table: keys all ones, counts 0, first indices all ones, control
// words 0 but the side cell's first index (all ones).
static int table_clear(cua_unique_tab *t, cudaStream_t s)
{
    const uint64_t ctl[CUA_UNIQUE_CTL_WORDS] = {0, 0, 0, ~0ull};
    CUA_CHECK(cudaMemcpyAsync(t->ctl, ctl, sizeof ctl, cudaMemcpyHostToDevice, s));
    CUA_CHECK(cudaMemsetAsync(t->keys, 0xFF, (size_t)t->cap * t->word, s));
    CUA_CHECK(cudaMemsetAsync(t->counts, 0, (size_t)t->cap * 8, s));
    if (t->first) CUA_CHECK(cudaMemsetAsync(t->first, 0xFF, (size_t)t->cap * 8, s));
    return 0;
}

#define FIRST_CAP (1LL << 14)
// The first table of the one-table rungs (global, shared, warp_aggregated):
// 2^20 slots (12 MiB for 4-byte keys, cleared in microseconds) spare inputs
// of up to 2^19 distinct values the builds that fill and are thrown away
// (an H100 spent 2.4 ms of a 6.4 ms call on four of them at 10^6).
#define TABLE_FIRST_CAP (1LL << 20)
#define GROWTH 4

// Build the table with `launch(table<W>)` (one kernel over the input) in
// tables of growing size until one holds every key under its limit: clear,
// launch, read the control words back (the one wait per build), and if the
// overflow word is up, a table GROWTH times larger. The largest table needed
// is 2n slots (n keys at most, at half load); it is never more than the
// first power of two past that.
// With `only` > 0, one build at that size: CUA_EOVERFLOW_ if it overflows
// (the vector rung then takes its partition).
#define CUA_EOVERFLOW_ (-100)
template <class W, class L>
static int grow_and_build(int64_t n, cua_unique_tab *t, cua_launch *cfg, L launch, int64_t only = 0)
{
    cudaStream_t s = cua_stream(cfg);
    int64_t most = 2;
    while (most < 2 * n) most *= 2;
    int64_t cap = TABLE_FIRST_CAP < most ? TABLE_FIRST_CAP : most;
    if (only) cap = only < most ? only : most;
    t->builds = 0;
    for (;;) {
        int st = table_alloc(t, cap, s);
        if (!st) st = table_clear(t, s);
        if (st) return st;
        const table<W> tab{(W *)t->keys, (u64 *)t->counts, (u64 *)t->first, (u64 *)t->ctl, (u64)cap - 1,
                           (u64)cap / 2};
        st = launch(tab);
        if (st) return st;
        uint64_t ctl[CUA_UNIQUE_CTL_WORDS];
        CUA_CHECK(cudaMemcpyAsync(ctl, t->ctl, sizeof ctl, cudaMemcpyDeviceToHost, s));
        CUA_WAIT(cfg);
        t->builds++;
        if (!ctl[CUA_UNIQUE_CTL_OVERFLOW]) {
            t->distinct = (int64_t)ctl[CUA_UNIQUE_CTL_FILLED] + (ctl[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0);
            return 0;
        }
        if (only) return CUA_EOVERFLOW_;
        if (cap >= most) return CUA_EINTERNAL;  // a table of 2n slots cannot fill
        table_release(t, s);
        cap = cap * GROWTH < most ? cap * GROWTH : most;
    }
}

// The grid of the one-pass rungs: `per_sm` blocks of 256 threads per SM,
// no more than the input has work for.
static int table_config(cua_launch *cfg, int64_t work, int per_sm)
{
    return cua_grid_config(cfg, work, CUA_DEFAULT_THREADS, per_sm);
}

template <class L>
static int with_first(unsigned want, L launch)
{
    return (want & CUA_UNIQUE_FIRST) ? launch(std::true_type()) : launch(std::false_type());
}

// --------------------------------------------------------- the launchers

// 1. sort. Keys only (counts, no first index, no inverse): CUB's radix sort
// of the words and its run-length encode. Otherwise pairs (word, index),
// stable: each run's head holds its smallest index; a scan of the heads
// numbers the runs (the inverse of every element).

// Words of the input (the sort's keys), and the indices 0..n-1 beside them.
template <class T, class I>
__global__ void words_kernel(const T *__restrict__ x, int64_t n, word_of<T> *w, I *idx)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        w[i] = to_word(x[i]);
        if (idx) idx[i] = (I)i;
    }
}

// 1 where a run of equal sorted keys starts.
template <class W>
__global__ void heads_kernel(const W *k, int64_t n, int64_t *head)
{
    for (int64_t p = cua_global_id(); p < n; p += cua_grid_stride()) head[p] = p == 0 || k[p] != k[p - 1];
}

// With the runs numbered (run[p]: the inclusive scan of the heads): each
// run's key, start and first index in its slot; each element's run number
// as its inverse.
template <class W, class I>
__global__ void runs_kernel(const W *k, const I *idx, const int64_t *run, int64_t n, W *keys, u64 *start,
                            u64 *first, int64_t *inverse)
{
    for (int64_t p = cua_global_id(); p < n; p += cua_grid_stride()) {
        const int64_t r = run[p] - 1;
        if (p == 0 || k[p] != k[p - 1]) {
            keys[r] = k[p];
            start[r] = (u64)p;
            if (first) first[r] = (u64)idx[p];
        }
        if (inverse) inverse[idx[p]] = r;
    }
}

// counts[r] = start[r + 1] - start[r] (the last run ends at n).
__global__ void run_lengths_kernel(const u64 *start, int64_t runs, int64_t n, u64 *counts)
{
    for (int64_t r = cua_global_id(); r < runs; r += cua_grid_stride())
        counts[r] = (r + 1 < runs ? start[r + 1] : (u64)n) - start[r];
}

template <class F>
static int cub_call(cudaStream_t s, F call)
{
    size_t bytes = 0;
    CUA_CHECK(call(nullptr, bytes));
    cua_scratch temp;
    CUA_CHECK(temp.get(bytes ? bytes : 1, s));
    CUA_CHECK(call(temp.ptr, bytes));
    return 0;
}

template <class T, class I>
static int sort_pairs(const T *x, int64_t n, cua_unique_tab *t, cua_launch *cfg)
{
    using W = word_of<T>;
    cudaStream_t s = cua_stream(cfg);
    cua_scratch mem;
    const size_t wb = round_up((size_t)n * sizeof(W)), ib = round_up((size_t)n * sizeof(I));
    CUA_CHECK(mem.get(2 * wb + 2 * ib + 2 * round_up((size_t)n * 8), s));
    W *w = (W *)mem.ptr, *ws = (W *)((char *)mem.ptr + wb);
    I *idx = (I *)((char *)mem.ptr + 2 * wb), *idxs = (I *)((char *)mem.ptr + 2 * wb + ib);
    int64_t *run = (int64_t *)((char *)mem.ptr + 2 * wb + 2 * ib);
    u64 *start = (u64 *)((char *)run + round_up((size_t)n * 8));
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    const unsigned blocks = (unsigned)cfg->used_blocks, threads = (unsigned)cfg->used_threads;
    words_kernel<<<blocks, threads, 0, s>>>(x, n, w, idx);
    CUA_CHECK_LAUNCH();
    st = cub_call(s, [&](void *tmp, size_t &b) {
        return cub::DeviceRadixSort::SortPairs(tmp, b, w, ws, idx, idxs, n, 0, key_bits<T>(), s);
    });
    if (st) return st;
    heads_kernel<<<blocks, threads, 0, s>>>(ws, n, run);
    CUA_CHECK_LAUNCH();
    st = cub_call(s, [&](void *tmp, size_t &b) { return cub::DeviceScan::InclusiveSum(tmp, b, run, run, n, s); });
    if (st) return st;
    int64_t runs = 0;
    CUA_CHECK(cudaMemcpyAsync(&runs, run + (n - 1), sizeof runs, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    t->word = (int)sizeof(W);
    st = table_alloc(t, runs, s);
    if (st) return st;
    runs_kernel<<<blocks, threads, 0, s>>>(ws, idxs, run, n, (W *)t->keys, start, (u64 *)t->first,
                                           (t->want & CUA_UNIQUE_INVERSE) ? t->inverse : nullptr);
    CUA_CHECK_LAUNCH();
    run_lengths_kernel<<<blocks, threads, 0, s>>>(start, runs, n, (u64 *)t->counts);
    CUA_CHECK_LAUNCH();
    t->distinct = runs;
    t->compact = 1;
    t->builds = 1;
    CUA_WAIT(cfg);
    return 0;
}

template <class T>
static int sort_keys(const T *x, int64_t n, cua_unique_tab *t, cua_launch *cfg)
{
    using W = word_of<T>;
    cudaStream_t s = cua_stream(cfg);
    cua_scratch mem;
    const size_t wb = round_up((size_t)n * sizeof(W));
    CUA_CHECK(mem.get(2 * wb + 256, s));
    W *w = (W *)mem.ptr, *ws = (W *)((char *)mem.ptr + wb);
    int64_t *runs_dev = (int64_t *)((char *)mem.ptr + 2 * wb);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    words_kernel<T, unsigned><<<(unsigned)cfg->used_blocks, (unsigned)cfg->used_threads, 0, s>>>(x, n, w, nullptr);
    CUA_CHECK_LAUNCH();
    st = cub_call(s, [&](void *tmp, size_t &b) {
        return cub::DeviceRadixSort::SortKeys(tmp, b, w, ws, n, 0, key_bits<T>(), s);
    });
    if (st) return st;
    // The distinct keys can be no more than n: the table is made for n,
    // and the encode writes the keys and counts straight into it.
    t->word = (int)sizeof(W);
    st = table_alloc(t, n, s);
    if (st) return st;
    st = cub_call(s, [&](void *tmp, size_t &b) {
        return cub::DeviceRunLengthEncode::Encode(tmp, b, ws, (W *)t->keys, (u64 *)t->counts, runs_dev, n, s);
    });
    if (st) return st;
    int64_t runs = 0;
    CUA_CHECK(cudaMemcpyAsync(&runs, runs_dev, sizeof runs, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    t->distinct = runs;
    t->compact = 1;
    t->builds = 1;
    return 0;
}

static int unique_SORT(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        // (RunLengthEncode::Encode counts items in an int: longer inputs
        // find their runs as the pairs' path does, with 64-bit counts.)
        if (!(t->want & (CUA_UNIQUE_FIRST | CUA_UNIQUE_INVERSE)) && n <= INT32_MAX)
            return sort_keys<T>((const T *)x, n, t, cfg);
        if (n <= (int64_t)UINT32_MAX) return sort_pairs<T, unsigned>((const T *)x, n, t, cfg);
        return sort_pairs<T, u64>((const T *)x, n, t, cfg);
    });
}

static int unique_GLOBAL(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        using W = word_of<T>;
        t->word = (int)sizeof(W);
        int st = table_config(cfg, n, 8);
        if (st) return st;
        return grow_and_build<W>(n, t, cfg, [&](const table<W> &tab) -> int {
            with_first(t->want, [&](auto first) -> int {
                global_kernel<decltype(first)::value, T>
                    <<<(unsigned)cfg->used_blocks, (unsigned)cfg->used_threads, 0, cua_stream(cfg)>>>((const T *)x, n,
                                                                                                     tab);
                return 0;
            });
            CUA_CHECK_LAUNCH();
            return 0;
        });
    });
}

static int unique_WARP_AGGREGATED(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        using W = word_of<T>;
        t->word = (int)sizeof(W);
        int st = table_config(cfg, n, 8);
        if (st) return st;
        if (cfg->used_threads % 32) return cua_refuse(cfg, "method 'warp_aggregated' needs whole warps: threads must be a multiple of 32 (got %d)", cfg->used_threads);
        return grow_and_build<W>(n, t, cfg, [&](const table<W> &tab) -> int {
            with_first(t->want, [&](auto first) -> int {
                warp_kernel<decltype(first)::value, T>
                    <<<(unsigned)cfg->used_blocks, (unsigned)cfg->used_threads, 0, cua_stream(cfg)>>>((const T *)x, n,
                                                                                                     tab);
                return 0;
            });
            CUA_CHECK_LAUNCH();
            return 0;
        });
    });
}

// A block table counts in 32 bits: a block's share of the input (about
// n / blocks elements) must stay below 2^31. The default grids are far from
// it; a grid asked for that is not is refused.
static int block_counts_fit(int64_t n, cua_launch *cfg)
{
    const int64_t least = cua_ceil_div(n, (int64_t)1 << 31);  // (a share then stays under 2^31 + a block's step)
    if (cfg->used_blocks >= least) return 0;
    return cua_refuse(cfg, "the block tables count a block's keys in 32 bits: %lld elements need at least %lld blocks "
                      "(got %lld)", (long long)n, (long long)least, (long long)cfg->used_blocks);
}

// The block-table rungs: shared memory for `block_slots` slots per block,
// 1024 threads a block (H100, 2^26 int32 keys, 10^3 distinct: shared took
// 0.485 ms with 256, 0.330 with 1024), four blocks per SM.
#define BLOCK_TABLE_THREADS 1024
template <class T, bool FIRST, class K>
static int block_table_build(K kernel, const T *x, int64_t n, int64_t work, cua_unique_tab *t, cua_launch *cfg,
                             int64_t only = 0)
{
    using W = word_of<T>;
    t->word = (int)sizeof(W);
    const unsigned slots = block_slots<W, FIRST>();
    const size_t smem = block_table_bytes<W, FIRST>(slots);
    int st = cua_grid_config(cfg, work, BLOCK_TABLE_THREADS, 4);
    if (st) return st;
    st = block_counts_fit(n, cfg);
    if (st) return st;
    return grow_and_build<W>(
        n, t, cfg,
        [&](const table<W> &tab) -> int {
            kernel<<<(unsigned)cfg->used_blocks, (unsigned)cfg->used_threads, smem, cua_stream(cfg)>>>(x, n, tab,
                                                                                                      slots);
            CUA_CHECK_LAUNCH();
            return 0;
        },
        only);
}

static int unique_SHARED(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        return with_first(t->want, [&](auto first) -> int {
            constexpr bool F = decltype(first)::value;
            return block_table_build<T, F>(shared_kernel<F, T>, (const T *)x, n, n, t, cfg);
        });
    });
}


// The vector rung: one table of 2^14 slots, built over a prefix of the
// input (2^18 elements) and then the rest by a second launch on the same
// table; where it overflows (more than about 2^13 distinct keys) -- seen by
// the second launch's threads at their first step, so the rest is not read
// -- rung 1's sort. With that many distinct values sorting every key beat
// every table measured here (H100, 2^26 keys, 10^6 distinct: the sort 2.0
// ms, the one-table rungs 4.0 to 5.4 ms; a radix partition by hash into
// 2^10 shared-memory tables, tried and removed, 4.6 ms).
#define VECTOR_PREFIX ((int64_t)1 << 18)
static int unique_VECTOR(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        using W = word_of<T>;
        return with_first(t->want, [&](auto first) -> int {
            constexpr bool F = decltype(first)::value;
            constexpr int V = vec_of<T>::size;
            t->word = (int)sizeof(W);
            const unsigned slots = block_slots<W, F>();
            const size_t smem = block_table_bytes<W, F>(slots);
            int st = cua_grid_config(cfg, n / V + 1, BLOCK_TABLE_THREADS, 4);
            if (!st) st = block_counts_fit(n, cfg);
            if (st) return st;
            const int64_t prefix = n < VECTOR_PREFIX ? n : VECTOR_PREFIX;
            const unsigned threads = (unsigned)cfg->used_threads;
            const int64_t want = cua_ceil_div(prefix / V + 1, threads);
            const unsigned pblocks = (unsigned)(want < cfg->used_blocks ? want : cfg->used_blocks);
            const T *xs = (const T *)x;
            st = grow_and_build<W>(
                n, t, cfg,
                [&](const table<W> &tab) -> int {
                    vector_kernel<F, T><<<pblocks, threads, smem, cua_stream(cfg)>>>(xs, prefix, 0, tab, slots);
                    CUA_CHECK_LAUNCH();
                    if (n > prefix) {
                        vector_kernel<F, T><<<(unsigned)cfg->used_blocks, threads, smem, cua_stream(cfg)>>>(
                            xs + prefix, n - prefix, prefix, tab, slots);
                        CUA_CHECK_LAUNCH();
                    }
                    return 0;
                },
                FIRST_CAP);
            if (st != CUA_EOVERFLOW_) return st;
            table_release(t, cua_stream(cfg));
            const int64_t builds = t->builds;
            cfg->blocks = cfg->threads = 0;  // the sort's own grid
            st = unique_SORT(x, n, dtype, t, cfg);
            t->builds += builds;
            return st;
        });
    });
}

// ------------------------------------------------------------- finish

// Output j of the table's occupied slots sel[j] (in the order wanted): the
// value, count and first index; rank[slot] = j for the inverse. j == k (the
// slots listed) is the side cell, when it counted anything.
template <class T>
__global__ void outputs_kernel(const word_of<T> *keys, const u64 *counts, const u64 *first, const u64 *ctl,
                               const int64_t *sel, int64_t k, int64_t with_side, T *values, int64_t *index,
                               int64_t *ocounts, int64_t *rank)
{
    for (int64_t j = cua_global_id(); j < k + with_side; j += cua_grid_stride()) {
        if (j == k) {  // the side cell: the empty word's key, the largest, last
            if (values) values[j] = from_word<T>(empty_word<word_of<T>>());
            if (ocounts) ocounts[j] = (int64_t)ctl[CUA_UNIQUE_CTL_SIDE_COUNT];
            if (index) index[j] = (int64_t)ctl[CUA_UNIQUE_CTL_SIDE_FIRST];
            continue;
        }
        const int64_t slot = sel ? sel[j] : j;
        if (values) values[j] = from_word<T>(keys[slot]);
        if (ocounts) ocounts[j] = (int64_t)counts[slot];
        if (index) index[j] = (int64_t)first[slot];
        if (rank) rank[slot] = j;
    }
}

// The inverse: each element's key looked up again, its slot's rank written.
template <class T>
__global__ void inverse_kernel(const T *__restrict__ x, int64_t n, table<word_of<T>> t, const int64_t *rank,
                               int64_t side_rank, int64_t *inverse)
{
    using W = word_of<T>;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const W w = to_word(x[i]);
        const int64_t slot = w == empty_word<W>() ? -1 : table_find(t, w);
        inverse[i] = slot < 0 ? side_rank : rank[slot];
    }
}

template <class W>
struct occupied {
    const W *keys;
    __host__ __device__ bool operator()(int64_t s) const { return keys[s] != empty_word<W>(); }
};

template <class W>
struct key_of_slot {
    const W *keys;
    __host__ __device__ W operator()(int64_t s) const { return keys[s]; }
};

template <class W>
__global__ void gather_keys_kernel(const W *keys, const int64_t *sel, int64_t k, W *out)
{
    for (int64_t j = cua_global_id(); j < k; j += cua_grid_stride()) out[j] = keys[sel[j]];
}

template <class T>
static int finish(const T *x, int64_t n, cua_unique_tab *t, const cua_unique_out *out, cua_launch *cfg)
{
    using W = word_of<T>;
    cudaStream_t s = cua_stream(cfg);
    cua_launch grid = *cfg;
    grid.blocks = grid.threads = 0;
    int st = cua_default_config(&grid, t->compact ? t->distinct : (n > t->cap ? n : t->cap), CUA_DEFAULT_THREADS);
    if (st) return st;
    const unsigned blocks = (unsigned)grid.used_blocks, threads = (unsigned)grid.used_threads;
    const bool want_inverse = (t->want & CUA_UNIQUE_INVERSE) && !t->compact;
    if (t->compact) {  // already compact and in order (the sort rung)
        outputs_kernel<T><<<blocks, threads, 0, s>>>((const W *)t->keys, (const u64 *)t->counts, (const u64 *)t->first,
                                                    nullptr, nullptr, t->distinct, 0, (T *)out->values, out->index,
                                                    out->counts, nullptr);
        CUA_CHECK_LAUNCH();
        CUA_WAIT(cfg);
        return 0;
    }
    // The occupied slots, listed in slot order.
    uint64_t ctl[CUA_UNIQUE_CTL_WORDS];
    CUA_CHECK(cudaMemcpyAsync(ctl, t->ctl, sizeof ctl, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    const int64_t k = (int64_t)ctl[CUA_UNIQUE_CTL_FILLED], with_side = ctl[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0;
    if (k + with_side != t->distinct) return CUA_EINTERNAL;
    cua_scratch mem;
    const size_t sb = round_up((size_t)(k + 1) * 8), kb = round_up((size_t)(k + 1) * sizeof(W));
    const size_t rb = want_inverse ? round_up((size_t)t->cap * 8) : 0;
    CUA_CHECK(mem.get(2 * sb + 2 * kb + rb + 256, s));
    int64_t *sel = (int64_t *)mem.ptr, *sel2 = (int64_t *)((char *)mem.ptr + sb);
    W *kw = (W *)((char *)mem.ptr + 2 * sb), *kw2 = (W *)((char *)mem.ptr + 2 * sb + kb);
    int64_t *rank = rb ? (int64_t *)((char *)mem.ptr + 2 * sb + 2 * kb) : nullptr;
    int64_t *nsel = (int64_t *)((char *)mem.ptr + 2 * sb + 2 * kb + rb);
    const occupied<W> pred{(const W *)t->keys};
    st = cub_call(s, [&](void *tmp, size_t &b) {
        return cub::DeviceSelect::If(tmp, b, thrust::counting_iterator<int64_t>(0), sel, nsel, t->cap, pred, s);
    });
    if (st) return st;
    const int64_t *order = sel;
    if ((t->want & CUA_UNIQUE_SORTED) && k > 1) {  // only the distinct keys are sorted
        gather_keys_kernel<W><<<blocks, threads, 0, s>>>((const W *)t->keys, sel, k, kw);
        CUA_CHECK_LAUNCH();
        st = cub_call(s, [&](void *tmp, size_t &b) {
            return cub::DeviceRadixSort::SortPairs(tmp, b, kw, kw2, sel, sel2, k, 0, key_bits<T>(), s);
        });
        if (st) return st;
        order = sel2;
    }
    outputs_kernel<T><<<blocks, threads, 0, s>>>((const W *)t->keys, (const u64 *)t->counts, (const u64 *)t->first,
                                                (const u64 *)t->ctl, order, k, with_side, (T *)out->values, out->index,
                                                out->counts, rank);
    CUA_CHECK_LAUNCH();
    if (want_inverse) {
        const table<W> tab{(W *)t->keys, (u64 *)t->counts, (u64 *)t->first, (u64 *)t->ctl, (u64)t->cap - 1, 0};
        inverse_kernel<T><<<blocks, threads, 0, s>>>(x, n, tab, rank, k, t->inverse);
        CUA_CHECK_LAUNCH();
    }
    CUA_WAIT(cfg);
    return 0;
}

}  // namespace

extern "C" int cua_cuda_unique_finish(const void *x, int64_t n, int dtype, cua_unique_tab *t,
                                      const cua_unique_out *out, cua_launch *cfg)
{
    if (t->distinct == 0) return 0;
    return unique_dispatch(dtype, [&](auto v) -> int { return finish((const decltype(v) *)x, n, t, out, cfg); });
}

extern "C" void cua_cuda_unique_free(cua_unique_tab *t, void *stream)
{
    table_release(t, (cudaStream_t)stream);
}

static const cua_unique_row unique_rows[] = {
    {{"sort", 1, "the peers' way: radix sort every key (with its index), runs of equal keys are the values", CUA_F_DETERMINISTIC},
     unique_SORT},
    {{"global", 2, "one open-addressing table in global memory: atomicCAS claims a slot, atomicAdd counts, atomicMin keeps the first index", 0},
     unique_GLOBAL},
    {{"shared", 3, "a block-private table in shared memory in front of the global one, merged once per block", 0},
     unique_SHARED},
    {{"warp_aggregated", 4, "equal keys of a warp found by __match_any_sync: the lowest lane inserts once for the group", 0},
     unique_WARP_AGGREGATED},
    {{"vector", 5, "16-byte loads into block tables of 1024 threads, one table of 2^14 slots; past 2^13 distinct values, the sort", 0},
     unique_VECTOR},
};
extern "C" const cua_ladder cua_cuda_unique_ladder = CUA_LADDER(unique_rows);
