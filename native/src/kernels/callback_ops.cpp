// Callback kernels: marshal a kernel call's EValues into etnp_op_arg views for a caller-defined
// function, and route resize/fail requests back to the runtime.
#include "kernels/callback_ops.h"

#include <map>
#include <mutex>
#include <vector>

#include "kernels/kernel_util.h"

struct etnp_op_call {
  etnp::EValue** values;
  std::vector<etnp_op_arg>* args;
  std::string error;
};

namespace etnp {
namespace {

std::mutex g_mu;
std::map<std::string, std::shared_ptr<const CallbackOp>>& table() {
  static std::map<std::string, std::shared_ptr<const CallbackOp>> t;
  return t;
}

// A .out call lists its out tensors again as return values; the callback sees them once.
size_t without_repeated_returns(EValue** a, size_t n) {
  for (size_t k = n / 2; k >= 1; k--) {
    bool same = true;
    for (size_t j = 0; j < k && same; j++) same = a[n - k + j] == a[n - 2 * k + j];
    if (same) return n - k;
  }
  return n;
}

void describe_tensor(const Tensor& t, etnp_op_arg& o) {
  if (!t.default_dim_order()) throw_exec("callback operators take contiguous tensors only");
  o.dtype = (int)t.dtype;
  o.ndim = t.dim;
  o.sizes = t.sizes;
  o.data = t.data;
  o.nbytes = t.nbytes();
  o.capacity = t.capacity;
}

}  // namespace

namespace {
// An operator name as a .pte names it: "namespace::name" with an optional ".overload", each part
// of letters, digits and '_', at most kMaxOperatorName bytes in all.
constexpr size_t kMaxOperatorName = 256;
bool is_word(const std::string& s, size_t b, size_t e) {
  if (b >= e) return false;
  for (size_t i = b; i < e; i++) {
    const char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}
void check_operator_name(const std::string& name) {
  const size_t sep = name.find("::"), dot = sep == std::string::npos ? sep : name.find('.', sep + 2);
  const size_t end = dot == std::string::npos ? name.size() : dot;
  const bool ok = name.size() <= kMaxOperatorName && sep != std::string::npos && is_word(name, 0, sep) &&
                  is_word(name, sep + 2, end) && (end == name.size() || is_word(name, end + 1, name.size()));
  if (!ok) {
    const std::string shown = name.size() > 80 ? name.substr(0, 80) + "... (" + std::to_string(name.size()) + " bytes)" : name;
    throw Error(ETNP_ERR_INVALID_ARGUMENT, "invalid operator name '" + shown + "': expected namespace::name or "
                "namespace::name.overload (letters, digits, '_'; at most " + std::to_string(kMaxOperatorName) + " bytes)");
  }
}
}  // namespace

void register_callback_op(const std::string& name, etnp_op_fn fn, void* user) {
  if (name.empty() || !fn) throw Error(ETNP_ERR_INVALID_ARGUMENT, "register_op needs a name and a function");
  check_operator_name(name);
  if (KernelRegistry::get().find(name))
    throw Error(ETNP_ERR_INVALID_ARGUMENT, "operator '" + name + "' has a native kernel; it cannot be replaced");
  std::lock_guard<std::mutex> g(g_mu);
  table()[name] = std::make_shared<const CallbackOp>(CallbackOp{name, fn, user});
}

bool unregister_callback_op(const std::string& name) {
  std::lock_guard<std::mutex> g(g_mu);
  return table().erase(name) > 0;
}

size_t num_callback_ops() {
  std::lock_guard<std::mutex> g(g_mu);
  return table().size();
}

std::shared_ptr<const CallbackOp> find_callback_op(const std::string& name) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = table().find(name);
  return it == table().end() ? nullptr : it->second;
}

void callback_kernel(KernelContext& ctx, EValue** a, size_t n) {
  const CallbackOp* op = static_cast<const CallbackOp*>(ctx.user);
  size_t m = without_repeated_returns(a, n);
  std::vector<etnp_op_arg> args(m);
  std::vector<std::vector<int64_t>> ints(m);
  for (size_t k = 0; k < m; k++) {
    const EValue& v = *a[k];
    etnp_op_arg& o = args[k];
    o = etnp_op_arg{};
    o.kind = (int)v.tag;
    switch (v.tag) {
      case Tag::Int: case Tag::Bool: o.i = v.i; break;
      case Tag::Double: o.d = v.d; break;
      case Tag::Tensor: describe_tensor(v.t, o); break;
      case Tag::String: o.str = v.s.c_str(); o.len = v.s.size(); break;
      case Tag::IntList:
        ints[k] = int_list_arg(ctx, a, (int)k);
        o.ints = ints[k].data();
        o.len = ints[k].size();
        break;
      case Tag::DoubleList: o.doubles = v.doubles.data(); o.len = v.doubles.size(); break;
      case Tag::None: break;
      default: throw_exec(std::string("callback operators do not take ") + tag_name(v.tag) + " arguments");
    }
  }
  etnp_op_call call{a, &args, {}};
  int rc = op->fn(op->user, &call, args.data(), m);
  if (rc != 0) throw_exec(call.error.empty() ? "the registered function failed" : call.error);
}

void callback_op_resize(etnp_op_call* call, size_t arg, int ndim, const int64_t* sizes) {
  if (!call || arg >= call->args->size() || !call->values[arg]->is_tensor())
    throw Error(ETNP_ERR_INVALID_ARGUMENT, "etnp_op_resize: argument is not a tensor");
  if (ndim < 0 || ndim > kMaxDims || (ndim > 0 && !sizes)) throw Error(ETNP_ERR_INVALID_ARGUMENT, "etnp_op_resize: bad rank");
  Tensor& t = call->values[arg]->t;
  resize_tensor(t, ndim, sizes);
  describe_tensor(t, (*call->args)[arg]);
}

void callback_op_fail(etnp_op_call* call, const char* message) {
  if (call) call->error = message ? message : "";
}

}  // namespace etnp
