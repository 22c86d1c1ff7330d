/* variants.c -- the index of the CPU backend's variant tables. */
#include "cpu.h"

extern const cua_variant cua_cpu_sum_variants[], cua_cpu_dot_variants[], cua_cpu_histogram_variants[],
    cua_cpu_filter_variants[], cua_cpu_mutex_add_one_variants[], cua_cpu_add_one_variants[];
extern const cua_variant cua_cpu_prod_variants[];
extern const int cua_cpu_prod_nvariants;
extern const int cua_cpu_sum_nvariants, cua_cpu_dot_nvariants, cua_cpu_histogram_nvariants,
    cua_cpu_filter_nvariants, cua_cpu_mutex_add_one_nvariants, cua_cpu_add_one_nvariants;

const cua_variant *cua_cpu_variants(int op, int *count)
{
    switch (op) {
    case CUA_OP_SUM: *count = cua_cpu_sum_nvariants; return cua_cpu_sum_variants;
    case CUA_OP_DOT: *count = cua_cpu_dot_nvariants; return cua_cpu_dot_variants;
    case CUA_OP_HISTOGRAM: *count = cua_cpu_histogram_nvariants; return cua_cpu_histogram_variants;
    case CUA_OP_FILTER: *count = cua_cpu_filter_nvariants; return cua_cpu_filter_variants;
    case CUA_OP_MUTEX_ADD_ONE: *count = cua_cpu_mutex_add_one_nvariants; return cua_cpu_mutex_add_one_variants;
    case CUA_OP_ADD_ONE: *count = cua_cpu_add_one_nvariants; return cua_cpu_add_one_variants;
    case CUA_OP_PROD: *count = cua_cpu_prod_nvariants; return cua_cpu_prod_variants;
    default: *count = 0; return NULL;
    }
}
