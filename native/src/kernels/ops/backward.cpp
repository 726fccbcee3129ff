// Gradient kernels: convolution_backward (input, weight and bias gradients of an N-d grouped,
// strided, dilated, padded convolution) and max_pool2d_with_indices_backward (the output
// gradient scattered back to the positions the forward pass picked).
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

std::vector<int64_t> per_dim(const std::vector<int64_t>& v, int n, int64_t def, const char* what) {
  if (v.empty()) return std::vector<int64_t>((size_t)n, def);
  if (v.size() == 1) return std::vector<int64_t>((size_t)n, v[0]);
  if ((int)v.size() != n) throw_exec(std::string("convolution_backward: ") + what + " has the wrong length");
  return v;
}
bool mask_bit(const EValue* m, int i) {
  if (m->tag == Tag::BoolList) return (size_t)i < m->bools.size() && m->bools[(size_t)i];
  throw_exec(std::string("convolution_backward: output_mask must be a bool list, got ") + tag_name(m->tag));
}
Tensor* opt_out(EValue** a, int i) { return a[i]->tag == Tag::Tensor ? &a[i]->t : nullptr; }

// convolution_backward.out(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
// transposed, output_padding, groups, output_mask, out0, out1, out2)
void convolution_backward_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &go = tensor_arg(a, 0), &x = tensor_arg(a, 1), &w = tensor_arg(a, 2);
  if (bool_arg(a, 7)) throw_exec("convolution_backward: transposed convolutions are not supported");
  int64_t groups = int_arg(a, 9);
  int nsp = x.dim - 2;
  if (nsp < 1 || nsp > 3 || w.dim != x.dim || go.dim != x.dim)
    throw_exec("convolution_backward: expected 3-5-d input, weight and grad_output of one rank");
  auto st = per_dim(int_list_arg(ctx, a, 4), nsp, 1, "stride"), pd = per_dim(int_list_arg(ctx, a, 5), nsp, 0, "padding"),
       dl = per_dim(int_list_arg(ctx, a, 6), nsp, 1, "dilation");
  int64_t N = x.sizes[0], Cin = x.sizes[1], Cout = w.sizes[0];
  if (groups <= 0 || Cin % groups || Cout % groups || w.sizes[1] != Cin / groups)
    throw_exec("convolution_backward: weight " + w.shape_str() + " does not fit input " + x.shape_str() + " with " +
               std::to_string(groups) + " groups");
  if (go.sizes[0] != N || go.sizes[1] != Cout) throw_exec("convolution_backward: grad_output " + go.shape_str() + " does not match");
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1};
  for (int d = 0; d < nsp; d++) {
    I[d] = x.sizes[2 + d];
    K[d] = w.sizes[2 + d];
    O[d] = go.sizes[2 + d];
    if (st[d] <= 0 || dl[d] <= 0 || pd[d] < 0) throw_exec("convolution_backward: invalid stride, padding or dilation");
    const int64_t span = I[d] + 2 * pd[d] - dl[d] * (K[d] - 1) - 1;
    const int64_t want = span < 0 ? 0 : span / st[d] + 1;
    if (O[d] != want) throw_exec("convolution_backward: grad_output " + go.shape_str() + " does not match the convolution");
  }
  if (!is_floating(x.dtype) || go.dtype != x.dtype || w.dtype != x.dtype)
    throw_exec("convolution_backward: grad_output, input and weight must share a floating dtype");
  bool want_x = mask_bit(a[10], 0), want_w = mask_bit(a[10], 1), want_b = mask_bit(a[10], 2);
  Tensor *gx = want_x ? opt_out(a, 11) : nullptr, *gw = want_w ? opt_out(a, 12) : nullptr, *gb = want_b ? opt_out(a, 13) : nullptr;
  for (Tensor* t : {gx, gw, gb})
    if (t && t->dtype != x.dtype) throw_exec("convolution_backward: gradient dtype does not match the input's");
  if (gx) { resize(*gx, shape_of(x)); check_contiguous(*gx, "convolution_backward grad_input"); }
  if (gw) { resize(*gw, shape_of(w)); check_contiguous(*gw, "convolution_backward grad_weight"); }
  if (gb) {
    std::vector<int64_t> bs = opt_present(a, 3) ? int_list_arg(ctx, a, 3) : std::vector<int64_t>{Cout};
    if (bs.size() != 1 || bs[0] != Cout) throw_exec("convolution_backward: bias_sizes must be [out_channels]");
    resize(*gb, bs);
  }
  check_contiguous(x, "convolution_backward input");
  check_contiguous(w, "convolution_backward weight");
  check_contiguous(go, "convolution_backward grad_output");
  int64_t cig = Cin / groups, cog = Cout / groups;
  int64_t isz = I[0] * I[1] * I[2], ksz = K[0] * K[1] * K[2], osz = O[0] * O[1] * O[2];
  std::vector<double> dx(gx ? (size_t)x.numel() : 0), dw(gw ? (size_t)w.numel() : 0), db(gb ? (size_t)Cout : 0);
  for (int64_t n = 0; n < N; n++)
    for (int64_t co = 0; co < Cout; co++) {
      int64_t g = co / cog;
      for (int64_t o = 0; o < osz; o++) {
        double gv = load_f64(go.data, go.dtype, (n * Cout + co) * osz + o);
        if (gb) db[(size_t)co] += gv;
        if (gv == 0 || (!gx && !gw)) continue;
        int64_t oc[3] = {o / (O[1] * O[2]), (o / O[2]) % O[1], o % O[2]};
        for (int64_t k = 0; k < ksz; k++) {
          int64_t kc[3] = {k / (K[1] * K[2]), (k / K[2]) % K[1], k % K[2]}, ip = 0;
          bool inside = true;
          for (int d = 0; d < 3 && inside; d++) {
            int64_t p = d < nsp ? oc[d] * st[d] - pd[d] + kc[d] * dl[d] : 0;
            inside = p >= 0 && p < I[d];
            ip = ip * I[d] + p;
          }
          if (!inside) continue;
          for (int64_t ci = 0; ci < cig; ci++) {
            int64_t xi = (n * Cin + g * cig + ci) * isz + ip, wi = (co * cig + ci) * ksz + k;
            if (gx) dx[(size_t)xi] += gv * load_f64(w.data, w.dtype, wi);
            if (gw) dw[(size_t)wi] += gv * load_f64(x.data, x.dtype, xi);
          }
        }
      }
    }
  for (size_t i = 0; i < dx.size(); i++) store_f64(gx->data, gx->dtype, (int64_t)i, dx[i]);
  for (size_t i = 0; i < dw.size(); i++) store_f64(gw->data, gw->dtype, (int64_t)i, dw[i]);
  for (size_t i = 0; i < db.size(); i++) store_f64(gb->data, gb->dtype, (int64_t)i, db[i]);
}

