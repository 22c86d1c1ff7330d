/* xacc.h -- the superaccumulator of the exact sums, shared by both backends.
 *
 * An exact sum keeps every bit: the value is an integer N times 2^CUA_XACC_E0,
 * held as CUA_XACC_WORDS signed 64-bit words, word k weighing
 * 2^(32k + CUA_XACC_E0). A float64 x = m * 2^e (m < 2^53 an integer, e the
 * exponent of its last bit, e >= -1074) shifted into place is at most 85 bits
 * and lands on three adjacent words as 32-bit digits; the exact product of two
 * float64 (m_a*m_b < 2^106, exponent >= -2148) lands on five. Each word takes
 * digits below 2^32 added with their sign, so a word can absorb 2^31 additions
 * before it could overflow: whoever adds more than that normalizes in
 * between (a launcher does it per piece of at most CUA_XACC_PIECE terms).
 * Integer addition is associative: any order, any number of threads, blocks
 * or chunks gives the same words once normalized -- the sum is exact and
 * order-independent, and the caller rounds it once.
 *
 * Collange, Defour, Graillat, Iakymchuk, "Numerical reproducibility for the
 * parallel reduction on multi- and many-core architectures", Parallel
 * Computing 49 (2015): the long accumulator updated with integer atomics.
 *
 * Integer data is summed exactly too (at weight 2^0), so every rung of the
 * ladder takes every dtype; the caller wraps the exact integer as NumPy's
 * dtype wraps.
 *
 * Non-finite terms are not added: they set bits of `special`, so the result
 * follows IEEE (NaN wins; +inf and -inf together are NaN). A sum of only
 * -0.0 terms is -0.0, as np.sum gives; any other zero sum is +0.0.
 *
 * This header is plain C with CUA_XACC_FN functions usable on the host and,
 * compiled by nvcc, on the device.
 */
#ifndef CUATOMIC_XACC_H
#define CUATOMIC_XACC_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CUA_XACC_FN static __host__ __device__ __forceinline__
#else
#define CUA_XACC_FN static inline
#endif

#define CUA_XACC_WORDS 136       /* 2^-2176 .. 2^2176: every product of two float64, summed 2^64 times */
#define CUA_XACC_E0 (-2176)      /* weight of word 0's last bit: below 2^-2148, a float64 product's lowest bit */
#define CUA_XACC_PIECE (1 << 30) /* terms one word may take between normalizations (well below 2^31) */

enum cua_xacc_special {
    CUA_XACC_NAN = 1u,          /* a NaN term (or inf * 0 in a dot) */
    CUA_XACC_PINF = 2u,         /* a +inf term */
    CUA_XACC_NINF = 4u,         /* a -inf term */
    CUA_XACC_ANY = 8u,          /* at least one term */
    CUA_XACC_NOT_NEGZERO = 16u  /* at least one term that is not -0.0 */
};

/* The state of one exact sum: what a launcher writes to the host `result`
 * of a CUA_F_EXACT rung, and what chunks of one call merge into. */
typedef struct {
    int64_t w[CUA_XACC_WORDS];
    uint64_t special;
} cua_xacc;

/* The words and bits a term contributes: the term is sign * d * 2^(32k + E0),
 * d < 2^160 in five 32-bit digits (digits[4] above them only for products).
 * A non-finite or zero term has ndigits 0 and only sets bits. */
typedef struct {
    int k;              /* word of digits[0] */
    int ndigits;        /* 0, 3 (one float64) or 5 (a product) */
    int negative;
    uint32_t digits[5];
    unsigned special;
} cua_xacc_term;

/* Mantissa (hidden bit included) and last-bit exponent of a finite float64. */
CUA_XACC_FN void cua_xacc_split(double x, uint64_t *m, int *e, int *negative)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    *negative = (int)(bits >> 63);
    const int biased = (int)((bits >> 52) & 0x7ff);
    const uint64_t frac = bits & ((1ull << 52) - 1);
    *m = biased ? frac | (1ull << 52) : frac;
    *e = (biased ? biased : 1) - 1075;
}

/* Special bits of one term x (ANY always; the others as x is). */
CUA_XACC_FN unsigned cua_xacc_classify(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned s = CUA_XACC_ANY | (bits != 0x8000000000000000ull ? CUA_XACC_NOT_NEGZERO : 0u);
    if (((bits >> 52) & 0x7ff) == 0x7ff)
        s |= (bits & ((1ull << 52) - 1)) ? CUA_XACC_NAN : (bits >> 63) ? CUA_XACC_NINF : CUA_XACC_PINF;
    return s;
}

/* hi:lo (a 128-bit magnitude) times 2^(e - E0), placed as digits. */
CUA_XACC_FN cua_xacc_term cua_xacc_place(uint64_t hi, uint64_t lo, int e, int negative, int ndigits,
                                         unsigned special)
{
    cua_xacc_term t;
    const int offset = e - CUA_XACC_E0;  /* >= 28 for every finite term and product */
    const int sh = offset & 31;
    t.k = offset >> 5;
    t.ndigits = ndigits;
    t.negative = negative;
    t.special = special;
    /* (hi:lo) << sh as three 64-bit limbs: at most 106 + 31 bits. */
    const uint64_t l0 = lo << sh;
    const uint64_t l1 = sh ? (hi << sh) | (lo >> (64 - sh)) : hi;
    const uint64_t l2 = sh ? hi >> (64 - sh) : 0;
    t.digits[0] = (uint32_t)l0;
    t.digits[1] = (uint32_t)(l0 >> 32);
    t.digits[2] = (uint32_t)l1;
    t.digits[3] = (uint32_t)(l1 >> 32);
    t.digits[4] = (uint32_t)l2;
    return t;
}

