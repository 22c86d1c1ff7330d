/* call.h -- what every operation's glue shares (call.c): finding the rung a
 * call asked for, reading its inputs, staging host data for the GPU, the
 * launch configuration, the page-locked call slots, and the record of what
 * the last call on this thread launched. */
#ifndef CUATOMIC_CALL_H
#define CUATOMIC_CALL_H

#include "glue.h"

/* The ladder of `op` on a backend; NULL (with no exception) when this build
 * has none. */
const cua_ladder *cua_ladder_of(int backend, int op);

/* Row `rung` of op's ladder, or NULL with a ValueError. Python resolved the
 * name to this index from the same table (_C.variants), so a bad index is a
 * caller's bug, but it is checked: C never trusts an index. Cast the result
 * to the op's row type (the cua_rung is its first member). */
const cua_rung *cua_find_rung(int backend, int op, int rung);

/* Where a backend reads an input: a host array's data, a device pointer,
 * or (CUDA backend, host array) a device copy made while the GIL is off. */
typedef struct {
    const void *host;   /* host data to stage, or NULL */
    size_t nbytes;
    const void *ptr;    /* what the backend reads */
    void *staged;       /* owned device copy */
    void *stream;       /* the call's stream */
} cua_input;

/* Check an input against its length and dtype (-1 with an exception). */
int cua_parse_input(int backend, PyObject *obj, int64_t n, int dtype, void *stream, cua_input *in);

/* Without the GIL: a device copy of host input from the stream-ordered pool
 * (queued on the call's stream; nothing waits), and its release. */
int cua_stage(cua_input *in);
void cua_unstage(cua_input *in);
/* Device memory for an output read back on the host: NULL on the CPU
 * backend (it writes host memory directly). */
int cua_device_alloc(int backend, void **ptr, size_t nbytes, void *stream);
void cua_device_free(void *ptr, void *stream);
int cua_copy_to_host(void *dst, const void *src, size_t nbytes, void *stream);
/* The result route of a launcher that left `nbytes` of results in `dev`
 * (cua_cuda_deliver): on CUDA the one wait, and the results to the call
 * slot (cfg->result.device), or copied to `host` when it is not NULL; on
 * the CPU nothing (the launcher wrote them where they belong). */
int cua_deliver(int backend, const void *dev, size_t nbytes, void *host, cua_launch *cfg);
/* Device to device on `stream` (a source on another GPU: a peer copy), waited for. */
int cua_copy_on_device(void *dst, const void *src, size_t nbytes, void *stream);
/* Wait for the work queued on `stream`, then settle the pool if the
 * frees queued meanwhile left it caching past its limit (CUDA; nothing on
 * the CPU, whose launchers return when done). */
int cua_stream_sync(int backend, void *stream);

/* The launch configuration of a call, checked here because a backend trusts
 * it (the CPU's block tree keeps CUA_MAX_THREADS lanes on the stack): blocks
 * in [1, CUA_MAX_BLOCKS] and threads in [1, CUA_MAX_THREADS], or -1 for the
 * method's default. -1 with a ValueError otherwise. */
#define CUA_MAX_BLOCKS 2147483647LL
#define CUA_MAX_THREADS 1024
int cua_launch_config(long long blocks, int threads, void *stream, cua_launch *cfg);

/* A page-locked, device-mapped call slot (cua_cuda_slot_acquire): host
 * inputs that fit are copied in and read by the kernel over the bus, and
 * the result comes back in the slot's last CUA_SLOT_RESULT_BYTES, so a small
 * call needs no copy in either direction. The last word of those is the
 * result flag (cua_launch.result.flag), lowered when the slot is handed out
 * as a result. id < 0: no slot (CPU, or none free), the ordinary path runs. */
#define CUA_SLOT_RESULT_BYTES 64
typedef struct {
    int id;
    char *host, *device;
    size_t used; /* the bytes cua_slot_inputs put in it (0: none) */
} cua_slot;
void cua_slot_take(int backend, cua_slot *sl);
void cua_slot_inputs(cua_slot *sl, cua_input *a, cua_input *b);
/* Where the backend writes the result: the slot, else `fallback`. */
void *cua_slot_result(cua_slot *sl, cua_launch *cfg, void *fallback);
/* The slot as the output of a call: its host side for `nbytes` of results
 * (up to the result region), with cfg->result.device its device alias (a
 * launcher that honours result.device writes there); `fallback` when there
 * is no slot, inputs took it, or nbytes does not fit. */
void *cua_slot_output(cua_slot *sl, size_t nbytes, cua_launch *cfg, void *fallback);
void cua_slot_give(cua_slot *sl);

/* What the last successful call on this thread launched, for
 * _C.last_launch() (cuatomic.last_launch): the tests check that a forced
 * method is the one that ran. */
void cua_record_launch(int backend, int op, const cua_rung *rung, const cua_launch *cfg);
/* histogram.c: the bins a rung is told of, from Python's KernelBins; -1
 * with an exception. */
int cua_read_bins(PyObject *obj, int dtype, cua_bins *bins);
PyObject *cua_last_launch(PyObject *self, PyObject *noargs);

#endif
