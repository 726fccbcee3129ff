// EValue: a program value (None, scalar, tensor, string or list), as in program.fbs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "etnp.h"
#include "core/tensor.h"

namespace etnp {

enum class Tag : int8_t {
  None = ETNP_KIND_NONE, Int = ETNP_KIND_INT, Bool = ETNP_KIND_BOOL, Double = ETNP_KIND_DOUBLE,
  Tensor = ETNP_KIND_TENSOR, String = ETNP_KIND_STRING, IntList = ETNP_KIND_INT_LIST,
  DoubleList = ETNP_KIND_DOUBLE_LIST, BoolList = ETNP_KIND_BOOL_LIST, TensorList = ETNP_KIND_TENSOR_LIST,
  OptTensorList = ETNP_KIND_OPTIONAL_TENSOR_LIST,
};
const char* tag_name(Tag t);

struct EValue {
  Tag tag = Tag::None;
  int64_t i = 0;       // Int, Bool
  double d = 0;        // Double
  Tensor t;            // Tensor
  std::string s;       // String
  std::vector<int64_t> items;   // IntList / TensorList / OptTensorList: value indices (-1 = None)
  std::vector<double> doubles;  // DoubleList
  std::vector<uint8_t> bools;   // BoolList

  bool is_none() const { return tag == Tag::None; }
  bool is_tensor() const { return tag == Tag::Tensor; }
};

}  // namespace etnp
