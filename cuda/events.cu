// events.cu -- events for timing on a stream, and a whole-device
// synchronization.
#include "common.cuh"

extern "C" int cua_cuda_event_create(void **event)
{
    cudaEvent_t e = NULL;
    CUA_CHECK(cudaEventCreate(&e));
    *event = (void *)e;
    return 0;
}

extern "C" int cua_cuda_event_destroy(void *event)
{
    CUA_CHECK(cudaEventDestroy((cudaEvent_t)event));
    return 0;
}

extern "C" int cua_cuda_event_record(void *event, void *stream)
{
    CUA_CHECK(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
    return 0;
}

extern "C" int cua_cuda_event_elapsed(void *start, void *stop, float *ms)
{
    CUA_CHECK(cudaEventSynchronize((cudaEvent_t)stop));
    CUA_CHECK(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop));
    return 0;
}

extern "C" int cua_cuda_event_synchronize(void *event)
{
    CUA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
    return 0;
}

extern "C" int cua_cuda_synchronize(void)
{
    CUA_CHECK(cudaDeviceSynchronize());
    return 0;
}
