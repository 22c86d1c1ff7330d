// Experiment (not part of the library): ordered filter (x >= thr, int32) variants vs CUB DeviceSelect::If.
#include <cub/cub.cuh>
#include <cstdio>
#include <vector>
#include <algorithm>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)
#define AGG (1ULL << 62)
#define INC (2ULL << 62)
#define VAL ((1ULL << 62) - 1)

// ---------------- F0: the library's lookback (persistent, ticket per tile, block-wide look back)
__device__ u64 block_sum(u64 v)
{
    __shared__ u64 ws[32];
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    u64 t = 0;
    if (threadIdx.x == 0) for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) t += ws[w];
    __syncthreads();
    return t;
}
__device__ u64 look_back0(volatile u64 *status, int64_t tile, unsigned *stop_s)
{
    u64 prefix = 0;
    for (int64_t top = tile - 1;; top -= blockDim.x) {
        const int64_t idx = top - (int64_t)threadIdx.x;
        u64 st = idx >= 0 ? status[idx] : INC;
        unsigned backoff = 16;
        while ((st >> 62) == 0) { __nanosleep(backoff); backoff = backoff < 1024 ? 2 * backoff : 1024; st = status[idx]; }
        if (threadIdx.x == 0) *stop_s = blockDim.x;
        __syncthreads();
        if ((st >> 62) == 2) atomicMin(stop_s, threadIdx.x);
        __syncthreads();
        const unsigned stop = *stop_s;
        prefix += block_sum(threadIdx.x <= stop ? st & VAL : 0);
        if (stop < blockDim.x) return prefix;
    }
}
template <int ITEMS>
__global__ __maxnreg__(40) void f0(const int *__restrict__ x, int64_t n, int thr, int *out, unsigned *ticket, u64 *status, int64_t ntiles, u64 *total)
{
    extern __shared__ int stage[];
    __shared__ int64_t tile_s; __shared__ u64 warp_scan[33]; __shared__ u64 prefix_s; __shared__ unsigned stop_s;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x / 32;
    const int64_t tile_size = (int64_t)blockDim.x * ITEMS;
    volatile u64 *vs = status;
    while (true) {
        if (threadIdx.x == 0) tile_s = atomicAdd(ticket, 1u);
        __syncthreads();
        const int64_t tile = tile_s;
        if (tile >= ntiles) break;
        const int64_t base = tile * tile_size + (int64_t)threadIdx.x * ITEMS;
        int v[ITEMS];
        if (base + ITEMS <= n) {
#pragma unroll
            for (int j = 0; j < ITEMS / 4; j++) { int4 r = __ldg(reinterpret_cast<const int4 *>(x + base) + j); v[4*j]=r.x; v[4*j+1]=r.y; v[4*j+2]=r.z; v[4*j+3]=r.w; }
        } else {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) v[j] = base + j < n ? x[base + j] : 0;
        }
        unsigned kept = 0, mask = 0;
#pragma unroll
        for (int j = 0; j < ITEMS; j++) if (base + j < n && v[j] >= thr) { mask |= 1u << j; kept++; }
        unsigned incl = kept;
        for (int o = 1; o < 32; o <<= 1) { unsigned up = __shfl_up_sync(0xffffffffu, incl, o); if ((int)lane >= o) incl += up; }
        if (lane == 31) warp_scan[warp] = incl;
        __syncthreads();
        if (threadIdx.x == 0) { u64 run = 0; for (unsigned w = 0; w < nwarps; w++) { u64 t = warp_scan[w]; warp_scan[w] = run; run += t; } warp_scan[32] = run; }
        __syncthreads();
        const u64 tile_count = warp_scan[32];
        unsigned pos = (unsigned)warp_scan[warp] + incl - kept;
        u64 prefix = 0;
        if (tile == 0) { if (threadIdx.x == 0) vs[0] = INC | tile_count; }
        else {
            if (threadIdx.x == 0) vs[tile] = AGG | tile_count;
            prefix = look_back0(vs, tile, &stop_s);
            if (threadIdx.x == 0) vs[tile] = INC | (prefix + tile_count);
        }
        if (threadIdx.x == 0) { prefix_s = prefix; if (tile == ntiles - 1) *total = prefix + tile_count; }
#pragma unroll
        for (int j = 0; j < ITEMS; j++) if (mask & (1u << j)) stage[pos++] = v[j];
        __syncthreads();
        const u64 bo = prefix_s;
        for (u64 i = threadIdx.x; i < tile_count; i += blockDim.x) out[bo + i] = stage[i];
        __syncthreads();
    }
}

