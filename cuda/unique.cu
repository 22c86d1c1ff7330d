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
//                     With counts alone, two passes over the sorted keys
//                     find the runs and write them into the outputs.
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
//                     distinct values, which a sample of the input may
//                     prove before) a radix partition by hash: the keys
//                     scattered into 256 to 1024 buckets sized from a
//                     sketch of the distinct values, each bucket counted
//                     whole by one block in a shared-memory table, so no
//                     element takes a global atomic; sorted, the distinct
//                     keys in segments cut by digits of the sample's
//                     range, a block sorting each. Without it, rung 1's
//                     sort (the inverse wanted, 2^32 - 1 elements or more,
//                     more distinct values than the buckets take).
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
// the input that looks each key up again and writes its value's rank. The
// sort's runs (counts alone) it writes from the sorted keys themselves.
//
// Keys are order-keeping words (cuatomic_abi.h); the all-ones word marks an
// empty slot, and the one key equal to it is counted in the side cell.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cmath>
#include <cuda/std/bit>
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
__host__ __device__ __forceinline__ T from_word(word_of<T> w)
{
    if constexpr (std::is_same<T, float>::value) {
        return cuda::std::bit_cast<float>((w & 0x80000000u) ? w ^ 0x80000000u : ~w);
    } else if constexpr (std::is_same<T, double>::value) {
        return cuda::std::bit_cast<double>((w & 0x8000000000000000ull) ? w ^ 0x8000000000000000ull : ~w);
    } else if constexpr (std::is_same<T, bool8>::value) {
        return bool8{(uint8_t)w};
    } else if constexpr (std::is_signed<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return (T)(U)((U)w ^ ((U)1 << (8 * sizeof(T) - 1)));
    } else {
        return (T)w;
    }
}

// What a build leaves for the finish (cua_unique_tab.compact): a hash
// table; a compact list of keys, counts and first indices in the order
// wanted; or sorted keys whose runs the finish writes (t->keep).
enum { COMPACT_TABLE = 0, COMPACT_LIST = 1, COMPACT_RUNS = 2 };

// cua_dispatch with bool as bool8.
template <class F>
static inline int unique_dispatch(int dtype, F &&f)
{
    if (dtype == CUA_BOOL) return f(bool8());
    return cua_dispatch(dtype, f);
}

