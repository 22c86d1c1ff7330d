// histogramdd.cu -- the histogram ladder in several dimensions
// (np.histogramdd, np.histogram2d): each point's bin in every dimension
// (np.histogram's rule, bins.cuh), the bins made one cell index in C order,
// the cell counted.
//
//  1. global  one atomicAdd per point on the cell's global counter. Every
//             cell is its own address, so a histogram of many cells spreads
//             the atomics over L2; few cells, or skewed points, queue them.
//  2. shared  each block counts into a private copy of all cells in shared
//             memory (on-chip atomics, contention only within the block),
//             then adds each nonzero cell to the global counts with one
//             atomicAdd. Needs cells * 4 bytes of shared memory per block:
//             more cells than fit (256 x 256 is 256 KiB, past an H100's or
//             an H200's 227 KiB) are refused with a message naming `tiled`.
//  3. tiled   shared's private counts for cells that do not fit: the cells
//             are cut into tiles that do, and a second grid dimension gives
//             each tile its own blocks, which read every point and count
//             those whose cell lies in their tile. Reads the points once per
//             tile (twice for 256 x 256 on Hopper) to keep every atomic
//             on chip; one tile is the shared rung exactly. Takes any
//             number of cells.
//  4. cluster shared's private counts spread over a thread block cluster
//             (sm_90): the cells are cut over up to 8 blocks that run
//             together, each holding its part in its own shared memory, and a
//             point's atomicAdd goes to the block that owns its cell --
//             through distributed shared memory when that is another block
//             of the cluster. Reads every point once, however many tiles
//             tiled would need, and every add stays on chip (on the SMs of
//             one GPC). Needs sm_90 code (a build with compute_90 or newer:
//             a PTX-only compute_75 build has none) and cells that fit in 8
//             blocks' shared memory; anything else is refused ("auto" then
//             runs tiled).
//
// Counters: shared memory holds 32-bit counts (the launcher gives a block
// fewer than 2^32 points), the global counts are 64-bit, and one last pass
// writes them as float64, np.histogramdd's type. Each launcher waits for
// its work: histogramdd returns an array that its caller reads at once.
#include <cooperative_groups.h>

#include "bins.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int DD_THREADS = 1024;  // shared and tiled: one block an SM when the cells fill shared memory

// A sample as the kernels read it: per dimension its column, the column's
// stride, its bins, and its place value in the cell index.
template <class T, class E>
struct DevDD {
    int ndim;
    const T *col[CUA_DD_MAX];
    int64_t stride[CUA_DD_MAX];
    int64_t place[CUA_DD_MAX];
    DevBins<E> bn[CUA_DD_MAX];
};

// The cell of point i, or -1 when a coordinate is outside its edges.
template <class T, class E>
__device__ __forceinline__ int64_t cell_of(const DevDD<T, E> &dd, int64_t i)
{
    int64_t cell = 0;
    for (int d = 0; d < dd.ndim; d++) {
        const int64_t b = bin_of(dd.col[d][i * dd.stride[d]], dd.bn[d]);
        if (b < 0) return -1;
        cell += b * dd.place[d];
    }
    return cell;
}

template <class T, class E>
__global__ void dd_global_kernel(DevDD<T, E> dd, int64_t n, u64 *counts)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const int64_t c = cell_of(dd, i);
        if (c >= 0) atomicAdd(&counts[c], 1ULL);
    }
}

// shared and tiled: the block's private counts of the cells [first,
// first + tile) -- all of them for shared -- then one atomicAdd per nonzero
// cell into the global counts. Tile blockIdx.y; the points are shared out
// over blockIdx.x.
template <class T, class E>
__global__ void dd_tiled_kernel(DevDD<T, E> dd, int64_t n, int64_t cells, int64_t tile, u64 *counts)
{
    unsigned *mine = reinterpret_cast<unsigned *>(cua_smem);
    const int64_t first = (int64_t)blockIdx.y * tile;
    const int64_t width = cells - first < tile ? cells - first : tile;
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) mine[c] = 0;
    __syncthreads();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = cell_of(dd, i) - first;
        // (unsigned: a dropped point's -1 - first, and cells before the tile, wrap past width)
        if ((uint64_t)c < (uint64_t)width) atomicAdd(&mine[c], 1u);
    }
    __syncthreads();  // every count of the block is in
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
        if (mine[c]) atomicAdd(&counts[first + c], (u64)mine[c]);
}

