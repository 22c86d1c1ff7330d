// cub_partial_sort.cu -- a probe for unique's partition (stop 39): what CUB's
// onesweep costs to partition 2^26 hashed uint32 keys by their top bits, beside
// a copy of the same bytes and a pass that mixes the keys and feeds a sketch.
// Kernel times by CUDA events, median of 20. Build and run on the GPU machine:
//
//     nvcc -O3 -arch=sm_90 -std=c++17 -o cub_partial_sort tools/cub_partial_sort.cu && ./cub_partial_sort
//
// Its output on an H200 is docs/bench/cub_partial_sort_h200_s39.txt.
#include <cub/device/device_radix_sort.cuh>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__device__ __forceinline__ unsigned mix32(unsigned k) { k ^= k >> 16; k *= 0x85ebca6bu; k ^= k >> 13; k *= 0xc2b2ae35u; k ^= k >> 16; return k; }
__global__ void gen(unsigned *x, long n, unsigned d) { for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) x[i] = mix32((unsigned)i * 2654435761u) % d; }
__global__ void copyk(const uint4 *x, uint4 *y, long nv) { for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < nv; i += (long)gridDim.x * blockDim.x) y[i] = x[i]; }
__global__ void hashk(const uint4 *x, uint4 *y, long nv, unsigned *sketch) {
  __shared__ unsigned reg[256];
  for (int r = threadIdx.x; r < 256; r += blockDim.x) reg[r] = 0;
  __syncthreads();
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < nv; i += (long)gridDim.x * blockDim.x) {
    uint4 v = x[i];
    unsigned h[4] = {mix32(v.x ^ 0x80000000u), mix32(v.y ^ 0x80000000u), mix32(v.z ^ 0x80000000u), mix32(v.w ^ 0x80000000u)};
#pragma unroll
    for (int r = 0; r < 4; r++) {
      unsigned g = h[r] & 255, run = __clz(h[r] | 128) + 1;
      if (run > *(volatile unsigned *)&reg[g]) atomicMax(&reg[g], run);
    }
    y[i] = make_uint4(h[0], h[1], h[2], h[3]);
  }
  __syncthreads();
  for (int r = threadIdx.x; r < 256; r += blockDim.x) if (reg[r]) atomicMax(&sketch[r], reg[r]);
}
template <class F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) f();
  std::vector<float> ts;
  for (int i = 0; i < 20; i++) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[10] * 1000;
}
int main() {
  const long n = 1L << 26;
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned *x, *h, *o, *idx, *idx2, *sk; void *tmp; size_t tb = 0, t2 = 0;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&h, n * 4)); CK(cudaMalloc(&o, n * 4)); CK(cudaMalloc(&idx, n * 4)); CK(cudaMalloc(&idx2, n * 4)); CK(cudaMalloc(&sk, 1024));
  cub::DeviceRadixSort::SortPairs(nullptr, tb, h, o, idx, idx2, n, 0, 32);
  cub::DeviceRadixSort::SortKeys(nullptr, t2, h, o, n, 0, 32); tb = std::max(tb, t2);
  CK(cudaMalloc(&tmp, tb));
  for (unsigned d : {1000000u, 1u << 24}) {
    gen<<<sms * 8, 256>>>(x, n, d);
    CK(cudaDeviceSynchronize());
    printf("d=%u\n", d);
    printf("copy 256MB r+w     %8.1f us\n", timeit([&] { copyk<<<sms * 8, 512>>>((const uint4 *)x, (uint4 *)o, n / 4); }));
    printf("hash+sketch        %8.1f us\n", timeit([&] { hashk<<<sms * 4, 512>>>((const uint4 *)x, (uint4 *)h, n / 4, sk); }));
    for (int bits : {8, 10, 12, 16, 32}) {
      size_t b = tb;
      printf("SortKeys top %2d    %8.1f us\n", bits, timeit([&] { cub::DeviceRadixSort::SortKeys(tmp, b, h, o, n, 32 - bits, 32); }));
    }
    for (int bits : {8, 16}) {
      size_t b = tb;
      printf("SortPairs top %2d   %8.1f us\n", bits, timeit([&] { cub::DeviceRadixSort::SortPairs(tmp, b, h, o, idx, idx2, n, 32 - bits, 32); }));
    }
    CK(cudaDeviceSynchronize());
  }
  return 0;
}
