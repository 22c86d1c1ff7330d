/* buffer.c -- DeviceBuffer: device memory whose lifetime is a Python
 * object's. cuatomic.DeviceArray wraps one with a shape and a dtype. */
#include "glue.h"
#include "pipeline.h"

#include <structmember.h>

#ifdef CUATOMIC_WITH_CUDA

/* Device memory from the stream-ordered pool, allocated in order on
 * `stream`. With sync, the allocation is complete before this returns, so
 * any stream may use the memory; an op's output is allocated on the op's
 * own stream instead, which orders its kernel after the allocation. The pool
 * keeps freed memory, so a large output costs no cudaMalloc per call. */
CuaDeviceBuffer *cua_buffer_new_on(Py_ssize_t nbytes, void *stream, int sync)
{
    CuaDeviceBuffer *self = PyObject_New(CuaDeviceBuffer, &CuaDeviceBufferType);
    if (!self) return NULL;
    self->ptr = NULL;
    self->nbytes = nbytes;
    self->device = -1;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_current_device(&self->device);
    if (!st) st = cua_cuda_malloc_async(&self->ptr, (size_t)nbytes, stream);
    if (!st && sync) st = cua_cuda_stream_synchronize(stream);
    if (st && self->ptr) cua_cuda_free_async(self->ptr, stream);
    Py_END_ALLOW_THREADS
    if (st) {
        self->ptr = NULL;
        Py_DECREF(self);
        return (CuaDeviceBuffer *)cua_raise(st, NULL);
    }
    return self;
}

CuaDeviceBuffer *cua_buffer_new(Py_ssize_t nbytes) { return cua_buffer_new_on(nbytes, NULL, 1); }

static PyObject *buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)type;
    static char *kwlist[] = {"nbytes", NULL};
    Py_ssize_t nbytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", kwlist, &nbytes)) return NULL;
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "nbytes must be >= 0");
        return NULL;
    }
    return (PyObject *)cua_buffer_new(nbytes);
}

