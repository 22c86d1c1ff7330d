// ladders.cu -- the index of the ladders that csrc/ looks rungs up in: one
// table per op, each defined in its op's file (sum.cu, dot.cu, ...).
#include "cuatomic_cuda.h"

extern "C" {
CUA_LADDER_INDEX(cua_cuda)
}
