// Random and uninitialised tensors: rand / randn (uniform [0, 1) and standard normal),
// native_dropout (scaled input and keep mask), empty / _empty_dim_order (shape only).
// The generator is one per thread, seeded with a fixed value: runs are reproducible, and the
// numbers follow the distributions without matching torch's generator.
#include <random>

#include "kernels/kernel_util.h"
#include "os/thread_slot.h"

namespace etnp {
namespace {

std::mt19937_64& generator() {
  struct Seeded {
    std::mt19937_64 g{0x5eed1234abcdULL};
  };
  ETNP_THREAD_LOCAL(Seeded, s);
  return s.g;
}
// A uniform double in [0, 1) from 53 random bits.
double uniform() { return (double)(generator()() >> 11) * (1.0 / 9007199254740992.0); }

void check_float_out(const Tensor& out, const char* op) {
  if (!is_floating(out.dtype)) throw_exec(std::string(op) + ": output dtype " + dtype_name(out.dtype) + " is not floating point");
}

// rand.out(size, out)
void rand_kernel(KernelContext& ctx, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 1);
  check_float_out(out, "rand");
  resize(out, int_list_arg(ctx, a, 0));
  for (int64_t i = 0, n = out.numel(); i < n; i++) {
    double u = uniform();
    store_f64(out.data, out.dtype, i, u);
    if (load_f64(out.data, out.dtype, i) >= 1.0) store_f64(out.data, out.dtype, i, 0.0);  // rounded up to 1 in a narrow type
  }
}

// randn.out(size, out): Box-Muller pairs.
void randn_kernel(KernelContext& ctx, EValue** a, size_t) {
  Tensor& out = tensor_arg(a, 1);
  check_float_out(out, "randn");
  resize(out, int_list_arg(ctx, a, 0));
  const double two_pi = 6.283185307179586;
  for (int64_t i = 0, n = out.numel(); i < n; i += 2) {
    double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
    double r = std::sqrt(-2.0 * std::log(u1));
    store_f64(out.data, out.dtype, i, r * std::cos(two_pi * u2));
    if (i + 1 < n) store_f64(out.data, out.dtype, i + 1, r * std::sin(two_pi * u2));
  }
}

// native_dropout.out(input, p, train?, out0, out1): each element kept with probability 1 - p and
// scaled by 1 / (1 - p); out1 is the bool keep mask. Not training: the input and an all-true mask.
void native_dropout_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  double p = double_arg(a, 1);
  bool train = !opt_present(a, 2) || bool_arg(a, 2);
  Tensor &out = tensor_arg(a, 3), &mask = tensor_arg(a, 4);
  if (!(p >= 0.0 && p <= 1.0)) throw_exec("native_dropout: p must be in [0, 1], got " + std::to_string(p));
  check_float_out(x, "native_dropout input");
  if (out.dtype != x.dtype) throw_exec("native_dropout: output dtype does not match the input's");
  if (mask.dtype != DType::Bool) throw_exec(std::string("native_dropout: mask dtype ") + dtype_name(mask.dtype) + " is not bool");
  check_contiguous(x, "native_dropout input");
  resize_like(out, x);
  resize_like(mask, x);
  check_contiguous(out, "native_dropout output");
  check_contiguous(mask, "native_dropout mask");
  double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  uint8_t* m = mask.ptr<uint8_t>();
  for (int64_t i = 0, n = x.numel(); i < n; i++) {
    bool keep = !train || uniform() >= p;
    double v = load_f64(x.data, x.dtype, i);
    m[i] = keep;
    store_f64(out.data, out.dtype, i, keep ? (train ? v * scale : v) : 0.0);
  }
}

// empty.out(size, memory_format?, out): the output takes the shape; its contents are unspecified.
void empty_kernel(KernelContext& ctx, EValue** a, size_t) { resize(tensor_arg(a, 2), int_list_arg(ctx, a, 0)); }

// dim_order_ops::_empty_dim_order.out(size, dim_order?, out): as empty, with a dim order that
// must be the output's own.
void empty_dim_order_kernel(KernelContext& ctx, EValue** a, size_t) {
  auto size = int_list_arg(ctx, a, 0);
  Tensor& out = tensor_arg(a, 2);
  if (opt_present(a, 1)) {
    auto order = int_list_arg(ctx, a, 1);
    if (order.size() != size.size()) throw_exec("_empty_dim_order: dim_order and size differ in length");
    for (size_t k = 0; k < order.size(); k++)
      if ((int)k >= out.dim || order[k] != out.dim_order[k]) throw_exec("_empty_dim_order: dim_order does not match the output's");
  }
  resize(out, size);
}

}  // namespace

void register_random_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::rand.out", &rand_kernel, P, 2);
  r.add("aten::randn.out", &randn_kernel, P, 2);
  r.add("aten::native_dropout.out", &native_dropout_kernel, P, 5);
  r.add("aten::empty.out", &empty_kernel, P, 3);
  r.add("dim_order_ops::_empty_dim_order.out", &empty_dim_order_kernel, P, 3);
}

}  // namespace etnp
