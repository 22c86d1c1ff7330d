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
 *                     2^14), merged once; where a thread's share has more
 *                     distinct keys than that table takes, the call switches
 *                     to a radix partition: the keys are scattered by their
 *                     hash's top bits into buckets of a few thousand distinct
 *                     keys each, and each bucket is counted by one thread in
 *                     a table that stays in cache (its elements in index
 *                     order: a key's first element is its first index).
 *
 * Keys are cuatomic_abi.h's order-keeping words, all held in 64 bits here
 * (a 4-byte key's word never is the all-ones empty mark: only int64's and
 * uint64's largest values go to the side cell). Tables grow by four and are
 * built again when one passes half full (rungs 2-4), as on the GPU. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define EMPTY UINT64_MAX
enum { TABLE = 0, RUNS = 1, LIST = 2 }; /* cua_unique_tab.compact */

/* ---------------------------------------------------------------- keys */

static inline uint64_t word_f32(float v)
{
    uint32_t b;
    if (v == 0.0f) b = 0;
    else if (v != v) b = 0x7FC00000u;
    else memcpy(&b, &v, 4);
    return (b & 0x80000000u) ? (uint32_t)~b : (b | 0x80000000u);
}

static inline uint64_t word_f64(double v)
{
    uint64_t b;
    if (v == 0.0) b = 0;
    else if (v != v) b = 0x7FF8000000000000ull;
    else memcpy(&b, &v, 8);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}

/* The words of x[lo, hi) into w (a typed loop per dtype). */
static void to_words(const void *x, int dtype, int64_t lo, int64_t hi, uint64_t *w)
{
    const int64_t m = hi - lo;
#define LOOP(T, expr)                                  \
    do {                                               \
        const T *p = (const T *)x + lo;                \
        for (int64_t i = 0; i < m; i++) w[i] = (expr); \
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

/* Element j of `out` (dtype) from its word. */
static void from_word(uint64_t w, int dtype, void *out, int64_t j)
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

static void table_release(cua_unique_tab *t)
{
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

/* Sort n words (with their values `v`, may be NULL) by their low `bits`
 * bits, LSD, 8 bits a pass, stable, between the arrays and the scratch
 * (tk/tv, n each) in turn; a pass whose digit is the same for every word is
 * skipped. The result ends in k/v. */
#define RADIX_BITS 8
static void radix_sort(uint64_t *k, int64_t *v, int64_t n, int bits, uint64_t *tk, int64_t *tv)
{
    uint64_t *src = k, *dst = tk;
    int64_t *vsrc = v, *vdst = tv;
    static _Thread_local int64_t count[(1 << RADIX_BITS) + 1];
    for (int shift = 0; shift < bits; shift += RADIX_BITS) {
        const uint64_t digit = (1u << RADIX_BITS) - 1;
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++) count[((src[i] >> shift) & digit) + 1]++;
        int uniform = 0;
        for (int d = 1; d <= (1 << RADIX_BITS); d++) uniform |= count[d] == n;
        if (uniform) continue;
        for (int d = 1; d <= (1 << RADIX_BITS); d++) count[d] += count[d - 1];
        if (vsrc)
            for (int64_t i = 0; i < n; i++) {
                const int64_t to = count[(src[i] >> shift) & digit]++;
                dst[to] = src[i];
                vdst[to] = vsrc[i];
            }
        else
            for (int64_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & digit]++] = src[i];
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
    if (!st) radix_sort(k, v, n, key_bits(dtype), tk, tv);
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

/* A thread's private table: 2^14 slots (384 KiB with first indices: its
 * share of a core's L2). */
#define THREAD_SLOTS ((uint64_t)1 << 14)
/* The partition's target: about this many elements a bucket. */
#define BUCKET_ELEMS ((int64_t)1 << 16)

/* Phase A: private tables, merged into a shared table sized for what they
 * hold. 1 in *spill when a thread met more distinct keys than its table
 * takes (the caller goes to phase B). */
static int vector_private(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, int team,
                          int *spill)
{
    const int first = (t->want & CUA_UNIQUE_FIRST) != 0;
    ptable *p = calloc((size_t)team, sizeof *p);
    if (!p) return CUA_ENOMEM;
    int st = 0, full = 0;
    for (int i = 0; i < team && !st; i++) st = ptable_init(&p[i], BLOCK_SLOTS, THREAD_SLOTS, first);
    uint64_t side_count = 0, side_first = UINT64_MAX;
    if (!st) {
#pragma omp parallel num_threads(team) reduction(+ : side_count) reduction(min : side_first)
        {
            const int me = thread_num(), nt = thread_count(); /* nt: those OpenMP started (may be < team) */
            ptable mine = p[me]; /* a copy on this thread's stack: the compiler keeps its fields in registers */
            int64_t lo, hi;
            uint64_t w[PIECE];
            cua_cpu_share(n, nt, me, &lo, &hi);
            for (int64_t a = lo; a < hi && !__atomic_load_n(&full, __ATOMIC_RELAXED) && !cua_cpu_stop(cfg);
                 a += PIECE) {
                const int64_t e = a + PIECE < hi ? a + PIECE : hi;
                to_words(x, dtype, a, e, w);
                for (int64_t i = a; i < e; i++) {
                    const uint64_t k = w[i - a];
                    if (k == EMPTY) {
                        side_count++;
                        if ((uint64_t)i < side_first) side_first = (uint64_t)i;
                    } else if (!ptable_add(&mine, k, 1, (uint64_t)i)) {
                        __atomic_store_n(&full, 1, __ATOMIC_RELAXED);
                        break;
                    }
                }
            }
            p[me] = mine;
        }
    }
    if (!st && cfg->interrupted) st = CUA_EINTR;
    if (!st && !full) {
        uint64_t total = 0;
        for (int i = 0; i < team; i++) total += p[i].filled;
        int64_t cap = 2;
        while ((uint64_t)cap < 2 * total) cap *= 2;
        st = table_alloc(t, cap, 1);
        if (!st) {
            const table tab = table_of(t);
#pragma omp parallel for schedule(static, 1) num_threads(team)
            for (int i = 0; i < team; i++) ptable_merge(&p[i], &tab);
            if (side_count) side_add(&tab, side_count, side_first, first);
            t->distinct = (int64_t)t->ctl[CUA_UNIQUE_CTL_FILLED] + (side_count ? 1 : 0);
            t->compact = TABLE;
            t->builds = 1;
        }
    }
    *spill = full;
    for (int i = 0; i < team; i++) ptable_free(&p[i]);
    free(p);
    return st;
}

/* Phase B: the radix partition. Every element's word goes to bucket
 * mix(word)'s top `pbits` bits (thread shares in order, so a bucket's
 * elements keep index order); each bucket is then counted by one thread in
 * a table of its own, growing by rehash, whose keys become a list (in the
 * order they were met) -- the buckets' lists concatenated are the values.
 * The inverse holds list positions (the finish ranks them). */
typedef struct {
    uint64_t *keys, *counts, *first;
    int64_t k;
} bucket_list;

static int vector_partition(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg, int team)
{
    const int first = (t->want & CUA_UNIQUE_FIRST) != 0, inv = (t->want & CUA_UNIQUE_INVERSE) != 0;
    const int need_idx = first || inv;
    int pbits = 4;
    while (pbits < 12 && (n >> pbits) > BUCKET_ELEMS) pbits++;
    const int64_t P = (int64_t)1 << pbits;
    int64_t *hist = calloc((size_t)(team * P + 1), 8);
    uint64_t *bw = malloc((size_t)(n ? n : 1) * 8);
    int64_t *bi = need_idx ? malloc((size_t)(n ? n : 1) * 8) : NULL;
    bucket_list *lists = calloc((size_t)P, sizeof *lists);
    int64_t *offset = calloc((size_t)P + 1, 8);
    int st = (!hist || !bw || (need_idx && !bi) || !lists || !offset) ? CUA_ENOMEM : 0;
    uint64_t side_count = 0, side_first = UINT64_MAX;
    if (!st) {
#pragma omp parallel num_threads(team) reduction(+ : side_count) reduction(min : side_first)
        {
            const int me = thread_num(), nt = thread_count(); /* nt: those OpenMP started (may be < team) */
            int64_t lo, hi;
            uint64_t w[PIECE];
            int64_t *h = hist + (int64_t)me * P;
            cua_cpu_share(n, nt, me, &lo, &hi); /* (the rows of threads not started stay zero) */
            for (int64_t a = lo; a < hi && !cua_cpu_stop(cfg); a += PIECE) {
                const int64_t e = a + PIECE < hi ? a + PIECE : hi;
                to_words(x, dtype, a, e, w);
                for (int64_t i = a; i < e; i++)
                    if (w[i - a] != EMPTY) h[mix(w[i - a]) >> (64 - pbits)]++;
            }
#pragma omp barrier
#pragma omp single
            { /* bucket p's run for thread me: after every earlier bucket, and earlier threads' share of p */
                int64_t at = 0;
                for (int64_t b = 0; b < P; b++)
                    for (int th = 0; th < team; th++) {
                        const int64_t c = hist[(int64_t)th * P + b];
                        hist[(int64_t)th * P + b] = at;
                        at += c;
                    }
                for (int64_t b = 0; b < P; b++) offset[b] = hist[b]; /* thread 0's start is the bucket's */
                offset[P] = at;
            }
            for (int64_t a = lo; a < hi && !cua_cpu_stop(cfg); a += PIECE) {
                const int64_t e = a + PIECE < hi ? a + PIECE : hi;
                to_words(x, dtype, a, e, w);
                for (int64_t i = a; i < e; i++) {
                    const uint64_t k = w[i - a];
                    if (k == EMPTY) {
                        side_count++;
                        if ((uint64_t)i < side_first) side_first = (uint64_t)i;
                        if (inv) t->inverse[i] = -1; /* set once the lists are numbered */
                        continue;
                    }
                    const int64_t to = h[mix(k) >> (64 - pbits)]++;
                    bw[to] = k;
                    if (bi) bi[to] = i;
                }
            }
#pragma omp barrier
            /* Each bucket by one thread: a table that stays in cache. */
#pragma omp for schedule(dynamic, 1)
            for (int64_t b = 0; b < P; b++) {
                if (cua_cpu_stop(cfg)) continue;
                const int64_t lo_b = offset[b], hi_b = offset[b + 1], m = hi_b - lo_b;
                uint64_t slots = 16;
                while (slots < 2 * (uint64_t)(m < 8192 ? m : 8192)) slots *= 2;
                uint64_t *key = malloc(slots * 8);
                int64_t *id = malloc(slots * 8);
                bucket_list *L = &lists[b];
                int64_t cap = 64;
                L->keys = malloc((size_t)cap * 8);
                L->counts = malloc((size_t)cap * 8);
                L->first = first ? malloc((size_t)cap * 8) : NULL;
                if (!key || !id || !L->keys || !L->counts || (first && !L->first)) {
#pragma omp atomic write
                    st = CUA_ENOMEM;
                    free(key);
                    free(id);
                    continue;
                }
                for (uint64_t s = 0; s < slots; s++) key[s] = EMPTY;
                uint64_t mask = slots - 1;
                int bits = 0;
                while (((uint64_t)1 << bits) < slots) bits++;
                for (int64_t q = lo_b; q < hi_b; q++) {
                    const uint64_t k = bw[q];
                    uint64_t s = fib(k, bits);
                    while (key[s] != k && key[s] != EMPTY) s = (s + 1) & mask;
                    if (key[s] == EMPTY) { /* a new value: the next list position */
                        if (L->k == cap) {
                            cap *= 2;
                            uint64_t *nk = realloc(L->keys, (size_t)cap * 8), *nc = realloc(L->counts, (size_t)cap * 8);
                            if (nk) L->keys = nk;
                            if (nc) L->counts = nc;
                            uint64_t *nf = first ? realloc(L->first, (size_t)cap * 8) : NULL;
                            if (nf) L->first = nf;
                            if (!nk || !nc || (first && !nf)) {
#pragma omp atomic write
                                st = CUA_ENOMEM;
                                break;
                            }
                        }
                        key[s] = k;
                        id[s] = L->k;
                        L->keys[L->k] = k;
                        L->counts[L->k] = 0;
                        if (first) L->first[L->k] = (uint64_t)bi[q]; /* index order: the first */
                        L->k++;
                        if ((uint64_t)L->k * 2 > slots) { /* rehash into twice the slots */
                            const uint64_t ns = slots * 2;
                            uint64_t *k2 = malloc(ns * 8);
                            int64_t *id2 = malloc(ns * 8);
                            if (!k2 || !id2) {
                                free(k2);
                                free(id2);
#pragma omp atomic write
                                st = CUA_ENOMEM;
                                break;
                            }
                            for (uint64_t z = 0; z < ns; z++) k2[z] = EMPTY;
                            for (uint64_t z = 0; z < slots; z++)
                                if (key[z] != EMPTY) {
                                    uint64_t y = fib(key[z], bits + 1);
                                    while (k2[y] != EMPTY) y = (y + 1) & (ns - 1);
                                    k2[y] = key[z];
                                    id2[y] = id[z];
                                }
                            free(key);
                            free(id);
                            key = k2;
                            id = id2;
                            slots = ns;
                            mask = ns - 1;
                            bits++;
                            s = fib(k, bits);
                            while (key[s] != k) s = (s + 1) & mask;
                        }
                    }
                    L->counts[id[s]]++;
                    if (inv) t->inverse[bi[q]] = id[s];
                }
                free(key);
                free(id);
            }
        }
    }
    if (!st && cfg->interrupted) st = CUA_EINTR;
    int64_t k = 0;
    int64_t *bstart = NULL;
    if (!st) {
        bstart = malloc((size_t)(P + 1) * 8);
        if (!bstart) st = CUA_ENOMEM;
    }
    if (!st) {
        memcpy(bstart, offset, (size_t)(P + 1) * 8);
        for (int64_t b = 0; b < P; b++) {
            offset[b] = k;
            k += lists[b].k;
        }
        st = table_alloc(t, k + (side_count ? 1 : 0), 0);
    }
    if (!st) {
        uint64_t *keys = t->keys, *counts = t->counts, *firsts = t->first;
        for (int64_t b = 0; b < P; b++) {
            memcpy(keys + offset[b], lists[b].keys, (size_t)lists[b].k * 8);
            memcpy(counts + offset[b], lists[b].counts, (size_t)lists[b].k * 8);
            if (first) memcpy(firsts + offset[b], lists[b].first, (size_t)lists[b].k * 8);
        }
        if (side_count) {
            keys[k] = EMPTY;
            counts[k] = side_count;
            if (first) firsts[k] = side_first;
        }
        t->distinct = k + (side_count ? 1 : 0);
        t->compact = LIST;
        t->builds = 1;
    }
    if (!st && inv) {
        /* List positions: each bucket's own, moved past the lists of the
         * buckets before it; the side cell's elements (-1) the last. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
        for (int64_t b = 0; b < P; b++)
            for (int64_t q = bstart[b]; q < bstart[b + 1]; q++) t->inverse[bi[q]] += offset[b];
        if (side_count)
#pragma omp parallel for schedule(static) num_threads(team)
            for (int64_t i = 0; i < n; i++)
                if (t->inverse[i] < 0) t->inverse[i] = k;
    }
    for (int64_t b = 0; b < P && lists; b++) {
        free(lists[b].keys);
        free(lists[b].counts);
        free(lists[b].first);
    }
    free(lists);
    free(hist);
    free(bw);
    free(bi);
    free(offset);
    free(bstart);
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
    uint64_t *keys = t->keys, *counts = t->counts, *first = t->first;
    uint64_t *lk = NULL, *lc = NULL, *lf = NULL; /* the list, when made here from a table */
    int64_t *slot_id = NULL, *order = NULL, *rank = NULL;
    uint64_t *tk = NULL;
    int64_t *tv = NULL;
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
    /* Sorted output: the k keys sorted with their list positions. */
    const int sort = (t->want & CUA_UNIQUE_SORTED) && t->compact != RUNS && k > 1;
    if (!st && sort) {
        uint64_t *sk = malloc((size_t)k * 8);
        order = malloc((size_t)k * 8);
        tk = malloc((size_t)k * 8);
        tv = malloc((size_t)k * 8);
        rank = inv ? malloc((size_t)k * 8) : NULL;
        if (!sk || !order || !tk || !tv || (inv && !rank)) st = CUA_ENOMEM;
        if (!st) {
            memcpy(sk, keys, (size_t)k * 8);
            for (int64_t j = 0; j < k; j++) order[j] = j;
            radix_sort(sk, order, k, key_bits(dtype), tk, tv);
            if (inv)
                for (int64_t j = 0; j < k; j++) rank[order[j]] = j;
        }
        free(sk);
    }
    if (!st) {
        for (int64_t j = 0; j < k; j++) {
            const int64_t s = order ? order[j] : j;
            if (out->values) from_word(keys[s], dtype, out->values, j);
            if (out->counts) out->counts[j] = (int64_t)counts[s];
            if (out->index) out->index[j] = (int64_t)first[s];
        }
        if (inv && rank) {
#pragma omp parallel for schedule(static) num_threads(team)
            for (int64_t i = 0; i < n; i++) t->inverse[i] = rank[t->inverse[i]];
        }
    }
    free(lk);
    free(lc);
    free(lf);
    free(slot_id);
    free(order);
    free(rank);
    free(tk);
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
    {{"vector", 5, "a cache-sized table per OS thread (no atomics), merged once; past 2^13 distinct values in a share, a radix partition by hash, a bucket per thread", 0},
     unique_VECTOR},
};
const cua_ladder cua_cpu_unique_ladder = CUA_LADDER(unique_rows);
