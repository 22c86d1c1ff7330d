// Experiment: the library's filter kernels (cuda/filter.cu, included) timed as the harness times its own.
#include "../../../cuda/filter.cu"
#include <cstdio>
#include <vector>
#include <algorithm>
#include <climits>
#include <cstring>
#include <cub/device/device_select.cuh>
struct Ge { int t; __host__ __device__ bool operator()(const int &v) const { return v >= t; } };
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)
__global__ void fill2(int *x, int64_t n, unsigned seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        x[i] = (int)(h % 2000u) - 1000;
    }
}
template <class F> static float time_kernel(F f)
{
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < 20; i++) { CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}
int main(int argc, char **argv)
{
    const int64_t n = 1LL << 28;
    int *x, *out; CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&out, n * 4));
    fill2<<<2048, 256>>>(x, n, 777); CK(cudaDeviceSynchronize());
    if (argc > 1) {  // the bench's data: NumPy's generator, written by the caller as raw int32
        FILE *f = fopen(argv[1], "rb"); std::vector<int> h(n); if (fread(h.data(), 4, n, f) != (size_t)n) return 1; fclose(f);
        CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
    }
    u64 *scratch; CK(cudaMalloc(&scratch, 16 + (n / 256 + 64) * 8));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int thr : {2, 980, -980}) {
        cua_pred cp; memset(&cp, 0, sizeof cp); cp.lo.i = thr; cp.hi.i = INT_MAX; const DevPred<int> p = to_dev<int>(&cp);
        {
            const int64_t ntiles = cua_ceil_div(n, Pipe<int>::TILE);
            const size_t smem = Pipe<int>::SMEM;
            CK(cudaFuncSetAttribute(filter_pipelined_kernel<int>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, filter_pipelined_kernel<int>, PIPE_THREADS, smem));
            const unsigned g = per * sms;
            auto run = [&] { cudaMemsetAsync(scratch, 0, 16 + ntiles * 8); filter_pipelined_kernel<int><<<g, PIPE_THREADS, smem>>>(x, n, p, out, (unsigned *)(scratch + 1), scratch + 2, ntiles, scratch); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, scratch, 8, cudaMemcpyDeviceToHost));
            printf(">=%-4d library pipelined kernel %.4f ms, kept %llu\n", thr, ms, tot);
        }
        {
            const int64_t ntiles = cua_ceil_div(n, 256 * LB_ITEMS);
            const size_t smem = 256 * LB_ITEMS * 4;
            int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, filter_lookback_kernel<int>, 256, smem));
            const unsigned g = per * sms;
            auto run = [&] { cudaMemsetAsync(scratch, 0, 16 + ntiles * 8); filter_lookback_kernel<int><<<g, 256, smem>>>(x, n, p, out, (unsigned *)(scratch + 1), scratch + 2, ntiles, scratch); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, scratch, 8, cudaMemcpyDeviceToHost));
            printf(">=%-4d library register kernel %.4f ms, kept %llu\n", thr, ms, tot);
        }
        {
            u64 *nsel; CK(cudaMalloc(&nsel, 8)); size_t tb = 0; void *tmp = nullptr;
            CK(cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}));
            CK(cudaMalloc(&tmp, tb));
            auto run = [&] { cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, nsel, 8, cudaMemcpyDeviceToHost));
            printf(">=%-4d CUB DeviceSelect::If %.4f ms, kept %llu\n", thr, ms, tot);
            cudaFree(tmp); cudaFree(nsel);
        }
    }
    return 0;
}
