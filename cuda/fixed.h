/* fixed.h -- the exact scatter's accumulator: a fixed-point integer per
 * output element, shared by both backends so that they give the same bits.
 *
 * Every finite float is an integer m times a power of two. A call's values
 * (its updates and the start values of `out`) span bits from 2^lo to 2^hi
 * (the highest): that window, found by a pass over the data, is the
 * accumulator's. The pass bounds lo from the exponent fields alone (the
 * last mantissa bit of the value with the least exponent, at most 52 bits
 * below the lowest set bit): any lo at or below every value's lowest set
 * bit holds the same integer. An element's accumulator
 * is `words` 64-bit words, one two's-complement integer, word k weighing
 * 2^(64k + lo), with a whole word above the window for carries and the
 * sign. A value is placed as m shifted into two parts (t0, t1) from word k
 * and added word by word: each add returns the word's old value, which
 * says whether it carried (or, subtracting a negative value's magnitude,
 * borrowed), and only then is the next word touched. Data whose window is
 * under 64 bits -- most float32 data -- lands in word 0: one 64-bit atomic
 * per update, and a second only when the word overflows.
 *
 * Integer addition is associative and every carry is the carry of one
 * particular add: any order, any grid, either backend leaves the same
 * integer, which is rounded once, to nearest with ties to even -- the
 * correctly rounded sum of the element's start value and all its updates.
 *
 * Non-finite values set bits of the element's flags instead (IEEE: a NaN,
 * or +inf with -inf, gives NaN; otherwise an inf its inf), as does every
 * value that is not -0.0 (an exact zero is -0.0 only if every term was).
 *
 * Plain C: CUA_FIXED_FN functions run on the host and, under nvcc, on the
 * device.
 */
#ifndef CUATOMIC_FIXED_H
#define CUATOMIC_FIXED_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CUA_FIXED_FN static __host__ __device__ __forceinline__
#else
#define CUA_FIXED_FN static inline
#endif

#define CUA_FIXED_MAX_WORDS 35 /* float64's whole range, 2^-1074 .. 2^1024, and the carry word */

enum cua_fixed_flag {
    CUA_FIXED_NAN = 1u,
    CUA_FIXED_PINF = 2u,
    CUA_FIXED_NINF = 4u,
    CUA_FIXED_NOT_NEGZERO = 8u /* a term that was not -0.0 */
};

/* A finite double as sign, odd-or-zero integer m and the exponent of m's
 * last bit: x = (-1)^neg * m * 2^e, m = 0 for a zero. float32 values come
 * widened to double (exactly); stripping m's trailing zeros leaves them at
 * most 24 bits. */
CUA_FIXED_FN void cua_fixed_split(double x, uint64_t *m, int *e, int *neg)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    *neg = (int)(bits >> 63);
    const int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t mant = bits & ((1ull << 52) - 1);
    if (biased) mant |= 1ull << 52;
    int exp = (biased ? biased : 1) - 1075;
    if (mant) {
#ifdef __CUDA_ARCH__
        const int tz = __ffsll((long long)mant) - 1;
#else
        const int tz = __builtin_ctzll(mant);
#endif
        mant >>= tz;
        exp += tz;
    }
    *m = mant;
    *e = exp;
}

/* Bit length of m > 0. */
CUA_FIXED_FN int cua_fixed_bits(uint64_t m)
{
#ifdef __CUDA_ARCH__
    return 64 - __clzll((long long)m);
#else
    return 64 - __builtin_clzll(m);
#endif
}

/* The flags one value sets: NaN, +inf, -inf, and whether it is not -0.0. */
CUA_FIXED_FN unsigned cua_fixed_classify(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned f = bits != 0x8000000000000000ull ? CUA_FIXED_NOT_NEGZERO : 0u;
    if (((bits >> 52) & 0x7ff) == 0x7ff)
        f |= (bits & ((1ull << 52) - 1)) ? CUA_FIXED_NAN : (bits >> 63) ? CUA_FIXED_NINF : CUA_FIXED_PINF;
    return f;
}

/* Words of an accumulator whose window runs from bit lo to bit hi
 * (hi >= lo): enough for hi, and one more for carries and the sign. */
