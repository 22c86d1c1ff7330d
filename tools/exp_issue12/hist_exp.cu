// Experiment (not part of the library): 128-bin byte histogram variants vs CUB,
// kernel-only event times, median of 20 after 3 warm-ups; and the API costs of
// one small call.
#include <cub/cub.cuh>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <chrono>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)

constexpr int NB = 128;

// ---- K0: the library's warp_private lean byte path (per-warp copies, uint4 grid stride, one ahead)
__global__ void k_wp(const uint8_t *x, int64_t n, u64 *counts, int copies_per_block)
{
    extern __shared__ unsigned sm[];
    const int sc = NB + 1;
    for (int j = threadIdx.x; j < sc * copies_per_block; j += blockDim.x) sm[j] = 0;
    __syncthreads();
    unsigned *mine = sm + ((threadIdx.x >> 5) % copies_per_block) * sc;
    const uint4 *body = (const uint4 *)x;
    int64_t nvec = n / 16;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    auto put = [&](unsigned b) { if (b <= NB) atomicAdd(&mine[b], 1u); };
    if (i < nvec) {
        uint4 cur = __ldg(body + i);
        while (true) {
            int64_t nx = i + stride;
            uint4 ahead = nx < nvec ? __ldg(body + nx) : cur;
            unsigned w[4] = {cur.x, cur.y, cur.z, cur.w};
#pragma unroll
            for (int k = 0; k < 4; k++)
#pragma unroll
                for (int b = 0; b < 4; b++) put(__byte_perm(w[k], 0, 0x4440 + b));
            if (nx >= nvec) break;
            cur = ahead; i = nx;
        }
    }
    __syncthreads();
    for (int j = threadIdx.x; j < NB; j += blockDim.x) {
        u64 t = 0;
        for (int c = 0; c < copies_per_block; c++) t += sm[c * sc + j] + (j == NB - 1 ? sm[c * sc + NB] : 0);
        if (t) atomicAdd(&counts[j], t);
    }
}

// ---- K1: CUB-like: one copy per block, each thread ITEMS bytes as 4-byte loads, blocked, grid-stride tiles
template <int ITEMS>
__global__ void k_cubish(const uint8_t *x, int64_t n, u64 *counts)
{
    __shared__ unsigned h[NB + 1];
    for (int j = threadIdx.x; j <= NB; j += blockDim.x) h[j] = 0;
    __syncthreads();
    const int64_t tile = (int64_t)blockDim.x * ITEMS;
    const int64_t ntiles = n / tile;
    for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const unsigned *p = (const unsigned *)(x + t * tile + (int64_t)threadIdx.x * ITEMS);
        unsigned w[ITEMS / 4];
#pragma unroll
        for (int k = 0; k < ITEMS / 4; k++) w[k] = __ldg(p + k);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; k++)
#pragma unroll
            for (int b = 0; b < 4; b++) {
                unsigned v = __byte_perm(w[k], 0, 0x4440 + b);
                if (v <= NB) atomicAdd(&h[v], 1u);
            }
    }
    __syncthreads();
    for (int j = threadIdx.x; j < NB; j += blockDim.x) {
        u64 t = h[j] + (j == NB - 1 ? h[NB] : 0);
        if (t) atomicAdd(&counts[j], t);
    }
}

// ---- K2: per-warp copies, VPT uint4 per thread per step, all loads issued before counting
template <int VPT>
__global__ void k_wpbatch(const uint8_t *x, int64_t n, u64 *counts, int copies_per_block)
{
    extern __shared__ unsigned sm[];
    const int sc = NB + 1;
    for (int j = threadIdx.x; j < sc * copies_per_block; j += blockDim.x) sm[j] = 0;
    __syncthreads();
    unsigned *mine = sm + ((threadIdx.x >> 5) % copies_per_block) * sc;
    const uint4 *body = (const uint4 *)x;
    const int64_t nvec = n / 16;
    const int64_t tile = (int64_t)blockDim.x * VPT;
    for (int64_t t = blockIdx.x; t * tile < nvec; t += gridDim.x) {
        uint4 r[VPT];
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            int64_t i = t * tile + k * blockDim.x + threadIdx.x;
            r[k] = i < nvec ? __ldg(body + i) : make_uint4(~0u, ~0u, ~0u, ~0u);
        }
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            unsigned w[4] = {r[k].x, r[k].y, r[k].z, r[k].w};
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    unsigned v = __byte_perm(w[q], 0, 0x4440 + b);
                    if (v <= NB) atomicAdd(&mine[v], 1u);
                }
        }
    }
    __syncthreads();
    for (int j = threadIdx.x; j < NB; j += blockDim.x) {
        u64 s = 0;
        for (int c = 0; c < copies_per_block; c++) s += sm[c * sc + j] + (j == NB - 1 ? sm[c * sc + NB] : 0);
        if (s) atomicAdd(&counts[j], s);
    }
}

