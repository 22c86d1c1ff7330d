/* interop.c -- streams, pointer queries, the strided gather, compress's
 * take, and DLPack in both directions. Python
 * (cuatomic/_interop.py) decides; this file only moves handles, pointers
 * and capsules. */
#include <limits.h>
#include <string.h>

#include "dlpack_abi.h"
#include "glue.h"

#ifdef CUATOMIC_WITH_CUDA
PyObject *cua_stream_create(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    void *s = NULL;
    CUA_CALL(cua_cuda_stream_create(&s));
    return PyLong_FromVoidPtr(s);
}

PyObject *cua_stream_destroy(PyObject *self, PyObject *arg)
{
    (void)self;
    void *s;
    if (cua_as_ptr(arg, &s) < 0) return NULL;
    CUA_CALL(cua_cuda_stream_destroy(s));
    Py_RETURN_NONE;
}

PyObject *cua_stream_synchronize(PyObject *self, PyObject *arg)
{
    (void)self;
    void *s;
    if (cua_as_ptr(arg, &s) < 0) return NULL;
    CUA_CALL(cua_cuda_stream_synchronize(s));
    Py_RETURN_NONE;
}

PyObject *cua_stream_wait(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a, *b;
    void *waiter, *producer;
    if (!PyArg_ParseTuple(args, "OO", &a, &b) || cua_as_ptr(a, &waiter) < 0 || cua_as_ptr(b, &producer) < 0) return NULL;
    CUA_CALL(cua_cuda_stream_wait(waiter, producer));
    Py_RETURN_NONE;
}

PyObject *cua_sample_to_host(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *srco, *so;
    PyArrayObject *out;
    long long pitch;
    if (!PyArg_ParseTuple(args, "OO!LO", &srco, &PyArray_Type, &out, &pitch, &so)) return NULL;
    void *src, *stream;
    if (cua_as_ptr(srco, &src) < 0 || cua_as_ptr(so, &stream) < 0) return NULL;
    const size_t itemsize = (size_t)PyArray_ITEMSIZE(out), count = (size_t)PyArray_SIZE(out);
    /* Raw bytes are copied into out: never into an array of object references. */
    if (!PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out) || PyDataType_REFCHK(PyArray_DESCR(out)) ||
        pitch < (long long)itemsize) {
        PyErr_SetString(PyExc_ValueError, "sample_to_host: out must be a writable C-contiguous array of plain "
                                          "data (no objects) and the pitch at least its itemsize");
        return NULL;
    }
    void *dst = PyArray_DATA(out);
    CUA_CALL(cua_cuda_sample_dtoh(dst, src, itemsize, (size_t)pitch, count, stream));
    Py_RETURN_NONE;
}

PyObject *cua_pointer_info(PyObject *self, PyObject *arg)
{
    (void)self;
    void *p;
    if (cua_as_ptr(arg, &p) < 0) return NULL;
    int type = 0, device = -1, current = -1;
    CUA_CALL(cua_cuda_pointer_info(p, &type, &device));
    CUA_CALL(cua_cuda_current_device(&current));
    return Py_BuildValue("(iii)", type, device, current);
}

PyObject *cua_devices(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    int count = 0, current = -1;
    CUA_CALL(cua_cuda_device_count(&count));
    CUA_CALL(cua_cuda_current_device(&current));
    return Py_BuildValue("(ii)", count, current);
}

PyObject *cua_use_device(PyObject *self, PyObject *arg)
{
    (void)self;
    long device = PyLong_AsLong(arg);
    int previous = -1;
    if (device == -1 && PyErr_Occurred()) return NULL;
    if (device < 0 || device > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "no GPU %ld: a device ordinal is 0 or more", device);
        return NULL;
    }
    CUA_CALL(cua_cuda_use_device((int)device, &previous));
    return PyLong_FromLong(previous);
}

/* gather(src, dst, n, itemsize, shape, strides_bytes, stream) */
PyObject *cua_gather(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *srco, *dsto, *shapeo, *stridso, *so;
    long long n;
    int itemsize;
    if (!PyArg_ParseTuple(args, "OOLiOOO", &srco, &dsto, &n, &itemsize, &shapeo, &stridso, &so)) return NULL;
    void *src, *dst, *stream;
    if (cua_as_ptr(srco, &src) < 0 || cua_as_ptr(dsto, &dst) < 0 || cua_as_ptr(so, &stream) < 0) return NULL;
    int64_t shape[16], strides[16];
    Py_ssize_t nd = PySequence_Size(shapeo);
    if (nd < 0 || nd > 16 || PySequence_Size(stridso) != nd) {
        PyErr_SetString(PyExc_ValueError, "gather: shape and strides must have the same length, at most 16");
        return NULL;
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *a = PySequence_GetItem(shapeo, d), *b = PySequence_GetItem(stridso, d);
        shape[d] = a ? PyLong_AsLongLong(a) : -1;
        strides[d] = b ? PyLong_AsLongLong(b) : 0;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (PyErr_Occurred()) return NULL;
    }
    CUA_CALL(cua_cuda_gather(src, dst, n, itemsize, (int)nd, shape, strides, stream));
    Py_RETURN_NONE;
}

