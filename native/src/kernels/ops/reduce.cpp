// Reductions: sum/mean/prod/amax/amin/max/min/argmax/argmin/any/all/var/std/logsumexp/norm
// over dims with keepdim, and cumulative sum/product.
#include <algorithm>
#include <vector>

#include "kernels/compute/row_extreme.h"
#include "kernels/compute/row_sums.h"
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

// The plan of a reduction: offsets of every kept position and of every reduced position.
struct Reduction {
  std::vector<int64_t> kept, reduced;
  std::vector<int64_t> out_shape;
};
// red[i]: whether dim i of x is reduced (no dims: all of them)
void reduced_dims(const Tensor& x, const Dims& dims, bool* red) {
  std::fill(red, red + kMaxDims, false);
  if (dims.empty()) std::fill(red, red + x.dim, true);
  for (auto d : dims) red[wrap_dim(d, x.dim)] = true;
}

Reduction plan(const Tensor& x, const Dims& dims, bool keepdim) {
  bool red[kMaxDims];
  reduced_dims(x, dims, red);
  Reduction r;
  for (int i = 0; i < x.dim; i++) {
    if (!red[i]) r.out_shape.push_back(x.sizes[i]);
    else if (keepdim) r.out_shape.push_back(1);
  }
  auto offsets = [&](bool want) {
    std::vector<int64_t> off{0};
    for (int i = 0; i < x.dim; i++) {
      if (red[i] != want) continue;
      std::vector<int64_t> next;
      next.reserve(off.size() * x.sizes[i]);
      for (auto o : off)
        for (int64_t j = 0; j < x.sizes[i]; j++) next.push_back(o + j * x.strides[i]);
      off.swap(next);
    }
    return off;
  };
  r.kept = offsets(false);
  r.reduced = offsets(true);
  return r;
}

// Whether contiguous x reduced over `dims` is `rows` rows of R contiguous elements (kept position
// k's at k * R: no kept dim larger than 1 after a reduced one larger than 1 - a norm's mean over
// the last dim, a mask's any), without plan()'s offset lists; the output's shape into shape / nd.
bool contiguous_rows(const Tensor& x, const Dims& dims, bool keepdim, int64_t* shape, int& nd,
                     int64_t& rows, int64_t& R) {
  bool red[kMaxDims];
  reduced_dims(x, dims, red);
  bool reduced_before = false;
  nd = 0, rows = 1, R = 1;
  for (int i = 0; i < x.dim; i++) {
    if (red[i]) {
      reduced_before = reduced_before || x.sizes[i] != 1;
      R *= x.sizes[i];
      if (keepdim) shape[nd++] = 1;
    } else {
      if (reduced_before && x.sizes[i] != 1) return false;
      rows *= x.sizes[i];
      shape[nd++] = x.sizes[i];
    }
  }
  return x.default_dim_order();
}

enum class Op { Sum, Mean, Prod, Max, Min, ArgMax, ArgMin, Any, All, LogSumExp };

