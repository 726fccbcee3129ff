// Advanced-indexing helpers shared by index/index_put (index.cpp) and index_put_ (scatter.cpp).
#pragma once
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {

// Owns the int64 index tensors that boolean masks expand into.
struct MaskExpansion {
  std::vector<std::vector<int64_t>> data;
  std::vector<Tensor> tensors;
};
// Boolean (or uint8) masks in an index list become one int64 index tensor per dim they cover.
std::vector<Tensor*> expand_masks(const Tensor& x, const std::vector<Tensor*>& ids, MaskExpansion& store);
// The indexed positions as rows: result element (i, q) - i over the leading and indexed dims,
// q over the trailing ones - is x's element at offset row[i] + post[q] (following x's strides).
struct IndexRows {
  std::vector<int64_t> row, post;
  bool contiguous_post = false;  // post[q] == q (x's trailing dims contiguous)
};
void index_rows(const Tensor& x, const std::vector<Tensor*>& ids, IndexRows& rows, std::vector<int64_t>& out_shape);
// Element offsets into x (following its strides) of every indexed position, and the result shape.
void index_positions(const Tensor& x, const std::vector<Tensor*>& ids, std::vector<int64_t>& offsets,
                     std::vector<int64_t>& out_shape);

}  // namespace etnp
