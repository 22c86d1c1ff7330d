// custom.cu -- atomics no GPU has, built from atomicCAS.
//
// prod: the product of all elements.
//  1. cas  each thread multiplies its grid-stride share in a register, then
//          multiplies it into the total with a compare-and-swap loop: read
//          the word, compute old * v, swap it in only if the word still holds
//          old, else retry with what is there now (cua_cas_mul in
//          common.cuh). The same loop gives float and double adds on GPUs
//          without them (sum's `cas` rung). Integers multiply modulo 2^64
//          (np.prod of intN wraps: the low bits are the same).
//          Floats (CUA_F_WIDE: a double accumulator for float32 and float64)
//          are multiplied with compensation: each multiplication's exact
//          rounding error comes from an FMA, as an error relative to the
//          rounded product; a thread sums its own, adds the error of the
//          CAS multiply that succeeded, and adds that into a second word
//          with atomicAdd. The total is corrected once at the end, total *
//          (1 + summed relative errors): about one rounding in all instead
//          of one per element, so the result is as accurate as NumPy's or
//          better.
#include <math.h>

#include <type_traits>

#include "common.cuh"

// r = p * x rounded, and its rounding error relative to r (exact up to its
// own rounding). Zero, infinite, NaN and subnormal products carry no usable
// relative error: they contribute none.
__device__ __forceinline__ double mul_rel(double p, double x, double *r)
{
    *r = __dmul_rn(p, x);
    const double a = fabs(*r);
    return a >= 2.2250738585072014e-308 && a <= 1.7976931348623157e308 ? __fma_rn(p, x, -*r) / *r : 0.0;
}

template <class T>
__global__ void prod_compensated_kernel(const T *__restrict__ x, int64_t n, double *total, double *rel)
{
    double v = 1.0, e = 0.0;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) e += mul_rel(v, (double)x[i], &v);
    // The CAS multiply (cua_cas_loop), keeping the error of the product
    // that was swapped in; a failed attempt's error is recomputed.
    double err = 0.0;
    cua_cas_loop((u64 *)total, [v, &err](u64 a) {
        double r;
        err = mul_rel(__longlong_as_double((long long)a), v, &r);
        return (u64)__double_as_longlong(r);
    });
    atomicAdd(rel, e + err);
}

template <class T, class Acc>
__global__ void prod_cas_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    Acc v = 1;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v *= (Acc)x[i];
    cua_cas_mul(total, v);
}

// The product of no elements, answered without a launch.
template <class Acc>
static int empty_product(Acc *result)
{
    *result = 1;
    return 0;
}

// Device cells holding `init` on the call's stream (a memset cannot write
// a float 1).
template <class Acc, int N>
static int cells_from(cua_scratch *cells, const Acc (&init)[N], cudaStream_t s)
{
    CUA_CHECK(cells->get(sizeof init, s));
    CUA_CHECK(cudaMemcpyAsync(cells->ptr, init, sizeof init, cudaMemcpyHostToDevice, s));
    return 0;
}

template <class T, class Acc>
static int prod_cas(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_cas_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return empty_product(result);
    const Acc one[1] = {1};
    cua_scratch cells;
    st = cells_from(&cells, one, s);
    if (st) return st;
    Acc *total = (Acc *)cells.ptr;
    prod_cas_kernel<T, Acc><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(x, n, total);
    return cua_finish_total(result, total, cfg);
}

// Floats with a double accumulator (CUA_F_WIDE): a second cell sums the
// relative errors, and the product is corrected once here.
template <class T>
static int prod_compensated(const T *x, int64_t n, double *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_cas_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    if (n == 0) return empty_product(result);
    const double init[2] = {1, 0};  // the product, the summed relative errors
    cua_scratch cells;
    st = cells_from(&cells, init, s);
    if (st) return st;
    double *total = (double *)cells.ptr;
    prod_compensated_kernel<T><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(x, n, total, total + 1);
    CUA_CHECK_LAUNCH();
    double host[2] = {1, 0};
    CUA_CHECK(cudaMemcpyAsync(host, total, sizeof host, cudaMemcpyDeviceToHost, s));
    CUA_WAIT(cfg);
    // total * (1 + summed relative errors); zeros keep their sign
    *result = isnormal(host[0]) && isfinite(host[1]) ? fma(host[0], host[1], host[0]) : host[0];
    return 0;
}

// The row's launcher: the call's element and accumulator types; floats in
// a double accumulator are compensated.
static int prod_CAS(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto a) -> int {
        using T = decltype(t);
        using Acc = decltype(a);
        if constexpr (std::is_floating_point<T>::value && std::is_same<Acc, double>::value)
            return prod_compensated<T>((const T *)x, n, (double *)result, cfg);
        else
            return prod_cas<T, Acc>((const T *)x, n, (Acc *)result, cfg);
    });
}

static const cua_prod_row prod_rows[] = {
    {{"cas", 1, "per-thread local product, multiplied into the total by an atomicCAS loop; floats compensated",
      CUA_F_WIDE},
     prod_CAS},
};
extern "C" const cua_ladder cua_cuda_prod_ladder = CUA_LADDER(prod_rows);
