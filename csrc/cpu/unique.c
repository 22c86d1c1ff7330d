/* unique.c -- np.unique on the CPU: cuda/unique.cu's ladder with OpenMP
 * threads and C11 atomics, under the same names.
 *
 *  1. sort            the reference: every key (with its index, when first
 *                     indices or the inverse are wanted) radix-sorted, 8
 *                     bits a pass (passes whose digit is one value for every
 *                     key skipped); runs of equal keys are the values.
 *  2. global          one open-addressing table shared by the team: a
 *                     compare-exchange claims an empty slot, fetch_add
 *                     counts, a compare-exchange loop keeps the least first
 *                     index. Every element an atomic on a shared cache line.
 *  3. shared          a private table per logical block (plain stores: one
 *                     OS thread runs a block) in front of the shared one,
 *                     merged into it once; a private table at its load limit
 *                     sends new keys to the shared table.
 *  4. warp_aggregated 32 consecutive elements of a block's share combined
 *                     first (a short scan for an equal key: the CPU has no
 *                     match instruction), one atomic insert per distinct key
 *                     of the 32.
 *  5. vector          the fast rung: a private table per OS thread sized
 *                     for its cache (no atomics; 2^12 slots growing to
 *                     2^14; 4-byte keys held in 32 bits; chunks of the
 *                     input taken in turn), merged once; where a thread's
 *                     chunks have more distinct keys than that table
 *                     takes, the call switches to a radix partition: the
 *                     keys are scattered by a digit of their value
 *                     (vmap) or, where a sample crowds the digits, their
 *                     hash's top bits into
 *                     buckets of about 2^15 elements (2^14 for keys held
 *                     in 64 bits; write-combined: a cache line of a
 *                     bucket's keys at a time, streamed past the cache),
 *                     and each bucket is counted by one thread in a table
 *                     that stays in cache
 *                     (a key and its count in one line: wide keys a slot
 *                     of two words, at most a quarter full; narrow ones in
 *                     groups of four keys beside their counts, compared a
 *                     group at once, at most half full; its elements in
 *                     index order: a key's first element is its first
 *                     index); with digits, each bucket's distinct
 *                     keys are sorted there, and the lists in bucket order
 *                     are the sorted values.
 *
 * Keys are cuatomic_abi.h's order-keeping words, held in 64 bits by rungs
 * 1-4 and the shared table (a 4-byte key's word never is the all-ones
 * empty mark there: only int64's and uint64's largest values go to the
 * side cell); vector's own tables hold 4-byte keys in 32 bits, so there
 * uint32's and int32's largest values, too, are counted beside them. Tables
 * grow by four and are built again when one passes half full (rungs 2-4),
 * as on the GPU. The finish sorts only the distinct keys, where no rung
 * sorted them: MSD on the top 8 bits where they differ, then in cache. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Loops compiled twice on x86-64 with GCC, the x86-64-v3 clone (AVX2,
 * BMI2) chosen at load time where the CPU has it, as vector.c's are: the
 * vector loops' lanes, and in the tables' scalar loops shifts by a
 * variable of one instruction (shrx) and broadcasts of one. Only these
 * functions are cloned: a helper they call that is not inlined runs its
 * default build. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_CLONES
#endif

#define EMPTY UINT64_MAX
/* cua_unique_tab.compact: a hash table; sorted keys with their runs; a
 * list of distinct keys; a list already in key order (the finish sorts
 * nothing); the partition's lists in place (`keep`: a parts, below), read
 * by the finish in the order it writes them. */
enum { TABLE = 0, RUNS = 1, LIST = 2, SORTED_LIST = 3, PARTS = 4 };

/* ---------------------------------------------------------------- keys */

/* (Selects, not branches: the loops that call it vectorize.) */
static inline uint32_t word_f32(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    b = v == 0.0f ? 0 : b;
    b = v != v ? 0x7FC00000u : b;
    return b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u); /* negative: ~b; else the sign set */
}

static inline uint64_t word_f64(double v)
{
    uint64_t b;
    if (v == 0.0) b = 0;
    else if (v != v) b = 0x7FF8000000000000ull;
    else memcpy(&b, &v, 8);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}

/* The words of x[lo, hi) into w: uint64_t words, or (wide 0: elements of
 * up to 4 bytes) uint32_t ones. A typed loop per dtype and width. */
static WIDE_CLONES void to_keys(const void *x, int dtype, int64_t lo, int64_t hi, void *w, int wide)
{
    const int64_t m = hi - lo;
    uint64_t *w64 = w;
    uint32_t *w32 = w;
#define LOOP(T, expr)                                                       \
    do {                                                                    \
        const T *p = (const T *)x + lo;                                     \
        if (wide)                                                           \
            for (int64_t i = 0; i < m; i++) w64[i] = (expr);                \
        else                                                                \
            for (int64_t i = 0; i < m; i++) w32[i] = (uint32_t)(expr);      \
    } while (0)
    switch (dtype) {
    case CUA_BOOL: LOOP(uint8_t, p[i] != 0); break; /* any nonzero byte is True */
    case CUA_UINT8: LOOP(uint8_t, p[i]); break;
    case CUA_INT8: LOOP(uint8_t, (uint8_t)(p[i] ^ 0x80u)); break;
    case CUA_UINT16: LOOP(uint16_t, p[i]); break;
    case CUA_INT16: LOOP(uint16_t, (uint16_t)(p[i] ^ 0x8000u)); break;
    case CUA_UINT32: LOOP(uint32_t, p[i]); break;
    case CUA_INT32: LOOP(uint32_t, p[i] ^ 0x80000000u); break;
    case CUA_UINT64: LOOP(uint64_t, p[i]); break;
    case CUA_INT64: LOOP(uint64_t, p[i] ^ 0x8000000000000000ull); break;
    case CUA_FLOAT32: LOOP(float, word_f32(p[i])); break;
    case CUA_FLOAT64: LOOP(double, word_f64(p[i])); break;
    default: break;
    }
#undef LOOP
}

static void to_words(const void *x, int dtype, int64_t lo, int64_t hi, uint64_t *w)
{
    to_keys(x, dtype, lo, hi, w, 1);
}

/* Element j of `out` (dtype) from its word. (Inlined: from_words' loops
 * take it with a constant dtype, and vectorize.) */
static inline __attribute__((always_inline)) void from_word(uint64_t w, int dtype, void *out, int64_t j)
{
    switch (dtype) {
    case CUA_BOOL:
    case CUA_UINT8: ((uint8_t *)out)[j] = (uint8_t)w; break;
    case CUA_INT8: ((uint8_t *)out)[j] = (uint8_t)(w ^ 0x80u); break;
    case CUA_UINT16: ((uint16_t *)out)[j] = (uint16_t)w; break;
    case CUA_INT16: ((uint16_t *)out)[j] = (uint16_t)(w ^ 0x8000u); break;
    case CUA_UINT32: ((uint32_t *)out)[j] = (uint32_t)w; break;
    case CUA_INT32: ((uint32_t *)out)[j] = (uint32_t)w ^ 0x80000000u; break;
    case CUA_UINT64: ((uint64_t *)out)[j] = w; break;
    case CUA_INT64: ((uint64_t *)out)[j] = w ^ 0x8000000000000000ull; break;
    case CUA_FLOAT32: {
        const uint32_t b = (uint32_t)w, bits = (b & 0x80000000u) ? b ^ 0x80000000u : ~b;
        memcpy((float *)out + j, &bits, 4);
        break;
    }
    case CUA_FLOAT64: {
        const uint64_t bits = (w & 0x8000000000000000ull) ? w ^ 0x8000000000000000ull : ~w;
        memcpy((double *)out + j, &bits, 8);
        break;
    }
    default: break;
    }
}

/* from_word for m words w, to out[j, j + m): a loop for each dtype, which
 * vectorizes (the partition's finish writes 10^6 values this way). */
static WIDE_CLONES void from_words(const uint64_t *w, int64_t m, int dtype, void *out, int64_t j)
{
#define LOOP(D)                                                             \
    case D:                                                                 \
        for (int64_t i = 0; i < m; i++) from_word(w[i], D, out, j + i);     \
        break
    switch (dtype) {
        LOOP(CUA_BOOL);
        LOOP(CUA_UINT8);
        LOOP(CUA_INT8);
        LOOP(CUA_UINT16);
        LOOP(CUA_INT16);
        LOOP(CUA_UINT32);
        LOOP(CUA_INT32);
        LOOP(CUA_UINT64);
        LOOP(CUA_INT64);
        LOOP(CUA_FLOAT32);
        LOOP(CUA_FLOAT64);
    default: break;
    }
#undef LOOP
}

/* The bits of a word that can differ between keys of dtype. */
static int key_bits(int dtype)
{
    return dtype == CUA_FLOAT32 ? 32 : dtype == CUA_FLOAT64 ? 64 : 8 * (int)cua_dtype_size(dtype);
}

/* murmur3's 64-bit finalizer, as on the GPU. */
static inline uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

/* murmur3's 32-bit finalizer: the hash buckets of 32-bit keys in the
 * partition (keys_digits32), in 32-bit lanes that vectorize. */
static inline uint32_t mix32(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x85ebca6bu;
    k ^= k >> 13;
    k *= 0xc2b2ae35u;
    k ^= k >> 16;
    return k;
}

/* The private tables' and buckets' hash: one multiply (Fibonacci hashing),
 * the top bits taken -- cheaper than mix() in the loops that must run at
 * memory speed; those tables are small and never shared. */
