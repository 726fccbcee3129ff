// Strided views and the copy that every layout kernel (permute, expand, slice, cat...) uses.
#pragma once
#include "kernels/kernel_util.h"

namespace etnp {

struct View {
  DType dtype;
  const void* data;
  int dim;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
  int64_t offset;  // in elements
};
View view_of(const Tensor& t);
// Copies a view into `dst` (already sized like the view) at element offset `dst_off`, with
// dst's own strides; converts dtype if needed. Byte copies use memmove: a (hostile) memory plan
// may place an op's output over its input, so kernels never memcpy between planned tensors.
void copy_view(const View& src, Tensor& dst, int64_t dst_off = 0, const int64_t* dst_strides = nullptr);

}  // namespace etnp
