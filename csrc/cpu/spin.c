/* spin.c -- spin waits and the CAS spin lock on the CPU: the pause/yield
 * step every spin loop of the backend takes, and the tutorial's lock.
 */
#include <sched.h>

#include "cpu.h"

/* Pauses a waiter takes before it starts to yield its core: a wait shorter
 * than that never enters the OS. */
#define SPINS_BEFORE_YIELD 256

void cua_cpu_relax(unsigned *spins)
{
    if (++*spins < SPINS_BEFORE_YIELD) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

void cua_cpu_lock(atomic_int *mutex)
{
    int expected = 0;
    unsigned spins = 0;
    while (!atomic_compare_exchange_weak_explicit(mutex, &expected, 1, memory_order_relaxed, memory_order_relaxed)) {
        expected = 0; /* spin: another thread owns the critical section */
        cua_cpu_relax(&spins);
    }
    /* Fence after acquiring: reads of the protected data cannot move before
     * we own the lock (pairs with the release fence in unlock). */
    atomic_thread_fence(memory_order_acquire);
}

void cua_cpu_unlock(atomic_int *mutex)
{
    /* Fence before releasing: our writes to the protected data are visible
     * to the next owner before it can see the lock free. */
    atomic_thread_fence(memory_order_release);
    atomic_exchange_explicit(mutex, 0, memory_order_relaxed);
}
