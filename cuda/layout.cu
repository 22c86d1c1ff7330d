// layout.cu -- memory layout and streams: the strided gather that makes a
// non-contiguous device array contiguous without a trip through the host,
// nonzero's flat indices into coordinates, compress's take along an axis,
// pointer queries, and stream helpers.
#include "common.cuh"

#define CUA_MAX_DIMS 16

struct Strided {
    int ndim;
    int64_t shape[CUA_MAX_DIMS];
    int64_t strides[CUA_MAX_DIMS];  // bytes
};

// The grid of the helpers here: grid-stride blocks, no more than the
// device holds at once.
static int helper_grid(int64_t n, unsigned *blocks)
{
    int sms;
    int err = cua_sm_count(&sms);
    if (err) return err;
    const int64_t want = cua_ceil_div(n, CUA_DEFAULT_THREADS), most = (int64_t)CUA_DEFAULT_BLOCKS_PER_SM * sms;
    *blocks = (unsigned)(want < most ? want : most);
    return 0;
}

// out[i] = the i-th element in C order of the strided source. W is the
// element's width when every element is W-aligned; otherwise bytes are
// copied one at a time (W = unsigned char, `itemsize` of them).
template <class W>
__global__ void gather_kernel(const char *__restrict__ src, char *__restrict__ dst, int64_t n, int itemsize,
                              Strided st)
{
    for (int64_t i = cua_global_id(); i < n; i += cua_grid_stride()) {
        int64_t rem = i, off = 0;
        for (int d = st.ndim - 1; d >= 0; --d) {
            int64_t idx = rem % st.shape[d];
            rem /= st.shape[d];
            off += idx * st.strides[d];
        }
        if (sizeof(W) > 1) {
            reinterpret_cast<W *>(dst)[i] = *reinterpret_cast<const W *>(src + off);
        } else {
            for (int b = 0; b < itemsize; b++) dst[i * itemsize + b] = src[off + b];
        }
    }
}

extern "C" int cua_cuda_gather(const void *src, void *dst, int64_t n, int itemsize, int ndim, const int64_t *shape,
                               const int64_t *strides, void *stream)
{
    if (ndim < 0 || ndim > CUA_MAX_DIMS || itemsize < 1) return CUA_EINVAL;
    if (n == 0) return 0;
    Strided st;
    st.ndim = ndim;
    bool aligned = (uintptr_t)src % itemsize == 0 && (itemsize & (itemsize - 1)) == 0 && itemsize <= 8;
    for (int d = 0; d < ndim; d++) {
        st.shape[d] = shape[d];
        st.strides[d] = strides[d];
        aligned = aligned && strides[d] % itemsize == 0;
    }
    cudaStream_t s = (cudaStream_t)stream;
    const int threads = CUA_DEFAULT_THREADS;
    unsigned blocks;
    int err = helper_grid(n, &blocks);
    if (err) return err;
    const char *in = (const char *)src;
    char *out = (char *)dst;
    if (!aligned) gather_kernel<unsigned char><<<blocks, threads, 0, s>>>(in, out, n, itemsize, st);
    else if (itemsize == 1) gather_kernel<unsigned char><<<blocks, threads, 0, s>>>(in, out, n, 1, st);
    else if (itemsize == 2) gather_kernel<unsigned short><<<blocks, threads, 0, s>>>(in, out, n, 2, st);
    else if (itemsize == 4) gather_kernel<unsigned int><<<blocks, threads, 0, s>>>(in, out, n, 4, st);
    else gather_kernel<u64><<<blocks, threads, 0, s>>>(in, out, n, 8, st);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

// --------------------------------------------- nonzero's coordinates

struct Coords {
    int ndim;
    int64_t shape[CUA_UNRAVEL_MAX_DIMS];
    int64_t *out[CUA_UNRAVEL_MAX_DIMS];  // coordinate d of element j at out[d][j * stride]
    int64_t stride;
};

// Flat C-order indices into coordinates (np.unravel_index): nonzero's
// tuple of arrays (stride 1, one array per dimension) or argwhere's rows
// (out[d] = base + d, stride ndim). out[0] may be flat itself (nonzero
// turns its flat indices into the first coordinates in place): each
// thread reads its index before it writes that same element.
__global__ void unravel_kernel(const int64_t *flat, int64_t k, Coords c)
{
    for (int64_t j = cua_global_id(); j < k; j += cua_grid_stride()) {
        int64_t rem = flat[j];
        for (int d = c.ndim - 1; d > 0; --d) {
            c.out[d][j * c.stride] = rem % c.shape[d];
            rem /= c.shape[d];
        }
        c.out[0][j * c.stride] = rem;
    }
}

extern "C" int cua_cuda_unravel(const int64_t *flat, int64_t k, int ndim, const int64_t *shape, int64_t *const *out,
                                int64_t stride, void *stream)
{
    if (ndim < 1 || ndim > CUA_UNRAVEL_MAX_DIMS) return CUA_EINVAL;
    if (k == 0) return 0;
    Coords c;
    c.ndim = ndim;
    c.stride = stride;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 1) return CUA_EINVAL;  // an index into an empty axis cannot exist
        c.shape[d] = shape[d];
        c.out[d] = out[d];
    }
    unsigned blocks;
    int err = helper_grid(k, &blocks);
    if (err) return err;
    cudaStream_t s = (cudaStream_t)stream;
    unravel_kernel<<<blocks, CUA_DEFAULT_THREADS, 0, s>>>(flat, k, c);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

