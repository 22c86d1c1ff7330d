/* argmin.c -- the argmin ladder on the CPU (cuda/argmin.cu tells the
 * lesson; here each step says what it does on a CPU and how it differs
 * from the GPU rung of the same name).
 *
 * Every rung minimizes the pair (key, index): the key orders the values as
 * the op asks, with the ties and the NaN rule in integer order (cuda/argmin.cu's
 * head): integers with the sign bit flipped, floats' bits made monotonic,
 * -0.0 as +0.0, every NaN 0; argmax inverts the non-NaN keys.
 *
 *  1. cas         a shared cell holds the best index; every element reads
 *                 it, keys the element it names, and compare-exchanges its
 *                 own index in if its pair comes first (retrying against
 *                 what another thread wrote). The cell's cache line moves
 *                 between cores only when an element wins.
 *  2. packed      one 64-bit atomic minimum per element on key << b |
 *                 index: C11 has no fetch_min, so it is a compare-exchange
 *                 that skips the exchange when the cell is already smaller
 *                 -- the GPU's atomicMin done by hand. Elements of at most
 *                 4 bytes and n <= 2^b, as on the GPU.
 *  3. block_tree  each logical thread keeps its best pair over its
 *                 contiguous share, a logical block's threads combine in
 *                 the tree the GPU builds in shared memory (a loop on the
 *                 one OS thread that runs the block), then rung 1's
 *                 compare-exchange once per block.
 *  4. vector      one contiguous chunk per OpenMP thread, scanned in
 *                 windows: the smallest key of a window in SIMD lanes (an
 *                 AVX2 clone where the CPU has it), and only when it beats
 *                 the chunk's best, the window (in L1 by then) searched for
 *                 its first position. The chunks' pairs are combined in
 *                 chunk order by the calling thread; no atomic at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_CLONES
#endif

/* ------------------------------------------------------------------- keys */

/* The key of each element type; `flip` is 0 (argmin) or every bit of the
 * value's width (argmax), applied to non-NaN keys only. Branch-free, so
 * the window scans vectorize. */
/* Floats keyed from their bits (the scans read a float array as its bits:
 * a reinterpreting copy per element would keep the loop from vectorizing). */
static inline uint32_t key_f32_bits(uint32_t b, uint32_t flip)
{
    const uint32_t mag = b & 0x7FFFFFFFu;
    b &= 0u - (uint32_t)(mag != 0);                                 /* -0.0 == +0.0 */
    const uint32_t ord = b ^ ((0u - (b >> 31)) | 0x80000000u);      /* negatives inverted */
    return (ord ^ flip) & (0u - (uint32_t)(mag <= 0x7F800000u));   /* a NaN before every number */
}
static inline uint64_t key_f64_bits(uint64_t b, uint64_t flip)
{
    const uint64_t mag = b & 0x7FFFFFFFFFFFFFFFull;
    b &= 0u - (uint64_t)(mag != 0);
    const uint64_t ord = b ^ ((0u - (b >> 63)) | 0x8000000000000000ull);
    return (ord ^ flip) & (0u - (uint64_t)(mag <= 0x7FF0000000000000ull));
}
static inline uint32_t key_f32(float v, uint32_t flip)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return key_f32_bits(b, flip);
}
static inline uint64_t key_f64(double v, uint64_t flip)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return key_f64_bits(b, flip);
}
#define SIGNED_KEY(name, T, U, K, TOP) \
    static inline K name(T v, K flip) { return (K)(U)((U)v ^ (U)(TOP)) ^ flip; }
