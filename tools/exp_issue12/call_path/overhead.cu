// Fixed costs of a call's GPU sequence (no real work): host wall clock,
// median of 2000 after 200 warm-ups.
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>
#include <algorithm>
#include <vector>
__global__ void empty_k() {}
__global__ void zero_k(unsigned long long *c, int n) { for (int i = threadIdx.x; i < n; i += blockDim.x) c[i] = 0; }
__global__ void publish_k(const unsigned long long *c, int n, volatile unsigned long long *out, volatile int *flag)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = c[i];
    __syncthreads();
    if (threadIdx.x == 0 && flag) { __threadfence_system(); *flag = 1; }
}
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void qwait(cudaStream_t s) { while (cudaStreamQuery(s) == cudaErrorNotReady) {} }
template <class F> static void timeit(const char *name, F f)
{
    for (int i = 0; i < 200; i++) f();
    std::vector<double> t;
    for (int i = 0; i < 2000; i++) { double a = now(); f(); t.push_back(now() - a); }
    std::sort(t.begin(), t.end());
    printf("%-58s median %6.2f us  p10 %6.2f  p90 %6.2f\n", name, t[1000], t[200], t[1800]);
}
int main()
{
    cudaStream_t s = 0, ns;
    cudaStreamCreateWithFlags(&ns, cudaStreamNonBlocking);
    unsigned long long *dc, *hm, *dm;
    int *hflag, *dflag;
    cudaMalloc(&dc, 1024 * 8);
    cudaHostAlloc(&hm, 1 << 16, cudaHostAllocMapped | cudaHostAllocPortable);
    cudaHostGetDevicePointer(&dm, hm, 0);
    cudaHostAlloc(&hflag, 64, cudaHostAllocMapped);
    cudaHostGetDevicePointer(&dflag, hflag, 0);
    unsigned long long host[128];
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    timeit("empty; cudaStreamSynchronize", [&] { empty_k<<<1, 32, 0, s>>>(); cudaStreamSynchronize(s); });
    timeit("empty; query loop", [&] { empty_k<<<1, 32, 0, s>>>(); qwait(s); });
    timeit("empty 132x1024; query loop", [&] { empty_k<<<132, 1024, 0, s>>>(); qwait(s); });
    timeit("memset; empty; query", [&] { cudaMemsetAsync(dc, 0, 1024, s); empty_k<<<132, 1024, 0, s>>>(); qwait(s); });
    timeit("zero_k; empty; query", [&] { zero_k<<<1, 128, 0, s>>>(dc, 128); empty_k<<<132, 1024, 0, s>>>(); qwait(s); });
    timeit("memset; empty; publish(mapped); query", [&] {
        cudaMemsetAsync(dc, 0, 1024, s); empty_k<<<132, 1024, 0, s>>>(); publish_k<<<1, 128, 0, s>>>(dc, 128, dm, 0); qwait(s); });
    timeit("malloc; memset; empty; publish; query; free (today)", [&] {
        void *p; cudaMallocAsync(&p, 1024, s); cudaMemsetAsync(p, 0, 1024, s); empty_k<<<132, 1024, 0, s>>>();
        cudaGetLastError(); publish_k<<<1, 128, 0, s>>>((unsigned long long *)p, 128, dm, 0); cudaGetLastError(); qwait(s);
        cudaFreeAsync(p, s); });
    timeit("memset; empty; memcpy dtoh 1KiB; query", [&] {
        cudaMemsetAsync(dc, 0, 1024, s); empty_k<<<132, 1024, 0, s>>>(); cudaMemcpyAsync(host, dc, 1024, cudaMemcpyDeviceToHost, s); qwait(s); });
    timeit("memset; empty; publish+flag; spin on flag", [&] {
        *(volatile int *)hflag = 0;
        cudaMemsetAsync(dc, 0, 1024, s); empty_k<<<132, 1024, 0, s>>>(); publish_k<<<1, 128, 0, s>>>(dc, 128, dm, dflag);
        while (!*(volatile int *)hflag) {} });
    timeit("publish+flag only; spin on flag", [&] {
        *(volatile int *)hflag = 0; publish_k<<<1, 128, 0, s>>>(dc, 128, dm, dflag); while (!*(volatile int *)hflag) {} });
    timeit("publish only; query", [&] { publish_k<<<1, 128, 0, s>>>(dc, 128, dm, 0); qwait(s); });
    cudaGraph_t g; cudaGraphExec_t ge;
    cudaStreamBeginCapture(ns, cudaStreamCaptureModeThreadLocal);
    cudaMemsetAsync(dc, 0, 1024, ns); empty_k<<<132, 1024, 0, ns>>>(); publish_k<<<1, 128, 0, ns>>>(dc, 128, dm, 0);
    cudaStreamEndCapture(ns, &g);
    cudaGraphInstantiate(&ge, g, 0);
    timeit("graph(memset, empty, publish) on nonblocking; query", [&] { cudaGraphLaunch(ge, ns); qwait(ns); });
    timeit("same three on nonblocking stream; query", [&] {
        cudaMemsetAsync(dc, 0, 1024, ns); empty_k<<<132, 1024, 0, ns>>>(); publish_k<<<1, 128, 0, ns>>>(dc, 128, dm, 0); qwait(ns); });
    timeit("cudaMallocAsync+cudaFreeAsync (host cost)", [&] { void *p; cudaMallocAsync(&p, 1024, s); cudaFreeAsync(p, s); });
    timeit("empty launch (host cost only)", [&] { empty_k<<<132, 1024, 0, s>>>(); });
    cudaDeviceSynchronize();
    timeit("cudaMemsetAsync (host cost only)", [&] { cudaMemsetAsync(dc, 0, 1024, s); });
    cudaDeviceSynchronize();
    timeit("cudaStreamQuery idle", [&] { cudaStreamQuery(s); });
    timeit("cudaGetLastError", [&] { cudaGetLastError(); });
    timeit("cudaGetDevice", [&] { int d; cudaGetDevice(&d); });
    timeit("event record + stream wait event", [&] { cudaEventRecord(ev, ns); cudaStreamWaitEvent(s, ev, 0); });
    cudaPointerAttributes pa;
    timeit("cudaPointerGetAttributes", [&] { cudaPointerGetAttributes(&pa, dc); });
    timeit("cudaOccupancyMaxActiveBlocksPerMultiprocessor", [&] { int b; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, empty_k, 1024, 32768); });
    cudaDeviceSynchronize();
    printf("last error: %s\n", cudaGetErrorString(cudaGetLastError()));
}
