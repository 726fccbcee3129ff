// The C API (etnp.h): handles, error translation, result copies.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "delegates/backend.h"
#include "etnp.h"
#include "kernels/callback_ops.h"
#include "kernels/compute/cpu_features.h"
#include "kernels/registry.h"
#include "os/pages.h"
#include "os/probes.h"
#include "os/thread_slot.h"
#include "runtime/method.h"
#include "runtime/program.h"
#include "runtime/runtime.h"

using namespace etnp;

struct etnp_runtime { std::shared_ptr<Runtime> rt; };
struct etnp_program { std::shared_ptr<Program> prog; };
struct etnp_method { std::shared_ptr<Program> prog; std::unique_ptr<Method> m; };
struct etnp_result {
  struct Out { etnp_value_meta meta; std::vector<uint8_t> data; };
  std::vector<Out> outs;
};

namespace {
// this thread's last error (etnp_last_error_message / etnp_last_error_detail)
std::string& last_msg() {
  ETNP_THREAD_LOCAL(std::string, s);
  return s;
}
std::string& last_detail() {
  ETNP_THREAD_LOCAL(std::string, s);
  return s;
}

int fail(int code, const std::string& msg, const std::string& detail = "") {
  last_msg() = msg;
  last_detail() = detail;
  ETNP_PROBE2(error, code, last_msg().c_str());
  return code;
}

template <typename F>
int guard(F&& f) {
  try {
    f();
    return ETNP_OK;
  } catch (const Error& e) {
    return fail(e.code(), e.what(), e.detail());
  } catch (const std::bad_alloc&) {
    return fail(ETNP_ERR_EXECUTION, "out of memory");
  } catch (const std::exception& e) {
    return fail(ETNP_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(ETNP_ERR_INTERNAL, "internal error");
  }
}

#define REQUIRE(p) \
  if (!(p)) return fail(ETNP_ERR_INVALID_ARGUMENT, "null argument: " #p)

void meta_of(const EValue& v, etnp_value_meta* out) {
  std::memset(out, 0, sizeof(*out));
  out->kind = (int)v.tag;
  if (v.tag == Tag::Tensor) {
    out->dtype = (int)v.t.dtype;
    out->ndim = v.t.dim;
    for (int i = 0; i < v.t.dim; i++) out->sizes[i] = v.t.sizes[i];
    for (int i = 0; i < v.t.dim; i++) out->dim_order[i] = v.t.dim_order[i];
    out->dynamic = (int)v.t.dynamism;
    out->nbytes = v.t.nbytes();
  } else if (v.tag == Tag::Int || v.tag == Tag::Bool) {
    out->int_value = v.i;
  } else if (v.tag == Tag::Double) {
    out->double_value = v.d;
  }
}

// A tensor's elements in logical (row-major) order, whatever its dim order.
void copy_contiguous(const Tensor& t, uint8_t* dst) {
  size_t es = t.elem_size(), nb = t.nbytes();
  if (nb == 0) return;
  if (!t.data) throw_exec("output tensor has no data (was it produced?)");
  if (t.default_dim_order()) {
    std::memcpy(dst, t.data, nb);
    return;
  }
  int64_t n = t.numel(), idx[kMaxDims] = {};
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int d = 0; d < t.dim; d++) off += idx[d] * t.strides[d];
    std::memcpy(dst + k * es, (const uint8_t*)t.data + off * es, es);
    for (int d = t.dim - 1; d >= 0; d--) {
      if (++idx[d] < t.sizes[d]) break;
      idx[d] = 0;
    }
  }
}
}  // namespace