SIGNED_KEY(key_i8, int8_t, uint8_t, uint32_t, 0x80u)
SIGNED_KEY(key_u8, uint8_t, uint8_t, uint32_t, 0u)
SIGNED_KEY(key_i16, int16_t, uint16_t, uint32_t, 0x8000u)
SIGNED_KEY(key_u16, uint16_t, uint16_t, uint32_t, 0u)
SIGNED_KEY(key_i32, int32_t, uint32_t, uint32_t, 0x80000000u)
SIGNED_KEY(key_u32, uint32_t, uint32_t, uint32_t, 0u)
SIGNED_KEY(key_i64, int64_t, uint64_t, uint64_t, 0x8000000000000000ull)
SIGNED_KEY(key_u64, uint64_t, uint64_t, uint64_t, 0u)
#undef SIGNED_KEY
/* A bool is any nonzero byte, as NumPy reads it (a view of other bytes as
 * bool holds 2s and 255s that are all True). */
static inline uint32_t key_bool(uint8_t v, uint32_t flip) { return (uint32_t)(v != 0) ^ flip; }

/* Every bit of an element's width: argmax's flip. */
static uint64_t flip_of(int dtype, int max)
{
    const size_t size = cua_dtype_size(dtype);
    return !max ? 0 : size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/* The key of element i of any type (the per-element rungs; the vector
 * rung's scans are typed). */
static uint64_t key_at(const void *x, int dtype, int64_t i, uint64_t flip)
{
    switch (dtype) {
    case CUA_BOOL: return key_bool(((const uint8_t *)x)[i], (uint32_t)flip);
    case CUA_UINT8: return key_u8(((const uint8_t *)x)[i], (uint32_t)flip);
    case CUA_INT8: return key_i8(((const int8_t *)x)[i], (uint32_t)flip);
    case CUA_INT16: return key_i16(((const int16_t *)x)[i], (uint32_t)flip);
    case CUA_UINT16: return key_u16(((const uint16_t *)x)[i], (uint32_t)flip);
    case CUA_INT32: return key_i32(((const int32_t *)x)[i], (uint32_t)flip);
    case CUA_UINT32: return key_u32(((const uint32_t *)x)[i], (uint32_t)flip);
    case CUA_INT64: return key_i64(((const int64_t *)x)[i], flip);
    case CUA_UINT64: return key_u64(((const uint64_t *)x)[i], flip);
    case CUA_FLOAT32: return key_f32(((const float *)x)[i], (uint32_t)flip);
    default: return key_f64(((const double *)x)[i], flip);
    }
}

uint64_t cua_cpu_arg_key(const void *x, int dtype, int64_t i, int max)
{
    return key_at(x, dtype, i, flip_of(dtype, max));
}

int cua_cpu_argkeys(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int max, int mode,
                    const uint64_t *best, uint64_t *out)
{
    const int64_t rows = outer * m;
    const uint64_t flip = flip_of(dtype, max);
    /* row r = o * m + j of inner elements: no division per element */
#pragma omp parallel for schedule(static) if (rows * inner > CUA_CPU_GRAIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t e0 = r * inner;
        const uint64_t j = (uint64_t)(r % m);
        const uint64_t *b = mode == CUA_ARGKEYS_MATCH ? best + r / m * inner : NULL;
        if (mode == CUA_ARGKEYS_PACKED)
            for (int64_t i = 0; i < inner; i++) out[e0 + i] = key_at(x, dtype, e0 + i, flip) << 32 | j;
        else if (mode == CUA_ARGKEYS_KEY)
            for (int64_t i = 0; i < inner; i++) out[e0 + i] = key_at(x, dtype, e0 + i, flip);
        else
            for (int64_t i = 0; i < inner; i++) out[e0 + i] = key_at(x, dtype, e0 + i, flip) == b[i] ? j : (uint64_t)m;
    }
    return CUA_OK;
}

typedef struct {
    uint64_t key;
    int64_t index;
} best_t;

static const best_t NONE = {~0ull, INT64_MAX};

static inline int before(best_t a, best_t b) { return a.key < b.key || (a.key == b.key && a.index < b.index); }
static inline best_t first_of(best_t a, best_t b) { return before(b, a) ? b : a; }