// ------------------------------------------------ compress's take

// dst = np.take(src, idx, axis) for src viewed as (outer, m, inner) in C
// order and k indices, each already checked to lie in [0, m): element
// (o, j, i) of the result is element (o, idx[j], i) of src. W is the
// element's width when aligned, else bytes one at a time.
template <class W>
__global__ void take_kernel(const char *__restrict__ src, char *__restrict__ dst, int itemsize, int64_t outer,
                            int64_t m, int64_t inner, const int64_t *__restrict__ idx, int64_t k)
{
    const int64_t n = outer * k * inner;
    for (int64_t t = cua_global_id(); t < n; t += cua_grid_stride()) {
        const int64_t i = t % inner, j = (t / inner) % k, o = t / (inner * k);
        const int64_t from = (o * m + idx[j]) * inner + i;
        if (sizeof(W) > 1) {
            reinterpret_cast<W *>(dst)[t] = reinterpret_cast<const W *>(src)[from];
        } else {
            for (int b = 0; b < itemsize; b++) dst[t * itemsize + b] = src[from * itemsize + b];
        }
    }
}

extern "C" int cua_cuda_take(const void *src, void *dst, int itemsize, int64_t outer, int64_t m, int64_t inner,
                             const int64_t *idx, int64_t k, void *stream)
{
    if (itemsize < 1 || outer < 0 || m < 0 || inner < 0 || k < 0) return CUA_EINVAL;
    const int64_t n = outer * k * inner;
    if (n == 0) return 0;
    const bool aligned = (itemsize & (itemsize - 1)) == 0 && itemsize <= 8 && (uintptr_t)src % itemsize == 0 &&
                         (uintptr_t)dst % itemsize == 0;
    unsigned blocks;
    int err = helper_grid(n, &blocks);
    if (err) return err;
    cudaStream_t s = (cudaStream_t)stream;
    const char *in = (const char *)src;
    char *out = (char *)dst;
    const int T = CUA_DEFAULT_THREADS;
    if (!aligned) take_kernel<unsigned char><<<blocks, T, 0, s>>>(in, out, itemsize, outer, m, inner, idx, k);
    else if (itemsize == 1) take_kernel<unsigned char><<<blocks, T, 0, s>>>(in, out, 1, outer, m, inner, idx, k);
    else if (itemsize == 2) take_kernel<unsigned short><<<blocks, T, 0, s>>>(in, out, 2, outer, m, inner, idx, k);
    else if (itemsize == 4) take_kernel<unsigned int><<<blocks, T, 0, s>>>(in, out, 4, outer, m, inner, idx, k);
    else take_kernel<u64><<<blocks, T, 0, s>>>(in, out, 8, outer, m, inner, idx, k);
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int cua_cuda_pointer_info(const void *ptr, int *memory_type, int *device)
{
    cudaPointerAttributes attr;
    CUA_CHECK(cudaPointerGetAttributes(&attr, ptr));
    *memory_type = (int)attr.type;  // 0 unregistered host, 1 host, 2 device, 3 managed
    *device = attr.device;
    return 0;
}

extern "C" int cua_cuda_current_device(int *device)
{
    CUA_CHECK(cudaGetDevice(device));
    return 0;
}

extern "C" int cua_cuda_device_count(int *count)
{
    CUA_CHECK(cudaGetDeviceCount(count));
    return 0;
}

extern "C" int cua_cuda_use_device(int device, int *previous)
{
    int current;
    CUA_CHECK(cudaGetDevice(&current));
    if (previous) *previous = current;
    if (device != current) CUA_CHECK(cudaSetDevice(device));
    return 0;
}

extern "C" int cua_cuda_stream_create(void **stream)
{
    cudaStream_t s = NULL;
    CUA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = (void *)s;
    return 0;
}

extern "C" int cua_cuda_stream_destroy(void *stream)
{
    CUA_CHECK(cudaStreamDestroy((cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_stream_synchronize(void *stream)
{
    CUA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return 0;
}

// Make `waiter` wait for everything queued on `producer` so far, without
// blocking the host: an event recorded on one, waited on by the other.
extern "C" int cua_cuda_stream_wait(void *waiter, void *producer)
{
    // 0 and cudaStreamLegacy (1, the handle the array interfaces use for it)
    // name one stream: the legacy default stream, which is in order already.
    if (waiter == producer || ((uintptr_t)waiter <= 1 && (uintptr_t)producer <= 1)) return 0;
    cudaEvent_t e;
    CUA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    cudaError_t err = cudaEventRecord(e, (cudaStream_t)producer);
    if (err == cudaSuccess) err = cudaStreamWaitEvent((cudaStream_t)waiter, e, 0);
    cudaEventDestroy(e);  // released once the wait no longer needs it
    CUA_CHECK(err);
    return 0;
}