static inline uint64_t fib(uint64_t k, int bits)
{
    return (k * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

/* Words are made a piece at a time, into a buffer on the stack. */
#define PIECE 1024

/* ------------------------------------------------------ the shared table */

typedef struct {
    _Atomic uint64_t *keys, *counts, *first, *ctl;
    uint64_t mask, limit;
} table;

static table table_of(const cua_unique_tab *t)
{
    table tab = {(_Atomic uint64_t *)t->keys, (_Atomic uint64_t *)t->counts, (_Atomic uint64_t *)t->first,
                 (_Atomic uint64_t *)t->ctl, (uint64_t)t->cap - 1, (uint64_t)t->cap / 2};
    return tab;
}

static inline int overflowed(const table *t)
{
    return atomic_load_explicit(&t->ctl[CUA_UNIQUE_CTL_OVERFLOW], memory_order_relaxed) != 0;
}

static inline void atomic_min_u64(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
    /* A failed exchange reloads `old`: retry only while v would still lower it. */
    while (v < old && !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static inline void side_add(const table *t, uint64_t count, uint64_t index, int first)
{
    atomic_fetch_add_explicit(&t->ctl[CUA_UNIQUE_CTL_SIDE_COUNT], count, memory_order_relaxed);
    if (first) atomic_min_u64(&t->ctl[CUA_UNIQUE_CTL_SIDE_FIRST], index);
}

/* cuda/unique.cu's table_add with C11 atomics: the slot the hash names,
 * then the next ones; an empty slot claimed by a compare-exchange (a lost
 * one leaves the winner's key in `k`), a slot with the key counted. */
static inline void table_add(const table *t, uint64_t w, uint64_t count, uint64_t index, int first)
{
    if (w == EMPTY) {
        side_add(t, count, index, first);
        return;
    }
    uint64_t slot = mix(w) & t->mask;
    for (uint64_t probes = 0; probes <= t->mask; probes++, slot = (slot + 1) & t->mask) {
        uint64_t k = atomic_load_explicit(&t->keys[slot], memory_order_relaxed);
        if (k == EMPTY) {
            if (overflowed(t)) return; /* no new key in a table past its limit (cuda/unique.cu) */
            if (atomic_compare_exchange_strong_explicit(&t->keys[slot], &k, w, memory_order_relaxed,
                                                        memory_order_relaxed)) {
                k = w;
                if (atomic_fetch_add_explicit(&t->ctl[CUA_UNIQUE_CTL_FILLED], 1, memory_order_relaxed) + 1 > t->limit)
                    atomic_store_explicit(&t->ctl[CUA_UNIQUE_CTL_OVERFLOW], 1, memory_order_relaxed);
            }
        }
        if (k == w) {
            atomic_fetch_add_explicit(&t->counts[slot], count, memory_order_relaxed);
            if (first) atomic_min_u64(&t->first[slot], index);
            return;
        }
    }
    atomic_store_explicit(&t->ctl[CUA_UNIQUE_CTL_OVERFLOW], 1, memory_order_relaxed);
}

/* The slot of key w in a finished table, or -1. */
static inline int64_t table_find(const cua_unique_tab *t, uint64_t w)
{
    const uint64_t *keys = (const uint64_t *)t->keys, mask = (uint64_t)t->cap - 1;
    uint64_t slot = mix(w) & mask;
    for (uint64_t probes = 0; probes <= mask; probes++, slot = (slot + 1) & mask) {
        if (keys[slot] == w) return (int64_t)slot;
        if (keys[slot] == EMPTY) return -1;
    }
    return -1;
}

/* The partition's lists kept for the finish (PARTS): the threads' lists,
 * and bucket u's entries as thread where[3u]'s from where[3u + 1],
 * where[3u + 2] of them, at offset[u] of the outputs; then the side cell. */
typedef struct {
    struct vlist_s *lists;
    int64_t *where, *offset, buckets;
    int team, wide, first;
    uint64_t side_count, side_first;
} parts;

static void parts_free(parts *pt);

static void table_release(cua_unique_tab *t)
{
    if (t->keep) parts_free(t->keep);
    t->keep = NULL;
    free(t->keys);
    free(t->counts);
    free(t->first);
    free(t->ctl);
    t->keys = NULL;
    t->counts = t->first = t->ctl = NULL;
    t->cap = 0;
}

/* A cleared table of cap slots (or a compact one: `fill` 0 leaves the keys
 * unset). CUA_ENOMEM when the memory is not there. */
static int table_alloc(cua_unique_tab *t, int64_t cap, int fill)
{
    const int first = (t->want & CUA_UNIQUE_FIRST) != 0;
    const size_t c = cap > 0 ? (size_t)cap : 1;
    t->word = 8;
    t->cap = cap;
    t->keys = malloc(c * 8);
    t->counts = malloc(c * 8);
    t->first = first ? malloc(c * 8) : NULL;
    t->ctl = calloc(CUA_UNIQUE_CTL_WORDS, 8);
    if (!t->keys || !t->counts || (first && !t->first) || !t->ctl) {
        table_release(t);
        return CUA_ENOMEM;
    }
    t->ctl[CUA_UNIQUE_CTL_SIDE_FIRST] = UINT64_MAX;
    if (fill) {
        uint64_t *k = t->keys;
        for (int64_t s = 0; s < cap; s++) k[s] = EMPTY;
        memset(t->counts, 0, (size_t)cap * 8);
        if (first) memset(t->first, 0xFF, (size_t)cap * 8);
    }
    return 0;
}

/* ------------------------------------------------------ private tables */

/* A table of one OS thread or logical block: plain stores. It starts at
 * `slots` and doubles (a rehash) while it is under `most` slots; a new key
 * past the limit of a table of `most` slots is refused. */
typedef struct {
    uint64_t *keys, *counts, *first;
    uint64_t mask, filled, limit, most;
    int bits;
} ptable;

static int ptable_alloc(ptable *p, uint64_t slots, int first)
{
    p->keys = malloc(slots * 8);
    p->counts = calloc(slots, 8);
    p->first = first ? malloc(slots * 8) : NULL;
    p->mask = slots - 1;
    p->limit = slots / 2;
    p->bits = 0;
    while (((uint64_t)1 << p->bits) < slots) p->bits++;
    if (!p->keys || !p->counts || (first && !p->first)) return CUA_ENOMEM;
    for (uint64_t s = 0; s < slots; s++) p->keys[s] = EMPTY;
    if (first) memset(p->first, 0xFF, slots * 8);
    return 0;
}

static int ptable_init(ptable *p, uint64_t slots, uint64_t most, int first)
{
    p->filled = 0;
    p->most = most;
    return ptable_alloc(p, slots, first);
}

static void ptable_free(ptable *p)
{
    free(p->keys);
    free(p->counts);
    free(p->first);
    p->keys = p->counts = p->first = NULL;
}

/* Twice the slots, every key moved; 0 when the memory is not there (the
 * table is unchanged). */
static int ptable_grow(ptable *p)
{
    ptable q = *p;
    if (ptable_alloc(&q, 2 * (p->mask + 1), p->first != NULL)) {
        ptable_free(&q);
        return 0;
    }
    for (uint64_t s = 0; s <= p->mask; s++)
        if (p->keys[s] != EMPTY) {
            uint64_t y = fib(p->keys[s], q.bits);
            while (q.keys[y] != EMPTY) y = (y + 1) & q.mask;
            q.keys[y] = p->keys[s];
            q.counts[y] = p->counts[s];
            if (q.first) q.first[y] = p->first[s];
        }
    q.filled = p->filled;
    ptable_free(p);
    *p = q;
    return 1;
}

/* Count `count` of key w (not EMPTY) first seen at `index`; 0 when the key
 * is new and the table is at its limit. */
static inline int ptable_add(ptable *p, uint64_t w, uint64_t count, uint64_t index)
{
    uint64_t slot = fib(w, p->bits);
    for (;; slot = (slot + 1) & p->mask) {
        const uint64_t k = p->keys[slot];
        if (k == w) break;
        if (k == EMPTY) {
            if (p->filled >= p->limit) {
                if (p->mask + 1 >= p->most || !ptable_grow(p)) return 0;
                return ptable_add(p, w, count, index);
            }
            p->keys[slot] = w;
            p->filled++;
            if (p->first) p->first[slot] = index;
            break;
        }
    }
    p->counts[slot] += count;
    if (p->first && index < p->first[slot]) p->first[slot] = index;
    return 1;
}

static void ptable_merge(const ptable *p, const table *t)
{
    for (uint64_t s = 0; s <= p->mask; s++)
        if (p->counts[s]) table_add(t, p->keys[s], p->counts[s], p->first ? p->first[s] : 0, p->first != NULL);
}

/* ---------------------------------------------------------- the builds */

/* One attempt at a table: the rung's pass over x into t (cleared). */
typedef int (*build_fn)(const void *x, int64_t n, int dtype, const table *t, int first, cua_launch *cfg);

#define FIRST_CAP ((int64_t)1 << 14)
#define GROWTH 4

/* Build in tables of growing size until one holds every key under its limit
 * (cuda/unique.cu's grow_and_build). */
static int grow_and_build(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, build_fn build)
{
    int64_t most = 2;
    while (most < 2 * n) most *= 2;
    int64_t cap = FIRST_CAP < most ? FIRST_CAP : most;
    t->builds = 0;
    for (;;) {
        int st = table_alloc(t, cap, 1);
        if (st) return st;
        const table tab = table_of(t);
        st = build(x, n, dtype, &tab, (t->want & CUA_UNIQUE_FIRST) != 0, cfg);
        t->builds++;
        if (st) return st;
        if (cfg->interrupted) return CUA_EINTR;
        if (!t->ctl[CUA_UNIQUE_CTL_OVERFLOW]) {
            t->distinct = (int64_t)t->ctl[CUA_UNIQUE_CTL_FILLED] + (t->ctl[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0);
            t->compact = TABLE;
            return 0;
        }
        if (cap >= most) return CUA_EINTERNAL;
        table_release(t);
        cap = cap * GROWTH < most ? cap * GROWTH : most;
    }
}

/* The logical grid (blocks of the launch configuration, each a contiguous
 * share) on the team. */
static int grid_team(cua_launch *cfg, int64_t n)
{
    cua_cpu_default_config(cfg, n);
    return cua_cpu_team(cfg, n, cfg->blocks);
}

static int build_global(const void *x, int64_t n, int dtype, const table *t, int first, cua_launch *cfg)
{
    const int64_t blocks = cfg->used_blocks;
#pragma omp parallel for schedule(static) num_threads(cfg->used_team)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t lo, hi;
        uint64_t w[PIECE];
        cua_cpu_share(n, blocks, b, &lo, &hi);
        for (int64_t a = lo; a < hi && !overflowed(t) && !cua_cpu_stop(cfg); a += PIECE) {
            const int64_t e = a + PIECE < hi ? a + PIECE : hi;
            to_words(x, dtype, a, e, w);
            for (int64_t i = a; i < e; i++) table_add(t, w[i - a], 1, (uint64_t)i, first);
        }
    }
    return CUA_CPU_DONE(cfg);
}

/* The private tables of rung 3: 2^12 slots (96 KiB with first indices). */
#define BLOCK_SLOTS 4096

static int build_shared(const void *x, int64_t n, int dtype, const table *t, int first, cua_launch *cfg)
{
    const int64_t blocks = cfg->used_blocks;
    int st = 0;
#pragma omp parallel for schedule(static) num_threads(cfg->used_team)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t lo, hi;
        uint64_t w[PIECE];
        ptable p;
        cua_cpu_share(n, blocks, b, &lo, &hi);
        if (ptable_init(&p, BLOCK_SLOTS, BLOCK_SLOTS, first)) {
#pragma omp atomic write
            st = CUA_ENOMEM;
            ptable_free(&p);
            continue;
        }
        for (int64_t a = lo; a < hi && !overflowed(t) && !cua_cpu_stop(cfg); a += PIECE) {
            const int64_t e = a + PIECE < hi ? a + PIECE : hi;
            to_words(x, dtype, a, e, w);
            for (int64_t i = a; i < e; i++) {
                const uint64_t k = w[i - a];
                if (k == EMPTY || !ptable_add(&p, k, 1, (uint64_t)i)) table_add(t, k, 1, (uint64_t)i, first);
            }
        }
        ptable_merge(&p, t);
        ptable_free(&p);
    }
    return st ? st : CUA_CPU_DONE(cfg);
}

static int build_warp(const void *x, int64_t n, int dtype, const table *t, int first, cua_launch *cfg)
{
    const int64_t blocks = cfg->used_blocks;
#pragma omp parallel for schedule(static) num_threads(cfg->used_team)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t lo, hi;
        uint64_t w[PIECE];
        cua_cpu_share(n, blocks, b, &lo, &hi);
        for (int64_t a = lo; a < hi && !overflowed(t) && !cua_cpu_stop(cfg); a += PIECE) {
            const int64_t e = a + PIECE < hi ? a + PIECE : hi;
            to_words(x, dtype, a, e, w);
            for (int64_t g = a; g < e; g += CUA_CPU_WARP) {
                const int64_t ge = g + CUA_CPU_WARP < e ? g + CUA_CPU_WARP : e;
                uint64_t key[CUA_CPU_WARP], count[CUA_CPU_WARP], at[CUA_CPU_WARP];
                int d = 0;
                for (int64_t i = g; i < ge; i++) { /* the group's keys in order of first appearance */
                    int j = 0;
                    while (j < d && key[j] != w[i - a]) j++;
                    if (j == d) {
                        key[d] = w[i - a];
                        count[d] = 0;
                        at[d++] = (uint64_t)i;
                    }
                    count[j]++;
                }
                for (int j = 0; j < d; j++) table_add(t, key[j], count[j], at[j], first);
            }
        }
    }
    return CUA_CPU_DONE(cfg);
}

static int unique_rung(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, build_fn build)
{
    grid_team(cfg, n);
    return grow_and_build(x, n, dtype, t, cfg, build);
}

static int unique_GLOBAL(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_rung(x, n, dtype, t, cfg, build_global);
}

static int unique_SHARED(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_rung(x, n, dtype, t, cfg, build_shared);
}

static int unique_WARP_AGGREGATED(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    return unique_rung(x, n, dtype, t, cfg, build_warp);
}

/* ------------------------------------------------------------ radix sort */

/* Sort n words (with their values `v`, may be NULL) by their bits [lo, hi),
 * LSD, 8 bits a pass, stable, between the arrays and the scratch (tk/tv, n
 * each) in turn. One read counts the digits of every pass; a pass whose
 * digit is the same for every word is skipped. The result ends in k/v.
 * The counts live on the stack: as a _Thread_local array in this shared
 * library they were reached through __tls_get_addr at every increment, and
 * sorting 10^6 keys took 100 ms instead of a few. */
/* Each thread's counts per bin (count[th * bins + b]) become where its
 * elements of bin b go: after every earlier bin, and after earlier threads'
 * share of b (a stable scatter); start[b] is bin b's first place and
 * start[bins] the total. */
static void team_runs(int64_t *count, int team, int64_t bins, int64_t *start)
{
    int64_t at = 0;
    for (int64_t b = 0; b < bins; b++) {
        start[b] = at;
        for (int th = 0; th < team; th++) {
            const int64_t m = count[(int64_t)th * bins + b];
            count[(int64_t)th * bins + b] = at;
            at += m;
        }
    }
    start[bins] = at;
}

#define RADIX_BITS 8
#define RADIX (1 << RADIX_BITS)
static WIDE_CLONES void radix_sort(uint64_t *k, int64_t *v, int64_t n, int lo, int hi, uint64_t *tk, int64_t *tv)
{
    int64_t count[64 / RADIX_BITS][RADIX];
    const int passes = (hi - lo + RADIX_BITS - 1) / RADIX_BITS;
    uint64_t *src = k, *dst = tk;
    int64_t *vsrc = v, *vdst = tv;
    memset(count, 0, sizeof count);
    for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < passes; p++) count[p][(k[i] >> (lo + p * RADIX_BITS)) & (RADIX - 1)]++;
    for (int p = 0; p < passes; p++) {
        const int shift = lo + p * RADIX_BITS;
        int64_t *c = count[p], at = 0;
        int uniform = 0;
        for (int d = 0; d < RADIX; d++) { /* counts to starts */
            const int64_t m = c[d];
            uniform |= m == n;
            c[d] = at;
            at += m;
        }
        if (uniform) continue;
        if (vsrc)
            for (int64_t i = 0; i < n; i++) {
                const int64_t to = c[(src[i] >> shift) & (RADIX - 1)]++;
                dst[to] = src[i];
                vdst[to] = vsrc[i];
            }
        else
            for (int64_t i = 0; i < n; i++) dst[c[(src[i] >> shift) & (RADIX - 1)]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
        int64_t *u = vsrc;
        vsrc = vdst;
        vdst = u;
    }
    if (src != k) {
        memcpy(k, src, (size_t)n * 8);
        if (v) memcpy(v, vsrc, (size_t)n * 8);
    }
}

static int thread_num(void);
static int thread_count(void);

/* The finish's sort of the distinct keys (10^6 of them and more): the
 * LSD passes above each move every key through memory (8 MiB a pass at
 * 10^6), which took 45 ms on the 2-core dev machine. Here one MSD pass on
 * the top 8 bits where the keys differ scatters them into buckets that fit
 * in cache, and each bucket is sorted there (again MSD while it is big,
 * then LSD); the top level's buckets are shared among the team. Same
 * arguments and result as radix_sort. */
#define CACHE_SORT ((int64_t)1 << 15)

static int msd_digit(const uint64_t *k, int64_t n, int lo, int hi)
{
    uint64_t diff = 0;
    for (int64_t i = 0; i < n; i++) diff |= k[i] ^ k[0];
    if (hi < 64) diff &= ((uint64_t)1 << hi) - 1;
    diff >>= lo;
    if (!diff) return -1; /* every key the same in [lo, hi) */
    int top = lo;
    while (diff) {
        diff >>= 1;
        top++;
    }
    return top - RADIX_BITS < lo ? lo : top - RADIX_BITS; /* the digit: bits [shift, top) */
}

static void msd_sort(uint64_t *k, int64_t *v, int64_t n, int lo, int hi, uint64_t *tk, int64_t *tv)
{
    if (n <= CACHE_SORT) {
        radix_sort(k, v, n, lo, hi, tk, tv);
        return;
    }
    const int shift = msd_digit(k, n, lo, hi);
    if (shift < 0) return;
    int64_t start[RADIX + 1] = {0};
    for (int64_t i = 0; i < n; i++) start[((k[i] >> shift) & (RADIX - 1)) + 1]++;
    for (int d = 0; d < RADIX; d++) start[d + 1] += start[d];
    int64_t at[RADIX];
    memcpy(at, start, sizeof at);
    for (int64_t i = 0; i < n; i++) {
        const int64_t to = at[(k[i] >> shift) & (RADIX - 1)]++;
        tk[to] = k[i];
        if (v) tv[to] = v[i];
    }
    for (int d = 0; d < RADIX; d++) /* each bucket sorted in tk, with k as its scratch */
        if (start[d + 1] - start[d] > 1)
            msd_sort(tk + start[d], v ? tv + start[d] : NULL, start[d + 1] - start[d], lo, shift, k + start[d],
                     v ? v + start[d] : NULL);
    memcpy(k, tk, (size_t)n * 8);
    if (v) memcpy(v, tv, (size_t)n * 8);
}

/* msd_sort's top level on the team: the counts and the scatter by thread
 * shares, then the buckets one by one to whichever thread is free. */
static void team_sort(uint64_t *k, int64_t *v, int64_t n, int lo, int hi, uint64_t *tk, int64_t *tv, int team)
{
    if (n <= CACHE_SORT || team < 2) {
        msd_sort(k, v, n, lo, hi, tk, tv);
        return;
    }
    const int shift = msd_digit(k, n, lo, hi);
    if (shift < 0) return;
    int64_t *count = calloc((size_t)team * RADIX, 8), start[RADIX + 1];
    if (!count) {
        msd_sort(k, v, n, lo, hi, tk, tv);
        return;
    }
#pragma omp parallel num_threads(team)
    {
        const int me = thread_num(), nt = thread_count(); /* the rows of threads not started stay zero */
        int64_t a, b;
        int64_t *c = count + (int64_t)me * RADIX;
        cua_cpu_share(n, nt, me, &a, &b);
        for (int64_t i = a; i < b; i++) c[(k[i] >> shift) & (RADIX - 1)]++;
#pragma omp barrier
#pragma omp single
        team_runs(count, team, RADIX, start); /* digit d's run for thread th */
        for (int64_t i = a; i < b; i++) {
            const int64_t to = c[(k[i] >> shift) & (RADIX - 1)]++;
            tk[to] = k[i];
            if (v) tv[to] = v[i];
        }
#pragma omp barrier
#pragma omp for schedule(dynamic, 1)
        for (int d = 0; d < RADIX; d++) {
            const int64_t s = start[d], m = start[d + 1] - s;
            if (m > 1) msd_sort(tk + s, v ? tv + s : NULL, m, lo, shift, k + s, v ? v + s : NULL);
            memcpy(k + s, tk + s, (size_t)m * 8);
            if (v) memcpy(v + s, tv + s, (size_t)m * 8);
        }
    }
    free(count);
}

/* 1. sort: every key and its index sorted; runs of equal keys. */
static int unique_SORT(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    cfg->used_blocks = 1;
    cfg->used_threads = 1;
    cfg->used_team = 1;
    const int pairs = (t->want & (CUA_UNIQUE_FIRST | CUA_UNIQUE_INVERSE)) != 0;
    uint64_t *k = malloc((size_t)n * 8), *tk = malloc((size_t)n * 8);
    int64_t *v = pairs ? malloc((size_t)n * 8) : NULL, *tv = pairs ? malloc((size_t)n * 8) : NULL;
    int st = 0;
    if (!k || !tk || (pairs && (!v || !tv))) st = CUA_ENOMEM;
    if (!st) {
        for (int64_t a = 0; a < n; a += PIECE) to_words(x, dtype, a, a + PIECE < n ? a + PIECE : n, k + a);
        if (pairs)
            for (int64_t i = 0; i < n; i++) v[i] = i;
        if (cua_cpu_stop(cfg)) st = CUA_EINTR;
    }
    if (!st) radix_sort(k, v, n, 0, key_bits(dtype), tk, tv);
    int64_t runs = 0;
    if (!st) {
        for (int64_t p = 0; p < n; p++) runs += p == 0 || k[p] != k[p - 1];
        st = table_alloc(t, runs, 0);
    }
    if (!st) {
        uint64_t *keys = t->keys, *counts = t->counts, *first = t->first;
        int64_t r = -1;
        for (int64_t p = 0; p < n; p++) {
            if (p == 0 || k[p] != k[p - 1]) {
                keys[++r] = k[p];
                counts[r] = 0;
                if (first) first[r] = (uint64_t)v[p];
            }
            counts[r]++;
            if (t->want & CUA_UNIQUE_INVERSE) t->inverse[v[p]] = r;
        }
        t->distinct = runs;
        t->compact = RUNS;
        t->builds = 1;
    }
    free(k);
    free(tk);
    free(v);
    free(tv);
    return st;
}

/* ------------------------------------------------------------- 5. vector */

/* This OpenMP thread's number and its team's size: the team a parallel
 * region starts may be smaller than it asked for (OMP_DYNAMIC, a thread
 * limit, nesting), and the shares are cut among those that run. */
static int thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int thread_count(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* vector holds a 4-byte word's key in 32 bits and an 8-byte word's in 64
 * (`wide`): the narrow types move and keep in cache half the bytes. The
 * helpers are inlined with `wide` a constant, so each loop below is
 * compiled once per width. A table's empty mark is its width's all-ones
 * word, so here uint32's and int32's largest values, too, are counted
 * beside the tables (they are ordinary keys of the 64-bit shared table and
 * list). */
#define INLINE static inline __attribute__((always_inline))

INLINE uint64_t key_empty(int wide)
{
    return wide ? EMPTY : CUA_UNIQUE_EMPTY32;
}

INLINE uint64_t key_get(const void *p, int64_t i, int wide)
{
    return wide ? ((const uint64_t *)p)[i] : ((const uint32_t *)p)[i];
}

INLINE void key_put(void *p, int64_t i, uint64_t k, int wide)
{
    if (wide) ((uint64_t *)p)[i] = k;
    else ((uint32_t *)p)[i] = (uint32_t)k;
}

static int log2_of(uint64_t pow2)
{
    int b = 0;
    while (((uint64_t)1 << b) < pow2) b++;
    return b;
}

/* A thread's private table: 2^12 slots to start, 2^14 at most (192 KiB of
 * 4-byte keys and 8-byte counts, 128 KiB more with first indices: its share
 * of a core's L2). */
#define THREAD_SLOTS ((uint64_t)1 << 14)

/* Phase A's table of one thread: keys of the call's width, counts, first
 * indices (NULL: not wanted); at most half full. */
typedef struct {
    void *keys;
    uint64_t *counts, *first;
    uint64_t slots, filled;
} vtable;

static void vtable_free(vtable *v)
{
    free(v->keys);
    free(v->counts);
    free(v->first);
    v->keys = NULL;
    v->counts = v->first = NULL;
}

/* An empty table of `slots` (a power of two): 0 or CUA_ENOMEM. Both
 * widths' empty marks are all ones: one memset clears the keys. */
static int vtable_alloc(vtable *v, uint64_t slots, int wide, int first)
{
    v->slots = slots;
    v->filled = 0;
    v->keys = malloc(slots * (wide ? 8 : 4));
    v->counts = calloc(slots, 8);
    v->first = first ? malloc(slots * 8) : NULL;
    if (!v->keys || !v->counts || (first && !v->first)) return CUA_ENOMEM;
    memset(v->keys, 0xFF, slots * (wide ? 8 : 4));
    return 0;
}

/* Twice the slots, every key moved: 0, or CUA_ENOMEM with v unchanged. */
static int vtable_grow(vtable *v, int wide)
{
    const uint64_t E = key_empty(wide);
    vtable q;
    if (vtable_alloc(&q, 2 * v->slots, wide, v->first != NULL)) {
        vtable_free(&q);
        return CUA_ENOMEM;
    }
    const int bits = log2_of(q.slots);
    for (uint64_t s = 0; s < v->slots; s++) {
        const uint64_t k = key_get(v->keys, (int64_t)s, wide);
        if (k == E) continue;
        uint64_t y = fib(k, bits);
        while (key_get(q.keys, (int64_t)y, wide) != E) y = (y + 1) & (q.slots - 1);
        key_put(q.keys, (int64_t)y, k, wide);
        q.counts[y] = v->counts[s];
        if (q.first) q.first[y] = v->first[s];
    }
    q.filled = v->filled;
    vtable_free(v);
    *v = q;
    return 0;
}

#define CHUNK ((int64_t)1 << 16)

/* A thread's next range of elements [*c0, *c1) (phase A's count,
 * bucket_scatter's): the next chunk from *cursor, so that a thread held up
 * (a busy core, a slower start) leaves more of the work to the others
 * instead of keeping them waiting at the end; a thread's chunks run in
 * index order, and first indices merge as the least of the threads'.
 * `indexed` (the scatter with indices, whose count reads a bucket's pages
 * thread by thread in index order): the thread's share [*c0, *c1) given,
 * once (turn 0). 0 when none is left. */
INLINE int next_range(int64_t n, _Atomic int64_t *cursor, int indexed, int64_t turn, int64_t *c0, int64_t *c1)
{
    if (indexed) return turn == 0 && *c0 < *c1;
    *c0 = atomic_fetch_add_explicit(cursor, CHUNK, memory_order_relaxed);
    *c1 = *c0 + CHUNK < n ? *c0 + CHUNK : n;
    return *c0 < n;
}

/* Phase A for a thread's chunks of the n elements (next_range, from
 * *cursor): counted in v, which grows up to `most` slots. 1 when a new key found v at its limit with `most`
 * slots (or no memory to grow): the call goes to phase B. The key equal to
 * the empty mark is counted in side[0], its first index in side[1]. */
INLINE int private_count(const void *x, int dtype, int64_t n, _Atomic int64_t *cursor, vtable *v, uint64_t most,
                         uint64_t side[2], const int *full, cua_launch *cfg, const int wide)
{
    const uint64_t E = key_empty(wide);
    uint64_t buf[PIECE];
    /* The table's fields in locals, kept in registers (read through v they
     * were loaded again at every element). */
    void *keys = v->keys;
    uint64_t *counts = v->counts, *first = v->first, mask = v->slots - 1, filled = v->filled, limit = v->slots / 2;
    int bits = log2_of(v->slots), spilled = 0;
    for (int64_t a = 0, c0 = 0, c1 = 0;; a += PIECE) {
        if (a >= c1) { /* the chunk done: the next */
            if (!next_range(n, cursor, 0, 0, &c0, &c1)) break;
            a = c0;
        }
        if (spilled || __atomic_load_n(full, __ATOMIC_RELAXED) || cua_cpu_stop(cfg)) break;
        const int64_t e = a + PIECE < c1 ? a + PIECE : c1;
        to_keys(x, dtype, a, e, buf, wide);
        for (int64_t i = a; i < e; i++) {
            const uint64_t k = key_get(buf, i - a, wide);
            if (k == E) {
                if (side[0]++ == 0) side[1] = (uint64_t)i; /* (the thread's chunks run in index order) */
                continue;
            }
            uint64_t s = fib(k, bits), c;
            while ((c = key_get(keys, (int64_t)s, wide)) != k && c != E) s = (s + 1) & mask;
            if (c == E) { /* a new key */
                if (filled == limit) {
                    v->filled = filled;
                    if (v->slots >= most || vtable_grow(v, wide)) {
                        spilled = 1;
                        break;
                    }
                    keys = v->keys;
                    counts = v->counts;
                    first = v->first;
                    mask = v->slots - 1;
                    limit = v->slots / 2;
                    bits = log2_of(v->slots);
                    s = fib(k, bits);
                    while (key_get(keys, (int64_t)s, wide) != E) s = (s + 1) & mask;
                }
                key_put(keys, (int64_t)s, k, wide);
                filled++;
                if (first) first[s] = (uint64_t)i; /* index order: the first */
            }
            counts[s]++;
        }
    }
    v->filled = filled;
    return spilled;
}

/* private_count for 4-byte keys and for 8-byte ones: each its own clones. */
static WIDE_CLONES int private_count_narrow(const void *x, int dtype, int64_t n, _Atomic int64_t *cursor, vtable *v,
                                            uint64_t most, uint64_t side[2], const int *full, cua_launch *cfg)
{
    return private_count(x, dtype, n, cursor, v, most, side, full, cfg, 0);
}

static WIDE_CLONES int private_count_wide(const void *x, int dtype, int64_t n, _Atomic int64_t *cursor, vtable *v,
                                          uint64_t most, uint64_t side[2], const int *full, cua_launch *cfg)
{
    return private_count(x, dtype, n, cursor, v, most, side, full, cfg, 1);
}

static void vtable_merge(const vtable *v, const table *t, int wide)
{
    const uint64_t E = key_empty(wide);
    for (uint64_t s = 0; s < v->slots; s++) {
        const uint64_t k = key_get(v->keys, (int64_t)s, wide);
        if (k != E) table_add(t, k, v->counts[s], v->first ? v->first[s] : 0, v->first != NULL);
    }
}

/* Phase A: private tables, merged into a shared table sized for what they
 * hold. 1 in *spill when a thread met more distinct keys than its table
 * takes (the caller goes to phase B). */
static int vector_private(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, int team,
                          int *spill)
{
    const int first = (t->want & CUA_UNIQUE_FIRST) != 0, wide = cua_dtype_size(dtype) == 8;
    vtable *p = calloc((size_t)team, sizeof *p);
    if (!p) return CUA_ENOMEM;
    int st = 0, full = 0;
    _Atomic int64_t cursor = 0;
    for (int i = 0; i < team && !st; i++) st = vtable_alloc(&p[i], BLOCK_SLOTS, wide, first);
    uint64_t side_count = 0, side_first = UINT64_MAX;
    if (!st) {
#pragma omp parallel num_threads(team) reduction(+ : side_count) reduction(min : side_first)
        {
            const int me = thread_num(); /* (threads OpenMP did not start take no chunks) */
            uint64_t side[2] = {0, UINT64_MAX};
            const int spilled = wide ? private_count_wide(x, dtype, n, &cursor, &p[me], THREAD_SLOTS, side, &full, cfg)
                                     : private_count_narrow(x, dtype, n, &cursor, &p[me], THREAD_SLOTS, side, &full,
                                                            cfg);
            if (spilled) __atomic_store_n(&full, 1, __ATOMIC_RELAXED);
            side_count += side[0];
            side_first = side[1];
        }
    }
    if (!st && cfg->interrupted) st = CUA_EINTR;
    if (!st && !full) {
        /* The merge adds the side cell's key as an ordinary key of the
         * 64-bit table when it is the narrow mark: room for it, too (a key
         * past the limit would be dropped). */
        uint64_t total = side_count ? 1 : 0;
        for (int i = 0; i < team; i++) total += p[i].filled;
        int64_t cap = 2;
        while ((uint64_t)cap < 2 * total) cap *= 2;
        st = table_alloc(t, cap, 1);
        if (!st) {
            const table tab = table_of(t);
#pragma omp parallel for schedule(static, 1) num_threads(team)
            for (int i = 0; i < team; i++) vtable_merge(&p[i], &tab, wide);
            if (side_count) table_add(&tab, key_empty(wide), side_count, side_first, first);
            t->distinct = (int64_t)t->ctl[CUA_UNIQUE_CTL_FILLED] + (t->ctl[CUA_UNIQUE_CTL_SIDE_COUNT] ? 1 : 0);
            t->compact = TABLE;
            t->builds = 1;
        }
    }
    *spill = full;
    for (int i = 0; i < team; i++) vtable_free(&p[i]);
    free(p);
    return st;
}

/* Phase B, the radix partition. About this many elements a bucket for
 * keys held in 64 bits, twice that for keys in 32. At 10^6 distinct int32
 * values in 2^24 elements, 512 buckets of 32-bit keys hold ~2,000 keys a
 * table in the count (4,096 slots in groups, 32 KiB: L1; a bucket past
 * 2,048 takes 8,192). In interleaved calls (2 cores, 30 pairs, medians;
 * write-combining blocks of one line then) 512 buckets took 0.90-0.98 of
 * the time of 1,024 (int32, float32), and 256 (64 KiB tables) 1.01-1.13 of
 * 512's. Keys in 64 bits
 * (16-byte slots: a table of 64 KiB at 2^14 elements already) keep 2^14,
 * not measured again: stop 36's 2^15 took 178 ms against 161, for int32
 * in the wide slots of the time. */
#define BUCKET_ELEMS ((int64_t)1 << 14)

/* Which bucket a key goes to. A *digit* of its value (BY_WORD for
 * integers, BY_VALUE for floats): never smaller for a greater key, so with
 * sorted output the buckets' lists, each sorted in cache as it is made, are
 * sorted one after another, and the finish sorts nothing (at 10^6
 * distinct int32 keys its sort of the whole list took 13-27 ms of each
 * call); unsorted output takes the digits too, its lists left unsorted
 * (cheaper than the hash). The
 * digits are linear between the least and greatest finite keys of a sample
 * of the input (keys outside take the first or the last bucket): the
 * integers' words shifted, the floats' values scaled (a float's word is
 * not linear in its value: uniform values crowd the words of the largest
 * exponents); NaN takes the last. Input whose sample crowds a few buckets
 * anyway (clusters, a range far wider than most of its values, one value)
 * takes BY_HASH: the top bits of mix(key) (mix32 for the 32-bit keys of
 * keys_digits32), independent of the fib() that places a key in its
 * bucket's table, and the finish's sort. */
enum { BY_HASH = 0, BY_WORD = 1, BY_VALUE = 2 };
typedef struct {
    int kind, pbits;
    uint64_t lo; /* BY_WORD: the least word, and the shift that leaves pbits bits of the range */
    int shift;
    double a, scale; /* BY_VALUE: the least value, and the buckets over the range of values */
    uint64_t base;   /* narrowed 8-byte integers (narrow_base): what the 32-bit keys are words above */
    int narrowed;
} vmap;

INLINE uint16_t value_digit(double v, const vmap *m, double last)
{
    const double d = (v - m->a) * m->scale; /* (rounding keeps the order) */
    return d > 0 ? (d < last ? (uint16_t)d : (uint16_t)last) : v != v ? (uint16_t)last : 0;
}

INLINE uint16_t word_digit(uint64_t k, const vmap *m, uint64_t last)
{
    const uint64_t d = k > m->lo ? (k - m->lo) >> m->shift : 0;
    return (uint16_t)(d < last ? d : last);
}

/* A float32's or float64's value from its word. */
static double word_value(uint64_t w, int dtype)
{
    if (dtype == CUA_FLOAT64) {
        double v;
        from_word(w, CUA_FLOAT64, &v, 0);
        return v;
    }
    float f;
    from_word(w, CUA_FLOAT32, &f, 0); /* (the one other float) */
    return f;
}

/* The buckets of elements [a, e) (their keys in buf, as to_keys made them)
 * into bk. A typed loop per kind and width, without branches but the
 * clamps (which compile to selects). */
INLINE void bucket_ids(const void *x, int dtype, int64_t a, int64_t e, const void *buf, const vmap *m, uint16_t *bk,
                       const int wide)
{
    const int64_t len = e - a;
    const uint64_t last = ((uint64_t)1 << m->pbits) - 1;
    if (m->kind == BY_HASH) {
        for (int64_t i = 0; i < len; i++) bk[i] = (uint16_t)(mix(key_get(buf, i, wide)) >> (64 - m->pbits));
    } else if (m->kind == BY_WORD) {
        for (int64_t i = 0; i < len; i++) bk[i] = word_digit(key_get(buf, i, wide), m, last);
    } else if (dtype == CUA_FLOAT32) {
        const float *v = (const float *)x + a;
        for (int64_t i = 0; i < len; i++) bk[i] = value_digit((double)v[i], m, (double)last);
    } else {
        const double *v = (const double *)x + a;
        for (int64_t i = 0; i < len; i++) bk[i] = value_digit(v[i], m, (double)last);
    }
}

/* to_keys and bucket_ids in one loop for the partition's usual narrow
 * inputs (int32, uint32, float32, and 8-byte integers narrowed by
 * narrow_base): 32-bit lanes throughout, so that it vectorizes
 * (bucket_ids' 64-bit words and compares do not, with SSE2 alone: its
 * digits were ~8% of a 10^6-distinct int32 call's cycles by perf). Hash
 * buckets take mix32. 1 where a key is the empty mark. Its float32 digits
 * (in float) may differ from bucket_ids' (in double): a call takes one of
 * the two for all its elements, never both. */
static WIDE_CLONES int keys_digits32(const void *x, int dtype, int64_t a, int64_t e, uint32_t *buf, uint16_t *bk,
                                     const vmap *m)
{
    const int64_t len = e - a;
    const uint32_t last = ((uint32_t)1 << m->pbits) - 1;
    uint32_t marks = 0;
    const float fa32 = (float)m->a, scale32 = (float)m->scale;
    /* float32's keys and digits, the digits' arithmetic in type R: selects,
     * not branches, so that it vectorizes. */
#define F32_DIGITS(R, A, S)                                                                                           \
    do {                                                                                                              \
        const float *v = (const float *)x + a;                                                                        \
        const R ra = (A), rs = (S), rl = (R)last;                                                                     \
        for (int64_t i = 0; i < len; i++) {                                                                           \
            const float f = v[i];                                                                                     \
            const uint32_t k = word_f32(f);                                                                           \
            const R d = ((R)f - ra) * rs, c = d < rl ? d : rl; /* (NaN: rl, then 0) */                                \
            const int32_t g = (int32_t)(d > 0 ? c : (R)0);                                                            \
            buf[i] = k;                                                                                               \
            bk[i] = (uint16_t)(f != f ? (int32_t)last : g);                                                           \
            marks |= (uint32_t)(k == CUA_UNIQUE_EMPTY32);                                                             \
        }                                                                                                             \
    } while (0)
    if (dtype == CUA_FLOAT32 && fa32 - fa32 == 0.0f && scale32 > 0x1p-60f && scale32 < 0x1p60f) {
        /* In float: eight lanes a vector, not four. Any digit that never
         * falls as the value grows will do, and float's rounding keeps the
         * order as double's does (0.972 of the time at 10^6 distinct). */
        F32_DIGITS(float, fa32, scale32);
    } else if (dtype == CUA_FLOAT32) { /* (a least value or scale that float cannot carry) */
        F32_DIGITS(double, m->a, m->scale); /* (also hash maps, whose digits are replaced below) */
    } else if (m->narrowed) { /* 8-byte integers as their words above m->base */
        const uint64_t *v = (const uint64_t *)x + a, base = m->base - (dtype == CUA_INT64 ? 0x8000000000000000ull : 0);
        const uint32_t lo = (uint32_t)m->lo;
        const int shift = m->shift;
        for (int64_t i = 0; i < len; i++) {
            const uint32_t k = (uint32_t)(v[i] - base), d = k > lo ? (k - lo) >> shift : 0;
            buf[i] = k;
            bk[i] = (uint16_t)(d < last ? d : last);
        }
        /* (no key is the empty mark: narrow_base leaves room for it) */
    } else {
        const uint32_t *v = (const uint32_t *)x + a, flip = dtype == CUA_INT32 ? 0x80000000u : 0;
        const uint32_t lo = (uint32_t)m->lo;
        const int shift = m->shift;
        for (int64_t i = 0; i < len; i++) {
            const uint32_t k = v[i] ^ flip, d = k > lo ? (k - lo) >> shift : 0;
            buf[i] = k;
            bk[i] = (uint16_t)(d < last ? d : last);
            marks |= (uint32_t)(k == CUA_UNIQUE_EMPTY32);
        }
    }
    if (m->kind == BY_HASH) /* (the digits above were the word's, linear: the hash's replace them) */
        for (int64_t i = 0; i < len; i++) bk[i] = (uint16_t)(mix32(buf[i]) >> (32 - m->pbits));
#undef F32_DIGITS
    return marks != 0;
}

/* Phase B's buckets (vmap) from SAMPLE elements at an even stride: digits
 * where the sample's keys spread over them (no bucket with more than
 * CROWDED times its share of them, and at least 16), else BY_HASH. */
#define SAMPLE 8192
#define CROWDED 8
static void bucket_map(const void *x, int64_t n, int dtype, int wide, int pbits, const uint64_t *base, vmap *m)
{
    memset(m, 0, sizeof *m);
    m->kind = BY_HASH;
    m->pbits = pbits;
    m->narrowed = base != NULL;
    m->base = base ? *base : 0;
    if (n < SAMPLE) return;
    const int floats = dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64;
    const uint64_t E = key_empty(wide);
    uint64_t *w = malloc(SAMPLE * 8), lo = UINT64_MAX, hi = 0;
    uint32_t *seen = calloc((size_t)1 << pbits, 4);
    int64_t kept = 0;
    if (!w || !seen) goto done; /* (no sample: the hash) */
    for (int64_t j = 0; j < SAMPLE; j++) {
        const int64_t i = j * (n / SAMPLE);
        uint64_t k = 0;
        to_keys(x, dtype, i, i + 1, &k, 1);
        k = m->narrowed ? k - m->base : wide ? k : k & 0xFFFFFFFFu; /* (the keys the buckets see) */
        const double v = dtype == CUA_FLOAT32 ? (double)((const float *)x)[i]
                         : dtype == CUA_FLOAT64 ? ((const double *)x)[i] : 0.0;
        if (k == E || (floats && !(v - v == 0.0))) continue; /* the side cell's key; NaN and the infinities */
        w[kept++] = k;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (kept < SAMPLE / 2) goto done;
    vmap d = *m;
    if (floats) {
        d.kind = BY_VALUE;
        d.a = word_value(lo, dtype);
        d.scale = (double)((uint64_t)1 << pbits) / (word_value(hi, dtype) - d.a); /* (inf, 0 or NaN: crowded below) */
        if (!(d.scale > 0 && d.scale - d.scale == 0.0)) goto done;
    } else {
        const uint64_t span = hi - lo;
        int bits = 0;
        while (bits < 64 && (span >> bits) != 0) bits++;
        d.kind = BY_WORD;
        d.lo = lo;
        d.shift = bits > pbits ? bits - pbits : 0;
    }
    /* The sample's own digits: crowded, or spread. */
    const uint64_t last = ((uint64_t)1 << pbits) - 1;
    uint32_t most = 0;
    for (int64_t j = 0; j < kept; j++) {
        const uint16_t b = floats ? value_digit(word_value(w[j], dtype), &d, (double)last) : word_digit(w[j], &d, last);
        most = ++seen[b] > most ? seen[b] : most;
    }
    const int64_t share = kept >> pbits;
    if (most <= (uint32_t)(CROWDED * share > 16 ? CROWDED * share : 16)) *m = d;
done:
    free(w);
    free(seen);
}

/* One 64-byte line of keys to its place in bw, past the cache: the line is
 * not read first (as a store to a line not in cache reads it), nor kept. */
INLINE void line_out(void *to, const void *from)
{
#ifdef __SSE2__
    const __m128i *f = (const __m128i *)from;
    __m128i *t = (__m128i *)to;
    _mm_stream_si128(t, _mm_load_si128(f));
    _mm_stream_si128(t + 1, _mm_load_si128(f + 1));
    _mm_stream_si128(t + 2, _mm_load_si128(f + 2));
    _mm_stream_si128(t + 3, _mm_load_si128(f + 3));
#else
    memcpy(to, from, 64);
#endif
}

/* The partition's scratch is pages of `pg` keys (a power of two, whole
 * 64-byte lines; keys alone, whole 256-byte blocks), each owned by one
 * thread and bucket: a thread writes its
 * keys of bucket b into a chain of its own pages, taking another from a
 * counter the team shares (an atomic add a page) when one fills, so that
 * no pass has to size the buckets first (counting them took a read of the
 * input, 22 of ~155 ms at 10^6 distinct int32, 2 cores). Each of a thread's buckets has a page
 * from the start and takes another each time one fills: a thread that
 * writes m keys takes at most P + floor(m / pg) pages, so the team takes
 * at most n / pg + team * P in all. */
typedef struct {
    int64_t *head, *fill;     /* [thread * P + bucket]: the first page, the keys */
    int64_t *cur;             /* [thread * P + bucket]: the next key's place (keys alone: the open page's start) */
    int64_t *next;            /* [page]: the bucket's next page of the same thread */
    int64_t pg;
    int pbits, team;
    _Atomic int64_t *claimed; /* pages taken */
} pages;

/* A bucket's elements in the scratch, a run of one page at a time, in index
 * order (threads in order, each thread's pages in order). */
typedef struct {
    const pages *pp;
    int64_t bucket, page, left;
    int thread;
} page_runs;

INLINE page_runs runs_of(const pages *pp, int64_t bucket)
{
    page_runs r = {pp, bucket, -1, 0, -1};
    return r;
}

/* The next run [*lo, *hi): 0 when there is none. */
INLINE int runs_next(page_runs *r, int64_t *lo, int64_t *hi)
{
    const pages *pp = r->pp;
    while (r->left == 0) {
        if (++r->thread >= pp->team) return 0;
        const int64_t at = ((int64_t)r->thread << pp->pbits) + r->bucket;
        r->page = pp->head[at];
        r->left = pp->fill[at];
    }
    const int64_t m = r->left < pp->pg ? r->left : pp->pg;
    *lo = r->page * pp->pg;
    *hi = *lo + m;
    r->left -= m;
    if (r->left) r->page = pp->next[r->page];
    return 1;
}

/* A thread's write-combining block for each bucket: 4 lines (256 bytes).
 * A block leaves when it fills, after 64 keys of 4 bytes, and the branch
 * that asks whether it has is mispredicted about once each time: with one
 * line a block, once every 16 keys. 512 buckets' blocks (128 KiB) do not
 * stay in L1, but a store is not waited on. The scatter loop alone (2^23
 * int32 keys, 512 buckets, one core) took 0.87-0.89 of its time with
 * blocks of 2 or 4 lines; whole calls (2 cores, 20 pairs) with 2 lines
 * 1.00 of the time of 4, with 8 lines 1.11. */
#define WC_SHIFT 8

/* A piece's keys (buf: m of them, elements a on) into their buckets'
 * (bk) blocks in wc, each block leaving whole for its place in bw when it
 * fills (keys alone). at[b] is how many keys bucket b's page holds (16
 * bits: the loop's read-modify-write touches 2 bytes a bucket, not 8), and
 * cur[b] where the page begins; the key's slot in its block is at[b]'s low
 * bits, as pages are whole blocks. As a page fills, its keys are added to
 * fill[b] and the bucket takes the thread's next page.
 * With `check`, keys equal to the empty mark are counted in side[] instead
 * (a piece without one takes the loop without the test). A loop of its
 * own, so that its few variables stay in registers. */
INLINE void piece_combined(const void *buf, const uint16_t *bk, int64_t a, int64_t m, uint16_t *at, int64_t *cur,
                           int64_t *fill, int64_t *next, _Atomic int64_t *claimed, uint8_t *wc, void *bw, int pgbits,
                           uint64_t side[2], const int check, const int wide)
{
    const uint64_t E = key_empty(wide);
    const unsigned per = (1u << WC_SHIFT) / (wide ? 8 : 4), pg = 1u << pgbits; /* per: keys a block */
    for (int64_t i = 0; i < m; i++) {
        const uint64_t k = key_get(buf, i, wide);
        if (check && k == E) {
            if (side[0]++ == 0) side[1] = (uint64_t)(a + i);
            continue;
        }
        const uint64_t b = bk[i];
        const unsigned c = at[b] + 1u; /* the page's keys with this one */
        uint8_t *block = wc + (b << WC_SHIFT), *to;
        key_put(block, (c - 1) & (per - 1), k, wide);
        at[b] = (uint16_t)c;
        if ((c & (per - 1)) != 0) continue;
        to = (uint8_t *)bw + ((cur[b] + c - per) << (wide ? 3 : 2));
        for (int l = 0; l < 1 << WC_SHIFT; l += 64) line_out(to + l, block + l);
        if (c == pg) { /* the page is full: the bucket's next */
            fill[b] += pg;
            const int64_t page = atomic_fetch_add_explicit(claimed, 1, memory_order_relaxed);
            next[cur[b] >> pgbits] = page;
            cur[b] = page << pgbits;
            at[b] = 0;
        }
    }
}

/* Pass 1: keys (and indices, bi not NULL) to the thread's pages of their
 * buckets (vmap: a piece's buckets are found first, in a loop of their
 * own, then the keys go). The empty-mark key is counted in side[]. With
 * indices, the thread's elements [lo, hi), in order (the count reads a
 * bucket's pages thread by thread, in index order: a key's first element
 * is its first index); keys alone, chunks of CHUNK elements taken in turn
 * from *cursor until n, so that a thread held up (a busy core, a slower
 * start) leaves more of the work to the others instead of keeping them at
 * the barrier.
 *
 * Keys alone (bi NULL): write combined (piece_combined). A thread's keys
 * for bucket b gather in its block of wc (2^pbits blocks of 2^WC_SHIFT
 * bytes, 64-byte aligned) and leave a whole block at a time by streaming
 * stores (line_out): written one key at a time, each key's line of bw is
 * read in first, and with hundreds of buckets the open lines do not stay
 * in L1. The pages are the thread's own, so the last, partial block of
 * each goes out in whole lines too. bw is aligned to a cache line at
 * least (cua_cpu_scratch_take). */
INLINE void bucket_scatter(const void *x, int dtype, int64_t n, int64_t lo, int64_t hi, _Atomic int64_t *cursor,
                           const pages *pp, int me, void *bw, int64_t *bi, int64_t *inverse, uint64_t side[2],
                           cua_launch *cfg, uint8_t *wc, const vmap *map, const int wide)
{
    const uint64_t E = key_empty(wide);
    const int pbits = pp->pbits, pgbits = log2_of((uint64_t)pp->pg);
    const int64_t ks = wide ? 8 : 4, per = ((int64_t)1 << WC_SHIFT) / ks; /* key bytes; keys a block */
    const int64_t P = (int64_t)1 << pbits, pg = pp->pg;
    int64_t *head = pp->head + me * P, *fill = pp->fill + me * P, *cur = pp->cur + me * P, *next = pp->next;
    int64_t page = atomic_fetch_add_explicit(pp->claimed, P, memory_order_relaxed);
    for (int64_t b = 0; b < P; b++) {
        head[b] = page;
        cur[b] = page++ * pg;
        fill[b] = 0;
    }
    uint64_t buf[PIECE];
    uint16_t bk[PIECE], at[1 << 12]; /* at: piece_combined's (a page holds 4 KiB at most: 1,024 keys) */
    memset(at, 0, (size_t)P * sizeof *at);
    const int64_t size = cua_dtype_size(dtype);
    const int fused = !wide && (map->narrowed || dtype == CUA_INT32 || dtype == CUA_UINT32 || dtype == CUA_FLOAT32);
    for (int64_t c0 = lo, c1 = hi, turn = 0; next_range(n, cursor, bi != NULL, turn++, &c0, &c1);) {
        for (int64_t a = c0; a < c1 && !cua_cpu_stop(cfg); a += PIECE) {
            const int64_t e = a + PIECE < c1 ? a + PIECE : c1, ahead = e + PIECE < c1 ? e + PIECE : c1;
            /* The next piece's input asked for now, so that its reads overlap
             * this piece's scatter instead of stalling the loop that reads
             * it (0.98-1.00 of the time, in interleaved calls). */
            for (const char *f = (const char *)x + e * size; f < (const char *)x + ahead * size; f += 64)
                __builtin_prefetch(f, 0, 2);
            int marks = 0;
            if (fused) {
                marks = keys_digits32(x, dtype, a, e, (uint32_t *)buf, bk, map);
            } else {
                to_keys(x, dtype, a, e, buf, wide);
                bucket_ids(x, dtype, a, e, buf, map, bk, wide);
                if (!bi)
                    for (int64_t i = 0; i < e - a; i++) marks |= key_get(buf, i, wide) == E;
            }
            if (!bi) {
                _Atomic int64_t *taken = pp->claimed;
                if (marks) piece_combined(buf, bk, a, e - a, at, cur, fill, next, taken, wc, bw, pgbits, side, 1, wide);
                else piece_combined(buf, bk, a, e - a, at, cur, fill, next, taken, wc, bw, pgbits, side, 0, wide);
                continue;
            }
            for (int64_t i = a; i < e; i++) { /* key by key, its index beside it */
                const uint64_t k = key_get(buf, i - a, wide);
                if (k == E) {
                    if (side[0]++ == 0) side[1] = (uint64_t)i;
                    if (inverse) inverse[i] = -1; /* set once the lists are numbered */
                    continue;
                }
                const uint64_t b = bk[i - a];
                const int64_t to = cur[b]++;
                key_put(bw, to, k, wide);
                bi[to] = i;
                fill[b]++;
                if (((to + 1) & (pg - 1)) == 0) { /* the page is full: the bucket's next */
                    page = atomic_fetch_add_explicit(pp->claimed, 1, memory_order_relaxed);
                    next[to >> pgbits] = page;
                    cur[b] = page * pg;
                }
            }
        }
        if (cua_cpu_stop(cfg)) break;
    }
    if (!bi)
        for (int64_t b = 0; b < P; b++) { /* the keys of the page begun, and the lines of its last block */
            const int64_t used = at[b], part = (used & (per - 1)) * ks;
            uint8_t *to = (uint8_t *)bw + (cur[b] + (used & ~(per - 1))) * ks;
            fill[b] += used;
            for (int64_t l = 0; l < part; l += 64) line_out(to + l, wc + (b << WC_SHIFT) + l);
        }
#ifdef __SSE2__
    _mm_sfence(); /* the streamed lines visible before the team's barrier lets others read them */
#endif
}

/* bucket_scatter for 4-byte keys and for 8-byte ones: each its own clones. */
static WIDE_CLONES void scatter_narrow(const void *x, int dtype, int64_t n, int64_t lo, int64_t hi,
                                       _Atomic int64_t *cursor, const pages *pp, int me, void *bw, int64_t *bi,
                                       int64_t *inverse, uint64_t side[2], cua_launch *cfg, uint8_t *wc,
                                       const vmap *map)
{
    bucket_scatter(x, dtype, n, lo, hi, cursor, pp, me, bw, bi, inverse, side, cfg, wc, map, 0);
}

static WIDE_CLONES void scatter_wide(const void *x, int dtype, int64_t n, int64_t lo, int64_t hi,
                                     _Atomic int64_t *cursor, const pages *pp, int me, void *bw, int64_t *bi,
                                     int64_t *inverse, uint64_t side[2], cua_launch *cfg, uint8_t *wc, const vmap *map)
{
    bucket_scatter(x, dtype, n, lo, hi, cursor, pp, me, bw, bi, inverse, side, cfg, wc, map, 1);
}

/* A thread's table for its buckets, one after another. A key and its
 * count share a cache line, so that counting an element touches one: wide
 * keys, two uint64_t a slot (key, count); narrow keys, groups of four
 * 32-bit keys and their four 32-bit counts (bucket_count_narrow's). Every
 * bit set is an empty slot (no key in a bucket is the empty mark).
 * `first`: the first index of each slot's key (NULL: not wanted). `slots`:
 * what the arrays hold; a bucket uses a power of two of them. */
typedef struct {
    uint64_t *slot, *first;
    uint64_t slots;
    uint64_t *sk, *tk; /* the sort of a bucket's list (list_sort): keys, and its scratch */
    int64_t *sv, *tv, sorts;
} btable;

/* A thread's lists: each bucket it counted appends its distinct keys
 * (64-bit words), their counts and first indices. */
typedef struct vlist_s {
    uint64_t *keys, *counts, *first;
    int64_t k, cap;
    size_t bytes[3]; /* each array's block (scratch.c's) */
} vlist;

/* The team's lists (NULL: none) back to scratch.c's cache, and their array. */
static void lists_free(vlist *lists, int team)
{
    for (int i = 0; i < team && lists; i++) {
        cua_cpu_scratch_give(lists[i].keys, lists[i].bytes[0]);
        cua_cpu_scratch_give(lists[i].counts, lists[i].bytes[1]);
        cua_cpu_scratch_give(lists[i].first, lists[i].bytes[2]);
    }
    free(lists);
}

static void parts_free(parts *pt)
{
    lists_free(pt->lists, pt->team);
    free(pt->where);
    free(pt->offset);
    free(pt);
}

/* Room in L for `more` entries: 0 or CUA_ENOMEM. The arrays move into
 * twice the room (or `more` past the entries, where that is more) from
 * scratch.c's cache (huge pages from 2 MiB on: a thread's lists at 10^6
 * distinct are megabytes; fresh, they were first touched as they grew).
 * With the branch-free listing below, the listing's time per thread went
 * from 12-22 ms to 10-15 (2^24 int32 keys, 10^6 distinct, 2 cores, three
 * alternating rounds of an instrumented build; whole calls within this
 * machine's noise). */
static int vlist_reserve(vlist *L, int64_t more, int first)
{
    if (L->k + more <= L->cap) return 0;
    int64_t cap = L->cap ? 2 * L->cap : 4096;
    while (cap < L->k + more) cap *= 2;
    uint64_t **arr[3] = {&L->keys, &L->counts, &L->first}, *grown[3] = {NULL, NULL, NULL};
    size_t got[3] = {0, 0, 0};
    for (int a = 0; a < (first ? 3 : 2); a++) {
        grown[a] = cua_cpu_scratch_take((size_t)cap * 8, &got[a]);
        if (!grown[a]) {
            for (int b = 0; b < a; b++) cua_cpu_scratch_give(grown[b], got[b]);
            return CUA_ENOMEM;
        }
        if (L->k) memcpy(grown[a], *arr[a], (size_t)L->k * 8);
    }
    for (int a = 0; a < 3; a++) {
        cua_cpu_scratch_give(*arr[a], L->bytes[a]);
        *arr[a] = grown[a];
        L->bytes[a] = got[a];
    }
    L->cap = cap;
    return 0;
}

/* A key's first slot in a bucket's table of 2^bits slots: one multiply
 * (fib()), as the private tables; mix()'s top bits chose the bucket. */
INLINE uint64_t bucket_slot(uint64_t k, int bits)
{
    return fib(k, bits);
}

/* Key k's slot in a wide table of mask + 1 slots: where it is, or the
 * empty slot where it goes. */
INLINE uint64_t slot_find(const uint64_t *t, uint64_t k, uint64_t mask, int bits)
{
    uint64_t s = bucket_slot(k, bits);
    while (t[2 * s] != k && t[2 * s] != EMPTY) s = (s + 1) & mask;
    return s;
}

/* Room in b for `slots` slots, all empty: 0 or CUA_ENOMEM. */
static int btable_clear(btable *b, uint64_t slots, int first, int wide)
{
    const size_t per = wide ? 16 : 8;
    if (slots > b->slots) {
        free(b->slot);
        free(b->first);
        b->slot = aligned_alloc(64, slots * per); /* (narrow: 32-byte groups; slots >= 16) */
        b->first = first ? malloc(slots * 8) : NULL;
        b->slots = b->slot && (!first || b->first) ? slots : 0;
        if (!b->slots) return CUA_ENOMEM;
    }
    memset(b->slot, 0xFF, slots * per);
    return 0;
}

/* An empty table of twice b's `slots` in *q (b's sort scratch shared):
 * 0, or CUA_ENOMEM with nothing held. */
static int btable_twice(const btable *b, uint64_t slots, int wide, btable *q)
{
    *q = *b;
    q->slot = q->first = NULL;
    q->slots = 0;
    if (!btable_clear(q, 2 * slots, b->first != NULL, wide)) return 0;
    free(q->slot);
    free(q->first);
    return CUA_ENOMEM;
}

/* b takes q's table in place of its own. */
static void btable_take(btable *b, const btable *q)
{
    free(b->slot);
    free(b->first);
    *b = *q;
}

/* b's table, `slots` in use, moved into twice the slots: 0 or CUA_ENOMEM. */
static int btable_grow(btable *b, uint64_t slots)
{
    const int first = b->first != NULL;
    btable q;
    if (btable_twice(b, slots, 1, &q)) return CUA_ENOMEM;
    const int bits = log2_of(2 * slots);
    for (uint64_t s = 0; s < slots; s++) {
        if (b->slot[2 * s] == EMPTY) continue;
        const uint64_t y = slot_find(q.slot, b->slot[2 * s], 2 * slots - 1, bits);
        q.slot[2 * y] = b->slot[2 * s];
        q.slot[2 * y + 1] = b->slot[2 * s + 1];
        if (first) q.first[y] = b->first[s];
    }
    btable_take(b, &q);
    return 0;
}

/* A bucket's list (m > 1 distinct keys at lk, their counts at lc and
 * first indices at lf, NULL if not wanted) in key order, sorted in cache
 * on the bits where its keys differ (a bucket's keys share their digit):
 * narrow keys with counts alone as one word each (key above, count
 * below), else the keys with their places in the list, which then gather
 * the counts and first indices. b's scratch grows to the largest list. 0
 * or CUA_ENOMEM. */
static int list_sort(uint64_t *lk, uint64_t *lc, uint64_t *lf, int64_t m, btable *b, int wide)
{
    if (m > b->sorts) {
        int64_t cap = b->sorts ? 2 * b->sorts : 4096;
        while (cap < m) cap *= 2;
        free(b->sk);
        free(b->tk);
        free(b->sv);
        free(b->tv);
        b->sk = malloc((size_t)cap * 8);
        b->tk = malloc((size_t)cap * 8);
        b->sv = malloc((size_t)cap * 8);
        b->tv = malloc((size_t)cap * 8);
        b->sorts = b->sk && b->tk && b->sv && b->tv ? cap : 0;
        if (!b->sorts) return CUA_ENOMEM;
    }
    uint64_t diff = 0, *sk = b->sk, *tk = b->tk;
    for (int64_t i = 0; i < m; i++) diff |= lk[i] ^ lk[0];
    int bits = 1;
    while (bits < 64 && (diff >> bits) != 0) bits++;
    if (!wide && !lf) {
        for (int64_t i = 0; i < m; i++) sk[i] = lk[i] << 32 | lc[i];
        msd_sort(sk, NULL, m, 32, 32 + bits, tk, NULL);
        for (int64_t i = 0; i < m; i++) {
            lk[i] = sk[i] >> 32;
            lc[i] = sk[i] & 0xFFFFFFFFu;
        }
        return 0;
    }
    int64_t *sv = b->sv;
    for (int64_t i = 0; i < m; i++) {
        sk[i] = lk[i];
        sv[i] = i;
    }
    msd_sort(sk, sv, m, 0, bits, tk, b->tv);
    memcpy(lk, sk, (size_t)m * 8);
    for (int64_t i = 0; i < m; i++) tk[i] = lc[sv[i]];
    memcpy(lc, tk, (size_t)m * 8);
    if (lf) {
        for (int64_t i = 0; i < m; i++) tk[i] = lf[sv[i]];
        memcpy(lf, tk, (size_t)m * 8);
    }
    return 0;
}

/* A bucket's table is at most 1/LOAD full: a probe past a key's first
 * slot is a mispredicted branch, and at half full (0.48 more probes an
 * element) counting 2^24 keys into L1-sized tables took 130 ms on one
 * core, at an eighth 45 ms (the table then in L2). */
#ifndef LOAD
#define LOAD 4
#endif

/* Pass 2 for one bucket of wide keys (64-bit words; narrow ones:
 * bucket_count_narrow), its `size` elements in bw in the runs of `runs`
 * (their indices in bi: NULL without first indices and inverse): counted
 * in the thread's table, whose keys are then appended to the thread's list
 * (slot order). With the inverse, each slot's count is then replaced by
 * the key's place in the list, and the bucket is read again to give each
 * element its key's place (within the bucket's list: the caller adds the
 * bucket's offset). With `ordered` (the buckets are digits: vmap), the
 * list is sorted before the places are given. 0 or CUA_ENOMEM. */
static WIDE_CLONES int bucket_count(const void *bw, const int64_t *bi, page_runs runs, int64_t size, btable *b,
                                    vlist *L, int first, int64_t *inverse, int ordered)
{
    /* Room for every element's key at 1/LOAD load, but no more than the
     * thread's table has grown to (the buckets are alike: the last one's
     * size fits the next), so that clearing it costs little. */
    uint64_t slots = 16;
    while (slots < LOAD * (uint64_t)size && (slots < b->slots || slots < BLOCK_SLOTS)) slots *= 2;
    if (btable_clear(b, slots, first, 1)) return CUA_ENOMEM;
    const uint64_t *keys = (const uint64_t *)bw;
    uint64_t *t = b->slot, *tf = b->first, mask = slots - 1, limit = slots / LOAD, d = 0;
    int bits = log2_of(slots);
    page_runs r = runs;
    for (int64_t lo, hi; runs_next(&r, &lo, &hi);) {
        for (int64_t q = lo; q < hi; q++) {
            const uint64_t k = keys[q];
            uint64_t s = bucket_slot(k, bits);
            for (;; s = (s + 1) & mask) {
                if (t[2 * s] == k) { /* the common case: one load, one add */
                    t[2 * s + 1]++;
                    break;
                }
                if (t[2 * s] == EMPTY) { /* a new key */
                    if (d == limit) {
                        if (btable_grow(b, slots)) return CUA_ENOMEM;
                        slots *= 2;
                        t = b->slot;
                        tf = b->first;
                        mask = slots - 1;
                        limit = slots / LOAD;
                        bits = log2_of(slots);
                        s = slot_find(t, k, mask, bits);
                    }
                    t[2 * s] = k;
                    t[2 * s + 1] = 1;
                    if (tf) tf[s] = (uint64_t)bi[q]; /* index order: the first */
                    d++;
                    break;
                }
            }
        }
    }
    if (vlist_reserve(L, (int64_t)d + 1, first)) return CUA_ENOMEM; /* (+1: see below) */
    uint64_t *lk = L->keys + L->k, *lc = L->counts + L->k, *lf = first ? L->first + L->k : NULL, j = 0;
    /* Every slot is written at place j, and j moves on past the filled
     * ones: without the inverse, no branch on whether a slot is filled (a
     * quarter to an eighth are: a branch on it mispredicts); one entry is
     * written past the last. */
    for (uint64_t s = 0; s < slots; s++) {
        const int has = t[2 * s] != EMPTY;
        lk[j] = t[2 * s];
        lc[j] = t[2 * s + 1];
        if (lf) lf[j] = tf[s];
        if (inverse && has && !ordered) t[2 * s + 1] = j; /* the slot now holds the key's place */
        j += (uint64_t)has;
    }
    if (ordered && j > 1 && list_sort(lk, lc, lf, (int64_t)j, b, 1)) return CUA_ENOMEM;
    if (inverse && ordered)
        for (uint64_t p = 0; p < j; p++) t[2 * slot_find(t, lk[p], mask, bits) + 1] = p; /* its sorted place */
    if (inverse)
        for (int64_t lo, hi; runs_next(&runs, &lo, &hi);)
            for (int64_t q = lo; q < hi; q++) inverse[bi[q]] = (int64_t)t[2 * slot_find(t, keys[q], mask, bits) + 1];
    L->k += (int64_t)j;
    return 0;
}

/* Narrow keys' bucket tables (bucket_count_narrow): groups of NGROUP
 * slots, each group 32 bytes -- its 32-bit keys (every bit set: empty),
 * then their 32-bit counts, so that a key and its count share a cache line
 * -- probed a group at a time (one 16-byte compare for the key, one for an
 * empty slot). Slot s's key is word nkey(s) of the table, its count the
 * word NGROUP after. A key goes to the first empty slot of the first
 * group, from its home group on, that has one, and groups only fill, so a
 * search ends at the group that holds the key or, where it is absent, at
 * the first group with an empty slot. At most half full (NLOAD), a key's
 * home group holds it or an empty slot nearly always: one branch a key,
 * rarely mispredicted, in a table of 2^12 slots (32 KiB: L1) at 10^6
 * distinct int32 in 2^24 elements and 1,024 buckets (stop 47; with 512,
 * 2^12 to 2^13, sized no smaller after a bucket grew it: 2^12 for each
 * bucket from the last one's count measured no faster), where the wide
 * layout (8 bytes a slot, a quarter full, scalar probes) took 2^12 to
 * 2^13. In interleaved calls
 * (2 cores, 20 pairs, medians), int32 at 10^6 distinct: 0.82-0.84 of the
 * time of that layout; float32 0.97-1.03 (its keys, evenly spaced values, rarely
 * met a second slot there either). Counts are 32 bits: the caller keeps
 * every bucket under 2^32 elements (n < 2^32, else the call is wide). */
#define NGROUP 4
#define NLOAD 2

INLINE uint64_t nkey(uint64_t s)
{
    return s + (s & ~(uint64_t)(NGROUP - 1));
}

/* The group of key k in narrow table nt (mask + 1 slots): the first
 * group, from k's home group on, that holds k (*found 1) or an empty slot
 * (*found 0); *lane, that slot's place in the group. */
INLINE uint64_t ngroup_of(const uint32_t *nt, uint32_t k, uint64_t mask, int bits, int *found, int *lane)
{
    for (uint64_t g = bucket_slot(k, bits) & ~(uint64_t)(NGROUP - 1);; g = (g + NGROUP) & mask) {
#ifdef __SSE2__
        const __m128i v = _mm_load_si128((const __m128i *)(nt + 2 * g));
        const int hit = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, _mm_set1_epi32((int)k))));
        if (hit) {
            *found = 1;
            *lane = __builtin_ctz((unsigned)hit);
            return g;
        }
        const int hole = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, _mm_set1_epi32(-1))));
        if (hole) {
            *found = 0;
            *lane = __builtin_ctz((unsigned)hole);
            return g;
        }