// cluster: block `rank` of a cluster holds the cells [rank * part, (rank
// + 1) * part) of every cell the cluster counts, in its shared memory; part
// is 2^shift, so a cell's owner and place are a shift and a mask (a 64-bit
// division per point cost more than the remote atomic).
template <class T, class E>
__global__ void dd_cluster_kernel(DevDD<T, E> dd, int64_t n, int64_t cells, int shift, u64 *counts)
{
    const int64_t part = (int64_t)1 << shift;
#if __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    unsigned *mine = reinterpret_cast<unsigned *>(cua_smem);
    const unsigned rank = cluster.block_rank();
    const int64_t first = (int64_t)rank * part;
    const int64_t width = cells - first < part ? (cells - first > 0 ? cells - first : 0) : part;
    for (int64_t c = threadIdx.x; c < part; c += blockDim.x) mine[c] = 0;
    // Every block of the cluster has zeroed its counters before any block
    // adds into them.
    cluster.sync();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = cell_of(dd, i);
        if (c < 0) continue;
        const unsigned owner = (unsigned)(c >> shift);
        // The owner's counters, mapped into this block's view: an atomicAdd
        // there is a remote shared-memory atomic when owner != rank.
        unsigned *theirs = cluster.map_shared_rank(mine, owner);
        atomicAdd(&theirs[c & (part - 1)], 1u);
    }
    // Every add into this block's counters, from any block of the cluster,
    // is done -- and no block leaves while others may still add into it.
    cluster.sync();
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
        if (mine[c]) atomicAdd(&counts[first + c], (u64)mine[c]);
#endif
}

__global__ void dd_to_double_kernel(const u64 *counts, int64_t cells, double *hist)
{
    for (int64_t c = cua_global_id(); c < cells; c += cua_grid_stride()) hist[c] = (double)counts[c];
}

// The sample on the device: the edges of the dimensions whose kernels read
// them (bins.cuh's upload_bins), the place values.
template <class T, class E>
struct Uploaded {
    DevDD<T, E> dd;
    cua_scratch edges[CUA_DD_MAX];
    int64_t cells = 1;
};

template <class T, class E>
static int upload(const cua_sample *s, Uploaded<T, E> *up, cudaStream_t st)
{
    up->dd.ndim = s->ndim;
    for (int d = s->ndim - 1; d >= 0; d--) {
        up->dd.col[d] = (const T *)s->cols[d];
        up->dd.stride[d] = s->strides[d];
        up->dd.place[d] = up->cells;
        up->cells *= s->bins[d].nbins;
        int err = upload_bins<T, E>(&s->bins[d], &up->edges[d], &up->dd.bn[d], st);
        if (err) return err;
    }
    return 0;
}

// What every rung counts into: the sample uploaded and 64-bit counts of its
// cells, zeroed on the stream.
template <class T, class E>
struct Counting {
    Uploaded<T, E> up;
    cua_scratch counts;
    int open(const cua_sample *smp, cudaStream_t s)
    {
        int st = upload<T, E>(smp, &up, s);
        if (st) return st;
        CUA_CHECK(counts.get((size_t)up.cells * sizeof(u64), s));
        CUA_CHECK(cudaMemsetAsync(counts.ptr, 0, (size_t)up.cells * sizeof(u64), s));
        return 0;
    }
    u64 *ptr() const { return (u64 *)counts.ptr; }
};

// The cells of a sample (the product of its bin counts; the glue has
// checked that it fits int64).
static int64_t cells_of(const cua_sample *s)
{
    int64_t cells = 1;
    for (int d = 0; d < s->ndim; d++) cells *= s->bins[d].nbins;
    return cells;
}

// Shared memory a block of `kernel` can have on this device.
template <class K>
static int smem_room(K kernel, int64_t *room)
{
    int dev, optin;
    cudaFuncAttributes attr;
    CUA_CHECK(cudaGetDevice(&dev));
    CUA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    CUA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    *room = (int64_t)optin - (int64_t)attr.sharedSizeBytes;
    return 0;
}

