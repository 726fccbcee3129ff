// Small helpers of Tensor / EValue / DType.
#include "core/evalue.h"
#include "util/compiler.h"

namespace etnp {

std::string scalar_type_name(int code) {
  if (dtype_supported(code)) return dtype_name((DType)code);
  switch (code) {
    case 8: return "complex32"; case 9: return "complex64"; case 10: return "complex128";
    case 12: return "qint8"; case 13: return "quint8"; case 14: return "qint32";
    case 16: return "quint4x2"; case 17: return "quint2x4"; case 22: return "bits16";
    case 23: return "float8_e5m2"; case 24: return "float8_e4m3fn"; case 25: return "float8_e5m2fnuz";
    case 26: return "float8_e4m3fnuz"; case 27: return "uint16"; case 28: return "uint32"; case 29: return "uint64";
  }
  return "ScalarType(" + std::to_string(code) + ")";
}

void throw_complex_element() {
  throw_exec("complex tensors are only supported by the FFT, conj_physical, view_as_real and layout kernels");
}

const char* tag_name(Tag t) {
  switch (t) {
    case Tag::None: return "None"; case Tag::Int: return "Int"; case Tag::Bool: return "Bool";
    case Tag::Double: return "Double"; case Tag::Tensor: return "Tensor"; case Tag::String: return "String";
    case Tag::IntList: return "IntList"; case Tag::DoubleList: return "DoubleList"; case Tag::BoolList: return "BoolList";
    case Tag::TensorList: return "TensorList"; case Tag::OptTensorList: return "OptionalTensorList";
  }
  return "?";
}

std::string Tensor::shape_str() const {
  std::string s = "[";
  for (int i = 0; i < dim; i++) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

void resize_tensor(Tensor& t, int ndim, const int64_t* sizes) {
  // (every kernel sizes its outputs here before writing them: a program that names one of its
  // constants as an output would otherwise have it overwritten - the next call, and every
  // method sharing the constant, then computing with other weights)
  if (t.is_constant) throw_exec("output tensor " + t.shape_str() + " is a constant of the program (corrupt program?)");
  if (ndim < 0 || ndim > kMaxDims) throw_exec("output rank " + std::to_string(ndim) + " is not supported");
  bool same = ndim == t.dim;
  for (int i = 0; same && i < ndim; i++) same = sizes[i] == t.sizes[i];
  if (same) return;
  int64_t numel = 1, span = 1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0 || etnp::mul_overflow(numel, sizes[i], &numel) ||
        etnp::mul_overflow(span, sizes[i] ? sizes[i] : 1, &span))  // strides multiply non-zero sizes
      throw_exec("invalid output size");
  }
  Tensor want = t;
  want.dim = ndim;
  for (int i = 0; i < ndim; i++) want.sizes[i] = sizes[i];
  if (ndim != t.dim)
    throw_exec("output has rank " + std::to_string(t.dim) + " " + t.shape_str() + " but the op produces " + want.shape_str());
  if (t.dynamism == Dynamism::Static)
    throw_exec("static output of shape " + t.shape_str() + " cannot hold a result of shape " + want.shape_str());
  if ((size_t)numel * t.elem_size() > t.capacity)
    throw_exec("result of shape " + want.shape_str() + " exceeds the planned memory of its output (" +
               std::to_string(t.capacity) + " bytes)");
  for (int i = 0; i < ndim; i++) t.sizes[i] = sizes[i];
  t.compute_strides();
}

}  // namespace etnp
