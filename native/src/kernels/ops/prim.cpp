// executorch_prim:: scalar ops on symbolic sizes, aten::sym_size, and et_view (a
// view that aliases its input's memory).
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

void set_number(EValue* out, bool fl, double d, int64_t i) {
  if (fl) { out->tag = Tag::Double; out->d = d; }
  else { out->tag = Tag::Int; out->i = i; }
}
bool is_double(const EValue* v) { return v->tag == Tag::Double; }

template <int OP>  // 0 add, 1 sub, 2 mul, 3 floordiv, 4 truediv, 5 mod
void arith(KernelContext&, EValue** a, size_t) {
  bool fl = is_double(a[0]) || is_double(a[1]) || OP == 4;
  double x = double_arg(a, 0), y = double_arg(a, 1);
  int64_t ix = fl ? 0 : int_arg(a, 0), iy = fl ? 0 : int_arg(a, 1);
  if (!fl && (OP == 3 || OP == 5) && iy == 0) throw_exec("integer division by zero");
  switch (OP) {
    case 0: set_number(a[2], fl, x + y, ix + iy); break;
    case 1: set_number(a[2], fl, x - y, ix - iy); break;
    case 2: set_number(a[2], fl, x * y, ix * iy); break;
    case 3: {
      int64_t q = fl ? 0 : ix / iy;
      if (!fl && (ix % iy != 0) && ((ix < 0) != (iy < 0))) q--;
      set_number(a[2], fl, std::floor(x / y), q);
      break;
    }
    case 4: set_number(a[2], true, x / y, 0); break;
    case 5: {
      int64_t r = fl ? 0 : ix % iy;
      if (!fl && r != 0 && ((r < 0) != (iy < 0))) r += iy;
      set_number(a[2], fl, std::fmod(x, y), r);
      break;
    }
  }
}
template <int OP>  // 0 eq, 1 ne, 2 gt, 3 lt, 4 ge, 5 le
void compare(KernelContext&, EValue** a, size_t) {
  double x = double_arg(a, 0), y = double_arg(a, 1);
  bool r = OP == 0 ? x == y : OP == 1 ? x != y : OP == 2 ? x > y : OP == 3 ? x < y : OP == 4 ? x >= y : x <= y;
  a[2]->tag = Tag::Bool;
  a[2]->i = r;
}
void neg(KernelContext&, EValue** a, size_t) { set_number(a[1], is_double(a[0]), -double_arg(a, 0), -int_arg(a, 0)); }
// aten::sym_size.int(self, dim, out)
void sym_size(KernelContext&, EValue** a, size_t) {
  const Tensor& t = tensor_arg(a, 0);
  a[2]->tag = Tag::Int;
  a[2]->i = t.sizes[wrap_dim(int_arg(a, 1), t.dim)];
}
// aten::sym_numel(self, out)
void sym_numel(KernelContext&, EValue** a, size_t) {
  a[1]->tag = Tag::Int;
  a[1]->i = tensor_arg(a, 0).numel();
}
// executorch_prim::et_view.default(self, size, out): out aliases self's memory.
void et_view(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Dims s;
  int_list_into(ctx, a, 1, s);
  view_shape_in_place(x, s);
  Tensor& out = tensor_arg(a, 2);
  check_contiguous(x, "et_view input");
  check_out_dtype(ctx, out, x.dtype);  // a view reinterprets nothing
  out.dim = s.n;
  for (int i = 0; i < out.dim; i++) { out.sizes[i] = s[i]; out.dim_order[i] = (uint8_t)i; }
  out.compute_strides();
  out.data = x.data;
  out.capacity = x.capacity;
}

}  // namespace

void register_prim_kernels(KernelRegistry& r) {
  const char* P = "prim";
  r.add("executorch_prim::add.Scalar", &arith<0>, P, 3);
  r.add("executorch_prim::sub.Scalar", &arith<1>, P, 3);
  r.add("executorch_prim::mul.Scalar", &arith<2>, P, 3);
  r.add("executorch_prim::floordiv.Scalar", &arith<3>, P, 3);
  r.add("executorch_prim::floordiv.int", &arith<3>, P, 3);
  r.add("executorch_prim::truediv.Scalar", &arith<4>, P, 3);
  r.add("executorch_prim::mod.Scalar", &arith<5>, P, 3);
  r.add("executorch_prim::mod.int", &arith<5>, P, 3);
  r.add("executorch_prim::eq.Scalar", &compare<0>, P, 3);
  r.add("executorch_prim::ne.Scalar", &compare<1>, P, 3);
  r.add("executorch_prim::gt.Scalar", &compare<2>, P, 3);
  r.add("executorch_prim::lt.Scalar", &compare<3>, P, 3);
  r.add("executorch_prim::ge.Scalar", &compare<4>, P, 3);
  r.add("executorch_prim::le.Scalar", &compare<5>, P, 3);
  r.add("executorch_prim::neg.Scalar", &neg, P, 2);
  r.add("executorch_prim::et_view.default", &et_view, P, 3);
  r.add("aten::sym_size.int", &sym_size, P, 3);
  r.add("aten::sym_numel", &sym_numel, P, 2);
}

}  // namespace etnp
