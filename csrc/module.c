/* module.c -- cuatomic._C: module init and method table. */
#define PY_ARRAY_UNIQUE_SYMBOL cuatomic_ARRAY_API
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include "call.h"
#include "../cuda/cuatomic_cuda.h" /* cua_cuda_device, for the probe's keys in every build */

#ifndef CUATOMIC_CUDA_ARCHS
#define CUATOMIC_CUDA_ARCHS ""
#endif
/* The compute capability of the PTX in the build ("75" alone where it was
 * built without a GPU: no machine code, the driver compiles it). */
#ifndef CUATOMIC_CUDA_PTX
#define CUATOMIC_CUDA_PTX ""
#endif
/* setup.py says why a build has no CUDA: CUATOMIC_CUDA=0, or no nvcc. */
#ifndef CUATOMIC_NO_CUDA_WHY
#define CUATOMIC_NO_CUDA_WHY "its build did not say why"
#endif

static PyObject *build_info(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
#ifdef CUATOMIC_WITH_CUDA
    return Py_BuildValue("{s:O,s:s,s:s}", "cuda", Py_True, "archs", CUATOMIC_CUDA_ARCHS, "ptx", CUATOMIC_CUDA_PTX);
#else
    return Py_BuildValue("{s:O,s:s,s:s}", "cuda", Py_False, "archs", "", "ptx", "");
#endif
}

/* The same keys in every build: code that reads backend_info()["cuda"]["name"]
 * must not need to know how cuatomic was built. Without CUDA, the device is
 * an unusable one with every number 0. */
static PyObject *device_dict(const cua_cuda_device *d)
{
    /* peak bandwidth: the clock (kHz) times two transfers a cycle times the bus's bytes */
    const double gbps = 2.0 * d->memory_clock_khz * 1e3 * (d->memory_bus_bits / 8) / 1e9;
    return Py_BuildValue("{s:O,s:s,s:s,s:i,s:(ii),s:i,s:i,s:i,s:i,s:L,s:L,s:L,s:d}", "usable",
                         d->usable ? Py_True : Py_False, "reason", d->reason, "name", d->name, "device", d->device,
                         "compute_capability", d->cc_major, d->cc_minor, "sm_count", d->sm_count,
                         "cooperative_launch", d->cooperative_launch, "driver_version", d->driver_version,
                         "runtime_version", d->runtime_version, "total_memory", (long long)d->total_memory,
                         "shared_per_block_optin", (long long)d->shared_per_block_optin, "l2_bytes",
                         (long long)d->l2_bytes, "memory_gbps", gbps);
}

static PyObject *cuda_probe(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    cua_cuda_device d;
    memset(&d, 0, sizeof d);
#ifdef CUATOMIC_WITH_CUDA
    Py_BEGIN_ALLOW_THREADS
    cua_cuda_probe(&d);
    Py_END_ALLOW_THREADS
#else
    snprintf(d.reason, sizeof d.reason, "cuatomic was built without CUDA: %s", CUATOMIC_NO_CUDA_WHY);
#endif
    return device_dict(&d);
}

/* device_facts(ordinal) -> dict: what GPU `ordinal` is (name, compute
 * capability, SMs, memory, L2, peak memory bandwidth), asked without making
 * it current or launching anything: the facts auto's rules are matched by.
 * The probe's keys but `usable` and `reason` (which only a launch tells). */
static PyObject *device_facts(PyObject *self, PyObject *arg)
{
    (void)self;
    long ordinal = PyLong_AsLong(arg);
    if (ordinal == -1 && PyErr_Occurred()) return NULL;
    if (ordinal < 0 || ordinal > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "no GPU %ld: a device ordinal is 0 or more", ordinal);
        return NULL;
    }
#ifdef CUATOMIC_WITH_CUDA
    cua_cuda_device d;
    CUA_CALL(cua_cuda_device_facts((int)ordinal, &d));
    PyObject *dict = device_dict(&d);
    if (dict && (PyDict_DelItemString(dict, "usable") || PyDict_DelItemString(dict, "reason"))) Py_CLEAR(dict);
    return dict;