void reduce(KernelContext& ctx, const Tensor& x, const Dims& dims, bool keepdim, Op op, Tensor& out) {
  const bool arg = op == Op::ArgMax || op == Op::ArgMin, extreme = arg || op == Op::Max || op == Op::Min;
  int64_t shape[kMaxDims], rows = 0, R = 0;
  int nd = 0;
  // rows of contiguous reduced elements: typed loops, the same arithmetic in the same order as the
  // generic loop at the end
  if (contiguous_rows(x, dims, keepdim, shape, nd, rows, R)) {
    resize_tensor(out, nd, shape);
    if (x.numel() == 0 && extreme && rows > 0 && out.numel()) throw_exec("cannot compute max/min of an empty tensor");
    if (x.dtype == DType::F32 && out.dtype == DType::F32 && (op == Op::Sum || op == Op::Mean)) {
      // as ExecuTorch 1.3.1's kernels, bit for bit (more accurate sums moved a static-int8
      // ShuffleNet's logits, requantized after its mean, off the reference runtime's): a sum over
      // one innermost dim (its optimized kernel) in 8 lanes, element j into lane j % 8 while whole
      // eights remain, the lanes then added in order and the rest one by one; every other sum and
      // every mean (the portable kernel) in float32, element after element, from the first
      // (row_sums_sequential_f32; the mean then / (float)R)
      const float* X = x.ptr<float>();
      float* Y = out.ptr<float>();
      bool innermost = op == Op::Sum && dims.n == 1;
      if (innermost) {
        const int64_t d = dims.d[0] < 0 ? dims.d[0] + x.dim : dims.d[0];
        for (int64_t i = d + 1; i < x.dim; i++) innermost = innermost && x.sizes[i] == 1;
      }
      if (innermost) {
        parallel(ctx, rows, 16, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; k++) {
            const float* row = X + k * R;
            float lane[8] = {};
            int64_t j = 0;
            for (; j + 8 <= R; j += 8)
              for (int l = 0; l < 8; l++) lane[l] += row[j + l];
            float sum = lane[0];
            for (int l = 1; l < 8; l++) sum += lane[l];
            for (; j < R; j++) sum += row[j];
            Y[k] = sum;
          }
        });
        return;
      }
      parallel(ctx, rows, 16, [&](int64_t b, int64_t e) {
        row_sums_sequential_f32(X + b * R, e - b, R, R, Y + b);
        if (op == Op::Mean)
          for (int64_t k = b; k < e; k++) Y[k] /= (float)R;
      });
      return;
    }
    // max / min / argmax / argmin of float32 rows: typed compares (the generic loop converts every
    // element through a dtype switch); the same rule - the first NaN wins, ties keep the first
    if (extreme && R > 0 && x.dtype == DType::F32 && (arg ? out.dtype == DType::I64 : out.dtype == DType::F32)) {
      const float* X = x.ptr<float>();
      const bool mx = op == Op::Max || op == Op::ArgMax;
      parallel(ctx, rows, std::max<int64_t>(1, 4096 / R), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; k++) {
          const float* row = X + k * R;
          const int64_t best = row_extreme_index(row, R, mx);
          if (arg) out.ptr<int64_t>()[k] = best;
          else out.ptr<float>()[k] = row[best];
        }
      });
      return;
    }
    if (x.dtype == DType::Bool && out.dtype == DType::Bool && (op == Op::Any || op == Op::All)) {
      const uint8_t* X = x.ptr<uint8_t>();
      uint8_t* Y = out.ptr<uint8_t>();
      for (int64_t k = 0; k < rows; k++) {
        const uint8_t* row = X + k * R;
        const bool all = op == Op::All;
        bool v = all;  // until an element decides it: a true one for any, a false one for all
        for (int64_t j = 0; j < R && v == all; j++) v = row[j] != 0;
        Y[k] = v;
      }
      return;
    }
  }
  Reduction r = plan(x, dims, keepdim);
  resize(out, r.out_shape);
  if (x.numel() == 0 && extreme && !r.kept.empty() && out.numel()) throw_exec("cannot compute max/min of an empty tensor");
  bool int_domain = !is_floating(x.dtype) && !is_floating(out.dtype) && (op == Op::Sum || op == Op::Prod);
  R = (int64_t)r.reduced.size();
  parallel(ctx, (int64_t)r.kept.size(), 16, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; k++) {
      int64_t base = r.kept[k];
      if (int_domain) {
        int64_t acc = op == Op::Sum ? 0 : 1;
        for (auto o : r.reduced) {
          int64_t v = load_i64(x.data, x.dtype, base + o);
          acc = op == Op::Sum ? (int64_t)((uint64_t)acc + (uint64_t)v) : (int64_t)((uint64_t)acc * (uint64_t)v);
        }
        store_i64(out.data, out.dtype, k, acc);
        continue;
      }
      double acc = 0;
      int64_t best = 0;
      switch (op) {
        case Op::Sum: case Op::Mean:
          if (x.dtype == DType::F32 && out.dtype == DType::F32) {  // (float32 adds, as the rows above)
            const float* X = x.ptr<float>();
            float f = R ? X[base + r.reduced[0]] : 0.f;  // (from the first element: a -0 stays -0)
            for (int64_t j = 1; j < R; j++) f += X[base + r.reduced[(size_t)j]];
            acc = op == Op::Mean ? f / (float)R : f;
            break;
          }
          for (auto o : r.reduced) acc += load_f64(x.data, x.dtype, base + o);
          if (op == Op::Mean) acc = R ? acc / (double)R : NAN;
          break;
        case Op::Prod:
          acc = 1;
          for (auto o : r.reduced) acc *= load_f64(x.data, x.dtype, base + o);
          break;
        case Op::Max: case Op::Min: case Op::ArgMax: case Op::ArgMin: {
          bool mx = op == Op::Max || op == Op::ArgMax;
          acc = load_f64(x.data, x.dtype, base + r.reduced[0]);
          for (int64_t j = 1; j < R && !std::isnan(acc); j++) {
            double v = load_f64(x.data, x.dtype, base + r.reduced[j]);
            if (std::isnan(v) || (mx ? v > acc : v < acc)) { acc = v; best = j; }
          }
          break;
        }
        case Op::Any:
          for (auto o : r.reduced) if (load_f64(x.data, x.dtype, base + o) != 0) { acc = 1; break; }
          break;
        case Op::All:
          acc = 1;
          for (auto o : r.reduced) if (load_f64(x.data, x.dtype, base + o) == 0) { acc = 0; break; }
          break;
        case Op::LogSumExp: {
          double m = -INFINITY;
          for (auto o : r.reduced) m = std::max(m, load_f64(x.data, x.dtype, base + o));
          for (auto o : r.reduced) acc += std::exp(load_f64(x.data, x.dtype, base + o) - m);
          acc = std::isinf(m) ? m : m + std::log(acc);
          break;
        }
      }
      if (op == Op::ArgMax || op == Op::ArgMin) store_i64(out.data, out.dtype, k, best);
      else store_f64(out.data, out.dtype, k, acc);
    }
  });
}

