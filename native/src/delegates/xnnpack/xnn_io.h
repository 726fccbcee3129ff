// The XNNPACK delegate's inputs and outputs: the ExecuTorch tensors bound to its graph values,
// checked (datatype, dim order, shape within the serialized bounds) and converted on the way in
// (float32 read in place where the graph allows, float16 widened, integers dequantized per tensor)
// and on the way out (xnn_executor.cpp calls them around each call).
#pragma once
#include <cstddef>

#include "core/evalue.h"
#include "delegates/xnnpack/xnn_graph.h"

namespace etnp::xnn {

// Graph input k from e (a tensor): checked, then bound to v - read in place where `borrow` and
// the tensor is float32 (v.raw), else copied (converted) into v's buffer.
void load_input(EValue& e, Value& v, size_t k, bool borrow);
// Graph output k's value v into e (a tensor, resized to v's shape; written in place when bound).
void store_output(const Value& v, EValue& e, size_t k);

}  // namespace etnp::xnn
