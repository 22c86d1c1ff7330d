// cub.cu -- CUB (CCCL, shipped with the CUDA toolkit) as the yardstick.
//
// Not a rung: the CPU backend has no counterpart, and the ladders hold
// cuatomic's own kernels. These entry points let the benchmark time CUB's
// device-wide primitives on the same data, in the same run, the same way a
// cuatomic call is timed (device input, the result on the host or in a
// device buffer, the stream synchronized):
//   sum        DeviceReduce::TransformReduce: int32 -> int64, float32 -> float32, float64
//   reduce     DeviceReduce::Min / Max, and Reduce with &, |, ^: int32, float32 (min/max)
//   histogram  DeviceHistogram::HistogramEven: uint8/int32/float32 samples
//   filter     DeviceSelect::If with x >= value: int32, float32
//   nonzero    DeviceSelect::Flagged of the indices 0..n-1 with x as the
//              flags (PyTorch's nonzero does the same): int32
//   unique     DeviceRadixSort::SortKeys then DeviceRunLengthEncode::Encode
//              (the distinct values, sorted, and their counts): int32,
//              int64, float32 (-0.0 and NaN as the sort leaves them)
//   segmented  DeviceSegmentedReduce::Sum / Min / Max of rows of m
//              contiguous elements (a reduction along the last axis; CUB
//              has no strided one): float32, into a device buffer
// Temporary storage comes from the stream-ordered pool, as cuatomic's does.
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

#include "common.cuh"

namespace {

template <class To>
struct Cast {
    template <class From>
    __host__ __device__ To operator()(From v) const
    {
        return (To)v;
    }
};

struct Plus {
    template <class T>
    __host__ __device__ T operator()(T a, T b) const
    {
        return a + b;
    }
};

template <char Op>
struct Bitwise {
    template <class T>
    __host__ __device__ T operator()(T a, T b) const
    {
        return Op == '&' ? (a & b) : Op == '|' ? (a | b) : (a ^ b);
    }
};

template <class T>
struct AtLeast {
    T value;
    __host__ __device__ bool operator()(const T &x) const { return x >= value; }
};

// Run a CUB call twice: once for the temp-storage size, once for real.
template <class F>
int with_temp(cudaStream_t s, F call)
{
    size_t bytes = 0;
    CUA_CHECK(call(nullptr, bytes));
    cua_scratch temp;
    CUA_CHECK(temp.get(bytes, s));
    CUA_CHECK(call(temp.ptr, bytes));
    return 0;
}

}  // namespace

extern "C" int cua_cub_sum(const void *x, int64_t n, int dtype, void *result, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    cua_scratch out;
    CUA_CHECK(out.get(8, s));
    int st;
    if (dtype == CUA_INT32) {
        long long *o = (long long *)out.ptr;
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceReduce::TransformReduce(t, b, (const int32_t *)x, o, n, Plus(), Cast<long long>(),
                                                      0LL, s);
        });
    } else if (dtype == CUA_FLOAT32) {
        float *o = (float *)out.ptr;
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceReduce::TransformReduce(t, b, (const float *)x, o, n, Plus(), Cast<float>(), 0.0f, s);
        });
    } else if (dtype == CUA_FLOAT64) {
        double *o = (double *)out.ptr;
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceReduce::Reduce(t, b, (const double *)x, o, n, Plus(), 0.0, s);
        });
    } else {
        return CUA_EINVAL;
    }
    if (st) return st;
    CUA_CHECK(cudaMemcpyAsync(result, out.ptr, 8, cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

// op: 'm' min, 'M' max, '&', '|', '^' (int32 only); the result's bytes to *result.
template <class T>
static int cub_reduce_typed(const T *x, int64_t n, char op, void *result, cudaStream_t s)
{
    cua_scratch out;
    CUA_CHECK(out.get(sizeof(T), s));
    T *o = (T *)out.ptr;
    int st;
    if (op == 'm')
        st = with_temp(s, [&](void *t, size_t &b) { return cub::DeviceReduce::Min(t, b, x, o, n, s); });
    else if (op == 'M')
        st = with_temp(s, [&](void *t, size_t &b) { return cub::DeviceReduce::Max(t, b, x, o, n, s); });
    else if constexpr (std::is_integral_v<T>) {
        if (op == '&')
            st = with_temp(s, [&](void *t, size_t &b) { return cub::DeviceReduce::Reduce(t, b, x, o, n, Bitwise<'&'>(), (T)~(T)0, s); });
        else if (op == '|')
            st = with_temp(s, [&](void *t, size_t &b) { return cub::DeviceReduce::Reduce(t, b, x, o, n, Bitwise<'|'>(), (T)0, s); });
        else if (op == '^')
            st = with_temp(s, [&](void *t, size_t &b) { return cub::DeviceReduce::Reduce(t, b, x, o, n, Bitwise<'^'>(), (T)0, s); });
        else
            return CUA_EINVAL;
    } else {
        return CUA_EINVAL;
    }
    if (st) return st;
    CUA_CHECK(cudaMemcpyAsync(result, out.ptr, sizeof(T), cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int cua_cub_reduce(const void *x, int64_t n, int dtype, char op, void *result, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (dtype == CUA_INT32) return cub_reduce_typed((const int32_t *)x, n, op, result, s);
    if (dtype == CUA_FLOAT32) return cub_reduce_typed((const float *)x, n, op, result, s);
    return CUA_EINVAL;
}

extern "C" int cua_cub_histogram(const void *x, int64_t n, int dtype, int nbins, double lo, double hi,
                                 int64_t *counts, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    cua_scratch dev;
    CUA_CHECK(dev.get((size_t)nbins * sizeof(unsigned), s));
    unsigned *d = (unsigned *)dev.ptr;
    int st;
    if (dtype == CUA_UINT8) {
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceHistogram::HistogramEven(t, b, (const uint8_t *)x, d, nbins + 1, (int)lo, (int)hi, n,
                                                       s);
        });
    } else if (dtype == CUA_INT32) {
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceHistogram::HistogramEven(t, b, (const int32_t *)x, d, nbins + 1, (int)lo, (int)hi, n,
                                                       s);
        });
    } else if (dtype == CUA_FLOAT32) {
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceHistogram::HistogramEven(t, b, (const float *)x, d, nbins + 1, (float)lo, (float)hi, n,
                                                       s);
        });
    } else {
        return CUA_EINVAL;
    }
    if (st) return st;
    unsigned *host = (unsigned *)malloc((size_t)nbins * sizeof(unsigned));
    if (!host) return CUA_ENOMEM;
    cudaError_t e = cudaMemcpyAsync(host, d, (size_t)nbins * sizeof(unsigned), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    for (int i = 0; e == cudaSuccess && i < nbins; i++) counts[i] = host[i];
    free(host);
    CUA_CHECK(e);
    return 0;
}