#else
        for (int q = 0; q < NGROUP; q++)
            if (nt[2 * g + q] == k) {
                *found = 1;
                *lane = q;
                return g;
            }
        for (int q = 0; q < NGROUP; q++)
            if (nt[2 * g + q] == CUA_UNIQUE_EMPTY32) {
                *found = 0;
                *lane = q;
                return g;
            }
#endif
    }
}

/* Key k's slot in narrow table nt of mask + 1 slots: where it is (*found
 * 1), or the empty slot where it goes (*found 0). */
INLINE uint64_t ngroup_find(const uint32_t *nt, uint32_t k, uint64_t mask, int bits, int *found)
{
    int lane;
    return ngroup_of(nt, k, mask, bits, found, &lane) + (uint64_t)lane;
}

/* b's narrow table, `slots` in use, moved into twice the slots: 0 or
 * CUA_ENOMEM. */
static int ntable_grow(btable *b, uint64_t slots)
{
    const int first = b->first != NULL;
    btable q;
    if (btable_twice(b, slots, 0, &q)) return CUA_ENOMEM;
    const uint32_t *ot = (const uint32_t *)b->slot;
    uint32_t *nt = (uint32_t *)q.slot;
    const int bits = log2_of(2 * slots);
    for (uint64_t s = 0; s < slots; s++) {
        const uint32_t k = ot[nkey(s)];
        if (k == CUA_UNIQUE_EMPTY32) continue;
        int found;
        const uint64_t y = ngroup_find(nt, k, 2 * slots - 1, bits, &found);
        nt[nkey(y)] = k;
        nt[nkey(y) + NGROUP] = ot[nkey(s) + NGROUP];
        if (first) q.first[y] = b->first[s];
    }
    btable_take(b, &q);
    return 0;
}

