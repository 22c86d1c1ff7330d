// Experiment: the pipelined filter with the writes of tile k-2 overlapping warp 0's look-back of tile k-1
// (4 buffers: write-back, look-back, counted, copying), against the library kernel and CUB, same run.
#include "../../../cuda/filter.cu"
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include <climits>
#include <cub/device/device_select.cuh>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)
struct Ge { int t; __host__ __device__ bool operator()(const int &v) const { return v >= t; } };

template <class T, int ITEMS>
struct G {
    static constexpr int THREADS = 384, TILE = THREADS * ITEMS, WARPS = THREADS / 32, SEG = 32 * ITEMS;
};

template <class T, int ITEMS>
__device__ void copy_tile(T *buf, const T *x, int64_t n, int64_t tile, int64_t ntiles)
{
    using P = G<T, ITEMS>;
    constexpr int V = 16 / sizeof(T), CHUNKS = P::TILE / V;
    static_assert(CHUNKS % P::THREADS == 0, "whole copies");
    if (tile < ntiles) {
        const int64_t first = tile * P::TILE;
        if (first + P::TILE <= n) {
#pragma unroll
            for (int j = 0; j < CHUNKS / P::THREADS; j++) {
                const int c = j * P::THREADS + threadIdx.x;
                copy16_async(buf + c * V, x + first + c * V);
            }
        } else {
            for (int c = threadIdx.x; c < CHUNKS; c += P::THREADS) {
                const int64_t i = first + (int64_t)c * V;
                if (i + V <= n) copy16_async(buf + c * V, x + i);
                else for (int k = 0; k < V && i + k < n; k++) buf[c * V + k] = x[i + k];
            }
        }
    }
    copies_commit();
}

template <class T, int ITEMS, bool FULL>
__device__ __forceinline__ unsigned cnt_rows(const T *run, int limit, const DevPred<T> &p, unsigned lane)
{
    unsigned c = 0;
#pragma unroll
    for (int r = 0; r < ITEMS; r++) {
        const int i = r * 32 + (int)lane;
        c += __popc(__ballot_sync(0xffffffffu, (FULL || i < limit) && keep(run[i], p)));
    }
    return c;
}
template <class T, int ITEMS, bool FULL>
__device__ __forceinline__ void wr_rows(const T *run, int limit, const DevPred<T> &p, unsigned lane, T *out, u64 o)
{
    const unsigned below = (1u << lane) - 1;
#pragma unroll
    for (int r = 0; r < ITEMS; r++) {
        const int i = r * 32 + (int)lane;
        const T v = run[i];
        const bool k = (FULL || i < limit) && keep(v, p);
        const unsigned kept = __ballot_sync(0xffffffffu, k);
        if (k) out[o + __popc(kept & below)] = v;
        o += __popc(kept);
    }
}
template <class T, int ITEMS>
__device__ __forceinline__ int lim(int64_t first, int64_t n)
{
    constexpr int SEG = 32 * ITEMS;
    return first >= n ? 0 : (int)(n - first < SEG ? n - first : SEG);
}

