/* module.c -- cuatomic._C: module init and method table. */
#define PY_ARRAY_UNIQUE_SYMBOL cuatomic_ARRAY_API
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include "glue.h"
#include "../cuda/cuatomic_cuda.h" /* cua_cuda_device, for the probe's keys in every build */

#ifndef CUATOMIC_CUDA_ARCHS
#define CUATOMIC_CUDA_ARCHS ""
#endif

static PyObject *build_info(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
#ifdef CUATOMIC_WITH_CUDA
    return Py_BuildValue("{s:O,s:s}", "cuda", Py_True, "archs", CUATOMIC_CUDA_ARCHS);
#else
    return Py_BuildValue("{s:O,s:s}", "cuda", Py_False, "archs", "");
#endif
}

/* The same keys in every build: code that reads backend_info()["cuda"]["name"]
 * must not need to know how cuatomic was built. Without CUDA, the device is
 * an unusable one with every number 0. */
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
    snprintf(d.reason, sizeof d.reason, "cuatomic was built without CUDA");
#endif
    return Py_BuildValue("{s:O,s:s,s:s,s:i,s:(ii),s:i,s:i,s:i,s:i,s:L,s:L}", "usable", d.usable ? Py_True : Py_False,
                         "reason", d.reason, "name", d.name, "device", d.device, "compute_capability", d.cc_major,
                         d.cc_minor, "sm_count", d.sm_count, "cooperative_launch", d.cooperative_launch,
                         "driver_version", d.driver_version, "runtime_version", d.runtime_version, "total_memory",
                         (long long)d.total_memory, "shared_per_block_optin", (long long)d.shared_per_block_optin);
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

static PyMethodDef methods[] = {
    {"build_info", build_info, METH_NOARGS, "what this build contains"},
    {"cuda_probe", cuda_probe, METH_NOARGS, "probe the current CUDA device (makes CUDA calls)"},
    {"cpu_threads", cpu_threads, METH_NOARGS, "threads in the OpenMP team"},
    {"variants", cua_variants, METH_VARARGS, "variants(backend, op) -> [(name, step, summary, flags)]"},
    {"sum", cua_op_sum, METH_VARARGS, NULL},
    {"prod", cua_op_prod, METH_VARARGS, NULL},
    {"event_create", cua_event_create, METH_NOARGS, "a CUDA event handle (int)"},
    {"event_destroy", cua_event_destroy, METH_O, "destroy an event handle"},
    {"event_record", cua_event_record, METH_VARARGS, "event_record(event, stream)"},
    {"event_elapsed", cua_event_elapsed, METH_VARARGS, "event_elapsed(start, stop) -> ms (waits for stop)"},
    {"synchronize", cua_synchronize, METH_NOARGS, "wait for all work on the current device"},
    {"dot", cua_op_dot, METH_VARARGS, NULL},
    {"histogram", cua_op_histogram, METH_VARARGS, NULL},
    {"filter", cua_op_filter, METH_VARARGS, NULL},
    {"counter", cua_op_counter, METH_VARARGS, NULL},
    {"minmax", cua_op_minmax, METH_VARARGS, NULL},
    {"stream_create", cua_stream_create, METH_NOARGS, "a new non-blocking CUDA stream (int handle)"},
    {"stream_destroy", cua_stream_destroy, METH_O, NULL},
    {"stream_synchronize", cua_stream_synchronize, METH_O, NULL},
    {"stream_wait", cua_stream_wait, METH_VARARGS, "stream_wait(waiter, producer): queue a wait, host not blocked"},
    {"pointer_info", cua_pointer_info, METH_O, "pointer_info(ptr) -> (memory type, device, current device)"},
    {"gather", cua_gather, METH_VARARGS, "gather(src, dst, n, itemsize, shape, byte_strides, stream)"},
    {"dlpack_import", cua_dlpack_import, METH_O, "consume a DLPack capsule -> DLPackView"},
    {"dlpack_export", cua_dlpack_export, METH_VARARGS, "a DLPack capsule over memory owned by `owner`"},
    {"cub_sum", cua_cub_sum_py, METH_VARARGS, "cub_sum(ptr, n, dtype, stream): CUB's sum (benchmark peer)"},
    {"cub_histogram", cua_cub_histogram_py, METH_VARARGS,
     "cub_histogram(ptr, n, dtype, nbins, lo, hi, stream): CUB HistogramEven (benchmark peer)"},
    {"cub_select", cua_cub_select_py, METH_VARARGS,
     "cub_select(ptr, n, dtype, value, out_ptr, stream): CUB DeviceSelect::If x >= value -> count"},
    {"_debug_trap", debug_trap, METH_NOARGS, "launch a trapping kernel (kills the CUDA context; tests only)"},
    {"_set_cuda_error", cua_set_cuda_error_class, METH_O, "register cuatomic.CudaError"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "cuatomic._C", "cuatomic's compiled core (internal: use the cuatomic package)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__C(void)
{
    import_array();
    if (PyType_Ready(&CuaDeviceBufferType) < 0 || PyType_Ready(&CuaPinnedBufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    if (cua_interop_ready(m) < 0 || PyModule_AddObjectRef(m, "DeviceBuffer", (PyObject *)&CuaDeviceBufferType) < 0 ||
        PyModule_AddObjectRef(m, "PinnedBuffer", (PyObject *)&CuaPinnedBufferType) < 0 ||
        PyModule_AddIntConstant(m, "BACKEND_CPU", BACKEND_CPU) < 0 ||
        PyModule_AddIntConstant(m, "BACKEND_CUDA", BACKEND_CUDA) < 0 ||
        PyModule_AddIntConstant(m, "F_ORDERED", CUA_F_ORDERED) < 0 ||
        PyModule_AddIntConstant(m, "F_RESIDENT", CUA_F_RESIDENT) < 0 ||
        PyModule_AddIntConstant(m, "F_DEFAULT", CUA_F_DEFAULT) < 0 ||
        PyModule_AddIntConstant(m, "F_WIDE", CUA_F_WIDE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