CUA_FIXED_FN int cua_fixed_words(int lo, int hi) { return ((hi - lo) >> 6) + 2; }

/* m * 2^e (m < 2^53, e >= lo) as two 64-bit parts from word *k. */
CUA_FIXED_FN void cua_fixed_place(uint64_t m, int e, int lo, int *k, uint64_t *t0, uint64_t *t1)
{
    const int off = e - lo;
    const int sh = off & 63;
    *k = off >> 6;
    *t0 = m << sh;
    *t1 = sh ? m >> (64 - sh) : 0;
}

/* The accumulator (word k at w[k * stride], two's complement) rounded to
 * nearest-even with `prec` bits of significand and least exponent `emin`
 * (the subnormals' last bit), largest finite exponent `emax`: 24, -149, 127
 * for float32; 53, -1074, 1023 for float64. The result as a double (a
 * float32 result is exact in it), +-inf past the largest finite value. A
 * zero is returned as +0.0: the caller gives it the sign of its terms. */
CUA_FIXED_FN double cua_fixed_round(const uint64_t *w, int nw, int64_t stride, int lo, int prec, int emin, int emax)
{
    uint32_t g[2 * CUA_FIXED_MAX_WORDS];
    const int ng = 2 * nw;
    for (int k = 0; k < nw; k++) {
        g[2 * k] = (uint32_t)w[k * stride];
        g[2 * k + 1] = (uint32_t)(w[k * stride] >> 32);
    }
    const int negative = (int)(g[ng - 1] >> 31);
    if (negative) { /* the magnitude: two's complement of all the digits */
        uint32_t carry = 1;
        for (int k = 0; k < ng; k++) {
            g[k] = ~g[k] + carry;
            carry = carry && g[k] == 0;
        }
    }
    int h = ng - 1;
    while (h >= 0 && g[h] == 0) h--;
    if (h < 0) return 0.0;
    const int msb = 32 * h + cua_fixed_bits(g[h]) - 1; /* bit index of the top bit */
    const int top_exp = msb + lo;
    int q = top_exp - (prec - 1); /* exponent of the result's last bit */
    if (q < emin) q = emin;
    const int r = q - lo; /* its bit index */
    uint64_t mant;
    if (r <= 0) { /* every bit is at or above the last: exact */
        mant = 0;
        for (int k = h; k >= 0; k--) mant = (mant << 32) | g[k];
        mant <<= -r;
    } else {
        /* 64 bits from bit r - 1 (the round bit) up: the significand fits */
        const int pos = r - 1, i = pos >> 5, s = pos & 31;
        const uint64_t d0 = g[i], d1 = i + 1 < ng ? g[i + 1] : 0, d2 = i + 2 < ng ? g[i + 2] : 0;
        const uint64_t win = (d0 >> s) | (d1 << (32 - s)) | (s ? d2 << (64 - s) : 0);
        int sticky = s ? (g[i] & ((1u << s) - 1)) != 0 : 0;
        for (int k = 0; k < i && !sticky; k++) sticky = g[k] != 0;
        mant = win >> 1;
        if ((win & 1) && (sticky || (mant & 1))) mant++;
        if (mant >> prec) { /* rounded up to the next power of two */
            mant >>= 1;
            q++;
        }
    }
    if (q + cua_fixed_bits(mant) - 1 > emax) return negative ? -INFINITY : INFINITY;
    const double v = ldexp((double)mant, q);
    return negative ? -v : v;
}

/* The element's result from its rounded value and flags: NaN, an inf, or
 * the value, an exact zero signed as its terms were. */
CUA_FIXED_FN double cua_fixed_result(double rounded, unsigned flags)
{
    if ((flags & CUA_FIXED_NAN) || ((flags & CUA_FIXED_PINF) && (flags & CUA_FIXED_NINF))) return NAN;
    if (flags & CUA_FIXED_PINF) return INFINITY;
    if (flags & CUA_FIXED_NINF) return -INFINITY;
    if (rounded == 0.0) return (flags & CUA_FIXED_NOT_NEGZERO) ? 0.0 : -0.0;
    return rounded;
}

#endif /* CUATOMIC_FIXED_H */