// ---- K3: like K2 but counts pairs: 16-bit halves, bins b in word b (low half) for even byte positions
// and high half for odd positions: two shared atomics per 2 bytes still, but adds 1 or 65536 -- tests whether
// ATOMS.POPC.INC (add 1) vs ATOMS.ADD matters. Flushed every 65535/(2*VPT*4)... kept simple: 16-bit overflow
// guarded by flushing each tile row (blocks of at most 32768 steps per thread between flushes).
// (skipped)


// ---- H: 256 counters per copy (every byte value has one: no range check), branchless shared reductions.
template <bool CLOBBER>
__device__ __forceinline__ void sh_inc(unsigned addr)
{
    if (CLOBBER) asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr) : "memory");
    else asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr));
}
template <bool CLOBBER>
__device__ __forceinline__ void count16(uint4 r, unsigned base)
{
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int b = 0; b < 4; b++) sh_inc<CLOBBER>(base + (__byte_perm(w[k], 0, 0x4440 + b) << 2));
}
// PER_WARP: a copy per warp, else one per block. VPT vectors per thread per step, issued before counting.
template <bool PER_WARP, int VPT, bool CLOBBER>
__global__ void k_h(const uint8_t *x, int64_t n, u64 *counts)
{
    extern __shared__ unsigned sm[];
    const int copies = PER_WARP ? blockDim.x / 32 : 1;
    for (int j = threadIdx.x; j < 256 * copies; j += blockDim.x) sm[j] = 0;
    __syncthreads();
    const unsigned base = (unsigned)__cvta_generic_to_shared(sm + (PER_WARP ? (threadIdx.x >> 5) * 256 : 0));
    const uint4 *body = (const uint4 *)x;
    const int64_t nvec = n / 16;
    if (VPT == 0) {  // one ahead, grid stride (the library's loop)
        const int64_t stride = (int64_t)gridDim.x * blockDim.x;
        int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        if (i < nvec) {
            uint4 cur = __ldg(body + i);
            while (true) {
                int64_t nx = i + stride;
                uint4 ahead = nx < nvec ? __ldg(body + nx) : cur;
                count16<CLOBBER>(cur, base);
                if (nx >= nvec) break;
                cur = ahead; i = nx;
            }
        }
    } else {
        constexpr int V = VPT > 0 ? VPT : 1;
        const int64_t tile = (int64_t)blockDim.x * V;
        for (int64_t t = blockIdx.x; t * tile < nvec; t += gridDim.x) {
            uint4 r[V];
            bool ok[V];
#pragma unroll
            for (int k = 0; k < V; k++) {
                int64_t i = t * tile + k * blockDim.x + threadIdx.x;
                ok[k] = i < nvec;
                if (ok[k]) r[k] = __ldg(body + i);
            }
#pragma unroll
            for (int k = 0; k < V; k++) if (ok[k]) count16<CLOBBER>(r[k], base);
        }
    }
    __syncthreads();
    for (int j = threadIdx.x; j < NB; j += blockDim.x) {
        u64 t = 0;
        for (int c = 0; c < copies; c++) t += sm[c * 256 + j] + (j == NB - 1 ? sm[c * 256 + NB] : 0);
        if (t) atomicAdd(&counts[j], t);
    }
}

__global__ void fill_uniform(uint8_t *x, int64_t n, unsigned seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        x[i] = (uint8_t)h;
    }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <class F>
static float time_kernel(F f)
{
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    CK(cudaGetLastError());
    return median(ts);
}
template <class F>
static double time_wall_us(F f)
{
    for (int i = 0; i < 5; i++) f();
    std::vector<float> ts;
    for (int i = 0; i < 50; i++) {
        auto t0 = std::chrono::steady_clock::now(); f(); auto t1 = std::chrono::steady_clock::now();
        ts.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
    }
    return median(ts);
}

static int resident(const void *k, int threads, size_t smem)
{
    int dev, sms, per; CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, threads, smem));
    return per * sms;
}