// The end of every launcher: the counts as float64 into hist, and the wait.
static int finish(const u64 *counts, int64_t cells, double *hist, cudaStream_t s)
{
    CUA_CHECK_LAUNCH();
    int sms;
    int st = cua_sm_count(&sms);
    if (st) return st;
    const int64_t want = cua_ceil_div(cells, CUA_DEFAULT_THREADS), most = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    dd_to_double_kernel<<<(unsigned)(want < most ? want : most), CUA_DEFAULT_THREADS, 0, s>>>(counts, cells, hist);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

template <class T, class E>
static int dd_global(const cua_sample *smp, int64_t n, double *hist, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int st = cua_default_config(cfg, n, CUA_DEFAULT_THREADS);
    if (st) return st;
    Counting<T, E> c;
    st = c.open(smp, s);
    if (st) return st;
    if (n > 0) dd_global_kernel<T, E><<<(unsigned)cfg->blocks, cfg->threads, 0, s>>>(c.up.dd, n, c.ptr());
    return finish(c.ptr(), c.up.cells, hist, s);
}

// shared's and tiled's plan: the cells of a tile (all of them for shared),
// how many tiles, the shared memory of a block. A shared rung whose cells
// do not fit is refused.
static int plan_tiles(const cua_sample *smp, bool tiles_allowed, int64_t *tile, int64_t *tiles, cua_launch *cfg)
{
    int64_t room;
    int st = smem_room(dd_tiled_kernel<float, double>, &room);
    if (st) return st;
    const int64_t cells = cells_of(smp), fit = room / (int64_t)sizeof(unsigned);
    if (!tiles_allowed && cells > fit)
        return cua_refuse(cfg, "method 'shared' keeps all %lld cells in shared memory, %lld bytes, and a block of this "
                               "device has %lld: use method='tiled' (or 'global')",
                          (long long)cells, (long long)(cells * (int64_t)sizeof(unsigned)), (long long)room);
    *tile = cells < fit ? cells : fit;
    *tiles = cua_ceil_div(cells, *tile);
    if (*tiles > 65535)
        return cua_refuse(cfg, "method 'tiled' would cut %lld cells into %lld tiles, more than a grid's 65535 rows: "
                               "use method='global'", (long long)cells, (long long)*tiles);
    return 0;
}

template <class T, class E>
static int dd_tiles(const cua_sample *smp, int64_t n, double *hist, bool tiles_allowed, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int64_t tile, tiles;
    int st = plan_tiles(smp, tiles_allowed, &tile, &tiles, cfg);
    if (st) return st;
    if (cfg->threads <= 0) cfg->threads = DD_THREADS;
    const size_t smem = (size_t)tile * sizeof(unsigned);
    auto kernel = dd_tiled_kernel<T, E>;
    st = cua_allow_smem(kernel, smem);
    if (st) return st;
    if (cfg->blocks <= 0) {
        st = cua_max_resident_blocks(kernel, cfg->threads, smem, &cfg->blocks);
        if (st) return st;
        // The tiles share the resident grid; each block's counters are 32-bit.
        cfg->blocks = cfg->blocks / tiles > 0 ? cfg->blocks / tiles : 1;
        const int64_t least = cua_ceil_div(n, (int64_t)UINT32_MAX);
        if (cfg->blocks < least) cfg->blocks = least;
    } else if (cfg->blocks < cua_ceil_div(n, (int64_t)UINT32_MAX)) {
        return cua_refuse(cfg, "blocks=%lld would give a block 2^32 points or more, past its 32-bit counters",
                          (long long)cfg->blocks);
    }
    cua_clamp_grid(cfg, cua_ceil_div(n, cfg->threads));
    if (cfg->blocks > INT32_MAX) return cua_refuse(cfg, "blocks=%lld: at most 2^31 - 1", (long long)cfg->blocks);
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    Counting<T, E> c;
    st = c.open(smp, s);
    if (st) return st;
    if (n > 0) {
        const dim3 grid((unsigned)cfg->blocks, (unsigned)tiles);
        kernel<<<grid, cfg->threads, smem, s>>>(c.up.dd, n, c.up.cells, tile, c.ptr());
    }
    return finish(c.ptr(), c.up.cells, hist, s);
}

// cluster's plan: blocks per cluster (the fewest whose shared memory holds
// every cell, from 2 -- cells that fit one block are shared's -- to 8, the
// portable cluster size), and the cells each holds, 2^shift.
constexpr int DD_MAX_CLUSTER = 8;
static int plan_cluster(const cua_sample *smp, int *csize, int *shift, cua_launch *cfg)
{
    int major;
    int st = cua_cc_major(&major);
    if (st) return st;
    if (major < 9)
        return cua_refuse(cfg, "method 'cluster' needs thread block clusters, sm_90 or newer (this device is "
                               "sm_%d*); use method='tiled'", major);
    cudaFuncAttributes attr;
    CUA_CHECK(cudaFuncGetAttributes(&attr, dd_cluster_kernel<float, double>));
    if (attr.ptxVersion < 90)
        return cua_refuse(cfg, "method 'cluster' has no sm_90 code in this build (PTX for compute_%d only: "
                               "CUATOMIC_CUDA_ARCHS=90 builds it); use method='tiled'", attr.ptxVersion);
    int64_t room;
    st = smem_room(dd_cluster_kernel<float, double>, &room);
    if (st) return st;
    const int64_t cells = cells_of(smp), fit = room / (int64_t)sizeof(unsigned);
    if (cells <= fit)
        return cua_refuse(cfg, "method 'cluster' spreads cells over several blocks: %lld fit in one block's shared "
                               "memory, use method='shared' (or 'tiled')", (long long)cells);
    int s = 0;
    while (((int64_t)2 << s) <= fit) s++;  // the largest power of two that fits
    const int64_t blocks = cua_ceil_div(cells, (int64_t)1 << s);
    if (blocks > DD_MAX_CLUSTER)
        return cua_refuse(cfg, "method 'cluster' holds at most %lld cells in %d blocks' shared memory (got %lld); "
                               "use method='tiled'", (long long)(((int64_t)1 << s) * DD_MAX_CLUSTER), DD_MAX_CLUSTER,
                          (long long)cells);
    while (s > 0 && ((int64_t)1 << (s - 1)) * blocks >= cells) s--;  // the smallest part that still holds them
    *csize = (int)blocks;
    *shift = s;
    return 0;
}

template <class T, class E>
static int dd_cluster(const cua_sample *smp, int64_t n, double *hist, cua_launch *cfg)
{
    cudaStream_t s = cua_stream(cfg);
    int csize, shift;
    int st = plan_cluster(smp, &csize, &shift, cfg);
    if (st) return st;
    if (cfg->threads <= 0) cfg->threads = DD_THREADS;
    const size_t smem = ((size_t)1 << shift) * sizeof(unsigned);
    auto kernel = dd_cluster_kernel<T, E>;
    st = cua_allow_smem(kernel, smem);
    if (st) return st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)csize;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t lc = {};
    lc.blockDim = dim3((unsigned)cfg->threads);
    lc.dynamicSmemBytes = smem;
    lc.stream = s;
    lc.attrs = attr;
    lc.numAttrs = 1;
    // Each block's counters take adds from every block of its cluster: a
    // cluster counts fewer than 2^32 points.
    const int64_t least = cua_ceil_div(n, (int64_t)UINT32_MAX) * csize;
    if (cfg->blocks <= 0) {
        int clusters = 0;
        lc.gridDim = dim3((unsigned)csize);
        CUA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &lc));
        if (clusters < 1) return cua_refuse(cfg, "no cluster of %d blocks of %d threads fits on this device", csize,
                                            cfg->threads);
        cfg->blocks = (int64_t)clusters * csize;
        if (cfg->blocks < least) cfg->blocks = least;
    } else if (cfg->blocks % csize != 0 || cfg->blocks < least) {
        return cua_refuse(cfg, "method 'cluster' runs clusters of %d blocks: blocks=%lld must be a multiple of %d, "
                               "and at least %lld (a cluster counts fewer than 2^32 points)", csize,
                          (long long)cfg->blocks, csize, (long long)least);
    }
    const int64_t useful = cua_ceil_div(cua_ceil_div(n > 0 ? n : 1, cfg->threads), csize) * csize;
    if (cfg->blocks > useful) cfg->blocks = useful;
    if (cfg->blocks > INT32_MAX) return cua_refuse(cfg, "blocks=%lld: at most 2^31 - 1", (long long)cfg->blocks);
    cfg->used_blocks = cfg->blocks;
    cfg->used_threads = cfg->threads;
    Counting<T, E> c;
    st = c.open(smp, s);
    if (st) return st;
    if (n > 0) {
        lc.gridDim = dim3((unsigned)cfg->blocks);
        CUA_CHECK(cudaLaunchKernelEx(&lc, kernel, c.up.dd, n, c.up.cells, shift, c.ptr()));
    }
    return finish(c.ptr(), c.up.cells, hist, s);
}