// ---------------- F1/F2: one tile per block; warp 0 looks back with shuffles.
// TICKET: tile from an atomic ticket (safe order) instead of blockIdx.x.
// STRIPED: each warp loads its 32*ITEMS elements as coalesced uint4 rows (lane + 32k) and ranks by ballots.
__device__ __forceinline__ u64 warp_look_back(volatile u64 *status, int64_t tile, unsigned lane)
{
    u64 prefix = 0;
    for (int64_t top = tile - 1;; top -= 32) {
        const int64_t idx = top - lane;
        u64 st = idx >= 0 ? status[idx] : INC;
        unsigned backoff = 32;
        while (__any_sync(0xffffffffu, (st >> 62) == 0)) {
            if ((st >> 62) == 0) { __nanosleep(backoff); st = status[idx]; }
            backoff = backoff < 512 ? 2 * backoff : 512;
        }
        const unsigned inc = __ballot_sync(0xffffffffu, (st >> 62) == 2);
        const unsigned stop = inc ? __ffs(inc) - 1 : 32;
        u64 val = lane <= stop ? (st & VAL) : 0;
        for (int o = 16; o; o >>= 1) val += __shfl_xor_sync(0xffffffffu, val, o);
        prefix += val;
        if (inc) return prefix;
    }
}

template <int ITEMS, bool TICKET, bool STRIPED>
__global__ void __launch_bounds__(256) f1(const int *__restrict__ x, int64_t n, int thr, int *out, unsigned *ticket, u64 *status, int64_t ntiles, u64 *total)
{
    extern __shared__ int stage[];
    __shared__ int64_t tile_s; __shared__ unsigned warp_off[33]; __shared__ u64 prefix_s;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x / 32;
    int64_t tile;
    if (TICKET) { if (threadIdx.x == 0) tile_s = atomicAdd(ticket, 1u); __syncthreads(); tile = tile_s; }
    else tile = blockIdx.x;
    const int64_t tile_size = (int64_t)blockDim.x * ITEMS;
    const int64_t tbase = tile * tile_size;
    int v[ITEMS];
    unsigned rank[ITEMS];  // position within the warp's kept elements; ~0u: not kept
    unsigned wtotal;
    if (STRIPED) {
        constexpr int K = ITEMS / 4;
        const int64_t wbase = tbase + (int64_t)warp * 32 * ITEMS;  // the warp's contiguous segment
        const bool full = wbase + 32 * ITEMS <= n;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int64_t e0 = wbase + (int64_t)(lane + 32 * k) * 4;
            if (full) { int4 r = __ldg(reinterpret_cast<const int4 *>(x + e0)); v[4*k]=r.x; v[4*k+1]=r.y; v[4*k+2]=r.z; v[4*k+3]=r.w; }
            else {
#pragma unroll
                for (int e = 0; e < 4; e++) v[4*k+e] = e0 + e < n ? x[e0 + e] : 0;
            }
        }
        const unsigned lt = (1u << lane) - 1;
        unsigned run = 0;
#pragma unroll
        for (int k = 0; k < K; k++) {
            unsigned before = 0, mine = 0, tot = 0;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t gi = wbase + (int64_t)(lane + 32 * k) * 4 + e;
                const bool f = gi < n && v[4*k+e] >= thr;
                const unsigned b = __ballot_sync(0xffffffffu, f);
                before += __popc(b & lt);
                tot += __popc(b);
                rank[4*k+e] = f ? 0 : ~0u;
                (void)mine;
            }
            unsigned own = 0;
#pragma unroll
            for (int e = 0; e < 4; e++) if (rank[4*k+e] == 0) { rank[4*k+e] = run + before + own; own++; }
            run += tot;
        }
        wtotal = run;
    } else {
        const int64_t base = tbase + (int64_t)threadIdx.x * ITEMS;
        if (base + ITEMS <= n) {
#pragma unroll
            for (int j = 0; j < ITEMS / 4; j++) { int4 r = __ldg(reinterpret_cast<const int4 *>(x + base) + j); v[4*j]=r.x; v[4*j+1]=r.y; v[4*j+2]=r.z; v[4*j+3]=r.w; }
        } else {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) v[j] = base + j < n ? x[base + j] : 0;
        }
        unsigned kept = 0;
#pragma unroll
        for (int j = 0; j < ITEMS; j++) { const bool f = base + j < n && v[j] >= thr; rank[j] = f ? kept : ~0u; kept += f; }
        unsigned incl = kept;
        for (int o = 1; o < 32; o <<= 1) { unsigned up = __shfl_up_sync(0xffffffffu, incl, o); if ((int)lane >= o) incl += up; }
        const unsigned excl = incl - kept;