/* Rung 1's offer: swap index i into the cell holding the best index so far
 * if (key, i) comes first; on a failed exchange `cur` is refreshed with
 * what another thread wrote and the compare is made again. */
static void cas_offer(const void *x, int dtype, uint64_t flip, _Atomic int64_t *cell, uint64_t key, int64_t i)
{
    int64_t cur = atomic_load_explicit(cell, memory_order_relaxed);
    const best_t mine = {key, i};
    do {
        const best_t held = {key_at(x, dtype, cur, flip), cur};
        if (!before(mine, held)) return;
    } while (!atomic_compare_exchange_weak_explicit(cell, &cur, i, memory_order_relaxed, memory_order_relaxed));
}

/* ------------------------------------------------------------------ rungs */

/* Rungs 1 and 2: every logical thread visits each element of its share,
 * a piece at a time (Ctrl-C is asked between pieces). */
typedef void (*visit_fn)(void *state, int64_t i);

static void per_element(visit_fn visit, void *state, int64_t n, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t w = 0; w < g.busy; w++) {
        if (cua_cpu_stop(cfg)) continue;
        int64_t lo, hi;
        cua_cpu_share(n, g.workers, w, &lo, &hi);
        CUA_CPU_PIECES(cfg, lo, hi, a, b)
        for (int64_t i = a; i < b; i++) visit(state, i);
    }
}

typedef struct {
    const void *x;
    int dtype, bits; /* packed: the index bits below the key */
    uint64_t flip;
    _Atomic int64_t index;  /* cas: the best index so far */
    _Atomic uint64_t word;  /* packed: key << bits | index, the smallest so far */
} cells_t;

static void offer_index(void *state, int64_t i)
{
    cells_t *c = state;
    cas_offer(c->x, c->dtype, c->flip, &c->index, key_at(c->x, c->dtype, i, c->flip), i);
}

static int arg_cas(const void *x, int64_t n, int dtype, int max, int64_t *index, cua_launch *cfg)
{
    cells_t c = {x, dtype, 0, flip_of(dtype, max), 0, 0}; /* index 0: a valid start, n >= 1 */
    per_element(offer_index, &c, n, cfg);
    *index = atomic_load(&c.index);
    return CUA_CPU_DONE(cfg);
}

/* packed's limits, as on the GPU (cua_packed_index_bits, one wording). */
static int packed_fits(int64_t n, int dtype, cua_launch *cfg)
{
    const size_t size = cua_dtype_size(dtype);
    const int bits = cua_packed_index_bits(size);
    if (bits == 0) {
        snprintf(cfg->msg, sizeof cfg->msg, CUA_PACKED_NO_INDEX_BITS, (int)size);
        return CUA_EINVAL;
    }
    if (bits < 63 && n > ((int64_t)1 << bits)) {
        snprintf(cfg->msg, sizeof cfg->msg, CUA_PACKED_TOO_MANY, bits, (long long)n, bits);
        return CUA_EINVAL;
    }
    return CUA_OK;
}

/* The GPU's atomicMin on a 64-bit cell, as a compare-exchange that gives
 * up once the cell holds a smaller value. */