#else
    return cua_no_cuda();
#endif
}

static PyObject *cpu_threads(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyLong_FromLong(cua_cpu_threads());
}

/* A kernel that traps, for the tests of sticky-error reporting: it leaves
 * the process's CUDA context unusable, so only a throw-away process calls it. */
static PyObject *debug_trap(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
#ifdef CUATOMIC_WITH_CUDA
    CUA_CALL(cua_cuda_debug_trap(NULL));
    Py_RETURN_NONE;
#else
    return cua_no_cuda();
#endif
}

/* variants(backend, op) -> [(name, step, summary, flags)]: the ladder's
 * rows in table order (which is step order: a test checks). Python resolves
 * a method name to its index in this list and passes the index back. */
static PyObject *variants(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, op;
    if (!PyArg_ParseTuple(args, "ii", &backend, &op)) return NULL;
    const cua_ladder *ladder = cua_ladder_of(backend, op);
    PyObject *list = PyList_New(0);
    for (int i = 0; list && ladder && i < ladder->count; i++) {
        const cua_rung *r = cua_ladder_rung(ladder, i);
        PyObject *row = Py_BuildValue("(sisI)", r->name, r->step, r->summary, r->flags);
        if (!row || PyList_Append(list, row) < 0) Py_CLEAR(list);
        Py_XDECREF(row);
    }
    return list;
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define KWFN(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef methods[] = {
    {"build_info", build_info, METH_NOARGS, "build_info() -> {'cuda': bool, 'archs': str}: what this build contains"},
    {"cuda_probe", cuda_probe, METH_NOARGS,
     "cuda_probe() -> dict: the current CUDA device (usable, reason, name, ...); makes CUDA calls"},
    {"device_facts", device_facts, METH_O,
     "device_facts(ordinal) -> dict: GPU ordinal's name, compute capability, SMs, L2, memory_gbps, ..."},
    {"cpu_threads", cpu_threads, METH_NOARGS, "cpu_threads() -> int: threads in the OpenMP team"},
    {"variants", variants, METH_VARARGS,
     "variants(backend, op) -> [(name, step, summary, flags)]: one op's ladder, in table (= step) order"},
    {"sum", KWFN(cua_op_sum), KW,
     "sum(backend, rung, x, n, dtype, acc, blocks, threads, stream, out_type) -> NumPy scalar\n\n"
     "Run rung `rung` (an index into variants(backend, OPS.index('sum'))) on n elements of dtype id `dtype` at "
     "x (an ndarray, or a device pointer as int), accumulating in ACC_* `acc`; the result as a scalar of NumPy "
     "type number out_type. blocks/threads -1: the rung's defaults."},
    {"prod", KWFN(cua_op_prod), KW,
     "prod(backend, rung, x, n, dtype, acc, blocks, threads, stream, out_type) -> NumPy scalar; as sum"},
    {"dot", KWFN(cua_op_dot), KW,
     "dot(backend, rung, a, b, n, dtype, acc, blocks, threads, stream, out_type) -> NumPy scalar; as sum, "
     "two inputs of one dtype"},
    {"reduce", KWFN(cua_op_reduce), KW,
     "reduce(backend, rung, x, n, dtype, op, blocks, threads, stream, out_type) -> NumPy scalar\n\n"
     "Run rung `rung` (an index into variants(backend, OPS.index('reduce'))) on n elements of dtype id `dtype` at "
     "x (an ndarray, or a device pointer as int), folding them with ufunc id `op` (an index into REDUCE_OPS); the "
     "result as a scalar of NumPy type number out_type. The kernels compute in the type cua_reduce_kind(dtype, "
     "op) gives (cuatomic_abi.h): int64 or uint64 (integers, wrapping), or double. blocks/threads -1: the rung's "
     "defaults."},
    {"histogram", KWFN(cua_op_histogram), KW,
     "histogram(backend, rung, x, n, dtype, bins, blocks, threads, device_out, stream) -> int64 counts (ndarray, "
     "or DeviceBuffer when device_out)\n\n"
     "bins: a tuple (edges, uniform, inv_width, integer, ilo, iwidth), cuatomic._bins.KernelBins: edges a "
     "float32/float64 ndarray (int64/uint64 for that data); uniform/inv_width: evenly spaced edges; "
     "integer/ilo/iwidth: integer data in integer bins lo + k*width (see cua_bins in cuatomic_abi.h)."},
    {"weighted_histogram", KWFN(cua_op_weighted_histogram), KW,
     "weighted_histogram(backend, rung, x, n, dtype, w, wdtype, bins, blocks, threads, device_out, stream) -> the "
     "weights' sums per bin, float64 or int64 (ndarray, or DeviceBuffer when device_out)\n\n"
     "As histogram, with n weights w of dtype id wdtype (FLOAT64, or INT64 summed with wrap-around) where x is; "
     "rung indexes variants(backend, OPS.index('weighted_histogram'))."},
    {"histogram_fits", KWFN(cua_histogram_fits), KW,
     "histogram_fits(backend, rung, bins, dtype, blocks, threads, op=OPS.index('histogram')) -> None, or why "
     "the rung of op's ladder (histogram or weighted_histogram) cannot count dtype data in these bins (a "
     "KernelBins tuple) with that launch configuration on the current device"},
    {"filter_fits", KWFN(cua_filter_fits), KW,
     "filter_fits(backend, rung, x, dtype, blocks, threads) -> None, or why the filter rung cannot filter dtype "
     "data at address x (0: memory the call allocates) with that launch configuration on the current device"},
    {"filter", KWFN(cua_op_filter), KW,
     "filter(backend, rung, x, n, dtype, negate, lo, hi, blocks, threads, device_out, stream, indices=False, "
     "capacity=-1) -> (out, count)\n\n"
     "Keeps x iff (lo <= x <= hi) != negate; lo/hi are 8 bytes each, the bound in the data's type. With indices, "
     "out holds the kept elements' int64 indices instead of the elements. capacity: the outputs to make, at least "
     "the count (count_kept's, on the same data and stream); -1: n."},
    {"at", KWFN(cua_op_at), KW,
     "at(backend, rung, a, m, row, indices, idx_dtype, n, values, nvals, vk, vj, dtype, op, negate, blocks, "
     "threads, stream) -> None\n\n"
     "np.<op>.at in place: element indices[k] * row + j of a (m rows of row elements) combined with "
     "values[k * vk + j * vj] (of nvals elements; negated when negate) by the reduce op id op. IndexError, "
     "before anything is written, for an index outside [-m, m)."},
    {"at_fits", KWFN(cua_at_fits), KW,
     "at_fits(backend, rung, m, row, n, dtype, op, negate, blocks, threads) -> None, or why the at rung cannot "
     "take this call with that launch configuration on the current device"},
    {"argmin", KWFN(cua_op_argmin), KW,
     "argmin(backend, rung, x, n, dtype, max, blocks, threads, stream) -> int\n\n"
     "The index of the first smallest (max: largest) of n elements of dtype id `dtype` at x (an ndarray, or a "
     "device pointer as int), the first NaN before every number; ValueError for n == 0."},
    {"segmented", KWFN(cua_op_segmented), KW,
     "segmented(backend, rung, x, outer, m, inner, dtype, op, blocks, threads, device_out, stream, finish_dtype=-1, "
     "finish_kind=-1, divisor=-1.0, dst=None) -> the kind values (8 bytes each) of the outer * inner outputs, each folding the m "
     "elements of x seen as (outer, m, inner) with reduce op id op; with finish_dtype, NumPy's result: written "
     "at device address dst (returns None), or without dst into a DeviceBuffer the call allocates and returns"},
    {"histogramdd", KWFN(cua_op_histogramdd), KW,
     "histogramdd(backend, rung, cols, strides, n, dtype, bins, blocks, threads, device_out, stream) -> float64 "
     "counts of every cell (C order)\n\n"
     "Point i has coordinate d at cols[d] + i * strides[d] elements (memory of the backend); bins: one KernelBins "
     "per dimension, one edge type for all."},
    {"histogramdd_fits", KWFN(cua_histogramdd_fits), KW,
     "histogramdd_fits(backend, rung, bins, dtype, blocks, threads) -> None, or why the rung cannot count these "
     "cells on the current device"},
    {"histogramdd_cells", cua_histogramdd_cells, METH_VARARGS,
     "histogramdd_cells(backend, cols, strides, n, dtype, bins, out, stream): every point's cell into the n int64 "
     "at out (the number of cells for a point that is dropped)"},
    {"unique", KWFN(cua_op_unique), KW,
     "unique(backend, rung, x, n, dtype, want, blocks, threads, device_out, stream) -> (values, index, counts, "
     "inverse, builds)\n\n"
     "np.unique of n >= 1 elements of dtype id `dtype` at x: want holds UNIQUE_FIRST, UNIQUE_INVERSE and "
     "UNIQUE_SORTED; index and inverse are None unless wanted; builds: the tables the rung built (more than one "
     "where a table filled and grew). ndarrays, or DeviceBuffers with device_out."},
    {"argmin_fits", KWFN(cua_argmin_fits), KW,
     "argmin_fits(backend, rung, n, dtype) -> None, or why the argmin rung cannot take n elements of dtype"},
    {"counter", KWFN(cua_op_counter), KW,
     "counter(backend, op, rung, blocks, threads, stream) -> int: the count after every thread added one "
     "(op: add_one or mutex_add_one)"},
    {"last_launch", cua_last_launch, METH_NOARGS,
     "last_launch() -> dict or None: what the last successful call on this thread launched (backend, op, "
     "method, blocks, threads, chunks)"},
    {"minmax", cua_op_minmax, METH_VARARGS,
     "minmax(ptr, n, dtype, stream) -> (min bytes, max bytes, has_nan) of a non-empty device array"},
    {"event_create", cua_event_create, METH_NOARGS, "event_create() -> int: a CUDA event handle"},
    {"event_destroy", cua_event_destroy, METH_O, "event_destroy(event): destroy an event handle"},
    {"event_record", cua_event_record, METH_VARARGS, "event_record(event, stream): record the event on the stream"},
    {"event_elapsed", cua_event_elapsed, METH_VARARGS, "event_elapsed(start, stop) -> ms (waits for stop)"},
    {"synchronize", cua_synchronize, METH_NOARGS, "synchronize(): wait for all work on the current device"},
    {"stream_create", cua_stream_create, METH_NOARGS, "stream_create() -> int: a new non-blocking CUDA stream"},
    {"stream_destroy", cua_stream_destroy, METH_O, "stream_destroy(stream): destroy a stream from stream_create"},
    {"stream_synchronize", cua_stream_synchronize, METH_O, "stream_synchronize(stream): wait for its work"},
    {"stream_wait", cua_stream_wait, METH_VARARGS, "stream_wait(waiter, producer): queue a wait, host not blocked"},
    {"pointer_info", cua_pointer_info, METH_O, "pointer_info(ptr) -> (memory type, device, current device)"},
    {"devices", cua_devices, METH_NOARGS, "devices() -> (the number of GPUs the process sees, the current one)"},
    {"use_device", cua_use_device, METH_O,
     "use_device(device) -> the GPU that was current: make `device` current on this thread"},
    {"memory_info", cua_memory_info, METH_O,
     "memory_info(device) -> (in_use, cached, limit, pinned): bytes of cuatomic's pool on the GPU, and of its "
     "page-locked staging buffers"},
    {"free_memory", cua_free_memory, METH_O,
     "free_memory(device): give back what cuatomic's pool on the GPU caches, and the staging buffers"},
    {"host_cache", cua_host_cache, METH_O,
     "host_cache(release) -> (cached, limit): bytes of CPU scratch kept for the next call, and their limit; "
     "release: give them back first"},
    {"gather", cua_gather, METH_VARARGS, "gather(src, dst, n, itemsize, shape, byte_strides, stream)"},
    {"argkeys", cua_argkeys, METH_VARARGS,
     "argkeys(backend, x, outer, m, inner, dtype, max, mode, best, out, stream): argmin's keys as 8-byte words for "
     "the segmented minimum (mode ARGKEYS_PACKED, ARGKEYS_KEY or ARGKEYS_MATCH)"},
    {"unravel", cua_unravel, METH_VARARGS,
     "unravel(backend, flat, k, shape, outs, stride, stream): the k flat int64 indices at flat as coordinates into "
     "shape, coordinate d of index j at outs[d] + j * stride elements"},
    {"count_kept", cua_count_kept, METH_VARARGS,
     "count_kept(x, n, dtype, negate, lo, hi, stream) -> how many of the n device elements at x pass the filter's "
     "interval test"},
    {"take", cua_take, METH_VARARGS,
     "take(src, dst, itemsize, outer, m, inner, idx, k, stream): np.take along the middle axis of src seen as "
     "(outer, m, inner), for k int64 indices at idx already in [0, m)"},
    {"sample_to_host", cua_sample_to_host, METH_VARARGS,
     "sample_to_host(src, out, pitch, stream): out's size elements, pitch bytes apart from device src, on the stream"},
    {"dlpack_import", cua_dlpack_import, METH_O, "dlpack_import(capsule) -> DLPackView: consume a DLPack capsule"},
    {"dlpack_export", cua_dlpack_export, METH_VARARGS,
     "dlpack_export(owner, ptr, shape, (code, bits), device_type, device_id, versioned) -> capsule: a DLPack "
     "capsule ('dltensor_versioned' or 'dltensor') over row-major memory at ptr, holding a reference to owner"},
    {"cub_sum", cua_cub_sum_py, METH_VARARGS, "cub_sum(ptr, n, dtype, stream): CUB's sum (benchmark peer)"},
    {"cub_reduce", cua_cub_reduce_py, METH_VARARGS,
     "cub_reduce(ptr, n, dtype, op, stream): CUB's min ('m'), max ('M'), and '&', '|', '^' of int32/float32 "
     "(benchmark peer)"},
    {"cub_histogram", cua_cub_histogram_py, METH_VARARGS,
     "cub_histogram(ptr, n, dtype, nbins, lo, hi, stream): CUB HistogramEven (benchmark peer)"},
    {"cub_unique", cua_cub_unique_py, METH_VARARGS,
     "cub_unique(ptr, n, dtype, values_ptr, counts_ptr, stream): CUB DeviceRadixSort::SortKeys + "
     "DeviceRunLengthEncode::Encode (int32, int64, float32) -> the number of distinct values"},
    {"cub_select", cua_cub_select_py, METH_VARARGS,
     "cub_select(ptr, n, dtype, value, out_ptr, stream): CUB DeviceSelect::If x >= value -> count"},
    {"cub_segmented", cua_cub_segmented_py, METH_VARARGS,
     "cub_segmented(ptr, rows, m, dtype, op, out_ptr, stream): CUB DeviceSegmentedReduce of float32 rows, op one of "
     "'+', 'm', 'M' (benchmark peer)"},
    {"cub_nonzero", cua_cub_nonzero_py, METH_VARARGS,
     "cub_nonzero(ptr, n, dtype, out_ptr, stream): CUB DeviceSelect::Flagged of the indices, x the flags -> count"},
    {"_debug_trap", debug_trap, METH_NOARGS, "launch a trapping kernel (kills the CUDA context; tests only)"},
    {"_set_cuda_error", cua_set_cuda_error_class, METH_O,
     "_set_cuda_error(cls): the exception class CUDA errors are raised as (cuatomic.CudaError, at import)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "cuatomic._C", "cuatomic's compiled core (internal: use the cuatomic package)", -1,
    methods,
};

/* Every id and flag the Python layer passes or reads, from the C enums
 * (Python keeps no copy): OPS, DTYPES and REDUCE_OPS are tuples of names
 * in id order. */
#define CUA_OP_NAME_(p, id, name, row) #name,
#define CUA_DTYPE_NAME_(id, name, ...) name,
#define CUA_REDUCE_NAME_(id, name) name,

/* m.<attr> = a tuple of the n names. */
static int add_names(PyObject *m, const char *attr, const char *const *names, int n)
{
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; tuple && i < n; i++) PyTuple_SET_ITEM(tuple, i, PyUnicode_FromString(names[i]));
    const int bad = PyErr_Occurred() || !tuple || PyModule_AddObjectRef(m, attr, tuple) < 0;
    Py_XDECREF(tuple);
    return bad ? -1 : 0;
}

static int add_ids(PyObject *m)
{
    static const char *ops[] = {CUA_OPS(CUA_OP_NAME_, ~)};
    static const char *dtypes[] = {CUA_DTYPES(CUA_DTYPE_NAME_)};
    static const char *reduce_ops[] = {CUA_REDUCE_OPS(CUA_REDUCE_NAME_)};
    if (add_names(m, "OPS", ops, CUA_NOPS) < 0 || add_names(m, "DTYPES", dtypes, CUA_NDTYPES) < 0 ||
        add_names(m, "REDUCE_OPS", reduce_ops, CUA_NREDUCE_OPS) < 0)
        return -1;
    const struct {
        const char *name;
        long value;
    } ints[] = {
        {"BACKEND_CPU", BACKEND_CPU},       {"BACKEND_CUDA", BACKEND_CUDA},
        {"ACC_INT64", CUA_ACC_INT64},       {"ACC_FLOAT32", CUA_ACC_FLOAT32},
        {"ACC_FLOAT64", CUA_ACC_FLOAT64},   {"F_ORDERED", CUA_F_ORDERED},
        {"F_RESIDENT", CUA_F_RESIDENT},     {"F_DETERMINISTIC", CUA_F_DETERMINISTIC},
        {"F_WIDE", CUA_F_WIDE},             {"F_RACY", CUA_F_RACY},
        {"F_EXACT", CUA_F_EXACT},           {"F_ARRIVAL", CUA_F_ARRIVAL},
        {"XACC_WORDS", CUA_XACC_WORDS},     {"XACC_E0", CUA_XACC_E0},
        {"XACC_NAN", CUA_XACC_NAN},         {"XACC_PINF", CUA_XACC_PINF},
        {"XACC_NINF", CUA_XACC_NINF},       {"XACC_ANY", CUA_XACC_ANY},
        {"XACC_NOT_NEGZERO", CUA_XACC_NOT_NEGZERO},
        {"MAX_BLOCKS", (long)CUA_MAX_BLOCKS},
        {"MAX_THREADS", CUA_MAX_THREADS},   {"CPU_GRAIN", (long)CUA_CPU_GRAIN},
        {"CPU_MIN_SHARE", CUA_CPU_MIN_SHARE},
        {"ARGKEYS_PACKED", CUA_ARGKEYS_PACKED}, {"ARGKEYS_KEY", CUA_ARGKEYS_KEY},
        {"ARGKEYS_MATCH", CUA_ARGKEYS_MATCH},
        {"UNIQUE_FIRST", CUA_UNIQUE_FIRST}, {"UNIQUE_INVERSE", CUA_UNIQUE_INVERSE},
        {"UNIQUE_SORTED", CUA_UNIQUE_SORTED},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (PyModule_AddIntConstant(m, ints[i].name, ints[i].value) < 0) return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__C(void)
{
    import_array();
    if (PyType_Ready(&CuaDeviceBufferType) < 0 || PyType_Ready(&CuaPinnedBufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    if (cua_interop_ready(m) < 0 || PyModule_AddObjectRef(m, "DeviceBuffer", (PyObject *)&CuaDeviceBufferType) < 0 ||
        PyModule_AddObjectRef(m, "PinnedBuffer", (PyObject *)&CuaPinnedBufferType) < 0 || add_ids(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
