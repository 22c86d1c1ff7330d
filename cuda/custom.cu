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
#include "common.cuh"

template <class T, class Acc>
__global__ void prod_cas_kernel(const T *__restrict__ x, int64_t n, Acc *total)
{
    Acc v = 1;
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) v *= (Acc)x[i];
    cua_cas_mul(total, v);
}

template <class T, class Acc>
static int prod_typed(const T *x, int64_t n, Acc *result, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_cas_config(cfg, n, 256);
    if (st) return st;
    if (n == 0) {
        *result = 1;
        return 0;
    }
    cua_scratch scratch;
    CUA_CHECK(scratch.get(sizeof(Acc), s));
    Acc *total = (Acc *)scratch.ptr;
    const Acc one = 1;  // the identity; a memset cannot write a float 1
    CUA_CHECK(cudaMemcpyAsync(total, &one, sizeof one, cudaMemcpyHostToDevice, s));
    prod_cas_kernel<T, Acc><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(x, n, total);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaMemcpyAsync(result, total, sizeof(Acc), cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

static int prod_CAS(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    return cua_dispatch_acc(dtype, acc, [&](auto t, auto a) -> int {
        using T = decltype(t);
        using Acc = decltype(a);
        return prod_typed<T, Acc>((const T *)x, n, (Acc *)result, cfg);
    });
}

extern "C" const cua_variant cua_cuda_prod_variants[] = {
    {"cas", 1, "per-thread local product, multiplied into the total by an atomicCAS loop", CUA_F_DEFAULT,
     (cua_fn)prod_CAS},
};
extern "C" const int cua_cuda_prod_nvariants = sizeof cua_cuda_prod_variants / sizeof cua_cuda_prod_variants[0];