/* One float64 term. */
CUA_XACC_FN cua_xacc_term cua_xacc_term_of(double x)
{
    cua_xacc_term t;
    const unsigned special = cua_xacc_classify(x);
    uint64_t m;
    int e, negative;
    cua_xacc_split(x, &m, &e, &negative);
    if ((special & (CUA_XACC_NAN | CUA_XACC_PINF | CUA_XACC_NINF)) || m == 0) {
        memset(&t, 0, sizeof t);
        t.special = special;
        return t;
    }
    return cua_xacc_place(0, m, e, negative, 3, special);
}

/* The exact product a*b as one term (no rounding: the 106-bit product of
 * the mantissas). inf * 0 and NaN give NAN; inf * nonzero its signed inf. */
CUA_XACC_FN cua_xacc_term cua_xacc_product_of(double a, double b)
{
    cua_xacc_term t;
    const double p = a * b;  /* only for its class: zero, sign, inf, NaN */
    const unsigned sa = cua_xacc_classify(a), sb = cua_xacc_classify(b);
    const unsigned nonfinite = CUA_XACC_NAN | CUA_XACC_PINF | CUA_XACC_NINF;
    uint64_t ma, mb;
    int ea, eb, na, nb;
    cua_xacc_split(a, &ma, &ea, &na);
    cua_xacc_split(b, &mb, &eb, &nb);
    if ((sa | sb) & nonfinite || ma == 0 || mb == 0) {
        memset(&t, 0, sizeof t);
        t.special = cua_xacc_classify(p);  /* inf*0 is NaN, inf*x is +-inf, 0*x is a (signed) zero */
        return t;
    }
#ifdef __CUDA_ARCH__
    const uint64_t lo = ma * mb, hi = __umul64hi(ma, mb);
#else
    const unsigned __int128 full = (unsigned __int128)ma * mb;
    const uint64_t lo = (uint64_t)full, hi = (uint64_t)(full >> 64);
#endif
    return cua_xacc_place(hi, lo, ea + eb, na ^ nb, 5, CUA_XACC_ANY | CUA_XACC_NOT_NEGZERO);
}

/* An integer term (any integer dtype, read as int64 or uint64): exact, at
 * weight 2^0; 64 bits shifted into place fit the three digits. */
CUA_XACC_FN cua_xacc_term cua_xacc_term_of_int(uint64_t magnitude, int negative)
{
    return cua_xacc_place(0, magnitude, 0, negative, 3, CUA_XACC_ANY | CUA_XACC_NOT_NEGZERO);
}

/* The exact product of two integers (magnitudes below 2^64). */
CUA_XACC_FN cua_xacc_term cua_xacc_int_product(uint64_t ma, uint64_t mb, int negative)
{
#ifdef __CUDA_ARCH__
    const uint64_t lo = ma * mb, hi = __umul64hi(ma, mb);
#else
    const unsigned __int128 full = (unsigned __int128)ma * mb;
    const uint64_t lo = (uint64_t)full, hi = (uint64_t)(full >> 64);
#endif
    return cua_xacc_place(hi, lo, 0, negative, 5, CUA_XACC_ANY | CUA_XACC_NOT_NEGZERO);
}

/* acc += t, one plain add per digit (the atomic versions live with the
 * kernels and the CPU rungs). */
CUA_XACC_FN void cua_xacc_add_term(cua_xacc *acc, const cua_xacc_term *t)
{
    for (int i = 0; i < t->ndigits; i++) {
        const uint64_t d = t->digits[i];
        acc->w[t->k + i] = (int64_t)((uint64_t)acc->w[t->k + i] + (t->negative ? 0 - d : d));
    }
    acc->special |= t->special;
}

/* Carry every word into the next: words 0 .. WORDS-2 end in [0, 2^32), the
 * last keeps the sign. The value does not change. */
CUA_XACC_FN void cua_xacc_normalize(cua_xacc *acc)
{
    int64_t carry = 0;
    for (int k = 0; k < CUA_XACC_WORDS - 1; k++) {
        const int64_t v = acc->w[k] + carry;
        acc->w[k] = v & 0xffffffffll;
        carry = v >> 32;  /* arithmetic: floor(v / 2^32) */
    }
    acc->w[CUA_XACC_WORDS - 1] += carry;
}

/* dst += src; both normalized before, dst normalized after. */
CUA_XACC_FN void cua_xacc_merge(cua_xacc *dst, const cua_xacc *src)
{
    for (int k = 0; k < CUA_XACC_WORDS; k++) dst->w[k] += src->w[k];
    dst->special |= src->special;
    cua_xacc_normalize(dst);
}

#endif /* CUATOMIC_XACC_H */