/* take(src, dst, itemsize, outer, m, inner, idx, k, stream) */
PyObject *cua_take(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *srco, *dsto, *idxo, *so;
    int itemsize;
    long long outer, m, inner, k;
    if (!PyArg_ParseTuple(args, "OOiLLLOLO", &srco, &dsto, &itemsize, &outer, &m, &inner, &idxo, &k, &so))
        return NULL;
    void *src, *dst, *idx, *stream;
    if (cua_as_ptr(srco, &src) < 0 || cua_as_ptr(dsto, &dst) < 0 || cua_as_ptr(idxo, &idx) < 0 ||
        cua_as_ptr(so, &stream) < 0)
        return NULL;
    CUA_CALL(cua_cuda_take(src, dst, itemsize, outer, m, inner, (const int64_t *)idx, k, stream));
    Py_RETURN_NONE;
}

#else

PyObject *cua_take(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_stream_create(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_stream_destroy(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_stream_synchronize(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_stream_wait(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_pointer_info(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_devices(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_use_device(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_gather(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }
PyObject *cua_sample_to_host(PyObject *self, PyObject *a) { (void)self, (void)a; return cua_no_cuda(); }

#endif

/* ------------------------------------------------------------ DLPack in */

/* A consumed DLPack tensor: its fields, and its deleter called when this
 * object dies (the producer's memory stays valid until then). */
typedef struct {
    PyObject_HEAD
    void *managed;   /* DLManagedTensor or DLManagedTensorVersioned */
    int versioned;
    DLTensor *t;
} DLPackView;

static void view_dealloc(DLPackView *self)
{
    if (self->managed) {
        if (self->versioned) {
            DLManagedTensorVersioned *m = self->managed;
            if (m->deleter) m->deleter(m);
        } else {
            DLManagedTensor *m = self->managed;
            if (m->deleter) m->deleter(m);
        }
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *view_get(DLPackView *self, void *which)
{
    DLTensor *t = self->t;
    const char *w = which;
    if (!strcmp(w, "ptr")) return PyLong_FromVoidPtr((char *)t->data + t->byte_offset);
    if (!strcmp(w, "device")) return Py_BuildValue("(ii)", t->device.device_type, t->device.device_id);
    if (!strcmp(w, "dtype")) return Py_BuildValue("(iii)", t->dtype.code, t->dtype.bits, t->dtype.lanes);
    if (!strcmp(w, "shape") || !strcmp(w, "strides")) {
        int strides = w[1] == 't';
        if (strides && !t->strides) Py_RETURN_NONE;
        PyObject *tup = PyTuple_New(t->ndim);
        for (int d = 0; tup && d < t->ndim; d++)
            PyTuple_SET_ITEM(tup, d, PyLong_FromLongLong(strides ? t->strides[d] : t->shape[d]));
        return tup;
    }
    if (!strcmp(w, "readonly")) {
        int ro = self->versioned && (((DLManagedTensorVersioned *)self->managed)->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
        return PyBool_FromLong(ro);
    }
    Py_RETURN_NONE;
}

static PyGetSetDef view_getset[] = {
    {"ptr", (getter)view_get, NULL, "address of the first element", "ptr"},
    {"device", (getter)view_get, NULL, "(device_type, device_id)", "device"},
    {"dtype", (getter)view_get, NULL, "(code, bits, lanes)", "dtype"},
    {"shape", (getter)view_get, NULL, "shape", "shape"},
    {"strides", (getter)view_get, NULL, "strides in elements, or None (row-major)", "strides"},
    {"readonly", (getter)view_get, NULL, "the producer marked the memory read-only", "readonly"},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DLPackViewType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cuatomic._C.DLPackView",
    .tp_basicsize = sizeof(DLPackView),
    .tp_dealloc = (destructor)view_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a consumed DLPack tensor; its producer's deleter runs when this object dies",
    .tp_getset = view_getset,
};

/* dlpack_import(capsule) -> DLPackView. Renames the capsule as consumed so
 * its own destructor no longer frees the tensor: we own it now. */
PyObject *cua_dlpack_import(PyObject *self, PyObject *capsule)
{
    (void)self;
    DLPackView *v = PyObject_New(DLPackView, &DLPackViewType);
    if (!v) return NULL;
    v->managed = NULL;
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (m->version.major > 1) {
            Py_DECREF(v);
            PyErr_Format(PyExc_BufferError, "DLPack %u.%u is newer than this consumer (1.x)", m->version.major,
                         m->version.minor);
            return NULL;
        }
        if (PyCapsule_SetName(capsule, "used_dltensor_versioned") < 0) {
            Py_DECREF(v);
            return NULL;
        }
        v->managed = m;
        v->versioned = 1;
        v->t = &m->dl_tensor;
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        if (PyCapsule_SetName(capsule, "used_dltensor") < 0) {
            Py_DECREF(v);
            return NULL;
        }
        v->managed = m;
        v->versioned = 0;
        v->t = &m->dl_tensor;
    } else {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "expected an unconsumed DLPack capsule");
        return NULL;
    }
    return (PyObject *)v;
}

/* ----------------------------------------------------------- DLPack out */

/* One allocation: the managed tensor, then shape and strides. manager_ctx
 * holds a reference to the Python object that owns the memory. */
typedef struct {
    DLManagedTensorVersioned v;
    DLManagedTensor legacy;
    int64_t dims[32];
} export_block;

static void release_owner(void *ctx)
{
    PyGILState_STATE g = PyGILState_Ensure(); /* a consumer may delete from any thread */
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static void delete_versioned(DLManagedTensorVersioned *m)
{
    release_owner(m->manager_ctx);
    PyMem_RawFree(m); /* the block starts with the versioned struct */
}

static void delete_legacy(DLManagedTensor *m)
{
    release_owner(m->manager_ctx);
    PyMem_RawFree((char *)m - offsetof(export_block, legacy));
}

static void capsule_destructor(PyObject *capsule)
{
    /* Still named as produced: nobody consumed it, so it is ours to free. */
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        m->deleter(m);
    }
}

/* dlpack_export(owner, ptr, shape, (code, bits), device_type, device_id, versioned) -> capsule */
PyObject *cua_dlpack_export(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *owner, *ptro, *shapeo;
    int code, bits, device_type, device_id, versioned;
    if (!PyArg_ParseTuple(args, "OOO(ii)iip", &owner, &ptro, &shapeo, &code, &bits, &device_type, &device_id,
                          &versioned))
        return NULL;
    void *ptr;
    if (cua_as_ptr(ptro, &ptr) < 0) return NULL;
    Py_ssize_t nd = PySequence_Size(shapeo);
    if (nd < 0 || nd > 16) {
        PyErr_SetString(PyExc_ValueError, "dlpack_export: at most 16 dimensions");
        return NULL;
    }
    export_block *blk = PyMem_RawCalloc(1, sizeof *blk);
    if (!blk) return PyErr_NoMemory();
    int64_t *shape = blk->dims, *strides = blk->dims + 16;
    for (Py_ssize_t d = nd - 1, step = 1; d >= 0; d--) {
        PyObject *item = PySequence_GetItem(shapeo, d);
        shape[d] = item ? PyLong_AsLongLong(item) : -1;
        Py_XDECREF(item);
        if (PyErr_Occurred()) {
            PyMem_RawFree(blk);
            return NULL;
        }
        strides[d] = step; /* row-major, in elements */
        step *= shape[d] > 0 ? shape[d] : 1;
    }
    DLTensor t = {ptr, {device_type, device_id}, (int32_t)nd, {(uint8_t)code, (uint8_t)bits, 1}, shape, strides, 0};
    Py_INCREF(owner);
    PyObject *capsule;
    if (versioned) {
        blk->v.version.major = 1;
        blk->v.version.minor = 0;
        blk->v.manager_ctx = owner;
        blk->v.deleter = delete_versioned;
        blk->v.flags = 0;
        blk->v.dl_tensor = t;
        capsule = PyCapsule_New(&blk->v, "dltensor_versioned", capsule_destructor);
    } else {
        blk->legacy.dl_tensor = t;
        blk->legacy.manager_ctx = owner;
        blk->legacy.deleter = delete_legacy;
        capsule = PyCapsule_New(&blk->legacy, "dltensor", capsule_destructor);
    }
    if (!capsule) {
        Py_DECREF(owner);
        PyMem_RawFree(blk);
    }
    return capsule;
}

int cua_interop_ready(PyObject *module)
{
    if (PyType_Ready(&DLPackViewType) < 0) return -1;
    return PyModule_AddObjectRef(module, "DLPackView", (PyObject *)&DLPackViewType);
}
