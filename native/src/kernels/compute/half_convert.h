// float32 <-> float16 / bfloat16 over arrays: the rounding of a value held as float32 to the
// precision of its fp16 / bf16 datatype (the XNNPACK delegate's fp16 programs round every node's
// output), and the conversions at a delegate's inputs and outputs. F16C / AVX-512 where the CPU
// has them, else the scalar conversions of core/dtype.h: the same results (round to nearest
// even, overflow to infinity, subnormals kept; a NaN stays a NaN).
#pragma once
#include <cstdint>

namespace etnp {

// d[i] = x[i] rounded to float16 (d may be x)
void round_to_half(const float* x, float* d, int64_t n);
// d[i] = x[i] rounded to bfloat16 (d may be x)
void round_to_bf16(const float* x, float* d, int64_t n);
void half_to_float_n(const uint16_t* h, float* d, int64_t n);
void float_to_half_n(const float* x, uint16_t* h, int64_t n);

}  // namespace etnp
