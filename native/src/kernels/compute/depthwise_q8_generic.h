// depthwise_q8's portable path (depthwise_q8.h), plain C++ written for the compiler's
// auto-vectoriser.
#pragma once
#include <cstdint>

#include "kernels/compute/depthwise_q8.h"

namespace etnp {

// As depthwise_q8: output rows [row_begin, row_end) of the N * OH rows.
void depthwise_q8_generic(const DepthwiseGeom& g, const DwQ8Input& x, const PackedDwQ8& w, const float* bias,
                          const QOutput& out, int64_t row_begin, int64_t row_end);

}  // namespace etnp
