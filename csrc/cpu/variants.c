/* variants.c -- the index of the CPU backend's ladders (one per op, each
 * defined beside its launchers in csrc/cpu/<op>.c). */
#include "cpu.h"

CUA_LADDER_INDEX(cua_cpu)
