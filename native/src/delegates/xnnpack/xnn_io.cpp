// The XNNPACK delegate's inputs and outputs: the ExecuTorch tensors bound to its graph values,
// checked (datatype, dim order, shape within the serialized bounds) and converted on the way in
// (float32 read in place where the graph allows, float16 widened, integers dequantized per tensor)
// and on the way out (xnn_executor.cpp calls them around each call).
#include "delegates/xnnpack/xnn_io.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/compute/half_convert.h"
#include "kernels/kernel_util.h"

namespace etnp::xnn {
namespace {

// The shape a bound tensor has in the graph's layout: its sizes, or for a channels-last (NHWC
// dim order) 4-D tensor, N, H, W, C - the order its bytes are in, which is the graph's.
std::vector<int64_t> graph_shape(const Tensor& t, const char* what, size_t k) {
  static const uint8_t kChannelsLast[4] = {0, 2, 3, 1};
  if (t.default_dim_order()) return shape_of(t);
  if (t.dim == 4 && std::equal(t.dim_order, t.dim_order + 4, kChannelsLast))
    return {t.sizes[0], t.sizes[2], t.sizes[3], t.sizes[1]};
  throw_exec(std::string("XNNPACK delegate ") + what + " " + std::to_string(k) +
             ": only contiguous and channels-last dim orders are supported");
}
// The dtype a tensor bound to graph value `v` must have: a mismatch means the program binds
// the wrong tensor (or is corrupt) and would compute garbage, so it is an error.
void check_dtype(const Tensor& t, const Value& v, const char* what, size_t k) {
  bool ok;
  switch (v.dtype) {
    case FP32: case PFP32: ok = t.dtype == DType::F32; break;
    case FP16: ok = t.dtype == DType::F16; break;
    case BF16: ok = t.dtype == DType::BF16; break;
    case QINT8: case QCINT8: case QDINT8: case QPINT8: ok = t.dtype == DType::I8; break;
    case QUINT8: ok = t.dtype == DType::U8; break;
    case INT32: case QINT32: case QCINT32: ok = t.dtype == DType::I32 || t.dtype == DType::I64; break;
    default: ok = false;
  }
  if (!ok)
    throw_exec(std::string("XNNPACK delegate ") + what + " " + std::to_string(k) + ": a " + dtype_name(t.dtype) +
               " tensor is bound to a graph value of XNNPACK datatype " + std::to_string(v.dtype));
}
std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

void load_input(EValue& e, Value& v, size_t k, bool borrow) {
  if (e.tag != Tag::Tensor) throw_exec("XNNPACK delegate input " + std::to_string(k) + " is not a tensor");
  const Tensor& t = e.t;
  check_dtype(t, v, "input", k);
  std::vector<int64_t> shape = graph_shape(t, "input", k);
  if (shape.size() == v.dims.size()) {
    // serialized dims are the shape, or its upper bounds for dynamic inputs
    for (size_t d = 0; d < shape.size(); d++)
      if (shape[d] > v.dims[d])
        throw_exec("XNNPACK delegate input " + std::to_string(k) + ": shape " + dims_str(shape) +
                   " exceeds the graph value's " + dims_str(v.dims));
  } else {  // e.g. a 0-d scalar tensor the graph holds as [1]: same elements, graph's shape
    int64_t want = 1;
    for (auto d : v.dims) want *= d;
    if (want != t.numel())
      throw_exec("XNNPACK delegate input " + std::to_string(k) + ": shape " + t.shape_str() + " does not match the graph's " +
                 dims_str(v.dims));
    shape = v.dims;
  }
  int64_t n = t.numel();
  // (a value bound twice - a corrupt program's input list - must not keep the first tensor's
  // pointer with the second's shape: every binding sets or clears it)
  v.raw = nullptr;
  if (t.dtype == DType::F32 && borrow && n > 0) {  // read in place: the value's own buffer is not grown
    v.shape = shape;
    v.raw = (const float*)t.data;
    return;
  }
  ensure_shape(v, shape);
  float* d = v.data.data();
  if (t.dtype == DType::F32) {
    copy_floats(d, (const float*)t.data, n);
  } else if (t.dtype == DType::F16) {
    half_to_float_n((const uint16_t*)t.data, d, n);
  } else if (is_floating(t.dtype)) {
    for (int64_t i = 0; i < n; i++) d[i] = (float)load_f64(t.data, t.dtype, i);
  } else {  // integer data: quantized per tensor, or plain integers
    float s = v.quant == Quant::PerTensor ? v.scale : 1.f, z = v.quant == Quant::PerTensor ? (float)v.zero_point : 0.f;
    for (int64_t i = 0; i < n; i++) d[i] = ((float)load_i64(t.data, t.dtype, i) - z) * s;
  }
}
void store_output(const Value& v, EValue& e, size_t k) {
  if (e.tag != Tag::Tensor) throw_exec("XNNPACK delegate output " + std::to_string(k) + " is not a tensor");
  Tensor& t = e.t;
  check_dtype(t, v, "output", k);
  std::vector<int64_t> shape = v.shape;
  if (!t.default_dim_order()) {  // channels-last: the value's NHWC shape is the tensor's N, H, W, C
    graph_shape(t, "output", k);
    if (shape.size() != 4)
      throw_exec("XNNPACK delegate output " + std::to_string(k) + ": a channels-last tensor is bound to a " +
                 std::to_string(shape.size()) + "-D graph value");
    shape = {v.shape[0], v.shape[3], v.shape[1], v.shape[2]};
  }
  if ((size_t)t.dim != shape.size() && t.numel() == v.numel()) {
    // e.g. a 0-d scalar output the graph holds as [1] (as for inputs): same elements, the tensor's shape
  } else {
    resize_tensor(t, (int)shape.size(), shape.data());
  }
  int64_t n = t.numel();
  if (n != v.numel()) throw_exec("XNNPACK delegate output " + std::to_string(k) + ": size mismatch");
  const float* d = v.data.data();
  if (t.dtype == DType::F32) {
    if (d != t.data) copy_floats((float*)t.data, d, n);  // (bound: written in place)
  } else if (t.dtype == DType::F16) {
    float_to_half_n(d, (uint16_t*)t.data, n);
  } else if (is_floating(t.dtype)) {
    for (int64_t i = 0; i < n; i++) store_f64(t.data, t.dtype, i, d[i]);
  } else {
    double s = v.quant == Quant::PerTensor ? v.scale : 1.0, z = v.quant == Quant::PerTensor ? v.zero_point : 0;
    for (int64_t i = 0; i < n; i++) store_i64(t.data, t.dtype, i, f2i(std::nearbyint(d[i] / s + z)));
  }
}

}  // namespace etnp::xnn