template <class T, int ITEMS, int BLOCKS_PER_SM>
__global__ __launch_bounds__(384, BLOCKS_PER_SM) void ovl(const T *__restrict__ x, int64_t n, DevPred<T> p, T *out,
                                                          unsigned *ticket, u64 *status, int64_t ntiles, u64 *total)
{
    using P = G<T, ITEMS>;
    T *bufs = reinterpret_cast<T *>(cua_smem);  // 4 tiles
    __shared__ int64_t tile_s[4];
    __shared__ unsigned count_s[P::WARPS], offset_s[4][P::WARPS], total_s[4];
    __shared__ u64 prefix_s[4];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    volatile u64 *vs = status;
    if (threadIdx.x < 4) tile_s[threadIdx.x] = threadIdx.x == 0 ? (int64_t)atomicAdd(ticket, 1u) : ntiles;
    __syncthreads();
    if (tile_s[0] >= ntiles) return;
    copy_tile<T, ITEMS>(bufs, x, n, tile_s[0], ntiles);
    for (int t = 0;; t++) {
        const int in = t & 3, next = (t + 1) & 3, wb = (t + 2) & 3, lb = (t + 3) & 3;
        copies_wait_all();
        __syncthreads();  // A: tile `in` arrived; prefix_s[wb] and buffer `next` (last turn's write-back) ready
        const int64_t t_in = tile_s[in], t_lb = tile_s[lb], t_wb = tile_s[wb];
        const bool have_in = t_in < ntiles;
        if (have_in) {
            const int64_t first = t_in * P::TILE + (int64_t)warp * P::SEG;
            const int l = lim<T, ITEMS>(first, n);
            const T *run = bufs + in * P::TILE + warp * P::SEG;
            const unsigned c = l == P::SEG ? cnt_rows<T, ITEMS, true>(run, l, p, lane) : cnt_rows<T, ITEMS, false>(run, l, p, lane);
            if (lane == 0) count_s[warp] = c;
        }
        if (threadIdx.x == 0) tile_s[next] = have_in ? (int64_t)atomicAdd(ticket, 1u) : ntiles;
        __syncthreads();  // B
        if (t_wb >= ntiles && t_lb >= ntiles && !have_in) break;
        copy_tile<T, ITEMS>(bufs + next * P::TILE, x, n, tile_s[next], ntiles);
        if (warp == 0) {
            if (have_in) publish_count<P::WARPS>(count_s, offset_s[in], &total_s[in], vs, t_in, lane);
            if (t_lb < ntiles) {
                const unsigned tc = total_s[lb];
                u64 prefix = 0;
                if (t_lb > 0) {
                    prefix = warp_look_back(vs, t_lb, lane);
                    if (lane == 0) vs[t_lb] = LB_INCLUSIVE | (prefix + tc);
                }
                if (lane == 0) {
                    prefix_s[lb] = prefix;
                    if (t_lb == ntiles - 1) *total = prefix + tc;
                }
            }
        }
        if (t_wb < ntiles) {
            const int64_t first = t_wb * P::TILE + (int64_t)warp * P::SEG;
            const int l = lim<T, ITEMS>(first, n);
            const T *run = bufs + wb * P::TILE + warp * P::SEG;
            const u64 o = prefix_s[wb] + offset_s[wb][warp];
            if (l == P::SEG) wr_rows<T, ITEMS, true>(run, l, p, lane, out, o);
            else wr_rows<T, ITEMS, false>(run, l, p, lane, out, o);
        }
    }
    copies_wait_all();
}

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
    int64_t n = 1LL << 28;
    if (argc > 1) n = atoll(argv[1]);
    int *x, *out; CK(cudaMalloc(&x, n * 4 + 64)); CK(cudaMalloc(&out, n * 4 + 64));
    fill2<<<2048, 256>>>(x, n, 777); CK(cudaDeviceSynchronize());
    std::vector<int> hx(n), hout(n); CK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
    u64 *scratch; CK(cudaMalloc(&scratch, 16 + (n / 256 + 64) * 8));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int thr : {2, 980, -980}) {
        std::vector<int> ref; for (int64_t i = 0; i < n; i++) if (hx[i] >= thr) ref.push_back(hx[i]);
        auto check = [&](u64 got) {
            if (got != ref.size()) return false;
            CK(cudaMemcpy(hout.data(), out, got * 4, cudaMemcpyDeviceToHost));
            return std::equal(ref.begin(), ref.end(), hout.begin());
        };
        cua_pred cp; memset(&cp, 0, sizeof cp); cp.lo.i = thr; cp.hi.i = INT_MAX; const DevPred<int> p = to_dev<int>(&cp);
        auto go = [&](auto kern, int tile, size_t smem, const char *label) {
            const int64_t ntiles = (n + tile - 1) / tile;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, 384, smem));
            int64_t g = (int64_t)per * sms; if (g > ntiles) g = ntiles;
            auto run = [&] { cudaMemsetAsync(scratch, 0, 16 + ntiles * 8); kern<<<(unsigned)g, 384, smem>>>(x, n, p, out, (unsigned *)(scratch + 1), scratch + 2, ntiles, scratch); };
            CK(cudaMemset(out, 0xff, ref.size() * 4 + 64));
            float ms = time_kernel(run); CK(cudaGetLastError()); u64 tot; CK(cudaMemcpy(&tot, scratch, 8, cudaMemcpyDeviceToHost));
            printf("n=%lld >=%-4d %-44s (%d/SM) %8.4f ms %s\n", (long long)n, thr, label, per, ms, check(tot) ? "ok" : "WRONG");
            fflush(stdout);
        };
        go(filter_pipelined_kernel<int>, Pipe<int>::TILE, Pipe<int>::SMEM, "library pipelined (3 x 24 KiB)");
        go(ovl<int, 12, 3>, 384 * 12, 4 * 384 * 12 * 4, "overlap, 4 x 18 KiB");
        go(ovl<int, 16, 2>, 384 * 16, 4 * 384 * 16 * 4, "overlap, 4 x 24 KiB");
        go(ovl<int, 8, 3>, 384 * 8, 4 * 384 * 8 * 4, "overlap, 4 x 12 KiB");
        {
            u64 *nsel; CK(cudaMalloc(&nsel, 8)); size_t tb = 0; void *tmp = nullptr;
            CK(cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}));
            CK(cudaMalloc(&tmp, tb));
            auto run = [&] { cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, nsel, 8, cudaMemcpyDeviceToHost));
            printf("n=%lld >=%-4d %-44s         %8.4f ms %s\n", (long long)n, thr, "CUB DeviceSelect::If", ms, check(tot) ? "ok" : "WRONG");
            cudaFree(tmp); cudaFree(nsel);
        }
    }
    return 0;
}
