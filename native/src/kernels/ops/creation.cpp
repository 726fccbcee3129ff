// Tensor creation kernels: full/zeros/ones(_like), scalar_tensor, arange, fill.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

void fill(Tensor& out, const EValue* v) {
  int64_t n = out.numel();
  bool fl = is_floating(out.dtype) || v->tag == Tag::Double;
  double d = v->tag == Tag::Double ? v->d : (double)v->i;
  int64_t i = v->tag == Tag::Double ? f2i(v->d) : v->i;
  if (v->tag == Tag::Tensor) {
    d = load_f64(v->t.data, v->t.dtype, 0);
    i = load_i64(v->t.data, v->t.dtype, 0);
    fl = is_floating(out.dtype);
  }
  if (n == 0) return;
  if (fl && is_floating(out.dtype)) store_f64(out.data, out.dtype, 0, d);
  else store_i64(out.data, out.dtype, 0, fl ? f2i(d) : i);
  // the first element repeated, by its width (a memcpy call an element was 2 ns each)
  auto repeat = [&](auto* p) {
    std::remove_pointer_t<decltype(p)> v;
    std::memcpy(&v, p, sizeof v);
    std::fill(p + 1, p + n, v);
  };
  switch (out.elem_size()) {
    case 1: repeat((uint8_t*)out.data); break;
    case 2: repeat((uint16_t*)out.data); break;
    case 4: repeat((uint32_t*)out.data); break;
    case 8: repeat((uint64_t*)out.data); break;
    default: {
      const size_t es = out.elem_size();
      for (int64_t k = 1; k < n; k++) std::memcpy((uint8_t*)out.data + k * es, out.data, es);
    }
  }
}

// full.out(size, fill_value, out)
void full_kernel(KernelContext& ctx, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 2);
  resize(out, int_list_arg(ctx, a, 0));
  fill(out, a[1]);
}
// zeros.out / ones.out (size, out)
template <int V>
void const_kernel(KernelContext& ctx, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 1);
  resize(out, int_list_arg(ctx, a, 0));
  EValue v;
  v.tag = Tag::Int;
  v.i = V;
  fill(out, &v);
}
// full_like.out(self, fill_value, memory_format?, out)
void full_like_kernel(KernelContext&, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 3);
  resize(out, shape_of(tensor_arg(a, 0)));
  fill(out, a[1]);
}
// zeros_like.out / ones_like.out (self, memory_format?, out)
template <int V>
void const_like_kernel(KernelContext&, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 2);
  resize(out, shape_of(tensor_arg(a, 0)));
  EValue v;
  v.tag = Tag::Int;
  v.i = V;
  fill(out, &v);
}
// fill.Scalar_out / fill.Tensor_out (self, value, out)
void fill_kernel(KernelContext&, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 2);
  resize(out, shape_of(tensor_arg(a, 0)));
  fill(out, a[1]);
}
// scalar_tensor.out(s, out)
void scalar_tensor_kernel(KernelContext&, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 1);
  resize(out, {});
  fill(out, a[0]);
}
void arange_impl(double start, double end, double step, Tensor& out) {
  if (step == 0) throw_exec("arange: step must be nonzero");
  double n = std::ceil((end - start) / step);
  if (!(n >= 0) || n > 1e12) throw_exec("arange: invalid range");
  resize(out, {(int64_t)n});
  for (int64_t i = 0; i < (int64_t)n; i++) store_f64(out.data, out.dtype, i, start + step * (double)i);
}
// arange.out(end, out) / arange.start_out(start, end, step, out)
void arange_kernel(KernelContext&, EValue** a, size_t) { arange_impl(0, double_arg(a, 0), 1, tensor_arg(a, 1)); }
void arange_start_kernel(KernelContext&, EValue** a, size_t) {
  arange_impl(double_arg(a, 0), double_arg(a, 1), double_arg(a, 2), tensor_arg(a, 3));
}

}  // namespace

void register_creation_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::full.out", &full_kernel, P, 3);
  r.add("aten::zeros.out", &const_kernel<0>, P, 2);
  r.add("aten::ones.out", &const_kernel<1>, P, 2);
  r.add("aten::full_like.out", &full_like_kernel, P, 4);
  r.add("aten::zeros_like.out", &const_like_kernel<0>, P, 3);
  r.add("aten::ones_like.out", &const_like_kernel<1>, P, 3);
  r.add("aten::fill.Scalar_out", &fill_kernel, P, 3);
  r.add("aten::fill.Tensor_out", &fill_kernel, P, 3);
  r.add("aten::scalar_tensor.out", &scalar_tensor_kernel, P, 2);
  r.add("aten::arange.out", &arange_kernel, P, 2);
  r.add("aten::arange.start_out", &arange_start_kernel, P, 4);
}

}  // namespace etnp