Dims opt_dims(KernelContext& ctx, EValue** a, int i) {
  Dims d;
  int_list_into(ctx, a, i, d);
  return d;
}

// sum.IntList_out / mean.out (self, dim?, keepdim, dtype?, out)
template <Op OP>
void reduce_dims_kernel(KernelContext& ctx, EValue** a, size_t) {
  reduce(ctx, tensor_arg(a, 0), opt_dims(ctx, a, 1), bool_arg(a, 2), OP, tensor_arg(a, 4));
}
// sum.dtype_out / mean.dtype_out / prod.out (self, dtype?, out): full reduction
template <Op OP>
void reduce_all_kernel(KernelContext& ctx, EValue** a, size_t) { reduce(ctx, tensor_arg(a, 0), {}, false, OP, tensor_arg(a, 2)); }
// amax.out / amin.out / any.dims_out / all.dims_out (self, dim, keepdim, out)
template <Op OP>
void reduce_dims3_kernel(KernelContext& ctx, EValue** a, size_t) {
  reduce(ctx, tensor_arg(a, 0), opt_dims(ctx, a, 1), bool_arg(a, 2), OP, tensor_arg(a, 3));
}
// any.all_out / all.all_out / max.unary_out / min.unary_out (self, out)
template <Op OP>
void reduce_unary_kernel(KernelContext& ctx, EValue** a, size_t) { reduce(ctx, tensor_arg(a, 0), {}, false, OP, tensor_arg(a, 1)); }
// prod.int_out (self, dim, keepdim, dtype?, out)
void prod_dim_kernel(KernelContext& ctx, EValue** a, size_t) {
  reduce(ctx, tensor_arg(a, 0), {int_arg(a, 1)}, bool_arg(a, 2), Op::Prod, tensor_arg(a, 4));
}
// argmax.out / argmin.out (self, dim?, keepdim, out)
template <Op OP>
void arg_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 3);
  if (!opt_present(a, 1)) {  // over the flattened tensor
    Tensor flat = x;
    check_contiguous(x, "argmax input");
    flat.dim = 1; flat.sizes[0] = x.numel(); flat.compute_strides();
    reduce(ctx, flat, {0}, false, OP, out);
    if (bool_arg(a, 2)) throw_exec("argmax with keepdim and no dim is not supported");
    return;
  }
  reduce(ctx, x, {int_arg(a, 1)}, bool_arg(a, 2), OP, out);
}
// max.dim_max / min.dim_min (self, dim, keepdim, values, indices)
template <bool MAX>
void max_dim_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t d = int_arg(a, 1);
  bool keep = bool_arg(a, 2);
  reduce(ctx, x, {d}, keep, MAX ? Op::Max : Op::Min, tensor_arg(a, 3));
  reduce(ctx, x, {d}, keep, MAX ? Op::ArgMax : Op::ArgMin, tensor_arg(a, 4));
}
// logsumexp.out(self, dim, keepdim, out)
void logsumexp_kernel(KernelContext& ctx, EValue** a, size_t) {
  reduce(ctx, tensor_arg(a, 0), opt_dims(ctx, a, 1), bool_arg(a, 2), Op::LogSumExp, tensor_arg(a, 3));
}