int main(int argc, char **argv)
{
    // text: argv[1] (the dataset's 5.7 MB of English-like text)
    FILE *f = fopen(argv[1], "rb");
    std::vector<uint8_t> text;
    { uint8_t buf[65536]; size_t r; while ((r = fread(buf, 1, sizeof buf, f)) > 0) text.insert(text.end(), buf, buf + r); fclose(f); }
    const int64_t small = (int64_t)text.size();
    const int64_t big = 1LL << 30, mid = 1LL << 28;
    uint8_t *d; CK(cudaMalloc(&d, big));
    u64 *counts; CK(cudaMalloc(&counts, NB * 8));
    std::vector<u64> host(NB), ref(NB);
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s sms %d\n", prop.name, prop.multiProcessorCount);

    struct Case { const char *name; int64_t n; };
    Case cases[] = {{"text_1GiB", big}, {"uniform_256MiB", mid}, {"one_256MiB", mid}, {"text_5.7MB", small}};
    for (auto &c : cases) {
        if (argc > 2 && &c != &cases[0]) break;
        // fill
        std::vector<uint8_t> h;
        if (c.name[0] == 't') {
            h.resize(c.n);
            for (int64_t i = 0; i < c.n; i += small) memcpy(&h[i], text.data(), std::min<int64_t>(small, c.n - i));
            CK(cudaMemcpy(d, h.data(), c.n, cudaMemcpyHostToDevice));
        } else if (c.name[0] == 'u') {
            fill_uniform<<<1024, 256>>>(d, c.n, 12345); CK(cudaDeviceSynchronize());
            h.resize(c.n); CK(cudaMemcpy(h.data(), d, c.n, cudaMemcpyDeviceToHost));
        } else {
            CK(cudaMemset(d, 'e', c.n)); h.assign(c.n, 'e');
        }
        std::fill(ref.begin(), ref.end(), 0);
        for (int64_t i = 0; i < c.n; i++) if (h[i] <= NB) ref[h[i] < NB ? h[i] : NB - 1]++;
        auto check = [&](const char *k) {
            CK(cudaMemcpy(host.data(), counts, NB * 8, cudaMemcpyDeviceToHost));
            // variants ignore the tail that is not a multiple of their tile: compare what they cover
            return host == ref;
        };
        const double gb = c.n / 1e9;
        auto report = [&](const char *k, float ms, bool ok) {
            printf("%-16s %-28s %9.4f ms %8.1f GB/s %s\n", c.name, k, ms, gb / (ms * 1e-3), ok ? "ok" : "WRONG");
        };
        // K0
        for (int threads : {256, 1024}) {
            int copies = threads / 32; size_t smem = (size_t)copies * (NB + 1) * 4;
            int g = std::min<int64_t>(resident((void *)k_wp, threads, smem), (c.n / 16 + threads - 1) / threads);
            auto run = [&] { cudaMemsetAsync(counts, 0, NB * 8); k_wp<<<g, threads, smem>>>(d, c.n, counts, copies); };
            float ms = time_kernel(run); run(); char nm[64]; snprintf(nm, 64, "wp t%d g%d", threads, g);
            report(nm, ms, check(nm));
        }
        {
            auto go = [&](auto kern, int threads, int gcap, bool perwarp, const char *label) {
                size_t smem = (size_t)(perwarp ? threads / 32 : 1) * 256 * 4;
                CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                int g = resident((void *)kern, threads, smem);
                g = std::min<int64_t>(g, (c.n / 16 + threads - 1) / threads);
                if (gcap) g = std::min(g, gcap);
                auto run = [&] { cudaMemsetAsync(counts, 0, NB * 8); kern<<<g, threads, smem>>>(d, c.n, counts); };
                float ms = time_kernel(run); run(); char nm[64]; snprintf(nm, 64, "%s t%d g%d", label, threads, g);
                report(nm, ms, check(nm));
            };
            go(k_h<true, 0, true>, 256, 0, true, "h wp ahead clob");
            go(k_h<true, 0, false>, 256, 0, true, "h wp ahead");
            go(k_h<true, 0, false>, 1024, 0, true, "h wp ahead");
            go(k_h<false, 0, false>, 1024, 0, false, "h blk ahead");
            go(k_h<false, 0, false>, 768, 0, false, "h blk ahead");
            go(k_h<true, 2, false>, 256, 0, true, "h wp vpt2");
            go(k_h<true, 2, false>, 1024, 0, true, "h wp vpt2");
            go(k_h<false, 2, false>, 1024, 0, false, "h blk vpt2");
            go(k_h<false, 4, false>, 512, 0, false, "h blk vpt4");
            go(k_h<true, 0, false>, 1024, 132, true, "h wp ahead");
            go(k_h<false, 0, false>, 1024, 132, false, "h blk ahead");
            go(k_h<false, 2, false>, 1024, 132, false, "h blk vpt2");
        }
        // CUB
        {
            unsigned *cc; CK(cudaMalloc(&cc, NB * 4));
            size_t tb = 0; void *tmp = nullptr;
            CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, cc, NB + 1, 0, NB, c.n));
            CK(cudaMalloc(&tmp, tb));
            auto run = [&] { cub::DeviceHistogram::HistogramEven(tmp, tb, d, cc, NB + 1, 0, NB, c.n); };
            float ms = time_kernel(run); run();
            std::vector<unsigned> hc(NB); CK(cudaMemcpy(hc.data(), cc, NB * 4, cudaMemcpyDeviceToHost));
            bool ok = true; for (int j = 0; j < NB; j++) ok &= hc[j] == (unsigned)ref[j];
            report("CUB HistogramEven", ms, ok);
            cudaFree(tmp); cudaFree(cc);
        }
    }
    if (argc > 2) return 0;
    // API costs of one small call (5.7 MB already in d from the last case)
    {
        int threads = 256, copies = 8; size_t smem = copies * (NB + 1) * 4;
        int g = std::min<int64_t>(resident((void *)k_wp, threads, smem), (small / 16 + 255) / 256);
        cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        u64 *pinned; CK(cudaHostAlloc(&pinned, 65536, cudaHostAllocMapped | cudaHostAllocPortable));
        std::vector<u64> pageable(NB);
        auto spin = [&] { while (cudaStreamQuery(s) == cudaErrorNotReady) {} };
        printf("api: empty stream query            %8.2f us\n", time_wall_us([&] { cudaStreamQuery(s); }));
        printf("api: occupancy query               %8.2f us\n", time_wall_us([&] { int p; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p, k_wp, threads, smem); }));
        printf("api: func set attribute            %8.2f us\n", time_wall_us([&] { cudaFuncSetAttribute(k_wp, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem); }));
        printf("api: get device + attribute        %8.2f us\n", time_wall_us([&] { int dv, o; cudaGetDevice(&dv); cudaDeviceGetAttribute(&o, cudaDevAttrMaxSharedMemoryPerBlockOptin, dv); }));
        printf("api: mallocAsync+freeAsync 1KB     %8.2f us\n", time_wall_us([&] { void *p; cudaMallocAsync(&p, 1024, s); cudaFreeAsync(p, s); }));
        printf("api: memset+kernel+spin            %8.2f us\n", time_wall_us([&] { cudaMemsetAsync(counts, 0, NB * 8, s); k_wp<<<g, threads, smem, s>>>(d, small, counts, copies); spin(); }));
        printf("api: kernel+spin                   %8.2f us\n", time_wall_us([&] { k_wp<<<g, threads, smem, s>>>(d, small, counts, copies); spin(); }));
        printf("api: library path (malloc, memset, kernel, spin, pageable copy+sync, free) %8.2f us\n", time_wall_us([&] {
            void *p; cudaMallocAsync(&p, NB * 8, s); cudaMemsetAsync(p, 0, NB * 8, s);
            int pr; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&pr, k_wp, threads, smem);
            cudaFuncSetAttribute(k_wp, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            k_wp<<<g, threads, smem, s>>>(d, small, (u64 *)p, copies); spin();
            cudaMemcpyAsync(pageable.data(), p, NB * 8, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s);
            cudaFreeAsync(p, s); }));
        printf("api: lean path (memset, kernel, copy to pinned, spin)                  %8.2f us\n", time_wall_us([&] {
            cudaMemsetAsync(counts, 0, NB * 8, s);
            k_wp<<<g, threads, smem, s>>>(d, small, counts, copies);
            cudaMemcpyAsync(pinned, counts, NB * 8, cudaMemcpyDeviceToHost, s); spin(); }));
        float ms = time_kernel([&] { k_wp<<<g, threads, smem>>>(d, small, counts, copies); });
        printf("api: kernel alone (events)         %8.2f us\n", ms * 1e3);
    }
    return 0;
}
