/* pipeline.h -- chunked, overlapped host-to-device streaming (pipeline.c). */
#ifndef CUATOMIC_PIPELINE_H
#define CUATOMIC_PIPELINE_H

#include "../cuda/cuatomic_abi.h"

/* Work on one device chunk: dev[i] holds m elements of input i. */
typedef int (*cua_chunk_fn)(const void *const *dev, int64_t m, cua_launch *cfg, void *ctx);

/* Stream n elements of each host input through the pipeline, calling fn per
 * chunk in order. *used = 0 (and nothing done) when the input is too small or
 * the pipeline is busy: then the caller stages the input in one piece. */
int cua_pipeline_run(int ninputs, const void *const *host, size_t elem_size, int64_t n, cua_launch *cfg,
                     cua_chunk_fn fn, void *ctx, int *used);
/* The same for inputs of different element sizes (elem_size[i] for input
 * i: a weighted histogram's data and float64 weights). */
int cua_pipeline_run_sized(int ninputs, const void *const *host, const size_t *elem_size, int64_t n,
                           cua_launch *cfg, cua_chunk_fn fn, void *ctx, int *used);

/* Page-locked bytes the pipeline's staging buffers hold, and their release
 * (skipped while a call is streaming; the next large call makes them again). */
int64_t cua_pipeline_pinned_bytes(void);
void cua_pipeline_release(void);

#endif
