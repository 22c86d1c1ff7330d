// ops.cuh -- what the ladders that apply NumPy's ufuncs share (reduce.cu,
// scatter.cu): the op ids as constants, two type helpers, the integer types
// the atomic instructions take, and IEEE 754-2019's float minimum and
// maximum.
#pragma once

#include <type_traits>

#include "common.cuh"

namespace cua_ops {

constexpr int ADD = CUA_REDUCE_ADD, MUL = CUA_REDUCE_MULTIPLY, MIN = CUA_REDUCE_MINIMUM,
              MAX = CUA_REDUCE_MAXIMUM, AND = CUA_REDUCE_BITWISE_AND, OR = CUA_REDUCE_BITWISE_OR,
              XOR = CUA_REDUCE_BITWISE_XOR;

template <class T>
constexpr bool is_float = std::is_floating_point<T>::value;

template <bool C, class A, class B>
using pick = typename std::conditional<C, A, B>::type;

// The integer types the atomic instructions take: int, unsigned, long long
// and unsigned long long (int64_t is `long` on Linux, which has no
// overloads).
template <class T>
using atomic_int = pick<sizeof(T) == 8, pick<std::is_signed<T>::value, long long, u64>,
                        pick<std::is_signed<T>::value, int, unsigned>>;

// Minimum (op MIN) and maximum (MAX) of floats in IEEE 754-2019's order: a
// NaN wins (as np.minimum's does), and -0.0 counts below +0.0, so the answer
// does not depend on the order the elements arrive in (NumPy's own sign of
// a zero does).
template <class F>
__device__ __forceinline__ F float_pick(int op, F a, F b)
{
    const bool first = op == MIN ? a < b || (a == b && signbit(a)) : a > b || (a == b && !signbit(a));
    return isnan(a) || first ? a : b;
}

}  // namespace cua_ops