static void offer_word(void *state, int64_t i)
{
    cells_t *c = state;
    const uint64_t v = key_at(c->x, c->dtype, i, c->flip) << c->bits | (uint64_t)i;
    uint64_t old = atomic_load_explicit(&c->word, memory_order_relaxed);
    while (v < old &&
           !atomic_compare_exchange_weak_explicit(&c->word, &old, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static int arg_packed(const void *x, int64_t n, int dtype, int max, int64_t *index, cua_launch *cfg)
{
    const int st = packed_fits(n, dtype, cfg);
    if (st) return st;
    const int bits = cua_packed_index_bits(cua_dtype_size(dtype));
    cells_t c = {x, dtype, bits, flip_of(dtype, max), 0, ~0ull};
    per_element(offer_word, &c, n, cfg);
    *index = (int64_t)(atomic_load(&c.word) & ((1ull << bits) - 1));
    return CUA_CPU_DONE(cfg);
}

/* Logical block `block`: its threads' best pairs over their shares, then
 * the tree of the CUDA rung. */
static best_t block_best(const void *x, int64_t n, int dtype, uint64_t flip, const cua_launch *cfg, int64_t block)
{
    best_t lanes[CUA_CPU_MAX_BLOCK_THREADS];
    const int T = cfg->threads;
    const int64_t W = cfg->blocks * T;
    for (int t = 0; t < T; t++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, block * T + t, &lo, &hi);
        best_t b = NONE;
        for (int64_t i = lo; i < hi; i++) { /* rising indices: only a smaller key comes first */
            const uint64_t k = key_at(x, dtype, i, flip);
            if (k < b.key) b = (best_t){k, i};
        }
        lanes[t] = b;
    }
    int s = 1;
    while (s * 2 < T) s *= 2;
    for (; s > 0; s >>= 1)
        for (int t = 0; t < s && t + s < T; t++) lanes[t] = first_of(lanes[t], lanes[t + s]);
    return lanes[0];
}

static int arg_block_tree(const void *x, int64_t n, int dtype, int max, int64_t *index, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    const uint64_t flip = flip_of(dtype, max);
    _Atomic int64_t cell = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t k = 0; k < g.busy_blocks; k++) {
        if (cua_cpu_stop(cfg)) continue;
        const best_t b = block_best(x, n, dtype, flip, cfg, k);
        if (b.index < n) cas_offer(x, dtype, flip, &cell, b.key, b.index);
    }
    *index = atomic_load(&cell);
    return CUA_CPU_DONE(cfg);
}

/* The vector rung's window: its smallest key is found in SIMD lanes; the
 * search for its position then reads the window from L1. */
#define WINDOW 2048

/* The first smallest pair of x[lo:hi), window by window. */
#define SCAN(name, T, K, keyfn)                                                                      \
    WIDE_CLONES static best_t name(const T *x, int64_t lo, int64_t hi, K flip, best_t b)            \
    {                                                                                                \
        for (int64_t a = lo; a < hi; a += WINDOW) {                                                 \
            const int64_t e = a + WINDOW < hi ? a + WINDOW : hi;                                    \
            K m = (K)~(K)0;                                                                          \
            for (int64_t i = a; i < e; i++) {                                                        \
                const K k = keyfn(x[i], flip);                                                       \
                m = k < m ? k : m;                                                                   \
            }                                                                                        \
            if ((uint64_t)m >= b.key) continue; /* an equal key later in the chunk never comes first */ \
            for (int64_t i = a; i < e; i++)                                                          \
                if (keyfn(x[i], flip) == m) {                                                        \
                    b = (best_t){m, i};                                                              \
                    break;                                                                           \
                }                                                                                    \
        }                                                                                            \
        return b;                                                                                    \
    }
SCAN(scan_i8, int8_t, uint8_t, key_i8)
SCAN(scan_u8, uint8_t, uint8_t, key_u8)
SCAN(scan_bool, uint8_t, uint8_t, key_bool)
SCAN(scan_i16, int16_t, uint16_t, key_i16)
SCAN(scan_u16, uint16_t, uint16_t, key_u16)
SCAN(scan_i32, int32_t, uint32_t, key_i32)
SCAN(scan_u32, uint32_t, uint32_t, key_u32)
SCAN(scan_i64, int64_t, uint64_t, key_i64)
SCAN(scan_u64, uint64_t, uint64_t, key_u64)
SCAN(scan_f32, uint32_t, uint32_t, key_f32_bits) /* floats as their bits */
SCAN(scan_f64, uint64_t, uint64_t, key_f64_bits)
#undef SCAN

static best_t scan(const void *x, int dtype, int64_t lo, int64_t hi, uint64_t flip, best_t b)
{
    switch (dtype) {
    case CUA_BOOL: return scan_bool(x, lo, hi, (uint32_t)flip, b);
    case CUA_UINT8: return scan_u8(x, lo, hi, (uint32_t)flip, b);
    case CUA_INT8: return scan_i8(x, lo, hi, (uint32_t)flip, b);
    case CUA_INT16: return scan_i16(x, lo, hi, (uint32_t)flip, b);
    case CUA_UINT16: return scan_u16(x, lo, hi, (uint32_t)flip, b);
    case CUA_INT32: return scan_i32(x, lo, hi, (uint32_t)flip, b);
    case CUA_UINT32: return scan_u32(x, lo, hi, (uint32_t)flip, b);
    case CUA_INT64: return scan_i64(x, lo, hi, flip, b);
    case CUA_UINT64: return scan_u64(x, lo, hi, flip, b);
    case CUA_FLOAT32: return scan_f32(x, lo, hi, (uint32_t)flip, b);
    default: return scan_f64(x, lo, hi, flip, b);
    }
}

/* Inputs of fewer elements are one chunk, scanned by the calling thread:
 * waking the team would cost more than it saves. */
#define ONE_CHUNK_BELOW ((int64_t)1 << 15)

static int arg_vector(const void *x, int64_t n, int dtype, int max, int64_t *index, cua_launch *cfg)
{
    if (cfg->blocks <= 0) cfg->blocks = n < ONE_CHUNK_BELOW ? 1 : cua_cpu_threads();
    cfg->used_threads = cfg->threads = 1; /* a chunk is one thread's */
    cua_cpu_clamp_grid(cfg, n, WINDOW);
    const uint64_t flip = flip_of(dtype, max);
    const int64_t B = cfg->blocks, busy = cua_cpu_busy(n, B);
    const int team = cua_cpu_team(cfg, n, busy);
    best_t stack[64], *chunks = busy <= 64 ? stack : malloc((size_t)busy * sizeof *chunks);
    if (!chunks) return CUA_ENOMEM;
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t k = 0; k < busy; k++) {
        int64_t lo, hi;
        cua_cpu_share(n, B, k, &lo, &hi);
        best_t b = NONE;
        CUA_CPU_PIECES(cfg, lo, hi, a, e) b = scan(x, dtype, a, e, flip, b);
        chunks[k] = b;
    }
    best_t b = chunks[0];
    for (int64_t k = 1; k < busy; k++) b = first_of(b, chunks[k]);
    if (chunks != stack) free(chunks);
    /* No pair beats the sentinel only when every key is the largest (argmin
     * of all UINT64_MAX, argmax of all zeros): then the first index. */
    *index = b.index == INT64_MAX ? 0 : b.index;
    return CUA_CPU_DONE(cfg);
}

/* ----------------------------------------------------------- variant table */

static const cua_arg_row argmin_rows[] = {
    {{"cas", 1, "a shared cell holds the best index: each element compares with the one it names and compare-exchanges its index in",
      CUA_F_DETERMINISTIC},
     arg_cas, NULL},
    {{"packed", 2, "one 64-bit atomic minimum per element on one word, the key above the index: a compare-exchange on a CPU",
      CUA_F_DETERMINISTIC},
     arg_packed, packed_fits},
    {{"block_tree", 3, "best (key, index) per logical thread, a logical block's tree (a loop on one OS thread), one compare-exchange per block",
      CUA_F_DETERMINISTIC},
     arg_block_tree, NULL},
    {{"vector", 4, "a chunk per OpenMP thread, each window's smallest key in SIMD lanes, its position searched only when it wins; chunks combined in order",
      CUA_F_DETERMINISTIC},
     arg_vector, NULL},
};
const cua_ladder cua_cpu_argmin_ladder = CUA_LADDER(argmin_rows);
