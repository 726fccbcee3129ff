// upsample_nearest2d.vec_out and upsample_bilinear2d.vec_out (NCHW).
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

struct Resize {
  int64_t planes, H, W, OH, OW;
  double sh, sw;  // source = dst * s (scales as PyTorch computes them)
};
Resize plan(KernelContext& ctx, EValue** a, int size_arg, int scale_arg, const Tensor& x, Tensor& out) {
  if (x.dim != 4) throw_exec("upsample expects a 4-D NCHW input");
  check_contiguous(x, "upsample input");
  Resize r{x.sizes[0] * x.sizes[1], x.sizes[2], x.sizes[3], 0, 0, 0, 0};
  auto os = int_list_arg(ctx, a, size_arg);
  const EValue* sc = a[scale_arg];
  double fh = 0, fw = 0;
  if (!os.empty()) {
    if (os.size() != 2) throw_exec("upsample: output_size must have 2 entries");
    r.OH = os[0]; r.OW = os[1];
  } else if (sc->tag == Tag::DoubleList && sc->doubles.size() == 2) {
    fh = sc->doubles[0]; fw = sc->doubles[1];
    r.OH = f2i(std::floor(r.H * fh)); r.OW = f2i(std::floor(r.W * fw));
  } else {
    throw_exec("upsample: neither output_size nor scale_factors given");
  }
  if (r.OH <= 0 || r.OW <= 0) throw_exec("upsample: output would be empty");
  r.sh = fh > 0 ? 1.0 / fh : (double)r.H / r.OH;
  r.sw = fw > 0 ? 1.0 / fw : (double)r.W / r.OW;
  resize(out, {x.sizes[0], x.sizes[1], r.OH, r.OW});
  return r;
}

// upsample_nearest2d.vec_out(input, output_size?, scale_factors?, out)
void nearest_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 3);
  Resize r = plan(ctx, a, 1, 2, x, out);
  for (int64_t p = 0; p < r.planes; p++)
    for (int64_t oh = 0; oh < r.OH; oh++) {
      int64_t ih = std::min(f2i(std::floor(oh * r.sh)), r.H - 1);
      for (int64_t ow = 0; ow < r.OW; ow++) {
        int64_t iw = std::min(f2i(std::floor(ow * r.sw)), r.W - 1);
        store_f64(out.data, out.dtype, (p * r.OH + oh) * r.OW + ow, load_f64(x.data, x.dtype, (p * r.H + ih) * r.W + iw));
      }
    }
}

// upsample_bilinear2d.vec_out(input, output_size?, align_corners, scale_factors?, out)
void bilinear_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  bool align = bool_arg(a, 2);
  Tensor& out = tensor_arg(a, 4);
  Resize r = plan(ctx, a, 1, 3, x, out);
  auto src = [&](int64_t o, int64_t in, int64_t on, double s, int64_t& i0, int64_t& i1, double& l) {
    double v = align ? (on > 1 ? (double)o * (in - 1) / (on - 1) : 0.0) : std::max(0.0, (o + 0.5) * s - 0.5);
    i0 = std::min((int64_t)v, in - 1);
    i1 = std::min(i0 + 1, in - 1);
    l = v - (double)i0;
  };
  for (int64_t oh = 0; oh < r.OH; oh++) {
    int64_t h0, h1;
    double lh;
    src(oh, r.H, r.OH, r.sh, h0, h1, lh);
    for (int64_t ow = 0; ow < r.OW; ow++) {
      int64_t w0, w1;
      double lw;
      src(ow, r.W, r.OW, r.sw, w0, w1, lw);
      for (int64_t p = 0; p < r.planes; p++) {
        const int64_t b = p * r.H * r.W;
        double v = (1 - lh) * ((1 - lw) * load_f64(x.data, x.dtype, b + h0 * r.W + w0) + lw * load_f64(x.data, x.dtype, b + h0 * r.W + w1)) +
                   lh * ((1 - lw) * load_f64(x.data, x.dtype, b + h1 * r.W + w0) + lw * load_f64(x.data, x.dtype, b + h1 * r.W + w1));
        store_f64(out.data, out.dtype, (p * r.OH + oh) * r.OW + ow, v);
      }
    }
  }
}

}  // namespace

void register_upsample_kernels(KernelRegistry& r) {
  r.add("aten::upsample_nearest2d.vec_out", &nearest_kernel, "portable", 4);
  r.add("aten::upsample_bilinear2d.vec_out", &bilinear_kernel, "portable", 5);
}

}  // namespace etnp
