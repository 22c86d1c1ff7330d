/* scratch.c -- a bounded cache of the CPU rungs' large scratch blocks.
 *
 * Fresh memory costs a page fault at each page's first touch, and the
 * kernel zeroes every page it gives: a call that scatters 2^24 keys into
 * 64 MiB of fresh scratch (unique's partition) spent about a tenth of its
 * time in the kernel's clear_page (perf, 2 cores), and glibc hands blocks
 * this large back to the kernel at free(). Blocks from 1 MiB on are kept
 * here instead, up to a limit: CUATOMIC_HOST_CACHE_BYTES when it is a
 * number of bytes (digits only; 0 keeps nothing), else 1/32 of the
 * machine's memory up to 512 MiB, read once a process, by the first call
 * that may keep scratch or asks what is kept (its glue holds the GIL, so
 * the read does not race os.environ's writes). cuatomic.memory_info() reports what is
 * kept and cuatomic.free_memory() gives it back.
 *
 * A few blocks at most, under a lock that calls only ever try: a call
 * that finds it held allocates or frees as if there were no cache, so no
 * call waits on it (nor deadlocks on it in a child after fork); only the
 * release retries a while. The lock guards the table alone; memory is
 * allocated and freed outside it.
 */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"

#define KEPT 6
#define SMALLEST ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static struct {
    void *p;
    size_t bytes;
} kept[KEPT];
static atomic_flag busy = ATOMIC_FLAG_INIT;
static _Atomic size_t kept_bytes, limit_bytes = SIZE_MAX; /* SIZE_MAX: not read yet */

static int try_lock(void)
{
    return !atomic_flag_test_and_set_explicit(&busy, memory_order_acquire);
}

static void unlock(void)
{
    atomic_flag_clear_explicit(&busy, memory_order_release);
}

size_t cua_cpu_scratch_limit(void)
{
    size_t limit = atomic_load(&limit_bytes);
    if (limit != SIZE_MAX) return limit;
    const char *env = getenv("CUATOMIC_HOST_CACHE_BYTES");
    if (env && *env && strspn(env, "0123456789") == strlen(env) && strlen(env) < 19) {
        limit = (size_t)strtoull(env, NULL, 10);
    } else {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        const size_t ram = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0, cap = (size_t)512 << 20;
        limit = ram / 32 < cap ? ram / 32 : cap;
    }
    atomic_store(&limit_bytes, limit);
    return limit;
}

size_t cua_cpu_scratch_cached(void)
{
    return atomic_load(&kept_bytes);
}

/* At least `bytes` of scratch, aligned to a cache line (from 2 MiB on, to
 * 2 MiB, and asked to be backed by huge pages), its size in *got: the
 * smallest kept block that holds it, else a new one. NULL when out of
 * memory. */
void *cua_cpu_scratch_take(size_t bytes, size_t *got)
{
    if (bytes < 64) bytes = 64;
    if (bytes >= SMALLEST && try_lock()) {
        int best = -1;
        for (int i = 0; i < KEPT; i++)
            if (kept[i].p && kept[i].bytes >= bytes && (best < 0 || kept[i].bytes < kept[best].bytes)) best = i;
        if (best >= 0) {
            void *p = kept[best].p;
            *got = kept[best].bytes;
            kept[best].p = NULL;
            atomic_fetch_sub(&kept_bytes, *got);
            unlock();
            return p;
        }
        unlock();
    }
    if (bytes < HUGE_PAGE) {
        *got = (bytes + 63) / 64 * 64; /* (aligned_alloc: a multiple of the alignment) */
        return aligned_alloc(64, *got);
    }
    void *p = NULL;
    *got = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, *got)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, *got, MADV_HUGEPAGE); /* advice: ignored where unsupported */
#endif
    return p;
}

/* Scratch from cua_cpu_scratch_take (`bytes` its *got) back: kept when it
 * fits under the limit (the smallest kept blocks make room for it, the
 * largest are kept), else freed. NULL is ignored. */
void cua_cpu_scratch_give(void *p, size_t bytes)
{
    if (!p) return;
    void *out[KEPT + 1];
    int n = 0;
    if (bytes >= SMALLEST && bytes <= cua_cpu_scratch_limit() && try_lock()) {
        const size_t limit = cua_cpu_scratch_limit();
        size_t held = atomic_load(&kept_bytes);
        for (;;) { /* room: drop the smallest kept block smaller than this one */
            int free_at = -1, small = -1;
            for (int i = 0; i < KEPT; i++) {
                if (!kept[i].p) free_at = free_at < 0 ? i : free_at;
                else if (kept[i].bytes < bytes && (small < 0 || kept[i].bytes < kept[small].bytes)) small = i;
            }
            if (free_at >= 0 && held + bytes <= limit) {
                kept[free_at].p = p;
                kept[free_at].bytes = bytes;
                held += bytes;
                p = NULL;
                break;
            }
            if (small < 0) break; /* nothing smaller to drop: this one goes */
            out[n++] = kept[small].p;
            held -= kept[small].bytes;
            kept[small].p = NULL;
        }
        atomic_store(&kept_bytes, held);
        unlock();
    }
    for (int i = 0; i < n; i++) free(out[i]);
    free(p);
}

/* Every kept block back to the system: 0, or 1 when a call was using the
 * table at that moment (what it keeps stays, and is counted). */
int cua_cpu_scratch_release(void)
{
    void *out[KEPT];
    int n = 0, tries = 0;
    while (!try_lock()) /* held for a few loads and stores by a call */
        if (++tries == 100000) return 1;
        else sched_yield();
    for (int i = 0; i < KEPT; i++)
        if (kept[i].p) {
            out[n++] = kept[i].p;
            kept[i].p = NULL;
        }
    atomic_store(&kept_bytes, 0);
    unlock();
    for (int i = 0; i < n; i++) free(out[i]);
    return 0;
}