// var / std with a correction (Bessel's by default)
template <bool STD>
void variance(KernelContext& ctx, const Tensor& x, const Dims& dims, double correction, bool keepdim, Tensor& out) {
  Reduction r = plan(x, dims, keepdim);
  resize(out, r.out_shape);
  double R = (double)r.reduced.size();
  for (size_t k = 0; k < r.kept.size(); k++) {
    double s = 0, ss = 0;
    for (auto o : r.reduced) s += load_f64(x.data, x.dtype, r.kept[k] + o);
    double m = s / R;
    for (auto o : r.reduced) { double d = load_f64(x.data, x.dtype, r.kept[k] + o) - m; ss += d * d; }
    double v = ss / std::max(0.0, R - correction);
    store_f64(out.data, out.dtype, (int64_t)k, STD ? std::sqrt(v) : v);
  }
}
// var.correction_out / std.correction_out (self, dim?, correction?, keepdim, out)
template <bool STD>
void var_correction_kernel(KernelContext& ctx, EValue** a, size_t) {
  double c = opt_present(a, 2) ? double_arg(a, 2) : 1.0;
  variance<STD>(ctx, tensor_arg(a, 0), opt_dims(ctx, a, 1), c, bool_arg(a, 3), tensor_arg(a, 4));
}
// var.out / std.out (self, dim?, unbiased, keepdim, out)
template <bool STD>
void var_kernel(KernelContext& ctx, EValue** a, size_t) {
  variance<STD>(ctx, tensor_arg(a, 0), opt_dims(ctx, a, 1), bool_arg(a, 2) ? 1.0 : 0.0, bool_arg(a, 3), tensor_arg(a, 4));
}

// linalg_vector_norm.out(self, ord, dim?, keepdim, dtype?, out)
void vector_norm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  double ord = double_arg(a, 1);
  Reduction r = plan(x, opt_dims(ctx, a, 2), bool_arg(a, 3));
  Tensor& out = tensor_arg(a, 5);
  resize(out, r.out_shape);
  for (size_t k = 0; k < r.kept.size(); k++) {
    double acc = 0;
    for (auto o : r.reduced) {
      double v = std::fabs(load_f64(x.data, x.dtype, r.kept[k] + o));
      if (std::isinf(ord)) acc = ord > 0 ? std::max(acc, v) : (o == r.reduced[0] ? v : std::min(acc, v));
      else if (ord == 0) acc += v != 0;
      else acc += std::pow(v, ord);
    }
    if (!std::isinf(ord) && ord != 0) acc = std::pow(acc, 1.0 / ord);
    store_f64(out.data, out.dtype, (int64_t)k, acc);
  }
}