#pragma unroll
        for (int j = 0; j < ITEMS; j++) if (rank[j] != ~0u) rank[j] += excl;
        wtotal = __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 0) warp_off[warp] = wtotal;
    __syncthreads();
    if (warp == 0) {
        unsigned t = lane < nwarps ? warp_off[lane] : 0, inc = t;
        for (int o = 1; o < 32; o <<= 1) { unsigned up = __shfl_up_sync(0xffffffffu, inc, o); if ((int)lane >= o) inc += up; }
        const unsigned tile_count = __shfl_sync(0xffffffffu, inc, 31);
        if (lane < nwarps) warp_off[lane] = inc - t;
        if (lane == 0) warp_off[32] = tile_count;
        volatile u64 *vs = status;
        u64 prefix = 0;
        if (tile == 0) { if (lane == 0) vs[0] = INC | tile_count; }
        else {
            if (lane == 0) vs[tile] = AGG | tile_count;
            prefix = warp_look_back(vs, tile, lane);
            if (lane == 0) vs[tile] = INC | (prefix + tile_count);
        }
        if (lane == 0) { prefix_s = prefix; if (tile == ntiles - 1) *total = prefix + tile_count; }
    }
    __syncthreads();
    const unsigned woff = warp_off[warp];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) if (rank[j] != ~0u) stage[woff + rank[j]] = v[j];
    __syncthreads();
    const unsigned tc = warp_off[32];
    const u64 bo = prefix_s;
    for (unsigned i = threadIdx.x; i < tc; i += blockDim.x) out[bo + i] = stage[i];
}

__global__ void fill(int *x, int64_t n, unsigned seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        x[i] = (int)(h % 100u);
    }
}
struct Ge { int t; __host__ __device__ bool operator()(int v) const { return v >= t; } };
static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
template <class F> static float time_kernel(F f)
{
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < 20; i++) { CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms); }
    CK(cudaGetLastError());
    return median(ts);
}

int main()
{
    const int64_t n = 1LL << 28;
    int *x, *out; CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&out, n * 4));
    fill<<<2048, 256>>>(x, n, 777); CK(cudaDeviceSynchronize());
    std::vector<int> hx(n); CK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
    std::vector<int> hout(n);
    u64 *scratch; CK(cudaMalloc(&scratch, 16 + (n / 256 + 64) * 8));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int thr : {50, 99, 1}) {
        std::vector<int> ref; ref.reserve(n);
        for (int64_t i = 0; i < n; i++) if (hx[i] >= thr) ref.push_back(hx[i]);
        auto check = [&](u64 got) {
            if (got != ref.size()) return false;
            CK(cudaMemcpy(hout.data(), out, got * 4, cudaMemcpyDeviceToHost));
            return std::equal(ref.begin(), ref.end(), hout.begin());
        };
        const double gb = n * 4 / 1e9;
        auto report = [&](const char *k, float ms, bool ok) {
            printf("sel>=%-3d %-34s %9.4f ms %8.1f GB/s %s\n", thr, k, ms, gb / (ms * 1e-3), ok ? "ok" : "WRONG");
        };
        // F0
        {
            const int T = 256, I = 16; const int64_t ntiles = (n + T * I - 1) / (T * I);
            size_t smem = T * I * 4; int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, f0<16>, T, smem));
            int g = per * sms;
            auto run = [&] { cudaMemsetAsync(scratch, 0, 16 + ntiles * 8); f0<16><<<g, T, smem>>>(x, n, thr, out, (unsigned *)(scratch + 1), scratch + 2, ntiles, scratch); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, scratch, 8, cudaMemcpyDeviceToHost));
            report("f0 library lookback", ms, check(tot));
        }
        auto go = [&](auto kern, int I, const char *label) {
            const int T = 256; const int64_t ntiles = (n + T * I - 1) / (T * I);
            size_t smem = (size_t)T * I * 4;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            auto run = [&] { cudaMemsetAsync(scratch, 0, 16 + ntiles * 8); kern<<<(unsigned)ntiles, T, smem>>>(x, n, thr, out, (unsigned *)(scratch + 1), scratch + 2, ntiles, scratch); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, scratch, 8, cudaMemcpyDeviceToHost));
            report(label, ms, check(tot));
        };
        go(f1<16, false, false>, 16, "f1 blockIdx blocked 16");
        go(f1<16, true, false>, 16, "f1 ticket blocked 16");
        go(f1<16, true, true>, 16, "f2 ticket striped 16");
        go(f1<16, false, true>, 16, "f2 blockIdx striped 16");
        go(f1<24, true, true>, 24, "f2 ticket striped 24");
        go(f1<32, true, true>, 32, "f2 ticket striped 32");
        go(f1<8, true, true>, 8, "f2 ticket striped 8");
        // CUB
        {
            u64 *nsel; CK(cudaMalloc(&nsel, 8)); size_t tb = 0; void *tmp = nullptr;
            CK(cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}));
            CK(cudaMalloc(&tmp, tb));
            auto run = [&] { cub::DeviceSelect::If(tmp, tb, x, out, nsel, n, Ge{thr}); };
            float ms = time_kernel(run); u64 tot; CK(cudaMemcpy(&tot, nsel, 8, cudaMemcpyDeviceToHost));
            report("CUB DeviceSelect::If", ms, check(tot));
            cudaFree(tmp); cudaFree(nsel);
        }
    }
    return 0;
}