// max_pool2d_with_indices_backward.grad_input(grad_output, self, kernel_size, stride, padding,
// dilation, ceil_mode, indices, grad_input): indices are flat positions within each H x W plane.
void max_pool2d_backward_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &go = tensor_arg(a, 0), &x = tensor_arg(a, 1), &idx = tensor_arg(a, 7);
  Tensor& gi = tensor_arg(a, 8);
  if (x.dim != 3 && x.dim != 4) throw_exec("max_pool2d_with_indices_backward: input must be 3-D or 4-D");
  if (go.dim != x.dim || idx.dim != x.dim) throw_exec("max_pool2d_with_indices_backward: grad_output and indices must have the input's rank");
  for (int k = 0; k < x.dim; k++)
    if (go.sizes[k] != idx.sizes[k] || (k < x.dim - 2 && go.sizes[k] != x.sizes[k]))
      throw_exec("max_pool2d_with_indices_backward: grad_output " + go.shape_str() + " and indices " + idx.shape_str() +
                 " do not match input " + x.shape_str());
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32) throw_exec("max_pool2d_with_indices_backward: indices must be int64");
  if (!is_floating(go.dtype) || gi.dtype != go.dtype || x.dtype != go.dtype)
    throw_exec("max_pool2d_with_indices_backward: grad_output, input and grad_input must share a floating dtype");
  resize_like(gi, x);
  check_contiguous(gi, "max_pool2d_with_indices_backward grad_input");
  check_contiguous(go, "max_pool2d_with_indices_backward grad_output");
  check_contiguous(idx, "max_pool2d_with_indices_backward indices");
  int64_t plane = x.sizes[x.dim - 2] * x.sizes[x.dim - 1], planes = prod(x, 0, x.dim - 2);
  int64_t per = go.sizes[x.dim - 2] * go.sizes[x.dim - 1];
  std::vector<double> acc((size_t)gi.numel(), 0.0);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t j = 0; j < per; j++) {
      int64_t k = load_i64(idx.data, idx.dtype, p * per + j);
      if (k < 0 || k >= plane) throw_exec("max_pool2d_with_indices_backward: index " + std::to_string(k) + " is outside the plane");
      acc[(size_t)(p * plane + k)] += load_f64(go.data, go.dtype, p * per + j);
    }
  for (size_t i = 0; i < acc.size(); i++) store_f64(gi.data, gi.dtype, (int64_t)i, acc[i]);
}

}  // namespace

void register_backward_kernels(KernelRegistry& r) {
  r.add("aten::convolution_backward.out", &convolution_backward_kernel, "portable", 14);
  r.add("aten::max_pool2d_with_indices_backward.grad_input", &max_pool2d_backward_kernel, "portable", 9);
}

}  // namespace etnp