static void buffer_dealloc(CuaDeviceBuffer *self)
{
    /* Back to its GPU's pool in the order of that GPU's default stream (and
     * the blocking streams it waits for): work on a non-blocking stream that
     * still reads the buffer must have finished before the last reference
     * goes, as with CuPy's pool. Errors at shutdown are harmless. A free
     * that leaves the pool caching past its limit settles it (memory.cu:
     * the GPU is synchronized): without the GIL, so that a host callback
     * queued on the GPU that needs it can run. */
    int previous, over = 0;
    if (self->ptr && !cua_cuda_use_device(self->device, &previous)) {
        cua_cuda_free_queued(self->ptr, NULL, &over);
        if (over) {
            Py_BEGIN_ALLOW_THREADS
            cua_cuda_pool_settle();
            Py_END_ALLOW_THREADS
        }
        cua_cuda_use_device(previous, NULL);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A copy between the buffer and other memory, run with the buffer's GPU
 * current (its default stream, whichever GPU the caller has current). */
static int copy_on_device(CuaDeviceBuffer *self, int (*copy)(void *, const void *, size_t, void *), void *dst,
                          const void *src, size_t nbytes)
{
    int previous, st = cua_cuda_use_device(self->device, &previous);
    if (st) return st;
    st = copy(dst, src, nbytes, NULL);
    int back = cua_cuda_use_device(previous, NULL);
    return st ? st : back;
}

/* A host ndarray that must be C-contiguous and exactly nbytes long. */
static PyArrayObject *host_view(PyObject *obj, Py_ssize_t nbytes, int writable)
{
    if (!PyArray_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected a numpy.ndarray");
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!PyArray_IS_C_CONTIGUOUS(a) || (writable && !PyArray_ISWRITEABLE(a)) || PyArray_NBYTES(a) != nbytes) {
        PyErr_Format(PyExc_ValueError, "host array must be C-contiguous%s with %zd bytes",
                     writable ? " and writable" : "", nbytes);
        return NULL;
    }
    return a;
}

static PyObject *buffer_copy(CuaDeviceBuffer *self, PyObject *args, int to_host)
{
    PyObject *obj;
    Py_ssize_t offset = 0, nbytes = -1;
    if (!PyArg_ParseTuple(args, "O|nn", &obj, &offset, &nbytes)) return NULL;
    if (nbytes < 0) nbytes = self->nbytes - offset;
    if (offset < 0 || offset + nbytes > self->nbytes) {
        PyErr_SetString(PyExc_ValueError, "copy outside the device buffer");
        return NULL;
    }
    PyArrayObject *a = host_view(obj, nbytes, to_host);
    if (!a) return NULL;
    int st;
    char *dev = (char *)self->ptr + offset;
    void *host = PyArray_DATA(a);
    Py_BEGIN_ALLOW_THREADS
    st = to_host ? copy_on_device(self, cua_cuda_memcpy_dtoh, host, dev, (size_t)nbytes)
                 : copy_on_device(self, cua_cuda_memcpy_htod, dev, host, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *buffer_to_host(CuaDeviceBuffer *self, PyObject *args) { return buffer_copy(self, args, 1); }
static PyObject *buffer_from_host(CuaDeviceBuffer *self, PyObject *args) { return buffer_copy(self, args, 0); }

static PyObject *buffer_from_device(CuaDeviceBuffer *self, PyObject *args)
{
    unsigned long long src;
    Py_ssize_t nbytes;
    if (!PyArg_ParseTuple(args, "Kn", &src, &nbytes)) return NULL;
    if (nbytes < 0 || nbytes > self->nbytes) {
        PyErr_SetString(PyExc_ValueError, "copy larger than the device buffer");
        return NULL;
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = copy_on_device(self, cua_cuda_memcpy_dtod, self->ptr, (const void *)(uintptr_t)src, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *buffer_ptr(CuaDeviceBuffer *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyMethodDef buffer_methods[] = {
    {"copy_to_host", (PyCFunction)buffer_to_host, METH_VARARGS,
     "copy_to_host(ndarray, offset=0, nbytes=-1): device bytes into a C-contiguous array"},
    {"copy_from_host", (PyCFunction)buffer_from_host, METH_VARARGS,
     "copy_from_host(ndarray, offset=0, nbytes=-1): a C-contiguous array's bytes onto the device"},
    {"copy_from_device", (PyCFunction)buffer_from_device, METH_VARARGS,
     "copy_from_device(ptr, nbytes): bytes from another device pointer"},
    {NULL, NULL, 0, NULL},
};

#else /* no CUDA: the type exists, but cannot be created */

CuaDeviceBuffer *cua_buffer_new_on(Py_ssize_t nbytes, void *stream, int sync)
{
    (void)nbytes, (void)stream, (void)sync;
    PyErr_SetString(PyExc_RuntimeError, "cuatomic was built without CUDA: no device memory");
    return NULL;
}

CuaDeviceBuffer *cua_buffer_new(Py_ssize_t nbytes) { return cua_buffer_new_on(nbytes, NULL, 1); }

static PyObject *buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)type, (void)args, (void)kwds;
    PyErr_SetString(PyExc_RuntimeError, "cuatomic was built without CUDA: no device memory");
    return NULL;
}

static void buffer_dealloc(CuaDeviceBuffer *self) { Py_TYPE(self)->tp_free((PyObject *)self); }

static PyObject *buffer_ptr(CuaDeviceBuffer *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyMethodDef buffer_methods[] = {{NULL, NULL, 0, NULL}};

#endif

static PyMemberDef buffer_members[] = {
    {"nbytes", T_PYSSIZET, offsetof(CuaDeviceBuffer, nbytes), READONLY, "size in bytes"},
    {"device", T_INT, offsetof(CuaDeviceBuffer, device), READONLY, "the GPU the memory is on"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"ptr", (getter)buffer_ptr, NULL, "device pointer as an int", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject CuaDeviceBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cuatomic._C.DeviceBuffer",
    .tp_basicsize = sizeof(CuaDeviceBuffer),
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DeviceBuffer(nbytes): device memory freed when the object dies",
    .tp_methods = buffer_methods,
    .tp_members = buffer_members,
    .tp_getset = buffer_getset,
    .tp_new = buffer_new,
};

/* -------------------------------------------------- cuatomic's memory pool */

/* memory_info(device) -> (in_use, cached, limit, pinned): cuatomic's pool on
 * one GPU (memory.cu) and the page-locked staging buffers of the host
 * pipeline. Every number is 0 in a build without CUDA. */
PyObject *cua_memory_info(PyObject *self, PyObject *arg)
{
    (void)self;
    int device;
    if (!PyArg_Parse(arg, "i", &device)) return NULL;
    long long in_use = 0, cached = 0, limit = 0, pinned = 0;
#ifdef CUATOMIC_WITH_CUDA
    cua_pool_info info;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_pool_info(device, &info);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    in_use = info.in_use, cached = info.cached, limit = info.limit;
    pinned = cua_pipeline_pinned_bytes();
#endif
    return Py_BuildValue("(LLLL)", in_use, cached, limit, pinned);
}

/* free_memory(device): what cuatomic's pool on the GPU caches goes back to
 * the driver, and the pipeline's staging buffers to the host. */
PyObject *cua_free_memory(PyObject *self, PyObject *arg)
{
    (void)self;
    int device;
    if (!PyArg_Parse(arg, "i", &device)) return NULL;
#ifdef CUATOMIC_WITH_CUDA
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_pool_release(device);
    cua_pipeline_release();
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
#endif
    Py_RETURN_NONE;
}

/* host_cache(release) -> (cached, limit): bytes of the CPU rungs' scratch
 * that cuatomic keeps for the next call (cpu/scratch.c) and their limit;
 * with `release` true the kept blocks go back to the system first (a
 * block a call is handing back at that moment may stay). */
PyObject *cua_host_cache(PyObject *self, PyObject *arg)
{
    (void)self;
    const int release = PyObject_IsTrue(arg);
    if (release < 0) return NULL;
    if (release) {
        Py_BEGIN_ALLOW_THREADS
        cua_cpu_scratch_release();
        Py_END_ALLOW_THREADS
    }
    return Py_BuildValue("(nn)", (Py_ssize_t)cua_cpu_scratch_cached(), (Py_ssize_t)cua_cpu_scratch_limit());
}

/* ------------------------------------------------------------ PinnedBuffer */

/* Page-locked host memory exposed through the buffer protocol, so a NumPy
 * array can live in it (cuatomic.pinned_empty). Copies from it to the GPU
 * run at the bus's speed and need no staging copy. */
typedef struct {
    PyObject_HEAD
    void *ptr;
    Py_ssize_t nbytes;
} CuaPinnedBuffer;

static PyObject *pinned_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"nbytes", NULL};
    Py_ssize_t nbytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", kwlist, &nbytes)) return NULL;
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "nbytes must be >= 0");
        return NULL;
    }
#ifdef CUATOMIC_WITH_CUDA
    CuaPinnedBuffer *self = (CuaPinnedBuffer *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->nbytes = nbytes;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_host_alloc(&self->ptr, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (st) {
        self->ptr = NULL;
        Py_DECREF(self);
        return cua_raise(st, NULL);
    }
    return (PyObject *)self;
#else
    (void)type;
    PyErr_SetString(PyExc_RuntimeError, "cuatomic was built without CUDA: no page-locked memory");
    return NULL;
#endif
}

static void pinned_dealloc(CuaPinnedBuffer *self)
{
#ifdef CUATOMIC_WITH_CUDA
    if (self->ptr) cua_cuda_host_free(self->ptr);
#endif
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int pinned_getbuffer(CuaPinnedBuffer *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, self->nbytes, 0, flags);
}

static PyBufferProcs pinned_as_buffer = {(getbufferproc)pinned_getbuffer, NULL};

static PyObject *pinned_ptr(CuaPinnedBuffer *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyGetSetDef pinned_getset[] = {
    {"ptr", (getter)pinned_ptr, NULL, "host address as an int", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject CuaPinnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cuatomic._C.PinnedBuffer",
    .tp_basicsize = sizeof(CuaPinnedBuffer),
    .tp_dealloc = (destructor)pinned_dealloc,
    .tp_as_buffer = &pinned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PinnedBuffer(nbytes): page-locked host memory, freed when the object dies",
    .tp_getset = pinned_getset,
    .tp_new = pinned_new,
};
