// The int8 GEMM (qgemm.h) on Intel AMX-INT8 tiles, for whole tiles of 16 rows: qgemm.cpp runs it
// where cpu_has_amx_int8() (x86-64) and sends the rest of a task's rows to its VNNI tiles.
#pragma once
#include <cstdint>

#include "kernels/compute/q8_output.h"
#include "kernels/compute/qgemm.h"

namespace etnp {

// Rows [m0, m1) ((m1 - m0) a multiple of 16, rows of a.data) x panels [p0, p1), as qgemm_q8
// (weights in groups of 4: PackedQ8 without pairs or columns). One thread. Defined on x86-64 only.
void qgemm_q8_amx_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                       const float* bias, float lo, float hi, const QOutput& out);

}  // namespace etnp