// Whether a word is a finite value's (integers: every word): floats' words
// between those of the infinities.
template <class T>
__device__ __forceinline__ bool finite_word(word_of<T> w)
{
    if constexpr (std::is_floating_point<T>::value) {
        using W = word_of<T>;
        constexpr W NEG_INF = sizeof(T) == 4 ? (W)0x007FFFFFu : (W)0x000FFFFFFFFFFFFFull,
                    POS_INF = sizeof(T) == 4 ? (W)0xFF800000u : (W)0xFFF0000000000000ull;
        return w > NEG_INF && w < POS_INF;
    } else {
        return true;
    }
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

// atomicMin on a 64-bit first index (a table whose first indices are 32
// bits wide keeps them with its own atomicMin: part_table_kernel).
__device__ __forceinline__ void atomic_min_index(u64 *p, u64 v)
{
    atomicMin((unsigned long long *)p, (unsigned long long)v);
}
__device__ __forceinline__ void atomic_min_index(unsigned *p, u64 v) { atomicMin(p, (unsigned)v); }

// A block's table in dynamic shared memory: `slots` keys, 32-bit counts
// (a block's share of one call stays far below 2^32: grids are sized so),
// and the first indices (of type I) when wanted. At most half the slots
// take keys. `slots` is a power of two.
template <class W, bool FIRST, class I = u64>
struct block_table {
    W *keys;
    unsigned *counts;
    I *first;
    unsigned *filled;
    unsigned mask;

    __device__ block_table(unsigned slots)
    {
        first = (I *)cua_smem;  // first indices first: the arrays stay aligned (slots is even)
        keys = (W *)(cua_smem + (FIRST ? (size_t)slots * sizeof(I) : 0));
        counts = (unsigned *)((char *)keys + (size_t)slots * sizeof(W));
        filled = counts + slots;
        mask = slots - 1;
        for (unsigned s = threadIdx.x; s < slots; s += blockDim.x) {
            keys[s] = empty_word<W>();
            counts[s] = 0;
            if (FIRST) first[s] = (I)~(I)0;
        }
        if (threadIdx.x == 0) *filled = 0;
        __syncthreads();
    }

    // The global table's protocol with shared-memory atomics. False: the
    // key is not here and the table takes no more keys (the caller inserts
    // it in the global table).
    __device__ __forceinline__ bool add(W w, unsigned count, u64 index)
    {
        return add_at(w, count, index, block_hash(w) & mask);
    }
    // ... with the home slot given (a table of keys that are hashes already).
    __device__ __forceinline__ bool add_at(W w, unsigned count, u64 index, unsigned slot)
    {
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
                if (FIRST) atomic_min_index(&first[slot], index);
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

template <class W, bool FIRST, class I = u64>
__host__ __device__ constexpr size_t block_table_bytes(unsigned slots)
{
    return (size_t)slots * (sizeof(W) + 4 + (FIRST ? sizeof(I) : 0)) + 16;
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

// n elements as 16-byte vectors from the first 16-byte boundary on: the
// `head` elements before it and those after the last whole vector are the
// rest, element(e) the input index of the rest's e-th.
template <class T>
struct vec_span {
    static constexpr int V = vec_of<T>::size;
    int64_t head, nvec;
    const typename vec_of<T>::type *xv;

    __device__ vec_span(const T *x, int64_t n)
    {
        const int64_t skip = (int64_t)(((16 - (uintptr_t)x % 16) % 16) / sizeof(T));
        head = skip < n ? skip : n;
        nvec = (n - head) / V;
        xv = (const typename vec_of<T>::type *)(x + head);
    }
    __device__ int64_t rest(int64_t n) const { return n - nvec * V; }
    __device__ int64_t element(int64_t e) const { return e < head ? e : head + nvec * V + (e - head); }
};

template <bool FIRST, class T>
__global__ void vector_kernel(const T *__restrict__ x, int64_t n, int64_t base, table<word_of<T>> t, unsigned slots)
{
    using W = word_of<T>;
    constexpr int V = vec_of<T>::size;
    // A table already thrown away (by the sample, or the prefix's launch):
    // the block leaves before clearing its own (one answer for the block).
    if (__syncthreads_or(threadIdx.x == 0 && overflowed(t.ctl))) return;
    block_table<W, FIRST> b(slots);
    // The rest of the vectors (vec_span) is block 0's.
    const vec_span<T> span(x, n);
    const int64_t head = span.head, nvec = span.nvec;
    const auto *xv = span.xv;
    int64_t step = 0;
    for (int64_t j = cua_global_id(); j < nvec; j += cua_grid_stride(), step++) {
        if (step % CHECK_EVERY == 0 && overflowed(t.ctl)) break;
        const auto v = xv[j];
#pragma unroll
        for (int r = 0; r < V; r++) {
            const W w = to_word(v.v[r]);
            const u64 index = (u64)(base + head + j * V + r);
            if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, index);
            else if (!b.add(w, 1, index)) table_add<FIRST>(t, w, 1, index);
        }
    }
    if (blockIdx.x == 0)
        for (int64_t e = threadIdx.x; e < span.rest(n); e += blockDim.x) {
            const int64_t i = span.element(e);
            const W w = to_word(x[i]);
            if (w == empty_word<W>()) side_add<FIRST>(t.ctl, 1, (u64)(base + i));
            else if (!b.add(w, 1, (u64)(base + i))) table_add<FIRST>(t, w, 1, (u64)(base + i));
        }
    b.merge(t);
}

// The vector rung's sample: SAMPLE_KEYS keys in runs of SAMPLE_RUN 16-byte
// vectors spread evenly over the input (a warp reads a run with whole
// sectors: 16K keys read one at a time took 11 us, H200), their distinct
// 32-bit hashes counted by SAMPLE_BLOCKS blocks: every block reads the
// whole sample and keeps the keys whose hash's top bits name it, in a table
// of its own in shared memory (the slot from the next bits, the hash itself
// the entry, 0 empty: a hash of 0 is kept as 1, which can only make the
// count short), and adds how many entries it made to a control word;
// the last block to finish (a ticket, after a fence) reads the sum. The
// lanes of a warp probe in step (a loop of their own per lane left the warp
// diverged, four lanes active on average) and the inserts are spread over
// blocks: one block of 1024 threads inserting all 16K hashes into one table
// took 72 us (28 us in step), the loads alone 4.6 us (H200, after a flush of
// L2). A block whose table is half full makes no more entries, so a probe
// always ends; its count is then short, never long.
// The sample's distinct hashes are no more than its distinct keys: more
// than `limit` of them proves that the rung's first table (which takes
// `limit` keys) would overflow, and the last block raises its overflow word
// (1) before the table is built at all (a 2^16-key prefix of 10^6 distinct
// values took 40 us to fill it, H200). A sample that shows fewer proves
// nothing (a sorted input shows few in each run): the table is built as
// before.
// Its repeats (keys less distinct hashes) also tell the partition's size,
// as a guess for speed only: keys drawn from D equally frequent values
// repeat about SAMPLE_KEYS^2 / 2D times in the sample -- 8 at 2^24 values,
// 22 at 6 M, about the most the partition takes (1024 buckets of 2^14 slots
// a third full), 134 at 10^6. At most SAMPLE_FAR_REPEATS (P = 0.996 at
// 2^24 values, 0.10 at 6 M, 0.001 at 4 M) the overflow word says 2: the
// call goes from the first table straight to the sort, sparing the
// partition's count pass, which would only have found too many values
// (H100, 2^26 int32 with 2^24 distinct: the vector rung 2.02 ms, the sort
// 1.81). An input whose sample's runs repeat little while the whole
// repeats much (a tiled sequence) is sorted too: the sort is the peers'
// speed.
// Block 0 also keeps the sample's least and greatest words: the range the
// partition's sorted output cuts into digits (part_digit); for floats the
// finite ones' (one NaN or infinity in the sample would make the range's
// width NaN or infinite, and every digit the first).
#define SAMPLE_KEYS 16384
#define SAMPLE_THREADS 1024
#define SAMPLE_RUN 16
#define SAMPLE_BLOCK_BITS 4                     // SAMPLE_BLOCKS = 16: about 1024 of the hashes each
#define SAMPLE_BLOCKS (1 << SAMPLE_BLOCK_BITS)
#define SAMPLE_SLOT_BITS 12                     // a block's table: 4096 hashes (16 KB), a quarter full
#define SAMPLE_FAR_REPEATS 16
// The sample's own words, after the control words in the 256 bytes that
// a table keeps for them (table_alloc), cleared with them (ctl_init): the
// blocks' entries summed, and the blocks that have added theirs.
#define SAMPLE_SEEN CUA_UNIQUE_CTL_WORDS
#define SAMPLE_DONE (CUA_UNIQUE_CTL_WORDS + 1)
#define CTL_WORDS_CLEARED (CUA_UNIQUE_CTL_WORDS + 2)
// (and, written whole by block 0, not cleared: the least and greatest words)
#define SAMPLE_LO CTL_WORDS_CLEARED
#define SAMPLE_HI (CTL_WORDS_CLEARED + 1)
#define SAMPLE_CTL_WORDS (CTL_WORDS_CLEARED + 2)
static_assert(SAMPLE_CTL_WORDS * 8 <= 256, "the sample's words fit beside the control words");
template <class T>
__global__ void __launch_bounds__(SAMPLE_THREADS) sample_kernel(const T *__restrict__ x, int64_t n, unsigned limit,
                                                                u64 *ctl)
{
    using VT = typename vec_of<T>::type;
    using W = word_of<T>;
    constexpr int V = vec_of<T>::size, EACH = SAMPLE_KEYS / (SAMPLE_THREADS * V);
    static_assert(EACH >= 1 && EACH * SAMPLE_THREADS * V == SAMPLE_KEYS, "whole vectors for every thread");
    constexpr int64_t RUNS = SAMPLE_KEYS / (V * SAMPLE_RUN);
    constexpr unsigned SLOTS = 1u << SAMPLE_SLOT_BITS, MASK = SLOTS - 1;
    static_assert(SLOTS / 2 + SAMPLE_THREADS < SLOTS, "past half full, each thread makes one entry more at most: "
                                                      "a probe always finds an empty slot");
    __shared__ unsigned slot[SLOTS], made;
    __shared__ W lo, hi;
    for (unsigned i = threadIdx.x; i < SLOTS; i += SAMPLE_THREADS) slot[i] = 0;
    if (threadIdx.x == 0) made = 0, lo = empty_word<W>(), hi = 0;
    const vec_span<T> span(x, n);  // (n is large: the runs fit in span.nvec)
    VT v[EACH];
#pragma unroll
    for (int q = 0; q < EACH; q++) {
        const int64_t g = (int64_t)q * SAMPLE_THREADS + threadIdx.x;
        v[q] = span.xv[g / SAMPLE_RUN * (span.nvec / RUNS) + g % SAMPLE_RUN];
    }
    __syncthreads();
    if (blockIdx.x == 0) {  // the range: a thread's, its warp's, then one atomic a warp
        W a = empty_word<W>(), b = 0;
#pragma unroll
        for (int q = 0; q < EACH; q++)
#pragma unroll
            for (int r = 0; r < V; r++) {
                const W w = to_word(v[q].v[r]);
                if (!finite_word<T>(w)) continue;
                a = w < a ? w : a;
                b = w > b ? w : b;
            }
        for (int o = 16; o > 0; o /= 2) {
            const W a2 = __shfl_xor_sync(0xffffffffu, a, o), b2 = __shfl_xor_sync(0xffffffffu, b, o);
            a = a2 < a ? a2 : a;
            b = b2 > b ? b2 : b;
        }
        if ((threadIdx.x & 31) == 0) {
            atomicMin(&lo, a);
            atomicMax(&hi, b);
        }
    }
#pragma unroll
    for (int q = 0; q < EACH; q++)
#pragma unroll
        for (int r = 0; r < V; r++) {
            const unsigned h = block_hash(to_word(v[q].v[r])), e = h ? h : 1u;
            unsigned at = h >> (32 - SAMPLE_BLOCK_BITS - SAMPLE_SLOT_BITS) & MASK;
            bool pending = h >> (32 - SAMPLE_BLOCK_BITS) == blockIdx.x && *(volatile unsigned *)&made < SLOTS / 2;
            while (__any_sync(0xffffffffu, pending)) {  // (every lane is here: the loops are the same for all)
                if (!pending) continue;
                unsigned cur = *(volatile unsigned *)&slot[at];
                if (cur == 0) cur = atomicCAS(&slot[at], 0u, e);
                if (cur == 0) atomicAdd(&made, 1u);  // (past SLOTS / 2 by one a thread at most)
                if (cur == 0 || cur == e) pending = false;
                else at = (at + 1) & MASK;
            }
        }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) ctl[SAMPLE_LO] = lo, ctl[SAMPLE_HI] = hi;  // (read after the call's wait)
        atomicAdd(&ctl[SAMPLE_SEEN], (u64)made);
        __threadfence();  // (the sum before the ticket: the last block reads every block's entries)
        if (atomicAdd(&ctl[SAMPLE_DONE], 1ull) == gridDim.x - 1) {
            __threadfence();  // (and the ticket before the sum: the memory model wants both sides fenced)
            const u64 seen = atomicAdd(&ctl[SAMPLE_SEEN], 0ull);
            if (SAMPLE_KEYS - seen <= SAMPLE_FAR_REPEATS) ctl[CUA_UNIQUE_CTL_OVERFLOW] = 2;
            else if (seen > limit) ctl[CUA_UNIQUE_CTL_OVERFLOW] = 1;
        }
    }
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
    if (t->keep) cua_cuda_free_async(t->keep, s);
    t->keep = nullptr;
    t->ctl = nullptr;
    t->keys = nullptr;
    t->counts = t->first = nullptr;
    t->cap = 0;
}

// Control words as a build starts: 0 but the side cell's first index (all
// ones).
__device__ __forceinline__ void ctl_init(u64 *ctl)
{
    static_assert(CUA_UNIQUE_CTL_SIDE_FIRST == CUA_UNIQUE_CTL_WORDS - 1, "the first index is the last word");
    for (int w = 0; w < CTL_WORDS_CLEARED; w++) ctl[w] = 0;
    ctl[CUA_UNIQUE_CTL_SIDE_FIRST] = ~0ull;
}

// The empty table (keys all ones, counts 0, first indices all ones) and its
// control words, in one launch: four memsets cost the host four calls, and
// in a call of small kernels the GPU waits on the host's calls.
template <class W>
__global__ void table_init_kernel(W *keys, u64 *counts, u64 *first, int64_t cap, u64 *ctl)
{
    if (cua_global_id() == 0) ctl_init(ctl);
    for (int64_t i = cua_global_id(); i < cap; i += cua_grid_stride()) {
        keys[i] = empty_word<W>();
        counts[i] = 0;
        if (first) first[i] = ~0ull;
    }
}

// What a build reads back from the device in one wait: copies into a call
// slot (page-locked: they queue behind the kernels, and the wait covers them
// all) where one is free, else into memory of its own (pageable: each copy
// then waits for the stream). take() queues a copy and returns where it
// lands, to be read after the wait.
struct readback {
    static constexpr size_t LOCAL = 2048;
    int slot = -1;
    char *host = nullptr;
    size_t used = 0;
    alignas(16) char local[LOCAL];
    readback()
    {
        void *h = nullptr, *d = nullptr;
        slot = cua_cuda_slot_acquire(&h, &d);
        host = slot >= 0 ? (char *)h : local;
    }
    ~readback() { cua_cuda_slot_release(slot); }
    readback(const readback &) = delete;
    readback &operator=(const readback &) = delete;
    template <class U>
    cudaError_t take(const U *dev, size_t count, cudaStream_t s, const U **got)
    {
        const size_t bytes = count * sizeof(U), at = (used + 15) & ~(size_t)15;
        if (at + bytes > (slot >= 0 ? (size_t)CUA_SLOT_BYTES : LOCAL)) return cudaErrorInvalidValue;
        const bool queued = used > 0;
        used = at + bytes;
        *got = (const U *)(host + at);
        const cudaError_t e = cudaMemcpyAsync(host + at, dev, bytes, cudaMemcpyDeviceToHost, s);
        // (A copy already queued must land before the slot goes back: the
        // caller returns at once, without its wait.)
        if (e != cudaSuccess && queued) cudaStreamSynchronize(s);
        return e;
    }
};

// The empty table.
template <class W>
static int table_clear(cua_unique_tab *t, cudaStream_t s)
{
    const int64_t blocks = cua_ceil_div(t->cap, 4 * CUA_DEFAULT_THREADS);
    table_init_kernel<W><<<(unsigned)(blocks < 1024 ? blocks : 1024), CUA_DEFAULT_THREADS, 0, s>>>(
        (W *)t->keys, (u64 *)t->counts, (u64 *)t->first, t->cap, (u64 *)t->ctl);
    CUA_CHECK_LAUNCH();
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
// (the vector rung then takes its partition), CUA_EFAR_ if its sample
// guessed too many values for the partition (the vector rung sorts); and
// `range` (where given) the sample's least and greatest words, read back
// with the control words.
#define CUA_EOVERFLOW_ (-100)
#define CUA_EFAR_ (-101)
template <class W, class L>
static int grow_and_build(int64_t n, cua_unique_tab *t, cua_launch *cfg, L launch, int64_t only = 0,
                          u64 *range = nullptr)
{
    cudaStream_t s = cua_stream(cfg);
    int64_t most = 2;
    while (most < 2 * n) most *= 2;
    int64_t cap = TABLE_FIRST_CAP < most ? TABLE_FIRST_CAP : most;
    if (only) cap = only < most ? only : most;
    t->builds = 0;
    for (;;) {
        int st = table_alloc(t, cap, s);
        if (!st) st = table_clear<W>(t, s);
        if (st) return st;
        const table<W> tab{(W *)t->keys, (u64 *)t->counts, (u64 *)t->first, (u64 *)t->ctl, (u64)cap - 1,
                           (u64)cap / 2};
        st = launch(tab);
        if (st) return st;
        readback rb;
        const u64 *ctl;
        CUA_CHECK(rb.take((const u64 *)t->ctl, range ? SAMPLE_CTL_WORDS : CTL_WORDS_CLEARED, s, &ctl));
        CUA_WAIT(cfg);
        t->builds++;
        if (range) range[0] = ctl[SAMPLE_LO], range[1] = ctl[SAMPLE_HI];
        if (!ctl[CUA_UNIQUE_CTL_OVERFLOW]) {
            t->filled = (int64_t)ctl[CUA_UNIQUE_CTL_FILLED];
            t->distinct = t->filled + (ctl[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0);
            return 0;
        }
        if (only) return ctl[CUA_UNIQUE_CTL_OVERFLOW] == 2 ? CUA_EFAR_ : CUA_EOVERFLOW_;
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
// of the keys and two passes over them that find the runs (sort_keys).
// Otherwise pairs (word, index), stable: each run's head holds its smallest
// index; a scan of the heads numbers the runs (the inverse of every
// element).

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
    t->compact = COMPACT_LIST;
    t->builds = 1;
    CUA_WAIT(cfg);
    return 0;
}

// Counts without first indices or the inverse: the keys radix-sorted
// (4- and 8-byte integers as they are -- CUB orders signed ones as their
// words do -- other types as words), then the runs of equal keys found in
// two passes over the sorted keys, a tile of RUN_THREADS x RUN_VECS 16-byte
// vectors a block: each tile's runs are counted and where the last of them
// starts noted (runs_count_kernel), a scan gives every tile the runs before
// it and where the last of those started (its carry), and the finish writes
// each run's value and, at the next run's head, the length of the run
// before straight into the outputs (runs_write_kernel). CUB's
// RunLengthEncode and a copy into the outputs took 365 + 117 us of a 2.09 ms
// call, H200, 2^26 int32 keys in 16.5 M runs; a first version of these
// passes whose blocks each scanned many tiles in turn, 74 + 244 us (one
// load in flight a thread between the scans).
template <class T>
using sort_key = typename std::conditional<std::is_integral<T>::value && sizeof(T) >= 4, T, word_of<T>>::type;

struct run_carry {
    long long runs, last;  // runs that start in a part; where the last of them starts (-1: none)
};
struct run_join {
    __host__ __device__ run_carry operator()(const run_carry &a, const run_carry &b) const
    {
        return {a.runs + b.runs, a.last > b.last ? a.last : b.last};
    }
};

#define RUN_THREADS 256
#define RUN_VECS 2  // consecutive vectors a thread

// The tiles over n sorted keys, and the bytes of t->keep before the sorted
// keys: the tiles' carries and the scan's total.
template <class S>
static int64_t run_tiles(int64_t n)
{
    return cua_ceil_div(cua_ceil_div(n, vec_of<S>::size), RUN_THREADS * RUN_VECS);
}
template <class S>
static size_t run_carry_bytes(int64_t n)
{
    return round_up((size_t)(run_tiles<S>(n) + 1) * sizeof(run_carry));
}

// A thread's RUN_VECS vectors of its block's tile into k (the elements past
// n left out), a bit for each element that starts a run (element 0, or one
// that differs from the element before it), and where its first element is.
template <class S>
__device__ __forceinline__ unsigned run_heads(const S *__restrict__ s, int64_t n,
                                              S (&k)[RUN_VECS * vec_of<S>::size], int64_t *e0)
{
    constexpr int V = vec_of<S>::size, E = RUN_VECS * V;
    const int64_t j0 = ((int64_t)blockIdx.x * RUN_THREADS + threadIdx.x) * RUN_VECS;
    const auto *xv = reinterpret_cast<const typename vec_of<S>::type *>(s);
    *e0 = j0 * V;
    unsigned there = 0;
    if (*e0 + E <= n) {
#pragma unroll
        for (int q = 0; q < RUN_VECS; q++) {
            const auto v = xv[j0 + q];
#pragma unroll
            for (int r = 0; r < V; r++) k[q * V + r] = v.v[r];
        }
        there = (1u << E) - 1;
    } else {
#pragma unroll
        for (int r = 0; r < E; r++)
            if (*e0 + r < n) {
                k[r] = s[*e0 + r];
                there |= 1u << r;
            }
    }
    S before{};
    if (*e0 > 0 && *e0 < n) before = s[*e0 - 1];
    unsigned heads = 0;
#pragma unroll
    for (int r = 0; r < E; r++) {
        if ((there >> r & 1) && (*e0 + r == 0 || k[r] != before)) heads |= 1u << r;
        before = k[r];
    }
    return heads;
}

// A thread's share of its tile's runs: those its heads start, and where the
// last of them starts (e0: its first element).
__device__ __forceinline__ run_carry run_part(unsigned heads, int64_t e0)
{
    return {__popc(heads), heads ? e0 + (31 - __clz(heads)) : -1};
}

// Pass 1: each tile's runs and where its last run starts, into carry[tile]
// (and the scan's identity after the last tile).
template <class S>
__global__ void __launch_bounds__(RUN_THREADS) runs_count_kernel(const S *__restrict__ s, int64_t n,
                                                                  run_carry *carry)
{
    S k[RUN_VECS * vec_of<S>::size];
    int64_t e0;
    const unsigned h = run_heads(s, n, k, &e0);
    using reduce_t = cub::BlockReduce<run_carry, RUN_THREADS>;
    __shared__ typename reduce_t::TempStorage mem;
    const run_carry all = reduce_t(mem).Reduce(run_part(h, e0), run_join());
    if (threadIdx.x == 0) {
        carry[blockIdx.x] = all;
        if (blockIdx.x == gridDim.x - 1) carry[gridDim.x] = run_carry{0, -1};
    }
}

// Pass 2 (the finish): the runs before each thread's elements (a block scan
// from the tile's carry); each run's head gives its value, and the length
// of the run before it (its own position less where that run started); the
// element n - 1 ends the last run. The tile's values and lengths are laid
// out in shared memory and leave in order, a warp's stores to consecutive
// addresses: 229 us against 327 where each head stored its own (H100
// timelines, 2^26 int32 with 2^24 distinct; CUB's RunLengthEncode: 375).
// The length of the run open when the tile starts goes straight out.
template <class T, class S>
__global__ void __launch_bounds__(RUN_THREADS) runs_write_kernel(const S *__restrict__ s, int64_t n,
                                                                  const run_carry *carry, T *values, int64_t *counts)
{
    constexpr int E = RUN_VECS * vec_of<S>::size, TILE = RUN_THREADS * E;
    __shared__ T sval[TILE];
    __shared__ int64_t slen[TILE];
    S k[E];
    int64_t e0;
    const unsigned h = run_heads(s, n, k, &e0);
    using scan_t = cub::BlockScan<run_carry, RUN_THREADS>;
    __shared__ typename scan_t::TempStorage mem;
    run_carry at, tile;
    scan_t(mem).ExclusiveScan(run_part(h, e0), at, run_carry{0, -1}, run_join(), tile);
    const run_carry before = carry[blockIdx.x];
    const long long r0 = before.runs;  // the tile's first run
    at = run_join()(before, at);
#pragma unroll
    for (int r = 0; r < E; r++)
        if (h >> r & 1) {
            const long long e = e0 + r, j = at.runs - r0;
            if constexpr (std::is_same<S, T>::value) sval[j] = k[r];
            else sval[j] = from_word<T>(k[r]);
            if (j > 0) slen[j - 1] = e - at.last;
            else if (counts && at.runs > 0) counts[at.runs - 1] = e - at.last;  // (the run open at the tile's start)
            at = {at.runs + 1, e};
        }
    const bool ends = e0 < n && e0 + E >= n;  // (the thread with element n - 1)
    if (ends) {
        if (at.runs > r0) slen[at.runs - 1 - r0] = n - at.last;
        else if (counts) counts[at.runs - 1] = n - at.last;  // (a run from before the tile)
    }
    const int ended = __syncthreads_or(ends);  // (the tile's arrays are written)
    // The tile's runs: `tile.runs` values; as many lengths but the last, which
    // the next tile's first head ends (or, in the tile of element n - 1, n).
    const long long lens = tile.runs - (ended ? 0 : 1);
    for (long long j = threadIdx.x; j < tile.runs; j += RUN_THREADS) {
        if (values) values[r0 + j] = sval[j];
        if (counts && j < lens) counts[r0 + j] = slen[j];
    }
}

template <class T>
static int sort_keys(const T *x, int64_t n, cua_unique_tab *t, cua_launch *cfg)
{
    using W = word_of<T>;
    using S = sort_key<T>;
    cudaStream_t s = cua_stream(cfg);
    const int64_t tiles = run_tiles<S>(n);
    // Kept for the finish: the tiles' carries and the sorted keys. CUB's
    // scratch for the sort and the scan (one allocation, the larger) goes
    // back before the outputs are made: the sort's is about n keys.
    const S *in = (const S *)x;
    size_t sort_bytes = 0, scan_bytes = 0;
    CUA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, in, (S *)nullptr, n, 0, key_bits<T>(), s));
    CUA_CHECK(cub::DeviceScan::ExclusiveScan(nullptr, scan_bytes, (run_carry *)nullptr, (run_carry *)nullptr,
                                             run_join(), run_carry{0, -1}, tiles + 1, s));
    const size_t cb = run_carry_bytes<S>(n), tb = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
    CUA_CHECK((cudaError_t)cua_cuda_malloc_async(&t->keep, cb + (size_t)n * sizeof(S), s));
    run_carry *carry = (run_carry *)t->keep;
    S *sorted = (S *)((char *)t->keep + cb);
    cua_scratch temp;
    CUA_CHECK(temp.get(tb ? tb : 1, s));
    void *tmp = temp.ptr;
    cua_scratch words;
    int st = 0;
    if constexpr (!std::is_same<S, T>::value) {  // the words first
        CUA_CHECK(words.get((size_t)n * sizeof(W), s));
        st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
        if (st) return st;
        words_kernel<T, unsigned><<<(unsigned)cfg->used_blocks, (unsigned)cfg->used_threads, 0, s>>>(
            x, n, (W *)words.ptr, nullptr);
        CUA_CHECK_LAUNCH();
        in = (const S *)words.ptr;
    }
    cfg->used_blocks = tiles;  // (what the launch record shows: the runs' grid)
    cfg->used_threads = RUN_THREADS;
    CUA_CHECK(cub::DeviceRadixSort::SortKeys(tmp, sort_bytes, in, sorted, n, 0, key_bits<T>(), s));
    runs_count_kernel<S><<<(unsigned)tiles, RUN_THREADS, 0, s>>>(sorted, n, carry);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cub::DeviceScan::ExclusiveScan(tmp, scan_bytes, carry, carry, run_join(), run_carry{0, -1}, tiles + 1,
                                             s));
    readback rb;
    const run_carry *all;
    CUA_CHECK(rb.take(carry + tiles, 1, s, &all));
    CUA_WAIT(cfg);
    t->word = (int)sizeof(W);
    t->distinct = all->runs;
    t->compact = COMPACT_RUNS;
    t->builds = 1;
    return 0;
}

static int unique_SORT(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_dispatch(dtype, [&](auto v) -> int {
        using T = decltype(v);
        // (The runs' passes count in 64 bits, but inputs of 2^31 elements
        // or more are tested on the pairs' path only: they take it.)
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


// ------------------------------------------------ vector's partition

// Many distinct values (vector's one table overflowed; no inverse wanted;
// fewer than 2^32 - 1 elements). One global table would take an L2 atomic per
// element and the sort moves every key four times; instead the keys are
// scattered by the top bits of their hash into P buckets (a radix
// partition: each block counts its chunk's buckets, a scan gives every
// block its run in every bucket, and the block writes its keys there), a
// bucket small enough in distinct values that one block counts it whole in
// a shared-memory table -- every hash-table atomic stays in the SM -- and
// the buckets' distinct keys are then listed one after another. Sorted
// output sorts only those k keys. The keys move through memory four times
// (read to count, read and written to scatter, read into the tables),
// against eight for the sort's four passes.
//
// P comes from the count pass's estimate of the distinct values: a
// HyperLogLog sketch (256 registers named by the top 8 bits of the keys'
// partition words, each the longest run of leading zeros below those bits
// among its keys (part_bits); about 6% error). A bucket is given a table
// where it fills about a quarter to a third of the slots, so the estimate's
// error and the buckets' spread stay far under the half-full limit. A
// bucket that overflows its table anyway, or more distinct values than 1024
// buckets of 2^14 slots hold (about 5.9 million), sends the call to the
// sort.
#define PART_FINE_BITS 12  // the count pass's buckets; P = 2^pbits buckets are sums of 2^(12 - pbits) of them
#define PART_MIN_BITS 8    // at least 256 buckets: the table pass has blocks for every SM
#define PART_MAX_BITS 10   // at most 1024: a tile holds several keys of each bucket to write together
#define SKETCH_BITS 8
#define PART_THREADS 1024    // the count pass
#define PART_VECS 4          // the scatter's 16-byte vectors per thread and tile (4: 550 us against 640
                             // with 2, H100, 10^6 distinct int32, 1024 threads)
#define SCATTER_TILE 8192    // the keys of a part of the scatter's tile (one or two parts: scatter_parts;
                             // its threads: SCATTER_TILE / (PART_VECS * V))
#define PART_COUNT_SPLIT 2  // the count pass's blocks per scatter block (its own blocks are light; with 4-byte
                            // keys' two scatter blocks an SM, two waves: 145.8 us against 144.9 in one, H200)
#define BUCKET_THREADS 1024
#define PART_LOAD 0.3      // the distinct values a bucket's table is sized for, per slot
#define PART_MAX_LOAD 0.35 // ... at most (where the largest tables of the most buckets cannot do better)
#define PLAN_PBITS 0       // the plan's words (part_plan_kernel): log2 of the buckets (0: no partition),
#define PLAN_SLOTS 1       // ... their tables' slots
#define PLAN_WORDS 2
// The partition's control words beside the table's (in the 256 bytes
// before its scratch): the keys all buckets listed (each table block adds
// its own), and the plan, copied there by the runs kernel, so that the
// host's one wait reads them back with the control words in one copy.
#define PART_LISTED (CUA_UNIQUE_CTL_WORDS + 2)
#define PART_PLAN (CUA_UNIQUE_CTL_WORDS + 3)  // (PLAN_WORDS of them)
#define PART_SPLIT (PART_PLAN + PLAN_WORDS)  // the segments' split where the digits allow them (0: not)
#define PART_CTL_WORDS (PART_SPLIT + 1)
static_assert(PART_LISTED >= CTL_WORDS_CLEARED && PART_CTL_WORDS * 8 <= 256, "the partition's words fit beside");

// A key's partition word: its word mixed by murmur3's finalizer (a
// bijection), complemented around it so that only the empty word's key maps
// to the empty word (the finalizer keeps 0 at 0). The scatter writes these
// rather than the keys: the word's top bits name its bucket, its low bits
// its home slot in the bucket's table (no hash left to compute there), and
// the list turns the distinct ones back (part_unword).
template <class W>
__device__ __forceinline__ W part_word(W w)
{
    if constexpr (sizeof(W) == 4) return ~mix32(~w);
    else return ~mix(~w);
}

template <class W>
__device__ __forceinline__ W part_unword(W h)
{
    W k = ~h;  // each step of the finalizer undone, last first
    if constexpr (sizeof(W) == 4) {
        k ^= k >> 16;
        k *= 0x7ed1b41du;  // (the inverses mod 2^32 of its multipliers)
        k ^= (k >> 13) ^ (k >> 26);
        k *= 0xa5cb9243u;
        k ^= k >> 16;
    } else {
        k ^= k >> 33;
        k *= 0x9cb4b2f8129337dbull;  // (mod 2^64)
        k ^= k >> 33;
        k *= 0x4f74430c22a54005ull;
        k ^= k >> 33;
    }
    return ~k;
}

// Sorted output without a sort of the whole list: each distinct key's
// *digit*, one of 2^DIGIT_BITS, never smaller for a greater word, cuts the
// distinct keys into segments of consecutive digits that are sorted each on
// its own (part_segsort_kernel), one after another. The digits are
// linear in the value between the least and greatest words of the vector
// rung's sample (keys outside take the first or the last digit): the
// integers' words shifted, the floats' values scaled (a float's word is not
// linear in its value: uniform values crowd the words of the largest
// exponents). Input whose distinct values crowd a few digits anyway
// (clusters, or a range far wider than most of its values) is sorted whole.
#define DIGIT_BITS 12
#define DIGITS (1u << DIGIT_BITS)
template <class W>
struct digit_map {
    W lo;          // integers: the least word, and the shift that leaves DIGIT_BITS bits of the range
    int shift;
    int floats;    // floats: the value of the least word, and DIGITS over the range of values
    double a, scale;
};

template <class W>
__device__ __forceinline__ unsigned part_digit(W w, const digit_map<W> &m)
{
    constexpr unsigned LAST = DIGITS - 1;
    if (m.floats) {
        using F = typename std::conditional<sizeof(W) == 4, float, double>::type;
        const double x = (double)from_word<F>(w);
        if (isnan(x)) return LAST;  // (the canonical NaN's word is the greatest)
        const double t = (x - m.a) * m.scale;  // (rounding keeps the order; a NaN t, from an infinite or NaN
        return t > 0 ? (t < LAST ? (unsigned)t : LAST) : 0;  // range, makes every digit 0, still in order)
    }
    if (w <= m.lo) return 0;
    const W d = (w - m.lo) >> m.shift;
    return d < LAST ? (unsigned)d : LAST;
}

// The 32 bits of a partition word that place it: its bucket is their top
// bits, its sketch register the top SKETCH_BITS and its run the leading
// zeros below those. (HyperLogLog needs the register and the run from
// disjoint bits; that the bucket shares the register's bits does not
// matter. One hash where the count pass took two: 134 us against 145, H200,
// 2^26 int32 with 10^6 distinct.)
template <class W>
__device__ __forceinline__ unsigned part_bits(W h)
{
    if constexpr (sizeof(W) == 4) return h;
    else return (unsigned)(h >> 32);
}

// The elements of scatter block g's chunk, as (word, index): 16-byte
// vectors [g * per, (g + 1) * per) from the data's first 16-byte boundary
// on, two loads in flight per thread; the last block also takes the
// elements before that boundary and after the last whole vector. The count
// pass splits each chunk among PART_COUNT_SPLIT of its blocks (block
// g * PART_COUNT_SPLIT + c takes part c), so that the two passes count and
// scatter the same elements per chunk.
template <class T, class F>
__device__ __forceinline__ void chunk_keys(const T *__restrict__ x, int64_t n, int64_t per, F &&f)
{
    using VT = typename vec_of<T>::type;
    constexpr int V = vec_of<T>::size;
    const vec_span<T> span(x, n);
    const int64_t head = span.head, nvec = span.nvec;
    const VT *xv = span.xv;
    const int64_t g = blockIdx.x / PART_COUNT_SPLIT, c = blockIdx.x % PART_COUNT_SPLIT;
    const int64_t sub = cua_ceil_div(per, PART_COUNT_SPLIT), end = g * per + per < nvec ? g * per + per : nvec;
    const int64_t lo = g * per + c * sub, hi = lo + sub < end ? lo + sub : end, step = blockDim.x;
    int64_t j = lo + threadIdx.x;
    for (; j + step < hi; j += 2 * step) {
        const VT a = xv[j], b = xv[j + step];
#pragma unroll
        for (int r = 0; r < V; r++) f(to_word(a.v[r]), head + j * V + r);
#pragma unroll
        for (int r = 0; r < V; r++) f(to_word(b.v[r]), head + (j + step) * V + r);
    }
    if (j < hi) {
        const VT a = xv[j];
#pragma unroll
        for (int r = 0; r < V; r++) f(to_word(a.v[r]), head + j * V + r);
    }
    if (blockIdx.x == gridDim.x - 1)  // (the last chunk's last part)
        for (int64_t e = threadIdx.x; e < span.rest(n); e += blockDim.x) {
            const int64_t i = span.element(e);
            f(to_word(x[i]), i);
        }
}

// Pass 1: the block's keys per fine bucket (into hist, 2^12 per block) and
// the sketch (each register's largest run, into the global registers).
// The empty word's key is left to pass 2.
template <class T>
__global__ void __launch_bounds__(PART_THREADS) part_count_kernel(const T *__restrict__ x, int64_t n, int64_t per,
                                                                  unsigned *hist, unsigned *sketch)
{
    using W = word_of<T>;
    __shared__ unsigned fine[1u << PART_FINE_BITS], reg[1u << SKETCH_BITS];
    for (unsigned b = threadIdx.x; b < (1u << PART_FINE_BITS); b += blockDim.x) fine[b] = 0;
    for (unsigned r = threadIdx.x; r < (1u << SKETCH_BITS); r += blockDim.x) reg[r] = 0;
    __syncthreads();
    chunk_keys(x, n, per, [&](W w, int64_t) {
        if (w == empty_word<W>()) return;
        const unsigned h = part_bits(part_word(w));
        atomicAdd(&fine[h >> (32 - PART_FINE_BITS)], 1u);
        // The run: leading zeros of the bits below the register's, plus
        // one (a stop bit caps it at 32 - SKETCH_BITS + 1). Most keys find
        // a longer run already there: a plain read skips their atomic.
        const unsigned r = h >> (32 - SKETCH_BITS);
        const unsigned run = (unsigned)__clz((h << SKETCH_BITS) | (1u << (SKETCH_BITS - 1))) + 1;
        if (run > *(volatile unsigned *)&reg[r]) atomicMax(&reg[r], run);
    });
    __syncthreads();
    for (unsigned b = threadIdx.x; b < (1u << PART_FINE_BITS); b += blockDim.x)
        hist[((size_t)blockIdx.x << PART_FINE_BITS) + b] = fine[b];
    for (unsigned r = threadIdx.x; r < (1u << SKETCH_BITS); r += blockDim.x)
        if (reg[r]) atomicMax(&sketch[r], reg[r]);
}

// The scatter blocks' counts per bucket of P = 2^pbits (the plan's),
// bucket-major (runs[b * blocks + g]: the fine buckets of b in the count
// blocks of chunk g), and 0 after the last up to the most buckets' cells:
// their exclusive scan is where each block writes each bucket's keys, and
// its entry blocks * P the keys in all. (The host queues the grid and the
// scan for the most buckets: it does not wait for the plan.) Its first
// thread also sets the control words (cleared, the listed keys 0, the
// plan copied): a memset and a copy fewer for the host to queue.
__global__ void part_runs_kernel(const unsigned *hist, int64_t blocks, const unsigned *plan, unsigned *runs, u64 *ctl,
                                 unsigned *digits)
{
    if (digits)
        for (int64_t d = cua_global_id(); d < DIGITS; d += cua_grid_stride()) digits[d] = 0;
    const int pbits = (int)plan[PLAN_PBITS];  // (0: no partition; the runs are not read)
    const int64_t cells = pbits ? blocks << pbits : 0, fold = (int64_t)1 << (PART_FINE_BITS - pbits);
    if (cua_global_id() == 0) {
        ctl_init(ctl);
        ctl[PART_LISTED] = 0;
        ctl[PART_SPLIT] = 0;
        for (int w = 0; w < PLAN_WORDS; w++) ctl[PART_PLAN + w] = plan[w];
    }
    for (int64_t e = cua_global_id(); e <= blocks << PART_MAX_BITS; e += cua_grid_stride()) {
        unsigned sum = 0;
        if (e < cells) {
            // (A bucket's fine counts in a count block: `fold` words from a
            // multiple of 4, read 16 bytes at a time.)
            static_assert(PART_FINE_BITS - PART_MAX_BITS >= 2, "a bucket has 4 fine buckets or more");
            const int64_t b = e / blocks, g = e % blocks;
            for (int64_t c = 0; c < PART_COUNT_SPLIT; c++) {
                const uint4 *h = (const uint4 *)(hist + ((g * PART_COUNT_SPLIT + c) << PART_FINE_BITS) + b * fold);
                for (int64_t f = 0; f < fold / 4; f++) {
                    const uint4 q = h[f];
                    sum += q.x + q.y + q.z + q.w;
                }
            }
        }
        runs[e] = sum;
    }
}

// Pass 2, a tile (one or two parts of PART_VECS vectors per thread:
// scatter_parts) at a time: the tile's keys are counted per bucket in
// shared memory (a count's old value is the key's place among its bucket's
// keys in the tile), the counts scanned, the keys laid out in the tile
// bucket by bucket, and then written out in that order, each at its
// bucket's next place in the block's run: a bucket's keys go to
// consecutive addresses, so a warp's store touches a few sectors rather
// than one per key (the first version wrote each key from where it was
// read: 1.7 ms of a 2.7 ms call, H100, 2^26 keys, 10^6 distinct). The empty
// word's key is counted beside, once per block.
template <class W, bool FIRST>
struct part_tile {
    unsigned *at, *count, *start;  // per bucket: next place in the block's run; in the tile: count, start
    W *keys;                       // the tile laid out by bucket (a key's top bits name it)
    W *stage;                      // the earlier part's partition words, where each thread left them
    unsigned *index;
    unsigned *total, *side_count, *side_first;

    __host__ __device__ static size_t bytes(unsigned buckets, unsigned tile, unsigned staged)
    {
        return (size_t)buckets * 12 + (size_t)tile * (sizeof(W) + (FIRST ? 4 : 0)) + (size_t)staged * sizeof(W) + 16;
    }
    __device__ part_tile(unsigned buckets, unsigned tile, unsigned staged)
    {
        keys = (W *)cua_smem;  // the widest first: each array stays aligned
        stage = keys + tile;
        index = (unsigned *)(stage + staged);
        at = index + (FIRST ? tile : 0);
        count = at + buckets;
        start = count + buckets;
        total = start + buckets;
        side_count = total + 1;
        side_first = total + 2;
    }
};

// The scatter's threads a block: a tile of SCATTER_TILE keys, PART_VECS
// vectors a thread. 4-byte keys: 512 threads, two blocks an SM (64
// registers a thread), one loading its tile while the other lays out and
// writes its own (the tile's barriers left the SM without loads in flight):
// the kernel 460 us against 499 for one block of 1024 threads and a
// 16K-key tile (Nsight Compute, H200, 2^26 int32 with 10^6 distinct),
// whole calls the same within the noise (1.12-1.14 ms, alternating
// processes). 8-byte keys: 1024 threads, one block (512 threads and a
// 4K-key tile: 1.71-1.83 ms whole calls of int64 against 1.62).
template <class T>
__host__ __device__ constexpr int scatter_threads()
{
    return SCATTER_TILE / (PART_VECS * vec_of<T>::size);
}

// The most parts of SCATTER_TILE keys a tile may have: a thread's
// registers hold one part, and the earlier part waits in shared memory
// (stage) with its keys' places in 16-bit halves of registers. 4-byte keys
// without first indices take 16K keys a tile where a GPU has room for as
// many blocks an SM that way (two on Hopper: 108 KB each), so that each
// tile's fixed work -- the counts cleared and scanned, five barriers -- is
// paid half as often and its buckets' runs are twice as long: the scatter
// 355-366 us against 390 (H100 timelines, 2^26 int32 with 10^6 distinct).
// (Tiles of 4K keys in four blocks of 256 threads: 560 us.) Others: one
// part.
template <class T, bool FIRST>
__host__ __device__ constexpr int scatter_parts()
{
    return sizeof(T) == 4 && !FIRST ? 2 : 1;
}

template <bool FIRST, int PARTS, class T>
__global__ void __launch_bounds__(scatter_threads<T>(), 1024 / scatter_threads<T>())  // (blocks an SM)
    part_scatter_kernel(const T *__restrict__ x, int64_t n, int64_t per, const unsigned *plan, const unsigned *runs,
                        word_of<T> *keys, unsigned *idx, u64 *ctl)
{
    const int pbits = (int)plan[PLAN_PBITS];
    if (!pbits) return;  // (no partition: the call takes the sort)
    using W = word_of<T>;
    using VT = typename vec_of<T>::type;
    constexpr int V = vec_of<T>::size, K = PART_VECS * V;
    constexpr int THREADS = scatter_threads<T>();
    static_assert(K * THREADS == SCATTER_TILE, "the host sizes the tile's shared memory for SCATTER_TILE keys");
    static_assert(PARTS <= 2 && K <= 32 && PARTS * SCATTER_TILE <= 65536, "one part staged; places in 16 bits");
    using scan_t = cub::BlockScan<unsigned, THREADS>;
    __shared__ typename scan_t::TempStorage scan_mem;
    const unsigned P = 1u << pbits, part = K * THREADS, tid = threadIdx.x;
    part_tile<W, FIRST> s(P, PARTS * part, (PARTS - 1) * part);
    for (unsigned b = tid; b < P; b += THREADS) s.at[b] = runs[(size_t)b * gridDim.x + blockIdx.x];
    if (tid == 0) {
        *s.side_count = 0;
        *s.side_first = ~0u;
    }
    const unsigned each = (P + THREADS - 1) / THREADS;  // buckets a thread scans
    W w[K];        // this thread's keys of the tile's part in hand
    unsigned ok;   // bit e: key e is there
    unsigned held = 0, held_at[(K + 1) / 2];  // the staged part: which keys are there, their places (16 bits each)
    auto bucket_of = [&](W k) { return part_bits(k) >> (32 - pbits); };  // (k: a partition word)
    auto place_of = [](const unsigned *at, int e) { return at[e / 2] >> (16 * (e % 2)) & 0xFFFFu; };
    // One tile of `parts` parts (parts_c: a std::integral_constant); load(r)
    // reads part r's keys into w and ok, index_of(r, e) is key e's index in
    // the input. A key's place among its bucket's keys in the tile takes 16
    // bits of a register, two keys' places a register, and its bucket is its
    // partition word's top bits again where the place is used. With a
    // register a key for its bucket and place, the kernel spilled 24-216
    // bytes a thread past its 64 registers (ptxas, sm_90), and with shared
    // memory taking most of L1 the spills went to L2: 2.3 M local requests in
    // a 436 us scatter (H100 Nsight Compute, 2^26 int32 with 10^6 distinct).
    // Packed, 0-52 bytes spill, and whole calls took 0.967 ms against 1.026
    // (int32) and 1.006 against 1.042 (float32), one H100, alternating
    // processes.
    auto tile_pass = [&](auto parts_c, auto load, auto index_of) {
        constexpr int parts = decltype(parts_c)::value;
        for (unsigned b = tid; b < P; b += THREADS) s.count[b] = 0;
        __syncthreads();
        unsigned placed[(K + 1) / 2];
#pragma unroll
        for (int r = 0; r < parts; r++) {
            load(r);
#pragma unroll
            for (int q = 0; q < (K + 1) / 2; q++) placed[q] = 0;
#pragma unroll
            for (int e = 0; e < K; e++) {
                if (!(ok >> e & 1)) continue;
                if (w[e] == empty_word<W>()) {
                    atomicAdd(s.side_count, 1u);
                    if (FIRST) atomicMin(s.side_first, index_of(r, e));
                    ok &= ~(1u << e);
                    continue;
                }
                w[e] = part_word(w[e]);  // (what is written out)
                placed[e / 2] |= atomicAdd(&s.count[bucket_of(w[e])], 1u) << (16 * (e % 2));
            }
            if (parts > 1 && r + 1 < parts) {  // (the part staged; its bucket is its key's top bits again)
                held = ok;
#pragma unroll
                for (int e = 0; e < K; e++)
                    if (ok >> e & 1) s.stage[e * THREADS + tid] = w[e];
#pragma unroll
                for (int q = 0; q < (K + 1) / 2; q++) held_at[q] = placed[q];
            }
        }
        __syncthreads();
        // Scan the counts (each thread `each` consecutive buckets); the
        // bucket's start in the tile, and its place in the block's run
        // moved on by its count (count[] then holds run place - tile start).
        unsigned mine = 0;
        for (unsigned q = 0; q < each; q++) {
            const unsigned b = tid * each + q;
            if (b < P) mine += s.count[b];
        }
        unsigned before, all;
        scan_t(scan_mem).ExclusiveSum(mine, before, all);
        for (unsigned q = 0; q < each; q++) {
            const unsigned b = tid * each + q;
            if (b >= P) break;
            const unsigned c = s.count[b];
            s.start[b] = before;
            s.count[b] = s.at[b] - before;  // (mod 2^32: the run place of the tile's position p is count[b] + p)
            s.at[b] += c;
            before += c;
        }
        if (tid == 0) *s.total = all;
        __syncthreads();
#pragma unroll
        for (int e = 0; e < K; e++) {
            if (!(ok >> e & 1)) continue;
            const unsigned p = s.start[bucket_of(w[e])] + place_of(placed, e);
            s.keys[p] = w[e];
            if (FIRST) s.index[p] = index_of(parts - 1, e);
        }
        if (parts > 1) {
#pragma unroll
            for (int e = 0; e < K; e++) {
                if (!(held >> e & 1)) continue;
                const W k = s.stage[e * THREADS + tid];
                const unsigned p = s.start[bucket_of(k)] + place_of(held_at, e);
                s.keys[p] = k;
                if (FIRST) s.index[p] = index_of(0, e);
            }
        }
        __syncthreads();
        for (unsigned p = tid; p < *s.total; p += THREADS) {
            const W k = s.keys[p];
            const unsigned d = s.count[bucket_of(k)] + p;
            keys[d] = k;
            if (FIRST) idx[d] = s.index[p];
        }
        __syncthreads();  // the tile's arrays are free again
    };
    const vec_span<T> span(x, n);
    const int64_t head = span.head, nvec = span.nvec;
    const VT *xv = span.xv;
    const int64_t lo = (int64_t)blockIdx.x * per, hi = lo + per < nvec ? lo + per : nvec;
    for (int64_t base = lo; base < hi; base += (int64_t)PARTS * PART_VECS * THREADS) {  // (one bound for the block)
        auto load = [&](int r) {
            ok = 0;
#pragma unroll
            for (int h = 0; h < PART_VECS; h++) {
                const int64_t j = base + r * PART_VECS * THREADS + tid + h * THREADS;
                VT v{};
                if (j < hi) {
                    v = xv[j];
                    ok |= ((1u << V) - 1) << (h * V);
                }
#pragma unroll
                for (int q = 0; q < V; q++) w[h * V + q] = to_word(v.v[q]);
            }
        };
        tile_pass(std::integral_constant<int, PARTS>{}, load, [&](int r, int e) {
            return (unsigned)(head + (base + r * PART_VECS * THREADS + tid + (e / V) * THREADS) * V + e % V);
        });
    }
    if (blockIdx.x == gridDim.x - 1) {  // the elements before the first vector and after the last (fewer than 2V)
        const int64_t rest = span.rest(n);
        auto at_q = [&](int e) { return span.element((int64_t)tid * K + e); };
        auto load = [&](int) {
            ok = 0;
#pragma unroll
            for (int e = 0; e < K; e++) {
                const bool here = (int64_t)tid * K + e < rest;
                w[e] = here ? to_word(x[at_q(e)]) : empty_word<W>();
                ok |= (unsigned)here << e;
            }
        };
        tile_pass(std::integral_constant<int, 1>{}, load, [&](int, int e) { return (unsigned)at_q(e); });
    }
    if (tid == 0 && *s.side_count) side_add<FIRST>(ctl, *s.side_count, *s.side_first);
}

// Pass 3, one block per bucket: its keys counted in a shared-memory table,
// then its distinct keys listed at the bucket's place in lkeys (part_list_at),
// their counts and first indices beside them, and how many into
// found[bucket]. A bucket whose table cannot take a key raises the overflow
// word (the call goes to the sort). The host does not wait for the plan:
// it queues two launches of the most buckets, one whose blocks have the
// memory of tables up to half the largest (two blocks an SM) and one with
// the largest's (one), and only the launch whose range of slots [lo, hi]
// holds the plan's acts (the other returns at once); in it a block past
// the plan's buckets returns too. (One launch with the largest
// tables' memory halved the blocks an SM below about 630K values.)
//
// Most keys are already in the table (a value of 10^6 among 2^26 keys comes
// 67 times), and most of those at their home slot or the next (a quarter
// full, linear probing), so every key first takes a quick look: its home slot
// and, when that holds another key, the next; found, one atomicAdd counts it.
// A key the look misses (its first time, or further along) goes into its
// warp's queue in shared memory, and the warp inserts 32 queued keys at once,
// a lane each, with the table's full protocol (block_table::add_at): the
// rare long probes do not hold up every lane. The keys are partition words,
// so a key's home slot is its own low bits. (H200 Nsight Compute, 2^26
// int32 with 10^6 distinct: probing each lane's keys in turn, divergent,
// issued 239 M warp instructions in 360 us, issue-bound; the look and the
// queues 162 M in 254 us; on partition words, 145 M in 223 us.)
#define TABLE_KEYS 4    // keys a thread loads a round
#define TABLE_QUEUE 64  // a warp's queue: at most 31 waiting and 32 added before it is drained

template <class W, bool FIRST>
__host__ __device__ constexpr size_t part_queue_bytes()
{
    return (size_t)(BUCKET_THREADS / 32) * TABLE_QUEUE * (sizeof(W) + (FIRST ? 4 : 0));
}

// Where bucket b's list starts: b * stride, or (stride 0) where its keys
// start among the partitioned ones -- its distinct keys are no more than
// its keys, so the lists then take no more room than the keys.
__device__ __forceinline__ size_t part_list_at(unsigned b, unsigned stride, const unsigned *runs, int64_t blocks)
{
    return stride ? (size_t)b * stride : runs[b * blocks];
}

template <bool FIRST, class W>
__global__ void __launch_bounds__(BUCKET_THREADS) part_table_kernel(const W *keys, const unsigned *idx,
                                                                  const unsigned *runs, int64_t blocks,
                                                                  const unsigned *plan, unsigned lo, unsigned hi,
                                                                  unsigned stride, W *lkeys, unsigned *lcount,
                                                                  unsigned *lfirst, unsigned *found, u64 *ctl,
                                                                  unsigned *digits, digit_map<W> dm)
{
    const unsigned pbits = plan[PLAN_PBITS], slots = plan[PLAN_SLOTS];
    if (slots < lo || slots > hi) return;  // (the other launch's plan; no plan: slots 0, the first's)
    if (blockIdx.x >= (pbits ? 1u << pbits : 0u)) return;  // (past the plan's buckets: nothing reads their found)
    __shared__ unsigned listed, stop;
    if (threadIdx.x == 0) stop = 0;
    block_table<W, FIRST, unsigned> b(slots);  // (its barrier: `stop` is seen zeroed)
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t tb = block_table_bytes<W, FIRST, unsigned>(slots);  // (a multiple of 8: slots is even)
    W *qk = (W *)(cua_smem + tb) + warp * TABLE_QUEUE;
    unsigned *qi = (unsigned *)(cua_smem + tb + (size_t)(BUCKET_THREADS / 32) * TABLE_QUEUE * sizeof(W)) +
                   warp * TABLE_QUEUE;
    const unsigned s0 = runs[blockIdx.x * blocks], s1 = runs[(blockIdx.x + 1) * blocks];
    unsigned queued = 0;  // (the same in every lane)
    bool full = false;
    // The queue's last `take` keys (at most 32), a lane each.
    auto drain = [&](unsigned take) {
        if (lane < take) {
            const unsigned e = queued - take + lane;
            if (!b.add_at(qk[e], 1u, FIRST ? qi[e] : 0, (unsigned)qk[e] & b.mask)) full = true;
        }
        queued -= take;
        __syncwarp();  // (the entries taken are free again)
    };
    // The warp's rounds: TABLE_KEYS keys a lane, the lanes of a key adjacent
    // (the round's start 64-bit: a run may end near 2^32; the scatter left
    // the empty word out, so it marks a lane with no key). (A lane's keys are
    // BUCKET_THREADS apart, a constant -- both launches have that many
    // threads: its TABLE_KEYS loads take one address and immediate offsets,
    // about 20 instructions a round against about 40 with blockDim's (SASS);
    // the kernel 215.7 us against 218.6, H100 timelines, 2^26 int32 with 10^6
    // distinct.)
    const unsigned len = s1 - s0;
    for (int64_t base = threadIdx.x & ~31u; base < len; base += (int64_t)TABLE_KEYS * BUCKET_THREADS) {
        const unsigned left = len - (unsigned)base;
        const W *kq = keys + s0 + base + lane;
        const unsigned *iq = FIRST ? idx + s0 + base + lane : nullptr;
        W k[TABLE_KEYS];
        unsigned ix[TABLE_KEYS];
#pragma unroll
        for (int r = 0; r < TABLE_KEYS; r++) {
            const bool here = lane + r * BUCKET_THREADS < left;
            k[r] = here ? kq[r * BUCKET_THREADS] : empty_word<W>();
            ix[r] = FIRST && here ? iq[r * BUCKET_THREADS] : 0;
        }
#pragma unroll
        for (int r = 0; r < TABLE_KEYS; r++) {
            bool miss = false;
            if (k[r] != empty_word<W>()) {
                unsigned slot = (unsigned)k[r] & b.mask;
                W got = *(volatile W *)&b.keys[slot];
                if (got != k[r] && got != empty_word<W>()) {  // (an empty home: the key is not there)
                    slot = (slot + 1) & b.mask;
                    got = *(volatile W *)&b.keys[slot];
                }
                if (got == k[r]) {
                    atomicAdd(&b.counts[slot], 1u);
                    if (FIRST) atomicMin(&b.first[slot], ix[r]);
                } else {
                    miss = true;
                }
            }
            const unsigned m = __ballot_sync(0xffffffffu, miss);
            if (m) {
                if (miss) {
                    const unsigned e = queued + __popc(m & ((1u << lane) - 1));
                    qk[e] = k[r];
                    if (FIRST) qi[e] = ix[r];
                }
                queued += __popc(m);
                __syncwarp();
                if (queued >= 32) drain(32);
            }
        }
        // A table that took no more keys: the block stops (its count is
        // thrown away); `stop` tells the other warps.
        if (full) stop = 1;
        if (__any_sync(0xffffffffu, full || *(volatile unsigned *)&stop)) {
            full = true;
            break;
        }
    }
    if (!full) drain(queued);
    if (full) atomicExch((unsigned long long *)&ctl[CUA_UNIQUE_CTL_OVERFLOW], 1ull);
    if (threadIdx.x == 0) listed = 0;
    __syncthreads();  // every key of the run read, `listed` zeroed
    // A warp's filled slots take their places with one atomic (the slots
    // are a whole number of blocks: every lane is here).
    const size_t l0 = part_list_at(blockIdx.x, stride, runs, blocks);
    for (unsigned sl = threadIdx.x; sl <= b.mask; sl += blockDim.x) {
        const bool has = b.counts[sl] != 0;
        const unsigned m = __ballot_sync(0xffffffffu, has);
        unsigned j0 = 0;
        if (lane == 0 && m) j0 = atomicAdd(&listed, (unsigned)__popc(m));
        j0 = __shfl_sync(0xffffffffu, j0, 0);
        if (has) {
            const size_t j = l0 + j0 + __popc(m & ((1u << lane) - 1));
            lkeys[j] = b.keys[sl];
            lcount[j] = b.counts[sl];
            if (FIRST) lfirst[j] = b.first[sl];
            if (digits) atomicAdd(&digits[part_digit(part_unword(b.keys[sl]), dm)], 1u);  // (sorted output)
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        found[blockIdx.x] = listed;
        if (listed) atomicAdd((unsigned long long *)&ctl[PART_LISTED], (unsigned long long)listed);
    }
}

// The buckets' lists one after another: the keys into `out`, and beside
// each where its count and first index wait (src). A block finds where its
// bucket's list goes by summing the lists before it (at most
// 2^PART_MAX_BITS: cheaper than a scan the host would queue).
#define LIST_THREADS 256
template <class W>
__global__ void __launch_bounds__(LIST_THREADS) part_list_kernel(const W *lkeys, unsigned stride, const unsigned *runs,
                                                                 int64_t blocks, const unsigned *found, W *out,
                                                                 unsigned *src)
{
    using sum_t = cub::BlockReduce<unsigned, LIST_THREADS>;
    __shared__ typename sum_t::TempStorage sum_mem;
    __shared__ unsigned before;
    unsigned mine = 0;
    for (unsigned b = threadIdx.x; b < blockIdx.x; b += LIST_THREADS) mine += found[b];
    const unsigned all = sum_t(sum_mem).Sum(mine);
    if (threadIdx.x == 0) before = all;
    __syncthreads();
    const unsigned s0 = (unsigned)part_list_at(blockIdx.x, stride, runs, blocks), d = found[blockIdx.x], p0 = before;
    for (unsigned j = threadIdx.x; j < d; j += LIST_THREADS) {
        out[p0 + j] = part_unword(lkeys[s0 + j]);  // (the table held partition words)
        src[p0 + j] = s0 + j;
    }
}

// The table's counts and first indices in the listed (or sorted) order,
// and the empty word's key, when it occurred, last.
template <class W>
__global__ void part_gather_kernel(const unsigned *src, int64_t k, const unsigned *cnt, const unsigned *idx,
                                   const u64 *ctl, W *keys, u64 *counts, u64 *first)
{
    for (int64_t r = cua_global_id(); r <= k; r += cua_grid_stride()) {
        if (r == k) {
            if (ctl[CUA_UNIQUE_CTL_SIDE_COUNT]) {
                keys[k] = empty_word<W>();
                counts[k] = ctl[CUA_UNIQUE_CTL_SIDE_COUNT];
                if (first) first[k] = ctl[CUA_UNIQUE_CTL_SIDE_FIRST];
            }
            continue;
        }
        counts[r] = cnt[src[r]];
        if (first) first[r] = idx[src[r]];
    }
}

// The segments of sorted output (part_digit), by one block after the table
// pass (the host reads the split it chose with the control words): the
// digits' counts become where each digit's keys start, and segment j starts
// at the first digit's start at or past j * split (seg[j]: the order
// kernel's cursor of segment j, which it leaves at the next segment's start,
// where segment j ends for the segments' sort). A digit whose keys start at e is in
// segment e / split (e is at or past that segment's start, and short of
// the next's). Consecutive digits' starts are at most the largest digit apart, so
// a segment holds less than the split plus the largest digit: the split is
// SEG_CAP (what a block of the segments' sort takes) less the largest
// digit, and 0 (the host sorts the list whole) where that would leave
// less than SEG_MIN_SPLIT (the segments, and seg's room, stay few).
#define SEG_THREADS 512
#define SEG_ITEMS 8
#define SEG_CAP (SEG_THREADS * SEG_ITEMS)
#define SEG_MIN_SPLIT (SEG_CAP / 4)
#define SEG_RADIX_BITS 5  // (5 bits a pass: the ranks' counters 32 KB; 6 would need 64)
#define DIGITS_THREADS 1024
__global__ void __launch_bounds__(DIGITS_THREADS) part_digits_kernel(unsigned *digits, unsigned *seg, u64 *ctl)
{
    constexpr int EACH = DIGITS / DIGITS_THREADS;
    static_assert(EACH * DIGITS_THREADS == DIGITS, "whole digits a thread");
    using scan_t = cub::BlockScan<unsigned, DIGITS_THREADS>;
    using most_t = cub::BlockReduce<unsigned, DIGITS_THREADS>;
    __shared__ union {
        typename scan_t::TempStorage scan;
        typename most_t::TempStorage most;
    } mem;
    __shared__ unsigned start[DIGITS], total, split;
    unsigned c[EACH], e[EACH], most = 0, all = 0;
#pragma unroll
    for (int q = 0; q < EACH; q++) {
        c[q] = digits[threadIdx.x * EACH + q];
        most = c[q] > most ? c[q] : most;
    }
    scan_t(mem.scan).ExclusiveSum(c, e, all);
    __syncthreads();  // (the scan's memory is the reduction's)
    most = most_t(mem.most).Reduce(most, [](unsigned a, unsigned b) { return a > b ? a : b; });  // (thread 0's)
#pragma unroll
    for (int q = 0; q < EACH; q++) start[threadIdx.x * EACH + q] = digits[threadIdx.x * EACH + q] = e[q];
    if (threadIdx.x == 0) {
        total = all;
        split = most + SEG_MIN_SPLIT <= SEG_CAP ? SEG_CAP - most : 0;
        ctl[PART_SPLIT] = split;
    }
    __syncthreads();
    if (!split) return;
    const unsigned segs = (unsigned)cua_ceil_div(total, split);
    for (unsigned j = threadIdx.x; j < segs; j += DIGITS_THREADS) {
        const u64 want = (u64)j * split;
        unsigned lo = 0, hi = DIGITS;  // the first start at or past `want`
        while (lo < hi) {
            const unsigned mid = (lo + hi) / 2;
            if (start[mid] < want) lo = mid + 1;
            else hi = mid;
        }
        seg[j] = lo < DIGITS ? start[lo] : total;
    }
}

// The listed keys (as part_list_kernel lists them) each into its segment,
// a block a bucket, ORDER_CHUNK keys a round, privatized: the block counts
// the round's keys of each segment in shared memory (a key's rank among them
// the old value of that atomicAdd), takes their places with one atomicAdd on
// each segment's cursor (seg: its old value the first place), lays the keys out
// segment by segment in shared memory and writes them from there, so that a
// warp's stores go to runs of consecutive places -- in no fixed order within
// a segment, which the segments' sort makes the keys' own (they are
// distinct). Beside each key goes its count (counts alone) or where its count
// and first index are in the lists (src). (An atomicAdd on a digit's cursor
// for each key: 60 us for 10^6 keys; privatized but each key stored from
// where it was read, 4 of a sector's 32 bytes used: 42 us; H100.) Dynamic
// shared memory: ORDER_CHUNK keys, values and places, and three words a
// segment (order_smem).
#define ORDER_THREADS 512
#define ORDER_EACH 4
#define ORDER_CHUNK (ORDER_THREADS * ORDER_EACH)
template <class W>
static size_t order_smem(int64_t segs)
{
    return (size_t)ORDER_CHUNK * (sizeof(W) + 8) + (size_t)segs * 12;
}

template <bool FIRST, class W>
__global__ void __launch_bounds__(ORDER_THREADS) part_order_kernel(const W *lkeys, const unsigned *lcount,
                                                                   unsigned stride, const unsigned *runs,
                                                                   int64_t blocks, const unsigned *found,
                                                                   const unsigned *start, unsigned split,
                                                                   unsigned segs, unsigned *seg, digit_map<W> dm,
                                                                   W *out, unsigned *val)
{
    using scan_t = cub::BlockScan<unsigned, ORDER_THREADS>;
    __shared__ typename scan_t::TempStorage scan_mem;
    __shared__ unsigned carry;
    W *kw = (W *)cua_smem;  // (first: the widest)
    unsigned *kv = (unsigned *)(kw + ORDER_CHUNK), *kp = kv + ORDER_CHUNK, *got = kp + ORDER_CHUNK, *loc = got + segs,
             *at = loc + segs;
    const unsigned s0 = (unsigned)part_list_at(blockIdx.x, stride, runs, blocks), d = found[blockIdx.x];
    for (unsigned base = 0; base < d; base += ORDER_CHUNK) {  // (the same rounds for every thread)
        for (unsigned j = threadIdx.x; j < segs; j += ORDER_THREADS) got[j] = 0;
        if (threadIdx.x == 0) carry = 0;
        __syncthreads();
        W w[ORDER_EACH];
        unsigned sg[ORDER_EACH], r[ORDER_EACH];
#pragma unroll
        for (int e = 0; e < ORDER_EACH; e++) {
            const unsigned j = base + e * ORDER_THREADS + threadIdx.x;
            sg[e] = ~0u;
            if (j < d) {
                w[e] = part_unword(lkeys[s0 + j]);
                sg[e] = start[part_digit(w[e], dm)] / split;
                r[e] = atomicAdd(&got[sg[e]], 1u);
            }
        }
        __syncthreads();
        // Where each segment's keys go in shared memory (an exclusive scan,
        // ORDER_THREADS segments a step) and in the output (the cursors).
        for (unsigned b = 0; b < segs; b += ORDER_THREADS) {
            const unsigned j = b + threadIdx.x, c = j < segs ? got[j] : 0;
            unsigned e = 0, all = 0;
            scan_t(scan_mem).ExclusiveSum(c, e, all);
            if (j < segs) {
                loc[j] = carry + e;
                if (c) at[j] = atomicAdd(&seg[j], c);
            }
            __syncthreads();  // (every thread has read carry, and the scan's memory is free)
            if (threadIdx.x == 0) carry += all;
            __syncthreads();
        }
#pragma unroll
        for (int e = 0; e < ORDER_EACH; e++) {
            if (sg[e] == ~0u) continue;
            const unsigned i = loc[sg[e]] + r[e], j = base + e * ORDER_THREADS + threadIdx.x;
            kw[i] = w[e];
            kv[i] = FIRST ? s0 + j : lcount[s0 + j];
            kp[i] = at[sg[e]] + r[e];
        }
        __syncthreads();
        const unsigned m = d - base < ORDER_CHUNK ? d - base : ORDER_CHUNK;
        for (unsigned i = threadIdx.x; i < m; i += ORDER_THREADS) {
            out[kp[i]] = kw[i];
            val[kp[i]] = kv[i];
        }
        __syncthreads();  // (the next round's counts and layout reuse the memory)
    }
}

// One segment a block (at most SEG_CAP keys: part_digits_kernel's verdict),
// radix-sorted in shared memory on the bits its keys do not share (those
// where a key differs from the first), and written with its counts (beside
// the keys, or with first indices gathered from the lists, as
// part_gather_kernel does) at its place in the output; block 0 adds the
// empty word's key last.
template <bool FIRST, class W>
__global__ void __launch_bounds__(SEG_THREADS, sizeof(W) == 4 ? 2 : 1)
    part_segsort_kernel(const W *in, const unsigned *beside, const unsigned *end, int64_t k, const unsigned *cnt,
                        const unsigned *idx, const u64 *ctl, W *keys, u64 *counts, u64 *first)
{
    using sort_t = cub::BlockRadixSort<W, SEG_THREADS, SEG_ITEMS, unsigned, SEG_RADIX_BITS>;
    using or_t = cub::BlockReduce<W, SEG_THREADS>;
    __shared__ union {
        typename sort_t::TempStorage sort;
        typename or_t::TempStorage any;
    } mem;
    __shared__ W differ;
    if (blockIdx.x == 0 && threadIdx.x == 0 && ctl[CUA_UNIQUE_CTL_SIDE_COUNT]) {
        keys[k] = empty_word<W>();
        counts[k] = ctl[CUA_UNIQUE_CTL_SIDE_COUNT];
        if (FIRST) first[k] = ctl[CUA_UNIQUE_CTL_SIDE_FIRST];
    }
    const unsigned s0 = blockIdx.x ? end[blockIdx.x - 1] : 0, size = end[blockIdx.x] - s0;
    if (size == 0) return;  // (the whole block: a digit larger than the split left this segment none)
    // Blocked: the padding (the empty word, greater than every listed key
    // in any bits) comes after every key, and the sort is stable.
    const W w0 = in[s0];
    W key[SEG_ITEMS], any = 0;
    unsigned val[SEG_ITEMS];
#pragma unroll
    for (int q = 0; q < SEG_ITEMS; q++) {
        const unsigned i = threadIdx.x * SEG_ITEMS + q;
        key[q] = i < size ? in[s0 + i] : empty_word<W>();
        val[q] = i < size ? beside[s0 + i] : 0;
        any |= i < size ? key[q] ^ w0 : 0;
    }
    any = or_t(mem.any).Reduce(any, [](W a, W b) { return a | b; });
    if (threadIdx.x == 0) differ = any;
    __syncthreads();  // (and the reduction's memory is the sort's)
    int bits = 1;
    if constexpr (sizeof(W) == 4) bits = differ ? 32 - __clz(differ) : 1;
    else bits = differ ? 64 - __clzll((long long)differ) : 1;
    sort_t(mem.sort).SortBlockedToStriped(key, val, 0, bits);
#pragma unroll
    for (int q = 0; q < SEG_ITEMS; q++) {
        const unsigned r = q * SEG_THREADS + threadIdx.x;
        if (r < size) {
            keys[s0 + r] = key[q];
            counts[s0 + r] = FIRST ? cnt[val[q]] : val[q];
            if (FIRST) first[s0 + r] = idx[val[q]];
        }
    }
}

// The distinct values a sketch's registers say were seen (HyperLogLog's
// estimate, with linear counting where most registers are still 0), by one
// warp: each lane sums 8 registers, the lanes' sums join in a fixed order
// (the same estimate every call).
__device__ double sketch_estimate(const unsigned *reg)
{
    constexpr unsigned M = 1u << SKETCH_BITS;
    static_assert(M % 32 == 0, "a lane takes M / 32 registers");
    const unsigned lane = threadIdx.x & 31;
    double sum = 0;
    int zeros = 0;
    for (unsigned r = lane; r < M; r += 32) {
        sum += ldexp(1.0, -(int)reg[r]);
        zeros += reg[r] == 0;
    }
    for (int o = 16; o > 0; o /= 2) {
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
        zeros += __shfl_xor_sync(0xffffffffu, zeros, o);
    }
    const double m = (double)M, e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    return e <= 2.5 * m && zeros ? m * log(m / zeros) : e;
}

// The buckets (2^pbits) and their tables' slots for about `d` distinct
// values: the fewest buckets (from 256) whose tables of at most `most`
// slots take them at PART_LOAD, and then the smallest table that does (at
// up to PART_MAX_LOAD). False: more distinct values than the partition
// takes. Fewer buckets make the scatter's runs longer (more keys of a
// bucket a tile) at the price of larger tables: at 10^6 distinct int32
// keys, 256 buckets of 2^14 slots took 307 us to scatter and 213 for the
// tables against 462 and 171 for 512 buckets of 2^13 (H200; whole calls
// 0.90-0.92 ms against 1.00-1.05), int64 keys 1.32 ms against 1.41.
// (Tables of 12288 slots, two blocks an SM where one of 2^14 has it alone:
// the tables 192 us against 213, whole calls no faster; not kept.)
__device__ bool part_shape(double d, unsigned most, int *pbits, unsigned *slots)
{
    int pb = PART_MIN_BITS;
    while (pb < PART_MAX_BITS && d / (double)(1u << pb) > PART_LOAD * most) pb++;
    const double per = d / (double)(1u << pb);
    unsigned sl = 2048;
    while (sl < most && per > PART_LOAD * sl) sl *= 2;
    if (per > PART_MAX_LOAD * sl) return false;
    *pbits = pb;
    *slots = sl;
    return true;
}

// The partition's shape, chosen on the GPU from the count pass's sketch
// (one warp), so that the host queues the rest of the partition behind the
// count pass without waiting for it (a wait there left the GPU idle for
// 56 us of a 1.05 ms call: H100 timeline, 2^26 int32, 10^6 distinct).
// plan[PLAN_PBITS] = log2 of the buckets, or 0 where the estimate is more
// than the partition takes: the scatter and the tables then return at once
// (the runs kernel still clears what the runs' scan reads), and the host, reading
// the plan back, takes the sort.
// (Its warp: sketch_estimate's lanes.)
__global__ void part_plan_kernel(const unsigned *sketch, unsigned most, unsigned *plan)
{
    const double d = sketch_estimate(sketch);
    int pbits = 0;
    unsigned slots = 0;
    if (threadIdx.x == 0) {
        if (!part_shape(d, most, &pbits, &slots)) pbits = 0, slots = 0;
        plan[PLAN_PBITS] = (unsigned)pbits;
        plan[PLAN_SLOTS] = slots;
    }
}

// The partition's first pass and what it leaves for the rest (part_build):
// the scatter's grid, the largest table a block may have, and scratch for
// the sketch, the plan and the fine counts. `ready`: the count pass and the
// plan are queued; false: this GPU's blocks cannot hold the scatter's
// tiles.
struct part_state {
    bool ready = false;
    int64_t blocks = 0, per = 0;
    unsigned most = 0;
    int parts = 1;  // the scatter's tile: parts of SCATTER_TILE keys (scatter_parts)
    cua_scratch mem;
    unsigned *hist = nullptr, *plan = nullptr;
};

// The scatter's shared memory for tiles of `parts` parts, with room for the
// most buckets.
template <class W, bool FIRST>
static size_t scatter_smem(unsigned parts)
{
    return part_tile<W, FIRST>::bytes(1u << PART_MAX_BITS, parts * SCATTER_TILE, (parts - 1) * SCATTER_TILE);
}

// The scatter's grid with tiles of PARTS parts: the blocks that can be
// resident (0: its arrays do not fit a block).
template <bool FIRST, int PARTS, class T>
static int scatter_grid(int64_t *blocks)
{
    using W = word_of<T>;
    bool fits = false;
    *blocks = 0;
    int st = cua_smem_fits(part_scatter_kernel<FIRST, PARTS, T>, scatter_smem<W, FIRST>(PARTS), &fits);
    if (st || !fits) return st;
    return cua_max_resident_blocks(part_scatter_kernel<FIRST, PARTS, T>, scatter_threads<T>(),
                                   scatter_smem<W, FIRST>(PARTS), blocks);
}

template <class T, bool FIRST>
static int part_count(const T *x, int64_t n, cudaStream_t s, part_state *ps)
{
    using W = word_of<T>;
    constexpr int V = vec_of<T>::size;
    // The largest table a block of the table pass may have beside its warps'
    // queues (its room: cua_smem_room). On Hopper's 227 KB the queues cost no
    // table size; on GPUs of 99 KB a block (sm_86, sm_89) they halve it for
    // 8-byte keys and for 4-byte keys with first indices (2^12 slots, not
    // 2^13: about half the distinct values before the call goes to the sort;
    // those GPUs were not measured).
    size_t room = 0;
    int st = cua_smem_room(part_table_kernel<FIRST, W>, &room);
    if (st) return st;
    unsigned most = 1u << 14;
    while (most > 2048 && block_table_bytes<W, FIRST, unsigned>(most) + part_queue_bytes<W, FIRST>() > room)
        most /= 2;
    // The scatter's grid: as many blocks as can be resident with its
    // largest tile arrays, each with a chunk of the input (which
    // PART_COUNT_SPLIT blocks of the count pass count), in tiles of two
    // parts where that keeps as many blocks. (A GPU whose blocks cannot
    // have the arrays of one part takes the sort: 44 KB for 4-byte keys,
    // 76 KB for 8-byte keys or with first indices, 108 KB for both, at 1024
    // buckets.)
    int64_t blocks = 0;
    st = scatter_grid<FIRST, 1, T>(&blocks);
    if (st) return st;
    if (blocks < 1) return 0;
    if constexpr (scatter_parts<T, FIRST>() == 2) {
        int64_t two = 0;
        st = scatter_grid<FIRST, 2, T>(&two);
        if (st) return st;
        if (two >= blocks) ps->parts = 2;
    }
    ps->blocks = blocks;
    ps->per = cua_ceil_div(n / V > 0 ? n / V : 1, blocks);
    ps->most = most;
    // Scratch: the sketch (256 registers), the plan, the fine counts (2^12
    // a count block).
    constexpr size_t SKETCH = 1u << SKETCH_BITS, HEAD = SKETCH + 64;  // (words; the plan in the 64)
    static_assert(PLAN_WORDS <= 64, "the plan fits its words");
    static_assert(HEAD % 4 == 0, "the fine counts start 16-byte aligned (part_runs_kernel reads them so)");
    const int64_t count_blocks = blocks * PART_COUNT_SPLIT;
    CUA_CHECK(ps->mem.get(HEAD * 4 + ((size_t)count_blocks * 4 << PART_FINE_BITS), s));
    unsigned *sketch = (unsigned *)ps->mem.ptr;
    ps->plan = sketch + SKETCH;
    ps->hist = sketch + HEAD;
    CUA_CHECK(cudaMemsetAsync(sketch, 0, SKETCH * 4, s));
    part_count_kernel<T><<<(unsigned)count_blocks, PART_THREADS, 0, s>>>(x, n, ps->per, ps->hist, sketch);
    CUA_CHECK_LAUNCH();
    part_plan_kernel<<<1, 32, 0, s>>>(sketch, most, ps->plan);
    CUA_CHECK_LAUNCH();
    ps->ready = true;
    return 0;
}

// The digits of sorted output (part_digit) between the sample's least and
// greatest words.
template <class T>
static digit_map<word_of<T>> digits_of(const u64 *range)
{
    using W = word_of<T>;
    digit_map<W> m{};
    m.lo = (W)range[0];
    m.floats = std::is_floating_point<T>::value;
    if constexpr (std::is_floating_point<T>::value) {
        m.a = (double)from_word<T>((W)range[0]);
        m.scale = (double)DIGITS / ((double)from_word<T>((W)range[1]) - m.a);  // (inf or NaN: see part_digit)
    } else {
        const W span = (W)range[1] > m.lo ? (W)range[1] - m.lo : 0;
        int bits = 0;
        while (bits < (int)(8 * sizeof(W)) && (span >> bits) != 0) bits++;
        m.shift = bits > DIGIT_BITS ? bits - DIGIT_BITS : 0;
    }
    return m;
}

// The rest of the partition, queued behind the count pass without a wait
// (the kernels read the plan: ps): a compact table in the wanted order
// (t->compact), or *done false (nothing wrong: too many distinct values or
// a bucket that overflowed) for the caller to take the sort. What the plan
// sizes is sized for the most buckets and the largest tables (the runs,
// the grids; the lists where the input has more keys than they take); the
// memory is allocated and the kernels queued even when the plan turns out
// to be no partition. The host waits once, for the distinct keys' number,
// before it lists and sorts them. Each allocation and each memset
// is a call the host makes while the GPU, between the few long kernels,
// waits for it: the memory up to that wait is one allocation.
template <class T, bool FIRST>
static int part_build(const T *x, int64_t n, cua_unique_tab *t, cua_launch *cfg, part_state &ps, const u64 *range,
                      bool *done)
{
    using W = word_of<T>;
    cudaStream_t s = cua_stream(cfg);
    *done = false;
    const int64_t blocks = ps.blocks, PM = (int64_t)1 << PART_MAX_BITS;
    // The table pass's two launches (part_table_kernel): tables of up to
    // half the largest, and the largest.
    const unsigned half = ps.most / 2;
    const size_t small_smem = block_table_bytes<W, FIRST, unsigned>(half) + part_queue_bytes<W, FIRST>(),
                 large_smem = block_table_bytes<W, FIRST, unsigned>(ps.most) + part_queue_bytes<W, FIRST>();
    int st = cua_allow_smem(part_table_kernel<FIRST, W>, large_smem);
    if (st) return st;
    // The buckets' lists: a bucket's table takes half its slots, and claims
    // racing past that limit one more per thread at most (`stride` a
    // bucket, room for the most buckets with the largest tables); and a
    // bucket lists no more keys than it has, so an input of no more keys
    // than that room lists each bucket where its keys start (stride 0).
    const int64_t widest = ps.most / 2 + BUCKET_THREADS < ps.most ? ps.most / 2 + BUCKET_THREADS : ps.most;
    const unsigned stride = n > PM * widest ? (unsigned)widest : 0;
    const int64_t list_most = stride ? PM * widest : n;
    // Sorted output from the sample's range: the digits' counts and the
    // segments' starts (part_digits_kernel).
    const bool digits = (t->want & CUA_UNIQUE_SORTED) && range;
    const digit_map<W> dm = digits ? digits_of<T>(range) : digit_map<W>{};
    size_t temp = 0;  // (CUB's size: nothing is queued)
    CUA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp, (unsigned *)nullptr, (unsigned *)nullptr, blocks * PM + 1,
                                            s));
    // Control words; the runs (one past the most buckets' cells) and the
    // lists' lengths (found: one a bucket); the partitioned keys and their
    // indices (n each); the lists (keys, counts, first indices: `list_most`
    // each); CUB's.
    size_t off = 0;
    auto carve = [&](size_t bytes) { const size_t at = off; off += round_up(bytes); return at; };
    const size_t o_runs = carve((size_t)(blocks * PM + 1) * 4), o_found = carve((size_t)PM * 4),
                 o_keys = carve((size_t)n * sizeof(W)),
                 o_idx = FIRST ? carve((size_t)n * 4) : 0, o_lkeys = carve((size_t)list_most * sizeof(W)),
                 o_lcount = carve((size_t)list_most * 4), o_lfirst = FIRST ? carve((size_t)list_most * 4) : 0,
                 o_digits = digits ? carve((size_t)DIGITS * 4) : 0,
                 o_seg = digits ? carve((size_t)(list_most / SEG_MIN_SPLIT + 1) * 4) : 0,
                 o_temp = carve(temp ? temp : 1);
    cua_scratch mem;
    CUA_CHECK(mem.get(256 + off, s));
    u64 *ctl = (u64 *)mem.ptr;
    char *p = (char *)mem.ptr + 256;
    unsigned *runs = (unsigned *)(p + o_runs), *found = (unsigned *)(p + o_found);
    W *keys = (W *)(p + o_keys), *lkeys = (W *)(p + o_lkeys);
    unsigned *idx = FIRST ? (unsigned *)(p + o_idx) : nullptr, *lcount = (unsigned *)(p + o_lcount),
             *lfirst = FIRST ? (unsigned *)(p + o_lfirst) : nullptr;
    unsigned *dig = digits ? (unsigned *)(p + o_digits) : nullptr, *seg = digits ? (unsigned *)(p + o_seg) : nullptr;
    void *tmp = p + o_temp;
    part_runs_kernel<<<(unsigned)cua_ceil_div(blocks * PM + 1, 256), 256, 0, s>>>(ps.hist, blocks, ps.plan, runs, ctl,
                                                                                   dig);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, temp, runs, runs, blocks * PM + 1, s));
    auto scatter = [&](auto parts) {
        constexpr int PARTS = decltype(parts)::value;
        part_scatter_kernel<FIRST, PARTS, T><<<(unsigned)blocks, scatter_threads<T>(), scatter_smem<W, FIRST>(PARTS),
                                               s>>>(x, n, ps.per, ps.plan, runs, keys, idx, ctl);
    };
    if constexpr (scatter_parts<T, FIRST>() == 2) {
        if (ps.parts == 2) scatter(std::integral_constant<int, 2>{});
        else scatter(std::integral_constant<int, 1>{});
    } else {
        scatter(std::integral_constant<int, 1>{});
    }
    CUA_CHECK_LAUNCH();
    part_table_kernel<FIRST, W><<<(unsigned)PM, BUCKET_THREADS, small_smem, s>>>(
        keys, idx, runs, blocks, ps.plan, 0, half, stride, lkeys, lcount, lfirst, found, ctl, dig, dm);
    CUA_CHECK_LAUNCH();
    part_table_kernel<FIRST, W><<<(unsigned)PM, BUCKET_THREADS, large_smem, s>>>(
        keys, idx, runs, blocks, ps.plan, half + 1, ps.most, stride, lkeys, lcount, lfirst, found, ctl, dig, dm);
    CUA_CHECK_LAUNCH();
    if (digits) {
        part_digits_kernel<<<1, DIGITS_THREADS, 0, s>>>(dig, seg, ctl);
        CUA_CHECK_LAUNCH();
    }
    readback rb;
    const u64 *host;  // (the control words, the keys listed and the plan: one copy)
    CUA_CHECK(rb.take(ctl, PART_CTL_WORDS, s, &host));
    CUA_WAIT(cfg);
    const u64 pbits = host[PART_PLAN + PLAN_PBITS];
    if (!pbits || host[CUA_UNIQUE_CTL_OVERFLOW]) return 0;  // too many values, or a bucket overflowed
    const int64_t P = (int64_t)1 << pbits;
    const int64_t k = (int64_t)host[PART_LISTED], with_side = host[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0;
    if (k > list_most) return CUA_EINTERNAL;
    // The listed keys and where their counts are, twice for sorted output
    // (the sort's in and out), and the sort's scratch: sized by k. Or, where
    // the digits cut the keys into short segments, the keys in digit order
    // and their segments sorted, into the table.
    const bool sorted = (t->want & CUA_UNIQUE_SORTED) && k > 1;
    const int64_t split = digits ? (int64_t)host[PART_SPLIT] : 0, segs = split ? cua_ceil_div(k, split) : 0;
    bool segments = sorted && split;
    if (segments) {  // (a GPU whose blocks cannot have the layout's memory sorts the list whole)
        st = cua_smem_fits(part_order_kernel<FIRST, W>, order_smem<W>(segs), &segments);
        if (st) return st;
    }
    if (segments) {
        off = 0;
        const size_t o_ordered = carve((size_t)k * sizeof(W)), o_from = carve((size_t)k * 4);
        cua_scratch lists;
        CUA_CHECK(lists.get(off, s));
        t->word = (int)sizeof(W);
        st = table_alloc(t, k + with_side, s);
        if (st) return st;
        W *ordered = (W *)((char *)lists.ptr + o_ordered);
        unsigned *from = (unsigned *)((char *)lists.ptr + o_from);
        const size_t osmem = order_smem<W>(segs);  // (cua_smem_fits raised the kernel's ceiling to the room)
        part_order_kernel<FIRST, W><<<(unsigned)P, ORDER_THREADS, osmem, s>>>(
            lkeys, lcount, stride, runs, blocks, found, dig, (unsigned)split, (unsigned)segs, seg, dm, ordered,
            from);
        CUA_CHECK_LAUNCH();
        part_segsort_kernel<FIRST, W><<<(unsigned)segs, SEG_THREADS, 0, s>>>(
            ordered, from, seg, k, lcount, lfirst, ctl, (W *)t->keys, (u64 *)t->counts, (u64 *)t->first);
        CUA_CHECK_LAUNCH();  // (the scratch goes back in stream order, after the kernels that read it)
        t->distinct = k + with_side;
        t->compact = COMPACT_LIST;
        t->builds++;
        *done = true;
        return 0;
    }
    size_t sort_bytes = 0;
    unsigned *no_src = nullptr;
    if (sorted)
        CUA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (W *)nullptr, (W *)nullptr, no_src, no_src, k,
                                                  0, key_bits<T>(), s));
    off = 0;
    const size_t o_listed = sorted ? carve((size_t)(k + 1) * sizeof(W)) : 0, o_src = carve((size_t)(k + 1) * 4),
                 o_src2 = sorted ? carve((size_t)(k + 1) * 4) : 0, o_sort = carve(sort_bytes ? sort_bytes : 1);
    cua_scratch lists;
    CUA_CHECK(lists.get(off, s));
    t->word = (int)sizeof(W);
    st = table_alloc(t, k + with_side, s);
    if (st) return st;
    char *q = (char *)lists.ptr;
    W *listed_keys = sorted ? (W *)(q + o_listed) : (W *)t->keys;
    unsigned *src = (unsigned *)(q + o_src), *src_sorted = (unsigned *)(q + o_src2);
    part_list_kernel<W><<<(unsigned)P, LIST_THREADS, 0, s>>>(lkeys, stride, runs, blocks, found, listed_keys, src);
    CUA_CHECK_LAUNCH();
    if (sorted) {  // only the distinct keys are sorted
        CUA_CHECK(cub::DeviceRadixSort::SortPairs(q + o_sort, sort_bytes, listed_keys, (W *)t->keys, src, src_sorted, k,
                                                  0, key_bits<T>(), s));
        src = src_sorted;
    }
    part_gather_kernel<W><<<(unsigned)cua_ceil_div(k + 1, 256), 256, 0, s>>>(src, k, lcount, lfirst, ctl, (W *)t->keys,
                                                                             (u64 *)t->counts, (u64 *)t->first);
    CUA_CHECK_LAUNCH();  // (the scratch goes back in stream order, after the kernels that read it)
    t->distinct = k + with_side;
    t->compact = COMPACT_LIST;
    t->builds++;
    *done = true;
    return 0;
}

