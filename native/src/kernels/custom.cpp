// Bundled custom kernels (the "custom" kernel library): etnp::triple.out, the
// reference kernel that keeps the custom-op wiring tested.
#include "kernels/elementwise.h"

namespace etnp {
namespace {
double triple_d(double x) { return 3.0 * x; }
int64_t triple_i(int64_t x) { return (int64_t)(3 * (uint64_t)x); }
// etnp::triple.out(Tensor x, *, Tensor(a!) out)
void triple_kernel(KernelContext& ctx, EValue** a, size_t) { unary_apply(ctx, tensor_arg(a, 0), tensor_arg(a, 1), triple_d, triple_i); }
}  // namespace

void register_custom_kernels(KernelRegistry& r) { r.add("etnp::triple.out", &triple_kernel, "custom", 2); }

}  // namespace etnp
