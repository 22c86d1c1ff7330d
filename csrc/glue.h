/* glue.h -- declarations shared by the extension's C files. */
#ifndef CUATOMIC_GLUE_H
#define CUATOMIC_GLUE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL cuatomic_ARRAY_API
#include <numpy/arrayobject.h>

#include "../cuda/cuatomic_abi.h"
#include "cpu/cpu.h"
#ifdef CUATOMIC_WITH_CUDA
#include "../cuda/cuatomic_cuda.h"
#endif

enum { BACKEND_CPU = 0, BACKEND_CUDA = 1 };

/* errors.c: turn a backend status into a Python exception (returns NULL). */
PyObject *cua_raise(int status, const cua_launch *cfg);
PyObject *cua_set_cuda_error_class(PyObject *self, PyObject *cls);
/* RuntimeError "built without CUDA" (returns NULL): the body of every
 * CUDA-only entry point in a CPU-only build. */
PyObject *cua_no_cuda(void);
/* The cua_launch.poll of every call: runs Python's signal handlers with the
 * GIL taken back for a moment; nonzero (an exception set) means stop. */
int cua_poll_signals(void);

/* A pointer or handle from a Python int (None: NULL); -1 with an exception. */
static inline int cua_as_ptr(PyObject *obj, void **ptr)
{
    *ptr = obj == Py_None ? NULL : PyLong_AsVoidPtr(obj);
    return PyErr_Occurred() ? -1 : 0;
}

/* Run a backend call without the GIL; return its status as an exception
 * from the enclosing function. */
#define CUA_CALL(expr)                            \
    do {                                          \
        int cua_st_;                              \
        Py_BEGIN_ALLOW_THREADS                    \
        cua_st_ = (expr);                         \
        Py_END_ALLOW_THREADS                      \
        if (cua_st_) return cua_raise(cua_st_, NULL); \
    } while (0)

/* buffer.c: device memory owned by a Python object. */
extern PyTypeObject CuaDeviceBufferType;
extern PyTypeObject CuaPinnedBufferType;
typedef struct {
    PyObject_HEAD
    void *ptr;
    Py_ssize_t nbytes;
    int device; /* the GPU it is on: the current one when it was made */
} CuaDeviceBuffer;
/* A new buffer of nbytes of device memory on the current GPU, or NULL with
 * an exception set: usable on any stream, or (_on, sync 0) allocated in
 * order on `stream`. */
CuaDeviceBuffer *cua_buffer_new(Py_ssize_t nbytes);
CuaDeviceBuffer *cua_buffer_new_on(Py_ssize_t nbytes, void *stream, int sync);

/* The operations, one file per op family (reduce.c: sum, prod, dot;
 * reduce_op.c: reduce; histogram.c: histogram, weighted_histogram; filter.c; counter.c: add_one,
 * mutex_add_one). Arguments by keyword (the names are in each file's
 * kwlist). */
PyObject *cua_op_sum(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_prod(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_dot(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_reduce(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_histogram(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_weighted_histogram(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_histogram_fits(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_filter_fits(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_unravel(PyObject *self, PyObject *args);
/* histogramdd.c */
PyObject *cua_op_histogramdd(PyObject *self, PyObject *args, PyObject *kw);
/* unique.c */
PyObject *cua_op_unique(PyObject *self, PyObject *args, PyObject *kw);
/* segmented.c */
PyObject *cua_op_segmented(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_histogramdd_fits(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_histogramdd_cells(PyObject *self, PyObject *args);
PyObject *cua_count_kept(PyObject *self, PyObject *args);
PyObject *cua_op_minmax(PyObject *self, PyObject *args);
PyObject *cua_op_filter(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_counter(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_at(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_at_fits(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_op_argmin(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_argmin_fits(PyObject *self, PyObject *args, PyObject *kw);
PyObject *cua_argkeys(PyObject *self, PyObject *args);
PyObject *cua_last_launch(PyObject *self, PyObject *noargs);

/* events.c: CUDA events and device synchronization, for cuatomic.Timer. */
PyObject *cua_event_create(PyObject *self, PyObject *noargs);
PyObject *cua_event_destroy(PyObject *self, PyObject *arg);
PyObject *cua_event_record(PyObject *self, PyObject *args);
PyObject *cua_event_elapsed(PyObject *self, PyObject *args);
PyObject *cua_synchronize(PyObject *self, PyObject *noargs);

/* peers.c: CUB on device pointers, for the benchmark. */
PyObject *cua_cub_sum_py(PyObject *self, PyObject *args);
PyObject *cua_cub_reduce_py(PyObject *self, PyObject *args);
PyObject *cua_cub_histogram_py(PyObject *self, PyObject *args);
PyObject *cua_cub_select_py(PyObject *self, PyObject *args);
PyObject *cua_cub_unique_py(PyObject *self, PyObject *args);
PyObject *cua_cub_nonzero_py(PyObject *self, PyObject *args);
PyObject *cua_cub_segmented_py(PyObject *self, PyObject *args);

/* interop.c: streams, pointers, gather, DLPack. */
PyObject *cua_stream_create(PyObject *self, PyObject *noargs);
PyObject *cua_stream_destroy(PyObject *self, PyObject *arg);
PyObject *cua_stream_synchronize(PyObject *self, PyObject *arg);
PyObject *cua_stream_wait(PyObject *self, PyObject *args);
PyObject *cua_pointer_info(PyObject *self, PyObject *arg);
PyObject *cua_devices(PyObject *self, PyObject *noargs);
PyObject *cua_use_device(PyObject *self, PyObject *arg);
PyObject *cua_gather(PyObject *self, PyObject *args);
PyObject *cua_take(PyObject *self, PyObject *args);
PyObject *cua_sample_to_host(PyObject *self, PyObject *args);
PyObject *cua_memory_info(PyObject *self, PyObject *arg);
PyObject *cua_free_memory(PyObject *self, PyObject *arg);
PyObject *cua_host_cache(PyObject *self, PyObject *arg);
PyObject *cua_dlpack_import(PyObject *self, PyObject *capsule);
PyObject *cua_dlpack_export(PyObject *self, PyObject *args);
int cua_interop_ready(PyObject *module);

#endif