// The vector rung: one table of 2^14 slots, built over a prefix of the
// input (2^16 elements) and then the rest by a second launch on the same
// table; where it overflows (more than about 2^13 distinct keys) -- seen by
// the second launch's blocks as they start, so the rest is not read, or
// proved by a sample of the input before the table is built (inputs of
// 2^20 elements or more of 2 bytes or more: sample_kernel) -- the partition
// by hash above, and where that cannot run (the inverse wanted, 2^32 - 1
// elements or more, more distinct values than its buckets take, or more
// than the sample guesses it takes) rung 1's sort. (Every one-table rung
// measured slower than the sort
// with that many distinct values -- H100, 2^26 keys, 10^6 distinct: the sort
// 2.0 ms, the one-table rungs 4.0 to 5.4 ms -- and so did a first partition
// whose buckets were sized by elements rather than by distinct values:
// 2^10 to 2^14 buckets, 4.6 to 7.4 ms.)
#define VECTOR_PREFIX ((int64_t)1 << 16)
#define VECTOR_SAMPLE_FROM ((int64_t)1 << 20)  // the inputs sampled first (sample_kernel)
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
            cudaStream_t s = cua_stream(cfg);
            const bool sampling = sizeof(T) > 1 && n >= VECTOR_SAMPLE_FROM;  // (bytes: at most 256 values)
            u64 range[2] = {0, 0}, *sampled = sampling ? range : nullptr;  // (the sample's least and greatest words)
            st = grow_and_build<W>(
                n, t, cfg,
                [&](const table<W> &tab) -> int {
                    if (sampling) {
                        // (+ 1: the empty word's key, counted beside, may have set a bit)
                        sample_kernel<T><<<SAMPLE_BLOCKS, SAMPLE_THREADS, 0, s>>>(xs, n, (unsigned)tab.limit + 1,
                                                                                 tab.ctl);
                        CUA_CHECK_LAUNCH();
                    }
                    vector_kernel<F, T><<<pblocks, threads, smem, s>>>(xs, prefix, 0, tab, slots);
                    CUA_CHECK_LAUNCH();
                    if (n > prefix) {
                        vector_kernel<F, T><<<(unsigned)cfg->used_blocks, threads, smem, s>>>(
                            xs + prefix, n - prefix, prefix, tab, slots);
                        CUA_CHECK_LAUNCH();
                    }
                    return 0;
                },
                FIRST_CAP, sampled);
            if (st != CUA_EOVERFLOW_ && st != CUA_EFAR_) return st;
            [[maybe_unused]] const bool far = st == CUA_EFAR_;  // (the sample's guess: too many values for the partition)
            table_release(t, s);
            // (The count pass queued behind the first table, gated on its
            // overflow word, saves that table's wait but not the host's
            // calls the GPU waits on: H100, in one process, alternating, 2^26
            // int32: 1.032 ms against 1.036 at 10^6 distinct, and 0.350-0.376
            // against 0.322-0.328 at 10^3, where it is not needed.)
            if constexpr (sizeof(T) >= 4) {  // (narrower keys have at most 2^16 values: the sort)
                if (!far && !(t->want & CUA_UNIQUE_INVERSE) && n < (int64_t)UINT32_MAX) {
                    part_state ps;
                    st = part_count<T, F>(xs, n, s, &ps);
                    if (st) return st;
                    bool done = false;
                    if (ps.ready)  // (not done: no table made)
                        st = part_build<T, F>(xs, n, t, cfg, ps, sampled, &done);
                    if (st || done) return st;
                }
            }
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
    if (t->compact == COMPACT_RUNS) {  // the sorted keys' runs (sort_keys): their own grid
        using S = sort_key<T>;
        runs_write_kernel<T, S><<<(unsigned)run_tiles<S>(n), RUN_THREADS, 0, s>>>(
            (const S *)((char *)t->keep + run_carry_bytes<S>(n)), n, (const run_carry *)t->keep, (T *)out->values,
            out->counts);
        CUA_CHECK_LAUNCH();
        CUA_WAIT(cfg);
        return 0;
    }
    cua_launch grid = *cfg;
    grid.blocks = grid.threads = 0;
    int st = cua_default_config(&grid, t->compact ? t->distinct : (n > t->cap ? n : t->cap), CUA_DEFAULT_THREADS);
    if (st) return st;
    const unsigned blocks = (unsigned)grid.used_blocks, threads = (unsigned)grid.used_threads;
    const bool want_inverse = (t->want & CUA_UNIQUE_INVERSE) && !t->compact;
    if (t->compact) {  // already compact and in order (the sort rung's pairs, the partition)
        outputs_kernel<T><<<blocks, threads, 0, s>>>((const W *)t->keys, (const u64 *)t->counts, (const u64 *)t->first,
                                                    nullptr, nullptr, t->distinct, 0, (T *)out->values, out->index,
                                                    out->counts, nullptr);
        CUA_CHECK_LAUNCH();
        CUA_WAIT(cfg);
        return 0;
    }
    // The occupied slots, listed in slot order (k of them, and the side
    // cell when it counted anything: the build read both back already).
    const int64_t k = t->filled, with_side = t->distinct - t->filled;
    if (with_side != 0 && with_side != 1) return CUA_EINTERNAL;
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
    {{"vector", 5, "16-byte loads into block tables of 1024 threads, one table of 2^14 slots; past 2^13 distinct values, a radix partition by hash into shared-memory tables", 0},
     unique_VECTOR},
};
extern "C" const cua_ladder cua_cuda_unique_ladder = CUA_LADDER(unique_rows);
