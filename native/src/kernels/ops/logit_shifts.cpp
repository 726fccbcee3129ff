// Elementwise ops with a scalar operand: logit (with an optional eps clamp) and the bitwise
// shifts of an integer tensor by a scalar count (torch's rules for counts outside the width).
#include <type_traits>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

// logit.out(self, eps?, out): log(z / (1 - z)), z = clamp(self, eps, 1 - eps) when eps is given.
void logit_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  bool has_eps = opt_present(a, 1);
  double eps = has_eps ? double_arg(a, 1) : 0.0;
  Tensor& out = tensor_arg(a, 2);
  if (!is_floating(out.dtype)) throw_exec(std::string("logit: output dtype ") + dtype_name(out.dtype) + " is not floating point");
  if (is_complex(x.dtype)) throw_exec("logit: complex input is not supported");
  resize_like(out, x);
  const Tensor* ins[1] = {&x};
  for_each_broadcast(out, ins, 1, [&](int64_t o, const int64_t* off) {
    double z = load_f64(x.data, x.dtype, off[0]);
    if (has_eps) z = z < eps ? eps : (z > 1 - eps ? 1 - eps : z);
    store_f64(out.data, out.dtype, o, std::log(z / (1 - z)));
  });
}

// The count is first converted to the tensor's type (a wrapped scalar), as torch does; counts
// that are negative or at least the width give 0 (left) or the sign fill (right).
template <typename T>
T shift_value(T v, int64_t count, bool left) {
  using U = typename std::make_unsigned<T>::type;
  using S = typename std::make_signed<T>::type;
  constexpr int bits = (int)sizeof(T) * 8;
  T b = (T)count;
  if (left) return ((S)b < 0 || (int64_t)b >= bits) ? T(0) : (T)(U)((U)v << b);
  constexpr int max_shift = bits - (std::is_signed<T>::value ? 1 : 0);
  if ((S)b < 0 || (int64_t)b >= max_shift) return std::is_signed<T>::value ? (T)(v >> (bits - 1)) : T(0);
  return (T)(v >> b);
}
template <typename T>
void shift_all(const Tensor& x, Tensor& out, int64_t n, bool left) {
  const Tensor* ins[1] = {&x};
  for_each_broadcast(out, ins, 1, [&](int64_t o, const int64_t* off) {
    T v;
    std::memcpy(&v, (const uint8_t*)x.data + off[0] * (int64_t)sizeof(T), sizeof(T));
    T r = shift_value<T>(v, n, left);
    std::memcpy((uint8_t*)out.data + o * (int64_t)sizeof(T), &r, sizeof(T));
  });
}

// bitwise_left_shift.Tensor_Scalar_out / bitwise_right_shift.Tensor_Scalar_out (self, other, out)
template <bool LEFT>
void shift_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 2);
  if (a[1]->tag != Tag::Int && a[1]->tag != Tag::Bool)
    throw_exec(std::string(ctx.op) + ": the shift count must be an integer scalar");
  int64_t n = a[1]->i;
  if (!is_integral(x.dtype, false)) throw_exec(std::string(ctx.op) + ": dtype " + dtype_name(x.dtype) + " is not an integer type");
  if (out.dtype != x.dtype) throw_exec(std::string(ctx.op) + ": output dtype does not match the input's");
  resize_like(out, x);
  switch (x.dtype) {
    case DType::U8: shift_all<uint8_t>(x, out, n, LEFT); break;
    case DType::I8: shift_all<int8_t>(x, out, n, LEFT); break;
    case DType::I16: shift_all<int16_t>(x, out, n, LEFT); break;
    case DType::I32: shift_all<int32_t>(x, out, n, LEFT); break;
    default: shift_all<int64_t>(x, out, n, LEFT); break;
  }
}

}  // namespace

void register_logit_shift_kernels(KernelRegistry& r) {
  r.add("aten::logit.out", &logit_kernel, "portable", 3);
  r.add("aten::bitwise_left_shift.Tensor_Scalar_out", &shift_kernel<true>, "portable", 3);
  r.add("aten::bitwise_right_shift.Tensor_Scalar_out", &shift_kernel<false>, "portable", 3);
}

}  // namespace etnp
