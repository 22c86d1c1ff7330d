/* cells.c -- accumulator values and the shared 64-bit cell the rungs add
 * them into: plain adds, native atomic adds, and the compare-exchange loops
 * that build the atomics the CPU lacks (float add, multiply).
 */
#include <string.h>

#include "cpu.h"

void cua_acc_add(int acc, cua_acc_t *s, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) s->i += v.i;
    else if (acc == CUA_ACC_FLOAT32) s->f += v.f;
    else s->d += v.d;
}

/* The cell holds the accumulator's bits: all 64 for integers and doubles,
 * the low 32 for floats. */
cua_acc_t cua_cpu_cell_value(int acc, uint64_t bits)
{
    cua_acc_t r = {0};
    if (acc == CUA_ACC_FLOAT32) {
        uint32_t w = (uint32_t)bits;
        memcpy(&r.f, &w, sizeof w);
    } else {
        r.i = bits;
    }
    return r;
}

static uint64_t cell_bits(int acc, cua_acc_t v)
{
    if (acc == CUA_ACC_FLOAT32) {
        uint32_t w;
        memcpy(&w, &v.f, sizeof w);
        return w;
    }
    return v.i;
}

static void acc_mul(int acc, cua_acc_t *s, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) s->i *= v.i;
    else if (acc == CUA_ACC_FLOAT32) s->f *= v.f;
    else s->d *= v.d;
}

/* Read, combine, and swap in the result only if the cell still holds what we
 * read; on failure `old` is refreshed with the value someone else wrote and
 * we retry. The comparison is of integer bits, never floats, so a NaN cannot
 * make the loop spin forever. */
static void cas_apply(int acc, _Atomic uint64_t *cell, cua_acc_t v, void (*combine)(int, cua_acc_t *, cua_acc_t))
{
    uint64_t old = atomic_load_explicit(cell, memory_order_relaxed), next;
    do {
        cua_acc_t s = cua_cpu_cell_value(acc, old);
        combine(acc, &s, v);
        next = cell_bits(acc, s);
    } while (!atomic_compare_exchange_weak_explicit(cell, &old, next, memory_order_relaxed,
                                                    memory_order_relaxed));
}

void cua_cpu_cas_add(int acc, _Atomic uint64_t *cell, cua_acc_t v) { cas_apply(acc, cell, v, cua_acc_add); }
void cua_cpu_cas_mul(int acc, _Atomic uint64_t *cell, cua_acc_t v) { cas_apply(acc, cell, v, acc_mul); }

uint64_t cua_cpu_cell_bits(int acc, cua_acc_t v) { return cell_bits(acc, v); }

void cua_cpu_atomic_add(int acc, _Atomic uint64_t *cell, cua_acc_t v)
{
    if (acc == CUA_ACC_INT64) atomic_fetch_add_explicit(cell, v.i, memory_order_relaxed);
    else cua_cpu_cas_add(acc, cell, v); /* no atomic float add on the CPU */
}

void cua_cpu_store_result(int acc, cua_acc_t v, void *result)
{
    if (acc == CUA_ACC_FLOAT32) memcpy(result, &v.f, sizeof v.f);
    else memcpy(result, &v.i, sizeof v.i);
}
