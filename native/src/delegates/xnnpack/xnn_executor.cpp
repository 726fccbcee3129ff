// The XNNPACK delegate: reads the graph at method load, prepares weights once, and
// runs the nodes in order on each call, moving data in/out of the delegate's EValues.
#include "delegates/backend.h"
#include "delegates/xnnpack/xnn_graph.h"
#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/kernel_util.h"
#include "runtime/runtime.h"

namespace etnp {
namespace {

using namespace xnn;

class XnnDelegate : public DelegateHandle {
 public:
  XnnDelegate(Graph g, ThreadPool* pool) : g_(std::move(g)) {
    for (auto& n : g_.nodes) prepare_node(pool, g_, n);
    for (auto& v : g_.values) v.raw = nullptr;  // program bytes are only read while packing
    // Constant filters used only through packed weights need not be kept twice.
    std::vector<int> uses(g_.values.size(), 0), packed_uses(g_.values.size(), 0);
    for (auto& n : g_.nodes)
      for (size_t k = 0; k < n.inputs.size(); k++) {
        if (n.inputs[k] >= g_.values.size()) continue;
        uses[n.inputs[k]]++;
        if (k == 1 && !n.packed.empty()) packed_uses[n.inputs[k]]++;
      }
    for (uint32_t id : g_.output_ids) uses[id]++;
    for (size_t i = 0; i < g_.values.size(); i++)
      if (g_.values[i].is_constant && uses[i] > 0 && uses[i] == packed_uses[i]) FloatBuffer().swap(g_.values[i].data);
  }

  void execute(KernelContext& ctx, EValue** args, size_t nargs) override {
    size_t ni = g_.input_ids.size(), no = g_.output_ids.size();
    if (nargs < ni + no)
      throw_exec("XNNPACK delegate expects " + std::to_string(ni + no) + " arguments, got " + std::to_string(nargs));
    for (size_t k = 0; k < ni; k++) load_input(*args[k], g_.values[g_.input_ids[k]], k);
    for (auto& n : g_.nodes) run_node(ctx, g_, n, scratch_);
    for (size_t k = 0; k < no; k++) store_output(g_.values[g_.output_ids[k]], *args[ni + k], k);
  }

 private:
  static void load_input(EValue& e, Value& v, size_t k) {
    if (e.tag != Tag::Tensor) throw_exec("XNNPACK delegate input " + std::to_string(k) + " is not a tensor");
    const Tensor& t = e.t;
    check_contiguous(t, "XNNPACK delegate input");
    if ((size_t)t.dim == v.dims.size()) {
      ensure_shape(v, shape_of(t));
    } else {  // e.g. a 0-d scalar tensor the graph holds as [1]: same elements, graph's shape
      int64_t want = 1;
      for (auto d : v.dims) want *= d;
      if (want != t.numel())
        throw_exec("XNNPACK delegate input " + std::to_string(k) + ": shape " + t.shape_str() + " does not match the graph's " +
                   std::to_string(v.dims.size()) + "-D value");
      ensure_shape(v, v.dims);
    }
    int64_t n = t.numel();
    float* d = v.data.data();
    if (t.dtype == DType::F32) {
      copy_floats(d, (const float*)t.data, n);
    } else if (is_floating(t.dtype)) {
      for (int64_t i = 0; i < n; i++) d[i] = (float)load_f64(t.data, t.dtype, i);
    } else {  // integer data: quantized per tensor, or plain integers
      float s = v.quant == Quant::PerTensor ? v.scale : 1.f, z = v.quant == Quant::PerTensor ? (float)v.zero_point : 0.f;
      for (int64_t i = 0; i < n; i++) d[i] = ((float)load_i64(t.data, t.dtype, i) - z) * s;
    }
  }
  static void store_output(const Value& v, EValue& e, size_t k) {
    if (e.tag != Tag::Tensor) throw_exec("XNNPACK delegate output " + std::to_string(k) + " is not a tensor");
    Tensor& t = e.t;
    resize_tensor(t, (int)v.shape.size(), v.shape.data());
    check_contiguous(t, "XNNPACK delegate output");
    int64_t n = t.numel();
    const float* d = v.data.data();
    if (t.dtype == DType::F32) {
      copy_floats((float*)t.data, d, n);
    } else if (is_floating(t.dtype)) {
      for (int64_t i = 0; i < n; i++) store_f64(t.data, t.dtype, i, d[i]);
    } else {
      double s = v.quant == Quant::PerTensor ? v.scale : 1.0, z = v.quant == Quant::PerTensor ? v.zero_point : 0;
      for (int64_t i = 0; i < n; i++) store_i64(t.data, t.dtype, i, f2i(std::nearbyint(d[i] / s + z)));
    }
  }

  Graph g_;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<DelegateHandle> xnnpack_init(const BackendInit& init) {
  Graph g = read_graph(init.blob, *init.program);
  return std::make_unique<XnnDelegate>(std::move(g), &init.program->runtime().pool());
}

}  // namespace etnp