template <class T, class E>
static int dd_shared(const cua_sample *smp, int64_t n, double *hist, cua_launch *cfg)
{
    return dd_tiles<T, E>(smp, n, hist, false, cfg);
}

template <class T, class E>
static int dd_tiled(const cua_sample *smp, int64_t n, double *hist, cua_launch *cfg)
{
    return dd_tiles<T, E>(smp, n, hist, true, cfg);
}

int dd_fits_any(const cua_sample *, int, cua_launch *) { return 0; }

int dd_fits_shared(const cua_sample *smp, int, cua_launch *cfg)
{
    int64_t tile, tiles;
    return plan_tiles(smp, false, &tile, &tiles, cfg);
}

int dd_fits_tiled(const cua_sample *smp, int, cua_launch *cfg)
{
    int64_t tile, tiles;
    return plan_tiles(smp, true, &tile, &tiles, cfg);
}

int dd_fits_cluster(const cua_sample *smp, int, cua_launch *cfg)
{
    int csize, shift;
    int st = plan_cluster(smp, &csize, &shift, cfg);
    if (st || cfg->blocks <= 0) return st;
    if (cfg->blocks % csize != 0)
        return cua_refuse(cfg, "method 'cluster' runs clusters of %d blocks: blocks=%lld must be a multiple of %d",
                          csize, (long long)cfg->blocks, csize);
    return 0;
}

}  // namespace