extern "C" {

const char* etnp_last_error_message(void) { return last_msg().c_str(); }
const char* etnp_last_error_detail(void) { return last_detail().c_str(); }
const char* etnp_version(void) { return "0.1.0"; }
const char* etnp_et_version(void) { return "1.3.1"; }

size_t etnp_num_operators(void) { return KernelRegistry::get().entries().size(); }
const char* etnp_operator_name(size_t i) {
  auto& e = KernelRegistry::get().entries();
  return i < e.size() ? e[i].name.c_str() : nullptr;
}
size_t etnp_num_backends(void) { return backends().size(); }
const char* etnp_backend_name(size_t i) { return i < backends().size() ? backends()[i].id : nullptr; }
size_t etnp_num_kernel_libs(void) { return KernelRegistry::get().libs().size(); }
const char* etnp_kernel_lib_name(size_t i) {
  static const std::vector<std::string> libs = KernelRegistry::get().libs();
  return i < libs.size() ? libs[i].c_str() : nullptr;
}
const char* etnp_cpu_features(void) { return cpu_features_string(); }

int etnp_runtime_create(int num_threads, etnp_runtime** out) {
  REQUIRE(out);
  *out = nullptr;
  return guard([&] {
    int n = num_threads > 0 ? num_threads : physical_cores();
    if (n > 256) n = 256;
    *out = new etnp_runtime{std::make_shared<Runtime>(n)};
  });
}
void etnp_runtime_destroy(etnp_runtime* rt) { delete rt; }
int etnp_runtime_num_threads(const etnp_runtime* rt) { return rt ? rt->rt->pool().num_threads() : 0; }

int etnp_program_load_file(etnp_runtime* rt, const char* path, etnp_program** out) {
  return etnp_program_load_file_ex(rt, path, 0, out);
}
int etnp_program_load_file_ex(etnp_runtime* rt, const char* path, int flags, etnp_program** out) {
  REQUIRE(rt); REQUIRE(path); REQUIRE(out);
  *out = nullptr;
  if (flags & ~ETNP_LOAD_MMAP) return fail(ETNP_ERR_INVALID_ARGUMENT, "unknown load flags");
  return guard([&] { *out = new etnp_program{Program::from_file(rt->rt, path, (flags & ETNP_LOAD_MMAP) != 0)}; });
}
int etnp_program_load_bytes(etnp_runtime* rt, const void* data, size_t size, etnp_program** out) {
  REQUIRE(rt); REQUIRE(out);
  REQUIRE(data || size == 0);
  *out = nullptr;
  static const uint8_t empty = 0;
  return guard([&] { *out = new etnp_program{Program::from_bytes(rt->rt, data ? data : &empty, size)}; });
}
int etnp_program_add_data(etnp_program* p, const void* data, size_t size, const char* label) {
  REQUIRE(p); REQUIRE(data || size == 0);
  static const uint8_t empty = 0;
  return guard([&] {
    p->prog->add_data_file(std::make_shared<const FlatTensorFile>(data ? data : &empty, size, label ? label : "<bytes>"));
  });
}
int etnp_program_set_weight_cache(etnp_program* p, const char* path) {
  REQUIRE(p);
  return guard([&] { p->prog->set_weight_cache(path ? path : ""); });
}
void etnp_program_destroy(etnp_program* p) { delete p; }
size_t etnp_program_num_methods(const etnp_program* p) { return p ? p->prog->method_names().size() : 0; }
const char* etnp_program_method_name(const etnp_program* p, size_t i) {
  return p && i < p->prog->method_names().size() ? p->prog->method_names()[i].c_str() : nullptr;
}

int etnp_program_method_num_io(const etnp_program* p, const char* method, int output, size_t* count) {
  REQUIRE(p); REQUIRE(method); REQUIRE(count);
  *count = 0;
  return guard([&] { *count = plan_num_io(p->prog->plan(method), output != 0); });
}
int etnp_program_method_io_meta(const etnp_program* p, const char* method, int output, size_t i, etnp_value_meta* out) {
  REQUIRE(p); REQUIRE(method); REQUIRE(out);
  return guard([&] {
    EValue v = plan_io_value(p->prog->plan(method), output != 0, i);
    meta_of(v, out);
    out->nbytes = 0;
  });
}

int etnp_program_method_container_meta(const etnp_program* p, const char* method, int output, const char** str) {
  REQUIRE(p); REQUIRE(method); REQUIRE(str);
  *str = "";
  return guard([&] {
    ETNP_THREAD_LOCAL(std::string, cache);
    fb::Table plan = p->prog->plan(method);
    cache.clear();
    if (plan.has(1)) cache = plan.table(1).string(output ? 1 : 0);  // ExecutionPlan.container_meta_type
    *str = cache.c_str();
  });
}

int etnp_program_data(const etnp_program* p, const void** data, size_t* size) {
  REQUIRE(p); REQUIRE(data); REQUIRE(size);
  return guard([&] {  // (bytes given back after packing are read back first)
    Span b = p->prog->bytes();
    *data = b.data;
    *size = b.size;
  });
}

static int list_item(const etnp_program* p, const char* method, size_t i, const char** name, bool ops) {
  REQUIRE(p); REQUIRE(method); REQUIRE(name);
  *name = nullptr;
  return guard([&] {
    ETNP_THREAD_LOCAL(std::vector<std::string>, cache);
    fb::Table plan = p->prog->plan(method);
    cache = ops ? plan_operator_names(plan) : plan_delegate_ids(plan);
    if (i >= cache.size()) throw Error(ETNP_ERR_INVALID_ARGUMENT, "index out of range");
    *name = cache[i].c_str();
  });
}
int etnp_program_method_ops(const etnp_program* p, const char* method, size_t i, const char** name) {
  return list_item(p, method, i, name, true);
}
int etnp_program_method_delegates(const etnp_program* p, const char* method, size_t i, const char** id) {
  return list_item(p, method, i, id, false);
}

int etnp_method_load(etnp_program* p, const char* name, etnp_method** out) {
  REQUIRE(p); REQUIRE(name); REQUIRE(out);
  *out = nullptr;
  ETNP_PROBE1(method_load_begin, name);
  int rc = guard([&] {
    std::lock_guard<std::recursive_mutex> g(p->prog->runtime().mutex());
    auto m = std::make_unique<Method>(p->prog, name);
    *out = new etnp_method{p->prog, std::move(m)};
  });
  os::trim_heap();  // (the load's temporaries, freed, back to the OS - a failed load's too)
  ETNP_PROBE2(method_load_end, name, rc);
  return rc;
}
void etnp_method_destroy(etnp_method* m) {
  if (!m) return;
  // The method may hold the last references to its program and runtime (their handles already
  // destroyed): keep the runtime, whose mutex is locked here, alive until after the unlock.
  std::shared_ptr<Runtime> rt = m->prog->runtime_ptr();
  std::lock_guard<std::recursive_mutex> g(rt->mutex());
  delete m;
}
int etnp_method_reset(etnp_method* m) {
  REQUIRE(m);
  return guard([&] {
    std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
    m->m->reset_state();
  });
}
int etnp_method_memory_stats(const etnp_method* m, etnp_memory_stats* out) {
  REQUIRE(m); REQUIRE(out);
  return guard([&] {
    etnp_memory_stats s{};
    s.program_bytes = m->prog->resident_bytes();
    s.data_file_bytes = m->prog->data_file_bytes();
    DelegateMemory d;
    m->m->memory(&s.planned, &s.folded, &d);
    s.packed_weights = d.packed_weights;
    s.constants = d.constants;
    s.values = d.values + m->prog->runtime().buffer_bank().bytes();  // (the bank: shared by the runtime's methods)
    s.scratch = d.scratch;
    s.mapped_weights = d.mapped_weights;
    *out = s;
  });
}

size_t etnp_method_num_state(const etnp_method* m) { return m ? m->m->state().size() : 0; }
int etnp_method_state_meta(const etnp_method* m, size_t i, etnp_value_meta* out, const char** name) {
  REQUIRE(m); REQUIRE(out); REQUIRE(name);
  if (i >= m->m->state().size()) return fail(ETNP_ERR_INVALID_ARGUMENT, "state index out of range");
  const auto& st = m->m->state()[i];
  meta_of(m->m->value(st.value), out);
  *name = st.name.c_str();
  return ETNP_OK;
}
int etnp_method_set_run_limits(etnp_method* m, double timeout_s, int interruptible) {
  REQUIRE(m);
  if (!(timeout_s >= 0)) return fail(ETNP_ERR_INVALID_ARGUMENT, "timeout must be a non-negative number of seconds");
  m->m->control().timeout_s.store(timeout_s);
  m->m->control().interruptible.store(interruptible != 0);
  return ETNP_OK;
}
void etnp_method_cancel(etnp_method* m) {
  if (m) m->m->control().cancel.store(true);
}
void etnp_method_mark_interrupts(etnp_method* m) {
  if (m) m->m->control().mark_interrupts();
}
int etnp_install_interrupt_handler(void) {
  return install_interrupt_handler() ? ETNP_OK : fail(ETNP_ERR_INTERNAL, "cannot install the SIGINT handler");
}
int etnp_method_watch_interrupts(etnp_method* m) {
  REQUIRE(m);
  const int status = etnp_install_interrupt_handler();
  m->m->control().mark_interrupts();
  return status;
}
size_t etnp_method_num_inputs(const etnp_method* m) { return m ? m->m->num_inputs() : 0; }
size_t etnp_method_num_outputs(const etnp_method* m) { return m ? m->m->num_outputs() : 0; }
int etnp_method_input_meta(const etnp_method* m, size_t i, etnp_value_meta* out) {
  REQUIRE(m); REQUIRE(out);
  if (i >= m->m->num_inputs()) return fail(ETNP_ERR_INVALID_ARGUMENT, "input index out of range");
  meta_of(m->m->planned_input(i), out);
  return ETNP_OK;
}
int etnp_method_output_meta(const etnp_method* m, size_t i, etnp_value_meta* out) {
  REQUIRE(m); REQUIRE(out);
  if (i >= m->m->num_outputs()) return fail(ETNP_ERR_INVALID_ARGUMENT, "output index out of range");
  meta_of(m->m->output(i), out);
  return ETNP_OK;
}

namespace {
// Validates the caller's descriptors and binds them (the runtime's mutex must be held).
void bind_inputs(etnp_method* m, const etnp_input* inputs, size_t n) {
  InputValue small[8];
  std::vector<InputValue> big;
  InputValue* in = small;
  if (n > 8) {
    big.resize(n);
    in = big.data();
  }
  for (size_t i = 0; i < n; i++) {
    const etnp_input& u = inputs[i];
    if (u.kind == ETNP_KIND_TENSOR) {
      if (!dtype_supported(u.dtype))
        throw_exec("input " + std::to_string(i) + ": unsupported dtype " + scalar_type_name(u.dtype));
      if (u.ndim < 0 || u.ndim > kMaxDims || (u.ndim > 0 && !u.sizes) || (!u.data && u.nbytes))
        throw Error(ETNP_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + ": malformed tensor descriptor");
    }
    in[i] = InputValue{u.kind, (DType)u.dtype, u.ndim, u.sizes, u.data, u.nbytes, u.int_value, u.double_value};
  }
  m->m->set_inputs(in, n);
}
}  // namespace

int etnp_method_run(etnp_method* m, const etnp_input* inputs, size_t n, etnp_result** out) {
  REQUIRE(m); REQUIRE(out);
  REQUIRE(inputs || n == 0);
  *out = nullptr;
  return guard([&] {
    auto res = std::make_unique<etnp_result>();
    {
      std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
      bind_inputs(m, inputs, n);
      m->m->execute();
      size_t no = m->m->num_outputs();
      res->outs.resize(no);
      for (size_t i = 0; i < no; i++) {
        const EValue& v = m->m->output(i);
        meta_of(v, &res->outs[i].meta);
        if (v.tag == Tag::Tensor) {
          res->outs[i].data.resize(v.t.nbytes());
          copy_contiguous(v.t, res->outs[i].data.data());
        }
      }
    }
    *out = res.release();
  });
}

int etnp_method_run_into(etnp_method* m, const etnp_input* inputs, size_t n, void* const* out_data,
                         const size_t* out_nbytes, size_t num_outputs) {
  REQUIRE(m);
  REQUIRE(inputs || n == 0);
  REQUIRE((out_data && out_nbytes) || num_outputs == 0);
  return guard([&] {
    std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
    size_t no = m->m->num_outputs();
    if (num_outputs != no)
      throw Error(ETNP_ERR_INVALID_ARGUMENT, "the method has " + std::to_string(no) + " outputs, " +
                                                 std::to_string(num_outputs) + " destinations were given");
    bind_inputs(m, inputs, n);
    m->m->execute();
    for (size_t i = 0; i < no; i++) {
      const EValue& v = m->m->output(i);
      if (v.tag != Tag::Tensor)
        throw Error(ETNP_ERR_INVALID_ARGUMENT, "output " + std::to_string(i) + " is not a tensor");
      size_t nb = v.t.nbytes();
      if (nb != out_nbytes[i])
        throw Error(ETNP_ERR_INVALID_ARGUMENT, "output " + std::to_string(i) + " has " + std::to_string(nb) +
                                                   " bytes, its destination " + std::to_string(out_nbytes[i]));
      if (nb && !out_data[i]) throw Error(ETNP_ERR_INVALID_ARGUMENT, "output " + std::to_string(i) + ": null destination");
      if (nb) copy_contiguous(v.t, static_cast<uint8_t*>(out_data[i]));
    }
  });
}

int etnp_method_set_profiling(etnp_method* m, int enabled) {
  REQUIRE(m);
  return guard([&] {
    std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
    if ((m->m->profiler() != nullptr) != (enabled != 0)) m->m->set_profiling(enabled != 0);
  });
}
size_t etnp_method_num_profile_events(const etnp_method* m) {
  if (!m) return 0;
  std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
  return m->m->profiler() ? m->m->profiler()->events.size() : 0;
}
int etnp_method_profile_event(const etnp_method* m, size_t i, etnp_profile_event* out) {
  REQUIRE(m); REQUIRE(out);
  std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
  const Profiler* p = m->m->profiler();
  if (!p || i >= p->events.size()) return fail(ETNP_ERR_INVALID_ARGUMENT, "profile event index out of range");
  const ProfileEvent& e = p->events[i];
  out->name = e.name.c_str();
  out->shape = e.shape.c_str();
  out->start_ns = e.start_ns;
  out->duration_ns = e.duration_ns;
  out->instruction = e.instruction;
  out->depth = e.depth;
  out->node = e.node;
  out->chain = e.chain;
  out->chain_instruction = e.chain_instruction;
  return ETNP_OK;
}
int etnp_method_set_debug_capture(etnp_method* m, int mode, const int32_t* instructions, size_t n) {
  REQUIRE(m);
  return guard([&] {
    std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
    Profiler* p = m->m->profiler();
    if (!p) throw Error(ETNP_ERR_INVALID_ARGUMENT, "intermediate outputs need profiling on");
    size_t count = m->m->num_instructions();
    p->capture.clear();
    if (mode == 1) {
      p->capture.assign(count, 1);
    } else if (mode == 2) {
      if (n && !instructions) throw Error(ETNP_ERR_INVALID_ARGUMENT, "null instruction list");
      p->capture.assign(count, 0);
      for (size_t k = 0; k < n; k++) {
        if (instructions[k] < 0 || (size_t)instructions[k] >= count)
          throw Error(ETNP_ERR_INVALID_ARGUMENT, "instruction " + std::to_string(instructions[k]) +
                                                     " out of range (the method has " + std::to_string(count) + ")");
        p->capture[(size_t)instructions[k]] = 1;
      }
    } else if (mode != 0) {
      throw Error(ETNP_ERR_INVALID_ARGUMENT, "debug capture mode must be 0, 1 or 2");
    }
  });
}
size_t etnp_method_num_debug_values(const etnp_method* m) {
  if (!m) return 0;
  std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
  return m->m->profiler() ? m->m->profiler()->captured.size() : 0;
}
int etnp_method_debug_value(const etnp_method* m, size_t i, etnp_debug_value* out, void* data, size_t nbytes) {
  REQUIRE(m); REQUIRE(out);
  return guard([&] {
    std::lock_guard<std::recursive_mutex> g(m->prog->runtime().mutex());
    const Profiler* p = m->m->profiler();
    if (!p || i >= p->captured.size()) throw Error(ETNP_ERR_INVALID_ARGUMENT, "debug value index out of range");
    const CapturedValue& c = p->captured[i];
    std::memset(out, 0, sizeof *out);
    out->instruction = c.instruction;
    out->item = c.item;
    out->kind = c.kind;
    out->int_value = c.i;
    out->double_value = c.d;
    if (c.kind == ETNP_KIND_TENSOR) {
      out->dtype = (int)c.t.dtype;
      out->ndim = c.t.dim;
      for (int d = 0; d < c.t.dim && d < ETNP_MAX_DIMS; d++) out->sizes[d] = c.t.sizes[d];
      out->nbytes = c.t.nbytes();
      if (data) {
        if (nbytes != out->nbytes)
          throw Error(ETNP_ERR_INVALID_ARGUMENT, "debug value has " + std::to_string(out->nbytes) +
                                                     " bytes, its destination " + std::to_string(nbytes));
        copy_contiguous(c.t, static_cast<uint8_t*>(data));
      }
    }
  });
}

size_t etnp_result_num_outputs(const etnp_result* r) { return r ? r->outs.size() : 0; }
int etnp_result_output_meta(const etnp_result* r, size_t i, etnp_value_meta* out) {
  REQUIRE(r); REQUIRE(out);
  if (i >= r->outs.size()) return fail(ETNP_ERR_INVALID_ARGUMENT, "output index out of range");
  *out = r->outs[i].meta;
  return ETNP_OK;
}
int etnp_result_copy_output(const etnp_result* r, size_t i, void* dst, size_t nbytes) {
  REQUIRE(r);
  if (i >= r->outs.size()) return fail(ETNP_ERR_INVALID_ARGUMENT, "output index out of range");
  auto& o = r->outs[i];
  if (nbytes != o.data.size()) return fail(ETNP_ERR_INVALID_ARGUMENT, "destination size mismatch");
  if (nbytes) {
    REQUIRE(dst);
    std::memcpy(dst, o.data.data(), nbytes);
  }
  return ETNP_OK;
}
void etnp_result_destroy(etnp_result* r) { delete r; }

int etnp_register_op(const char* name, etnp_op_fn fn, void* user) {
  return guard([&] { register_callback_op(name ? name : "", fn, user); });
}

int etnp_unregister_op(const char* name) {
  return guard([&] {
    if (!name || !unregister_callback_op(name))
      throw Error(ETNP_ERR_INVALID_ARGUMENT, std::string("no registered operator '") + (name ? name : "") + "'");
  });
}

size_t etnp_num_registered_ops(void) { return num_callback_ops(); }

int etnp_op_resize(etnp_op_call* call, size_t arg, int ndim, const int64_t* sizes) {
  return guard([&] { callback_op_resize(call, arg, ndim, sizes); });
}

void etnp_op_fail(etnp_op_call* call, const char* message) { callback_op_fail(call, message); }

}  // extern "C"