extern "C" int cua_cub_select_at_least(const void *x, int64_t n, int dtype, double value, void *out, int64_t *count,
                                       void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    cua_scratch num;
    CUA_CHECK(num.get(sizeof(long long), s));
    long long *d_num = (long long *)num.ptr;
    int st;
    if (dtype == CUA_INT32) {
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceSelect::If(t, b, (const int32_t *)x, (int32_t *)out, d_num, n,
                                         AtLeast<int32_t>{(int32_t)value}, s);
        });
    } else if (dtype == CUA_FLOAT32) {
        st = with_temp(s, [&](void *t, size_t &b) {
            return cub::DeviceSelect::If(t, b, (const float *)x, (float *)out, d_num, n, AtLeast<float>{(float)value},
                                         s);
        });
    } else {
        return CUA_EINVAL;
    }
    if (st) return st;
    long long host = 0;
    CUA_CHECK(cudaMemcpyAsync(&host, d_num, sizeof host, cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    *count = host;
    return 0;
}

extern "C" int cua_cub_nonzero(const void *x, int64_t n, int dtype, int64_t *out, int64_t *count, void *stream)
{
    if (dtype != CUA_INT32) return CUA_EINVAL;
    cudaStream_t s = (cudaStream_t)stream;
    cua_scratch num;
    CUA_CHECK(num.get(sizeof(long long), s));
    long long *d_num = (long long *)num.ptr;
    thrust::counting_iterator<long long> indices(0);
    int st = with_temp(s, [&](void *t, size_t &b) {
        return cub::DeviceSelect::Flagged(t, b, indices, (const int32_t *)x, (long long *)out, d_num, n, s);
    });
    if (st) return st;
    long long host = 0;
    CUA_CHECK(cudaMemcpyAsync(&host, d_num, sizeof host, cudaMemcpyDeviceToHost, s));
    CUA_CHECK(cudaStreamSynchronize(s));
    *count = host;
    return 0;
}

namespace {

// Row r's first element: r * m (the segments' offsets, computed, not stored).
struct RowStart {
    int64_t m;
    __host__ __device__ int64_t operator()(int64_t r) const { return r * m; }
};

}  // namespace

extern "C" int cua_cub_segmented(const void *x, int64_t rows, int64_t m, int dtype, char op, void *out, void *stream)
{
    if (dtype != CUA_FLOAT32 || (op != '+' && op != 'm' && op != 'M')) return CUA_EINVAL;
    cudaStream_t s = (cudaStream_t)stream;
    const float *in = (const float *)x;
    float *o = (float *)out;
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStart{m});
    auto ends = starts + 1;
    int st = with_temp(s, [&](void *t, size_t &b) {
        if (op == '+') return cub::DeviceSegmentedReduce::Sum(t, b, in, o, rows, starts, ends, s);
        if (op == 'm') return cub::DeviceSegmentedReduce::Min(t, b, in, o, rows, starts, ends, s);
        return cub::DeviceSegmentedReduce::Max(t, b, in, o, rows, starts, ends, s);
    });
    if (st) return st;
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

extern "C" int cua_cub_unique(const void *x, int64_t n, int dtype, void *values, int64_t *counts, int64_t *count,
                              void *stream)
{
    if (n > INT32_MAX) return CUA_EINVAL;  // RunLengthEncode::Encode counts items in an int
    cudaStream_t s = (cudaStream_t)stream;
    auto run = [&](auto t) -> int {
        using T = decltype(t);
        cua_scratch sorted, num;
        CUA_CHECK(sorted.get((size_t)(n ? n : 1) * sizeof(T), s));
        CUA_CHECK(num.get(sizeof(long long), s));
        int st = with_temp(s, [&](void *tmp, size_t &b) {
            return cub::DeviceRadixSort::SortKeys(tmp, b, (const T *)x, (T *)sorted.ptr, n, 0, 8 * (int)sizeof(T), s);
        });
        if (st) return st;
        st = with_temp(s, [&](void *tmp, size_t &b) {
            return cub::DeviceRunLengthEncode::Encode(tmp, b, (const T *)sorted.ptr, (T *)values, (long long *)counts,
                                                      (long long *)num.ptr, n, s);
        });
        if (st) return st;
        long long host = 0;
        CUA_CHECK(cudaMemcpyAsync(&host, num.ptr, sizeof host, cudaMemcpyDeviceToHost, s));
        CUA_CHECK(cudaStreamSynchronize(s));
        *count = host;
        return 0;
    };
    if (dtype == CUA_INT32) return run(int32_t());
    if (dtype == CUA_INT64) return run(int64_t());
    if (dtype == CUA_FLOAT32) return run(float());
    return CUA_EINVAL;
}