// cumsum.out / cumprod.out (self, dim, dtype?, out)
template <bool PROD>
void cumulative_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  Tensor& out = tensor_arg(a, 3);
  check_contiguous(x, "cumsum input");
  resize_like(out, x);
  int64_t outer = prod(x, 0, d), len = x.dim ? x.sizes[d] : 1, inner = prod(x, d + 1, x.dim);
  bool fl = is_floating(out.dtype) || is_floating(x.dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double acc = PROD ? 1 : 0;
      int64_t iacc = PROD ? 1 : 0;
      for (int64_t k = 0; k < len; k++) {
        int64_t off = (o * len + k) * inner + i;
        if (fl) {
          double v = load_f64(x.data, x.dtype, off);
          acc = PROD ? acc * v : acc + v;
          store_f64(out.data, out.dtype, off, acc);
        } else {
          int64_t v = load_i64(x.data, x.dtype, off);
          iacc = PROD ? (int64_t)((uint64_t)iacc * (uint64_t)v) : (int64_t)((uint64_t)iacc + (uint64_t)v);
          store_i64(out.data, out.dtype, off, iacc);
        }
      }
    }
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::sum.IntList_out", &reduce_dims_kernel<Op::Sum>, P, 5);
  r.add("aten::sum.dtype_out", &reduce_all_kernel<Op::Sum>, P, 3);
  r.add("aten::mean.out", &reduce_dims_kernel<Op::Mean>, P, 5);
  r.add("aten::mean.dtype_out", &reduce_all_kernel<Op::Mean>, P, 3);
  r.add("aten::prod.int_out", &prod_dim_kernel, P, 5);
  r.add("aten::prod.out", &reduce_all_kernel<Op::Prod>, P, 3);
  r.add("aten::amax.out", &reduce_dims3_kernel<Op::Max>, P, 4);
  r.add("aten::amin.out", &reduce_dims3_kernel<Op::Min>, P, 4);
  r.add("aten::any.out", &reduce_dims3_kernel<Op::Any>, P, 4);
  r.add("aten::any.dims_out", &reduce_dims3_kernel<Op::Any>, P, 4);
  r.add("aten::any.all_out", &reduce_unary_kernel<Op::Any>, P, 2);
  r.add("aten::all.out", &reduce_dims3_kernel<Op::All>, P, 4);
  r.add("aten::all.dims_out", &reduce_dims3_kernel<Op::All>, P, 4);
  r.add("aten::all.all_out", &reduce_unary_kernel<Op::All>, P, 2);
  r.add("aten::max.unary_out", &reduce_unary_kernel<Op::Max>, P, 2);
  r.add("aten::min.unary_out", &reduce_unary_kernel<Op::Min>, P, 2);
  r.add("aten::max.dim_max", &max_dim_kernel<true>, P, 5);
  r.add("aten::min.dim_min", &max_dim_kernel<false>, P, 5);
  r.add("aten::argmax.out", &arg_kernel<Op::ArgMax>, P, 4);
  r.add("aten::argmin.out", &arg_kernel<Op::ArgMin>, P, 4);
  r.add("aten::logsumexp.out", &logsumexp_kernel, P, 4);
  r.add("aten::var.correction_out", &var_correction_kernel<false>, P, 5);
  r.add("aten::std.correction_out", &var_correction_kernel<true>, P, 5);
  r.add("aten::var.out", &var_kernel<false>, P, 5);
  r.add("aten::std.out", &var_kernel<true>, P, 5);
  r.add("aten::linalg_vector_norm.out", &vector_norm_kernel, P, 6);
  r.add("aten::cumsum.out", &cumulative_kernel<false>, P, 4);
  r.add("aten::cumprod.out", &cumulative_kernel<true>, P, 4);
}

}  // namespace etnp