/* bucket_count for narrow keys (32-bit words), in the grouped tables
 * above; the same arguments and results. */
static WIDE_CLONES int bucket_count_narrow(const void *bw, const int64_t *bi, page_runs runs, int64_t size,
                                           btable *b, vlist *L, int first, int64_t *inverse, int ordered,
                                           uint64_t base)
{
    uint64_t slots = 16;
    while (slots < NLOAD * (uint64_t)size && (slots < b->slots || slots < BLOCK_SLOTS)) slots *= 2;
    if (btable_clear(b, slots, first, 0)) return CUA_ENOMEM;
    const uint32_t *keys = (const uint32_t *)bw;
    uint32_t *nt = (uint32_t *)b->slot;
    uint64_t *tf = b->first, mask = slots - 1, limit = slots / NLOAD, d = 0;
    int bits = log2_of(slots), found;
    page_runs r = runs;
    for (int64_t lo, hi; runs_next(&r, &lo, &hi);) {
        for (int64_t q = lo; q < hi; q++) {
            const uint32_t k = keys[q];
            int lane;
            const uint64_t g = ngroup_of(nt, k, mask, bits, &found, &lane);
            if (found) { /* the common case: one group, one add (in the same line), its address from the group's */
                nt[2 * g + NGROUP + (uint64_t)lane]++;
                continue;
            }
            uint64_t s = g + (uint64_t)lane;
            if (d == limit) {
                if (ntable_grow(b, slots)) return CUA_ENOMEM;
                slots *= 2;
                nt = (uint32_t *)b->slot;
                tf = b->first;
                mask = slots - 1;
                limit = slots / NLOAD;
                bits = log2_of(slots);
                s = ngroup_find(nt, k, mask, bits, &found);
            }
            nt[nkey(s)] = k;
            nt[nkey(s) + NGROUP] = 1;
            if (tf) tf[s] = (uint64_t)bi[q]; /* index order: the first */
            d++;
        }
    }
    if (vlist_reserve(L, (int64_t)d + 1, first)) return CUA_ENOMEM; /* (+1: see below) */
    uint64_t *lk = L->keys + L->k, *lc = L->counts + L->k, *lf = first ? L->first + L->k : NULL, j = 0;
    for (uint64_t s = 0; s < slots; s++) { /* (as bucket_count: every slot written at j, one past the last) */
        const uint64_t at = nkey(s);
        const int has = nt[at] != CUA_UNIQUE_EMPTY32;
        lk[j] = nt[at];
        lc[j] = nt[at + NGROUP];
        if (lf) lf[j] = tf[s];
        if (inverse && has && !ordered) nt[at + NGROUP] = (uint32_t)j; /* the slot now holds the key's place */
        j += (uint64_t)has;
    }
    if (ordered && j > 1 && list_sort(lk, lc, lf, (int64_t)j, b, 0)) return CUA_ENOMEM;
    if (inverse && ordered)
        for (uint64_t p = 0; p < j; p++) /* the key's slot holds its place in the sorted list */
            nt[nkey(ngroup_find(nt, (uint32_t)lk[p], mask, bits, &found)) + NGROUP] = (uint32_t)p;
    if (inverse)
        for (int64_t lo, hi; runs_next(&runs, &lo, &hi);)
            for (int64_t q = lo; q < hi; q++)
                inverse[bi[q]] = nt[nkey(ngroup_find(nt, keys[q], mask, bits, &found)) + NGROUP];
    if (base)
        for (uint64_t p = 0; p < j; p++) lk[p] += base; /* narrowed 8-byte keys: their words */
    L->k += (int64_t)j;
    return 0;
}

