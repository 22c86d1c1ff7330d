/* spin.c -- spin waits and spin locks on the CPU: the pause/yield/sleep
 * step every spin loop of the backend takes, the tutorial's CAS lock, and the
 * test-and-test-and-set lock of warp_lock.
 */
#include <sched.h>
#include <time.h>

#include "cpu.h"

/* Pauses a waiter takes before it starts to yield its core: a wait shorter
 * than that (microseconds) never enters the OS. */
#define SPINS_BEFORE_YIELD 256
/* Then yields, until this many steps: a teammate waiting for a core on our
 * run queue gets it at once. A yield does not help one queued on another
 * core (behind another process), and keeps ours busy. */
#define SPINS_BEFORE_SLEEP (SPINS_BEFORE_YIELD + 32)
/* Then the waiter sleeps, this long a step (Linux's default timer slack
 * makes any shorter sleep about as long): its core goes idle, so the OS
 * can move the thread we wait for onto it instead of leaving it behind
 * another process until that one's time slice ends (a scheduler tick: 4
 * ms on a 250 Hz kernel). */
#define SLEEP_NS 50000

void cua_cpu_relax(unsigned *spins)
{
    if (*spins < SPINS_BEFORE_SLEEP) ++*spins;
    if (*spins < SPINS_BEFORE_YIELD) {
        cua_cpu_pause();
    } else if (*spins < SPINS_BEFORE_SLEEP) {
        sched_yield();
    } else {
        const struct timespec nap = {0, SLEEP_NS};
        nanosleep(&nap, NULL);
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

/* warp_lock's backoff after a lost race for a free lock, in pauses: it
 * doubles from the first to the most (cuda/mutex.cu sleeps 32 to 256 ns). */
#define BACKOFF_FIRST 4
#define BACKOFF_MOST 32

void cua_cpu_lock_ttas(atomic_int *mutex)
{
    unsigned spins = 0, backoff = BACKOFF_FIRST;
    for (;;) {
        while (atomic_load_explicit(mutex, memory_order_relaxed) != 0)
            cua_cpu_relax(&spins); /* spin: the lock is held; reading keeps the line shared */
        int expected = 0;
        if (atomic_compare_exchange_weak_explicit(mutex, &expected, 1, memory_order_relaxed, memory_order_relaxed))
            break;
        /* Another waiter won the race for the free lock: back off, in bare
         * pauses (a backoff is short; the wait for a held lock above is the
         * one that yields and sleeps). */
        for (unsigned k = 0; k < backoff; k++) cua_cpu_pause();
        backoff = backoff < BACKOFF_MOST ? 2 * backoff : BACKOFF_MOST;
    }
    /* Fence after acquiring, as in cua_cpu_lock. */
    atomic_thread_fence(memory_order_acquire);
}

void cua_cpu_unlock(atomic_int *mutex)
{
    /* Fence before releasing: our writes to the protected data are visible
     * to the next owner before it can see the lock free. */
    atomic_thread_fence(memory_order_release);
    atomic_exchange_explicit(mutex, 0, memory_order_relaxed);
}
