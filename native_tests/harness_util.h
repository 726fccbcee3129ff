// Shared helpers of the native harnesses: build zero/seeded inputs from a method's metadata.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "etnp.h"

struct InputSet {
  std::vector<etnp_input> inputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<unsigned char>> data;
};

static size_t dtype_bytes(int dt) {
  switch (dt) {
    case ETNP_DTYPE_UINT8: case ETNP_DTYPE_INT8: case ETNP_DTYPE_BOOL: return 1;
    case ETNP_DTYPE_INT16: case ETNP_DTYPE_FLOAT16: case ETNP_DTYPE_BFLOAT16: return 2;
    case ETNP_DTYPE_INT32: case ETNP_DTYPE_FLOAT32: return 4;
    default: return 8;
  }
}

// Inputs of the planned shapes, filled with a deterministic pattern (zeros for integers).
static bool make_inputs(etnp_method* m, InputSet& s, size_t max_bytes = (size_t)1 << 26) {
  size_t n = etnp_method_num_inputs(m);
  s.inputs.resize(n);
  s.shapes.resize(n);
  s.data.resize(n);
  for (size_t i = 0; i < n; i++) {
    etnp_value_meta meta;
    if (etnp_method_input_meta(m, i, &meta) != ETNP_OK) return false;
    etnp_input& in = s.inputs[i];
    std::memset(&in, 0, sizeof(in));
    in.kind = meta.kind;
    if (meta.kind != ETNP_KIND_TENSOR) continue;
    size_t numel = 1;
    for (int d = 0; d < meta.ndim; d++) numel *= (size_t)meta.sizes[d];
    size_t bytes = numel * dtype_bytes(meta.dtype);
    if (bytes > max_bytes) return false;
    s.shapes[i].assign(meta.sizes, meta.sizes + meta.ndim);
    s.data[i].assign(bytes, 0);
    if (meta.dtype == ETNP_DTYPE_FLOAT32)
      for (size_t k = 0; k < numel; k++) {
        float v = (float)((k * 37 % 101) - 50) / 50.f;
        std::memcpy(&s.data[i][k * 4], &v, 4);
      }
    in.dtype = meta.dtype;
    in.ndim = meta.ndim;
    in.sizes = s.shapes[i].data();
    in.data = s.data[i].data();
    in.nbytes = bytes;
  }
  return true;
}