/* The least and greatest words of 8-byte integers v[0, m) (flip: int64's
 * sign bit), as signed compares of the words moved down by 2^63, which
 * vectorize. */
static WIDE_CLONES void word_range(const uint64_t *v, int64_t m, uint64_t flip, uint64_t *lo, uint64_t *hi)
{
    const uint64_t down = flip ^ 0x8000000000000000ull;
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (int64_t i = 0; i < m; i++) {
        const int64_t w = (int64_t)(v[i] ^ down);
        a = w < a ? w : a;
        b = w > b ? w : b;
    }
    *lo = (uint64_t)a ^ 0x8000000000000000ull;
    *hi = (uint64_t)b ^ 0x8000000000000000ull;
}

/* 1, with the least word in *base, where 8-byte integers (int64, uint64)
 * all lie within 2^32 - 1 of the least: the partition then holds them in
 * 32 bits (the word less *base; no key is the 32-bit empty mark), as
 * 4-byte ones, in half the scratch and the narrow tables -- labels, ids
 * and counts stored as int64 usually do. A strided sample first: where
 * its span is already too wide the input is not read. */
static int narrow_base(const void *x, int64_t n, int dtype, int team, uint64_t *base)
{
    if ((dtype != CUA_INT64 && dtype != CUA_UINT64) || (uint64_t)n > UINT32_MAX || n < 1) return 0;
    const uint64_t *v = (const uint64_t *)x, flip = dtype == CUA_INT64 ? 0x8000000000000000ull : 0;
    const int64_t step = n / 1024 > 1 ? n / 1024 : 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int64_t i = 0; i < n; i += step) {
        const uint64_t w = v[i] ^ flip;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    if (hi - lo >= 0xFFFFFFFFull) return 0; /* (the sample's span is the input's at least) */
#pragma omp parallel for schedule(static) num_threads(team) reduction(min : lo) reduction(max : hi)
    for (int64_t a = 0; a < n; a += (int64_t)1 << 16) {
        uint64_t l, h;
        word_range(v + a, (n - a < ((int64_t)1 << 16) ? n - a : (int64_t)1 << 16), flip, &l, &h);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    if (hi - lo >= 0xFFFFFFFFull) return 0;
    *base = lo;
    return 1;
}

/* Phase B: every element's key goes to its bucket (vmap: a digit of its
 * value for sorted output, else a hash; pass 1, into each thread's pages),
 * and each bucket is counted by one thread in a table that stays in cache
 * (pass 2), giving a list of its distinct keys (sorted, for digits); the
 * buckets' lists concatenated are the values (sorted, for digits). The
 * inverse holds list positions (the finish ranks them, unless sorted). */
static int vector_partition(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, int team)
{
    const int first = (t->want & CUA_UNIQUE_FIRST) != 0, inv = (t->want & CUA_UNIQUE_INVERSE) != 0;
    /* Keys of 4-byte words in 32 bits, unless a bucket could count past
     * 2^32 (the narrow slots' counts are 32 bits); 8-byte integers too,
     * as their words above the least, where all lie within 2^32 - 1 of it
     * (narrow_base). */
    uint64_t base = 0;
    const int narrowed = narrow_base(x, n, dtype, team, &base);
    const int wide = (cua_dtype_size(dtype) == 8 && !narrowed) || (uint64_t)n > UINT32_MAX, need_idx = first || inv;
    const int64_t ks = wide ? 8 : 4;
    int64_t *inverse = inv ? t->inverse : NULL;
    int pbits = 4;
    while (pbits < 12 && (n >> pbits) > (wide ? BUCKET_ELEMS : 2 * BUCKET_ELEMS)) pbits++;
    const int64_t P = (int64_t)1 << pbits;
    vmap map;
    /* Digits wherever the sample spreads over them, sorted output or not
     * (cheaper than the hash, whose multiply is a pass of its own: unsorted
     * calls at 10^6 distinct took longer than sorted ones); each bucket's
     * list is sorted only where sorted output is wanted. */
    bucket_map(x, n, dtype, wide, pbits, narrowed ? &base : NULL, &map);
    const int ordered = map.kind != BY_HASH && (t->want & CUA_UNIQUE_SORTED) != 0;
    /* Pages of 64 bytes (keys alone: 256, a write-combining block) to 4
     * KiB, so that the pages begun and not filled (at most one per thread
     * and bucket) take about an eighth of the keys' room at most (at the
     * smallest pages, with many threads, more). */
    int64_t pg = (need_idx ? 64 : (int64_t)1 << WC_SHIFT) / ks; /* (keys alone: whole write-combining blocks) */
    while (pg * ks < 4096 && 2 * pg * 8 * team * P <= n) pg *= 2;
    const int64_t npages = n / pg + (int64_t)team * P;
    _Atomic int64_t claimed = 0, cursor = 0;
    pages pp = {calloc((size_t)(team * P), 8), calloc((size_t)(team * P), 8), calloc((size_t)(team * P), 8),
                malloc((size_t)npages * 8), pg, pbits, team, &claimed};
    size_t bw_bytes = 0, bi_bytes = 0;
    void *bw = cua_cpu_scratch_take((size_t)(npages * pg * ks), &bw_bytes);
    int64_t *bi = need_idx ? cua_cpu_scratch_take((size_t)(npages * pg * 8), &bi_bytes) : NULL;
    int64_t *where = calloc((size_t)P * 3, 8); /* bucket b's list: thread where[3b]'s, from where[3b + 1], where[3b + 2] long */
    int64_t *offset = calloc((size_t)P + 1, 8); /* bucket b's list in the concatenation */
    vlist *lists = calloc((size_t)team, sizeof *lists);
    btable *tabs = calloc((size_t)team, sizeof *tabs);
    /* each thread's write-combining blocks (keys alone) */
    uint8_t *wc = need_idx ? NULL : aligned_alloc(64, (size_t)team << (pbits + WC_SHIFT));
    int st = (!pp.head || !pp.fill || !pp.cur || !pp.next || !bw || (need_idx && !bi) || !where || !offset || !lists ||
              !tabs || (!need_idx && !wc))
                 ? CUA_ENOMEM
                 : 0;
    uint64_t side_count = 0, side_first = UINT64_MAX;
    if (!st) {
#pragma omp parallel num_threads(team) reduction(+ : side_count) reduction(min : side_first)
        {
            const int me = thread_num(), nt = thread_count(); /* nt: those OpenMP started (may be < team) */
            int64_t lo, hi;
            uint64_t side[2] = {0, UINT64_MAX};
            cua_cpu_share(n, nt, me, &lo, &hi); /* (the rows of threads not started stay empty) */
            uint8_t *mine = wc ? wc + ((size_t)me << (pbits + WC_SHIFT)) : NULL;
            if (wide) scatter_wide(x, dtype, n, lo, hi, &cursor, &pp, me, bw, bi, inverse, side, cfg, mine, &map);
            else scatter_narrow(x, dtype, n, lo, hi, &cursor, &pp, me, bw, bi, inverse, side, cfg, mine, &map);
            side_count += side[0];
            side_first = side[1];
#pragma omp barrier
            /* Each bucket by one thread: a table that stays in cache. */
            btable *b = &tabs[me];
            vlist *L = &lists[me];
            int sized = 0;
#pragma omp for schedule(dynamic, 1)
            for (int64_t u = 0; u < P; u++) {
                if (cua_cpu_stop(cfg)) continue;
                int64_t size = 0;
                for (int th = 0; th < team; th++) size += pp.fill[th * P + u];
                const int64_t start = L->k;
                int rc = wide ? bucket_count(bw, bi, runs_of(&pp, u), size, b, L, first, inverse, ordered)
                                    : bucket_count_narrow(bw, bi, runs_of(&pp, u), size, b, L, first, inverse,
                                                          ordered, base);
                where[3 * u] = me;
                where[3 * u + 1] = start;
                where[3 * u + 2] = L->k - start;
                if (!sized && size && !rc && u > 0 && u < P - 1) {
                    /* The thread's first inner bucket (the first and last digits
                     * take the sample's outliers): room for its share of buckets
                     * like it, at once, not by doubling. */
                    const double share = (double)where[3 * u + 2] * (double)(n / nt) / (double)size * 1.25;
                    if (share > (double)L->cap && share < (double)n &&
                        vlist_reserve(L, (int64_t)share - L->k, first)) rc = CUA_ENOMEM;
                    sized = 1;
                }
                if (rc) {
#pragma omp atomic write
                    st = rc;
                }
            }
        }
    }
    if (!st && cfg->interrupted) st = CUA_EINTR;
    int64_t k = 0;
    if (!st) {
        for (int64_t u = 0; u < P; u++) {
            offset[u] = k;
            k += where[3 * u + 2];
        }
        offset[P] = k;
    }
    /* Where the finish sorts nothing (digits, or unsorted output), it reads
     * the lists where they are: a copy into one list took 4-5 ms of a
     * 65 ms call (int32, 10^6 distinct, 2 cores). */
    parts *pt = !st && (ordered || !(t->want & CUA_UNIQUE_SORTED)) ? malloc(sizeof *pt) : NULL;
    if (pt) {
        const parts made = {lists, where, offset, P, team, wide, first, side_count, side_first};
        *pt = made;
        t->keep = pt;
        lists = NULL;
        where = offset = NULL;
        t->distinct = k + (side_count ? 1 : 0);
        t->compact = PARTS;
        t->builds = 1;
    }
    if (!st && !pt) st = table_alloc(t, k + (side_count ? 1 : 0), 0);
    if (!st && !pt) {
        uint64_t *keys = t->keys, *counts = t->counts, *firsts = t->first;
#pragma omp parallel for schedule(static) num_threads(team)
        for (int64_t u = 0; u < P; u++) {
            const vlist *L = &lists[where[3 * u]];
            const size_t from = (size_t)where[3 * u + 1], bytes = (size_t)where[3 * u + 2] * 8;
            memcpy(keys + offset[u], L->keys + from, bytes);
            memcpy(counts + offset[u], L->counts + from, bytes);
            if (first) memcpy(firsts + offset[u], L->first + from, bytes);
        }
        if (side_count) { /* the side cell last: its key is the largest word of the width */
            keys[k] = key_empty(wide);
            counts[k] = side_count;
            if (first) firsts[k] = side_first;
        }
        t->distinct = k + (side_count ? 1 : 0);
        t->compact = ordered ? SORTED_LIST : LIST;
        t->builds = 1;
    }
    if (!st && inv) {
        /* List positions: each bucket's own, moved past the lists of the
         * buckets before it; the side cell's elements (-1) the last. */
        const int64_t *at = pt ? pt->offset : offset;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
        for (int64_t u = 0; u < P; u++) {
            page_runs r = runs_of(&pp, u);
            for (int64_t lo, hi; runs_next(&r, &lo, &hi);)
                for (int64_t q = lo; q < hi; q++) inverse[bi[q]] += at[u];
        }
        if (side_count)
#pragma omp parallel for schedule(static) num_threads(team)
            for (int64_t i = 0; i < n; i++)
                if (inverse[i] < 0) inverse[i] = k;
    }
    lists_free(lists, team);
    for (int i = 0; i < team && tabs; i++) {
        free(tabs[i].slot);
        free(tabs[i].first);
        free(tabs[i].sk);
        free(tabs[i].tk);
        free(tabs[i].sv);
        free(tabs[i].tv);
    }
    free(tabs);
    free(pp.head);
    free(pp.fill);
    free(pp.cur);
    free(pp.next);
    free(wc);
    cua_cpu_scratch_give(bw, bw_bytes);
    cua_cpu_scratch_give(bi, bi_bytes);
    free(where);
    free(offset);
    return st;
}

static int unique_VECTOR(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg)
{
    const int team = cua_cpu_team(cfg, n, cua_cpu_threads());
    cfg->used_blocks = team;
    cfg->used_threads = 1;
    int spill = 0;
    int st = vector_private(x, n, dtype, t, cfg, team, &spill);
    if (st || !spill) return st;
    table_release(t);
    return vector_partition(x, n, dtype, t, cfg, team);
}

/* ------------------------------------------------------------- finish */

int cua_cpu_unique_finish(const void *x, int64_t n, int dtype, cua_unique_tab *t, const cua_unique_out *out,
                          cua_launch *cfg)
{
    const int64_t k = t->distinct;
    if (k == 0) return 0;
    const int inv = (t->want & CUA_UNIQUE_INVERSE) != 0;
    const int ran = cfg->used_team; /* what last_launch reports is the rung's team, not the finish's */
    const int team = cua_cpu_team(cfg, n, cua_cpu_threads());
    cfg->used_team = ran;
    if (t->compact == PARTS) { /* the partition's lists, bucket by bucket, then the side cell */
        const parts *pt = t->keep;
        /* (Buckets in turn, 8 at a time: a held-up core does fewer.) */
#pragma omp parallel for schedule(dynamic, 8) num_threads(k >= CUA_CPU_GRAIN ? team : 1)
        for (int64_t u = 0; u < pt->buckets; u++) {
            const vlist *L = &pt->lists[pt->where[3 * u]];
            const int64_t from = pt->where[3 * u + 1], m = pt->where[3 * u + 2], to = pt->offset[u];
            if (out->values) from_words(L->keys + from, m, dtype, out->values, to);
            if (out->counts) memcpy(out->counts + to, L->counts + from, (size_t)m * 8); /* (counts < 2^63) */
            if (out->index) memcpy(out->index + to, L->first + from, (size_t)m * 8);
        }
        if (pt->side_count) { /* its key is the largest word of the width */
            if (out->values) from_word(key_empty(pt->wide), dtype, out->values, k - 1);
            if (out->counts) out->counts[k - 1] = (int64_t)pt->side_count;
            if (out->index) out->index[k - 1] = (int64_t)pt->side_first;
        }
        return 0;
    }
    uint64_t *keys = t->keys, *counts = t->counts, *first = t->first;
    uint64_t *lk = NULL, *lc = NULL, *lf = NULL; /* the list, when made here from a table */
    int64_t *slot_id = NULL, *rank = NULL;
    uint64_t *sk = NULL, *tk = NULL;
    int64_t *sv = NULL, *tv = NULL;
    int st = 0;
    if (t->compact == TABLE) { /* the occupied slots in slot order, the side cell last */
        lk = malloc((size_t)k * 8);
        lc = malloc((size_t)k * 8);
        lf = first ? malloc((size_t)k * 8) : NULL;
        slot_id = inv ? malloc((size_t)t->cap * 8) : NULL;
        if (!lk || !lc || (first && !lf) || (inv && !slot_id)) st = CUA_ENOMEM;
        if (!st) {
            int64_t j = 0;
            for (int64_t s = 0; s < t->cap; s++)
                if (keys[s] != EMPTY) {
                    lk[j] = keys[s];
                    lc[j] = counts[s];
                    if (first) lf[j] = first[s];
                    if (inv) slot_id[s] = j;
                    j++;
                }
            if (t->ctl[CUA_UNIQUE_CTL_SIDE_COUNT]) {
                lk[j] = EMPTY;
                lc[j] = t->ctl[CUA_UNIQUE_CTL_SIDE_COUNT];
                if (first) lf[j] = t->ctl[CUA_UNIQUE_CTL_SIDE_FIRST];
                j++;
            }
            if (j != k) st = CUA_EINTERNAL;
        }
        if (!st && inv) {
#pragma omp parallel for schedule(static) num_threads(team)
            for (int64_t a = 0; a < n; a += PIECE) {
                uint64_t w[PIECE];
                const int64_t e = a + PIECE < n ? a + PIECE : n;
                to_words(x, dtype, a, e, w);
                for (int64_t i = a; i < e; i++) {
                    const int64_t s = w[i - a] == EMPTY ? -1 : table_find(t, w[i - a]);
                    t->inverse[i] = s < 0 ? k - 1 : slot_id[s];
                }
            }
        }
        keys = lk;
        counts = lc;
        first = lf;
    }
    /* Sorted output: the k keys sorted, each with a payload -- its count
     * where only counts are wanted (nothing to gather after), else its
     * list position. A key of up to 32 bits shares one word with a 32-bit
     * payload (key above): half the bytes a pass moves. */
    const int sort = (t->want & CUA_UNIQUE_SORTED) && t->compact != RUNS && t->compact != SORTED_LIST && k > 1;
    const int direct = !first && !inv, bits = key_bits(dtype);
    const int packed = bits <= 32 && (uint64_t)(direct ? n : k) <= UINT32_MAX;
    if (!st && sort) {
        sk = malloc((size_t)k * 8);
        tk = malloc((size_t)k * 8);
        sv = packed ? NULL : malloc((size_t)k * 8);
        tv = packed ? NULL : malloc((size_t)k * 8);
        rank = inv ? malloc((size_t)k * 8) : NULL;
        if (!sk || !tk || (!packed && (!sv || !tv)) || (inv && !rank)) st = CUA_ENOMEM;
    }
    if (!st && sort) {
        if (packed) {
            for (int64_t j = 0; j < k; j++) sk[j] = keys[j] << 32 | (direct ? counts[j] : (uint64_t)j);
            team_sort(sk, NULL, k, 32, 32 + bits, tk, NULL, team);
        } else {
            for (int64_t j = 0; j < k; j++) {
                sk[j] = keys[j];
                sv[j] = direct ? (int64_t)counts[j] : j;
            }
            team_sort(sk, sv, k, 0, bits, tk, tv, team);
        }
    }
    if (!st) {
#pragma omp parallel for schedule(static) num_threads(k >= CUA_CPU_GRAIN ? team : 1)
        for (int64_t j = 0; j < k; j++) {
            uint64_t w = keys[j], p = (uint64_t)j; /* the j-th value's word and payload */
            if (sort && packed) {
                w = sk[j] >> 32;
                p = sk[j] & 0xFFFFFFFFu;
            } else if (sort) {
                w = sk[j];
                p = (uint64_t)sv[j];
            }
            if (out->values) from_word(w, dtype, out->values, j);
            if (out->counts) out->counts[j] = (int64_t)(sort && direct ? p : counts[p]);
            if (out->index) out->index[j] = (int64_t)first[p];
            if (rank) rank[p] = j;
        }
        if (rank) {
#pragma omp parallel for schedule(static) num_threads(team)
            for (int64_t i = 0; i < n; i++) t->inverse[i] = rank[t->inverse[i]];
        }
    }
    free(lk);
    free(lc);
    free(lf);
    free(slot_id);
    free(rank);
    free(sk);
    free(tk);
    free(sv);
    free(tv);
    return st;
}

void cua_cpu_unique_free(cua_unique_tab *t)
{
    table_release(t);
}

static const cua_unique_row unique_rows[] = {
    {{"sort", 1, "the reference: every key (with its index) radix-sorted, 8 bits a pass; runs of equal keys are the values", CUA_F_DETERMINISTIC},
     unique_SORT},
    {{"global", 2, "one open-addressing table shared by the team: compare-exchange claims a slot, fetch_add counts, a CAS loop keeps the first index", 0},
     unique_GLOBAL},
    {{"shared", 3, "a private table per logical block (plain stores) in front of the shared one, merged once", 0},
     unique_SHARED},
    {{"warp_aggregated", 4, "32 consecutive elements of a block combined first (a short scan: no match instruction), one atomic insert per distinct key", 0},
     unique_WARP_AGGREGATED},
    {{"vector", 5, "a cache-sized table per OS thread (no atomics), merged once; past 2^13 distinct values in a share, a radix partition (by value digits for sorted output, else by hash), a bucket per thread", 0},
     unique_VECTOR},
};
const cua_ladder cua_cpu_unique_ladder = CUA_LADDER(unique_rows);