// ----------------------------------------------------------- variant table

// A row's launcher: the data's type and the type every dimension's edges
// are compared in (hist_dispatch, as the 1-D ladder), then the rung.
#define DD_ENTRY(RUNG, launcher)                                                                       \
    static int dd_##RUNG(const cua_sample *smp, int64_t n, int dtype, double *hist, cua_launch *cfg) \
    {                                                                                                  \
        if (smp->ndim < 1 || smp->ndim > CUA_DD_MAX) return CUA_EINTERNAL;                              \
        return hist_dispatch(dtype, smp->bins[0].edge_dtype, [&](auto t, auto e) -> int {              \
            using T = decltype(t);                                                                     \
            using E = decltype(e);                                                                     \
            if constexpr (std::is_same<E, float>::value) return CUA_EINTERNAL; /* float64 edges only */ \
            else return launcher<T, E>(smp, n, hist, cfg);                                             \
        });                                                                                            \
    }
DD_ENTRY(GLOBAL, dd_global)
DD_ENTRY(SHARED, dd_shared)
DD_ENTRY(TILED, dd_tiled)
DD_ENTRY(CLUSTER, dd_cluster)

static const cua_histdd_row histogramdd_rows[] = {
    {{"global", 1, "one atomicAdd per point on its cell's global counter", 0}, dd_GLOBAL, dd_fits_any},
    {{"shared", 2, "block-private counts of every cell in shared memory, one atomicAdd per nonzero cell to merge", 0},
     dd_SHARED, dd_fits_shared},
    {{"tiled", 3, "shared's private counts for cells that do not fit: tiles of cells, each with its own blocks", 0},
     dd_TILED, dd_fits_tiled},
    {{"cluster", 4, "the cells spread over a thread block cluster's shared memories (sm_90): remote atomics, one read", 0},
     dd_CLUSTER, dd_fits_cluster},
};
extern "C" const cua_ladder cua_cuda_histogramdd_ladder = CUA_LADDER(histogramdd_rows);

// ------------------------------------------------------------------ cells

// Every point's cell (ncells for a point that is dropped): the weighted
// histogram bins these with the weighted ladder (deterministic sums).
template <class T, class E>
__global__ void dd_cells_kernel(DevDD<T, E> dd, int64_t n, int64_t cells, int64_t *out)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        const int64_t c = cell_of(dd, i);
        out[i] = c >= 0 ? c : cells;
    }
}

extern "C" int cua_cuda_histdd_cells(const cua_sample *smp, int64_t n, int dtype, int64_t *out, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (smp->ndim < 1 || smp->ndim > CUA_DD_MAX) return CUA_EINTERNAL;
    return hist_dispatch(dtype, smp->bins[0].edge_dtype, [&](auto t, auto e) -> int {
        using T = decltype(t);
        using E = decltype(e);
        if constexpr (std::is_same<E, float>::value) {
            return CUA_EINTERNAL;
        } else {
            Uploaded<T, E> up;
            int st = upload<T, E>(smp, &up, s);
            if (st) return st;
            cua_launch cfg;
            memset(&cfg, 0, sizeof cfg);
            st = cua_default_config(&cfg, n, CUA_DEFAULT_THREADS);
            if (st) return st;
            if (n > 0) dd_cells_kernel<T, E><<<(unsigned)cfg.blocks, cfg.threads, 0, s>>>(up.dd, n, up.cells, out);
            CUA_CHECK_LAUNCH();
            CUA_CHECK(cudaStreamSynchronize(s));
            return 0;
        }
    });
}
