// The views behind copy elision (kernels/ops/copy_views.h).
#include "kernels/ops/copy_views.h"

#include <cstdint>
#include <cstring>
#include <exception>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

enum class Copy { Same, Unsqueeze, SqueezeAll, SqueezeDim, SqueezeDims, View, Expand, Permute };

// s without its dims of size 1 that `drop` names (all of them where drop is null)
void drop_ones(Dims& s, const bool* drop) {
  Dims r;
  r.n = 0;
  for (int i = 0; i < s.n; i++)
    if (s[i] != 1 || (drop && !drop[i])) r[r.n++] = s[i];
  s = r;
}

// The result's shape where the copy leaves each element of x at its place in memory: false
// where it would move one (or its arguments are not what the op accepts: its kernel then runs,
// and says so).
template <Copy K>
bool same_bytes(KernelContext& ctx, EValue* const* a, Dims& s) {
  const Tensor& x = a[0]->t;
  s = dims_of(x);
  EValue** args = const_cast<EValue**>(a);
  if constexpr (K == Copy::Unsqueeze) {
    if (a[1]->tag != Tag::Int) return false;
    const int64_t nd = x.dim + 1, d0 = a[1]->i;
    if (x.dim >= kMaxDims || d0 < -nd || d0 >= nd) return false;
    const int64_t d = d0 < 0 ? d0 + nd : d0;
    for (int64_t i = x.dim; i > d; i--) s[(int)i] = s[(int)i - 1];
    s[(int)d] = 1;
    s.n = x.dim + 1;
  } else if constexpr (K == Copy::SqueezeAll) {
    drop_ones(s, nullptr);
  } else if constexpr (K == Copy::SqueezeDim || K == Copy::SqueezeDims) {
    Dims dims;
    if constexpr (K == Copy::SqueezeDim) {
      if (a[1]->tag != Tag::Int) return false;
      dims.n = 1, dims[0] = a[1]->i;
    } else {
      int_list_into(ctx, args, 1, dims);
    }
    if (x.dim == 0) return true;
    bool drop[kMaxDims] = {};
    for (int i = 0; i < dims.n; i++) {
      if (dims[i] < -x.dim || dims[i] >= x.dim) return false;
      drop[dims[i] < 0 ? dims[i] + x.dim : dims[i]] = true;
    }
    drop_ones(s, drop);
  } else if constexpr (K == Copy::View) {
    int_list_into(ctx, args, 1, s);
    view_shape_in_place(x, s);
  } else if constexpr (K == Copy::Expand) {
    Dims want;
    int_list_into(ctx, args, 1, want);
    if (want.n != x.dim) return false;
    for (int i = 0; i < x.dim; i++)
      if (want[i] != -1 && want[i] != x.sizes[i]) return false;
  } else if constexpr (K == Copy::Permute) {
    Dims p;
    int_list_into(ctx, args, 1, p);
    if (p.n != x.dim) return false;
    bool seen[kMaxDims] = {};
    int64_t last = -1;
    for (int i = 0; i < x.dim; i++) {
      if (p[i] < -x.dim || p[i] >= x.dim) return false;
      const int64_t d = p[i] < 0 ? p[i] + x.dim : p[i];
      if (seen[d]) return false;
      seen[d] = true;
      s[i] = x.sizes[d];
      if (s[i] == 1) continue;
      if (d < last) return false;  // (a dim of size > 1 moved past another)
      last = d;
    }
  }
  return true;
}

// CopyView::view (copy_views.h); out and its views have their planned bytes at entry
// (Method::run_fused).
template <Copy K>
bool view_instead(KernelContext& ctx, EValue* const* a) {
  const Tensor& x = a[0]->t;
  Tensor& y = a[2]->t;
  if (x.dtype != y.dtype || !x.default_dim_order() || !x.data || x.numel() == 0) return false;
  Dims s;
  try {
    if (!same_bytes<K>(ctx, a, s)) return false;
    // (the out tensor as the kernel's resize leaves it, or its refusal: a static shape kept, a
    // dynamic one within its planned bytes - its planned data and capacity are back in place)
    resize_tensor(y, s.n, s.d);
  } catch (const std::exception&) {
    return false;
  }
  if (y.numel() != x.numel()) return false;
  for (EValue* const* v = a + 3; *v; v++) {  // (each within the bytes x has in this call)
    const Tensor& t = (*v)->t;
    const int64_t at = (const uint8_t*)t.data - (const uint8_t*)y.data;
    if (at < 0 || (size_t)at + t.nbytes() > x.nbytes()) return false;
  }
  for (EValue* const* v = a + 3; *v; v++) {
    Tensor& t = (*v)->t;
    const size_t at = (size_t)((const uint8_t*)t.data - (const uint8_t*)y.data);
    t.data = (uint8_t*)x.data + at;
    t.capacity = x.capacity - at;
  }
  y.data = x.data;
  y.capacity = x.capacity;
  return true;
}

const CopyView kKinds[] = {
    // (clone's memory format: checked at load)
    {"aten::clone.out", 4, -1, &view_instead<Copy::Same>, &same_bytes<Copy::Same>, true},
    {"aten::alias_copy.out", 3, -1, &view_instead<Copy::Same>, &same_bytes<Copy::Same>, true},
    {"aten::unsqueeze_copy.out", 4, 1, &view_instead<Copy::Unsqueeze>, &same_bytes<Copy::Unsqueeze>, true},
    {"aten::squeeze_copy.out", 3, -1, &view_instead<Copy::SqueezeAll>, &same_bytes<Copy::SqueezeAll>, true},
    {"aten::squeeze_copy.dim_out", 4, 1, &view_instead<Copy::SqueezeDim>, &same_bytes<Copy::SqueezeDim>, true},
    {"aten::squeeze_copy.dims_out", 4, 1, &view_instead<Copy::SqueezeDims>, &same_bytes<Copy::SqueezeDims>, true},
    {"aten::view_copy.out", 4, 1, &view_instead<Copy::View>, &same_bytes<Copy::View>, true},
    {"aten::expand_copy.out", 5, 1, &view_instead<Copy::Expand>, &same_bytes<Copy::Expand>, false},
    {"aten::permute_copy.out", 4, 1, &view_instead<Copy::Permute>, &same_bytes<Copy::Permute>, false},
};

}  // namespace

const CopyView* copy_view_of(const char* op, size_t nargs) {
  for (const CopyView& k : kKinds)
    if (k.nargs == nargs && std::strcmp(op, k.op) == 0) return &k;
  return nullptr;
}

}  // namespace etnp
