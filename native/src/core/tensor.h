// A tensor view: dtype, sizes, contiguous strides, data pointer and the bytes it may use.
#pragma once
#include <cstdint>
#include <string>

#include "etnp.h"
#include "core/dtype.h"
#include "core/error.h"

namespace etnp {

constexpr int kMaxDims = ETNP_MAX_DIMS;

enum class Dynamism : int8_t { Static = 0, Bound = 1, Unbound = 2 };

struct Tensor {
  DType dtype = DType::F32;
  int dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};      // in elements, derived from sizes and dim_order
  uint8_t dim_order[kMaxDims] = {};
  void* data = nullptr;
  size_t capacity = 0;                 // bytes available at data
  Dynamism dynamism = Dynamism::Static;
  bool is_constant = false;
  bool owns_external = false;          // data bound by set_input (not planned)

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < dim; i++) n *= sizes[i];
    return n;
  }
  size_t elem_size() const { return dtype_size(dtype); }
  size_t nbytes() const { return (size_t)numel() * elem_size(); }
  int64_t size(int d) const { return sizes[wrap(d)]; }
  int wrap(int64_t d) const {
    int64_t nd = dim == 0 ? 1 : dim;
    if (d < -nd || d >= nd) throw_exec("dimension " + std::to_string(d) + " out of range for rank " + std::to_string(dim));
    return (int)(d < 0 ? d + nd : d);
  }
  bool default_dim_order() const {
    for (int i = 0; i < dim; i++) if (dim_order[i] != i) return false;
    return true;
  }
  void compute_strides() {
    int64_t s = 1;
    for (int k = dim - 1; k >= 0; k--) {
      int d = dim_order[k];
      strides[d] = s;
      s *= sizes[d];
    }
  }
  template <typename T> T* ptr() { return static_cast<T*>(data); }
  template <typename T> const T* ptr() const { return static_cast<const T*>(data); }
  std::string shape_str() const;
};

// Resizes an output tensor within its memory; static tensors must keep their shape.
void resize_tensor(Tensor& t, int ndim, const int64_t* sizes);

}  // namespace etnp
