// Running a loaded Method: its state reset, the inputs set (copied or bound), the interpreter
// loop over the instructions with the run controls (interrupts, limits, profiling captures).
// Building it from the program is method_load.cpp.
#include "runtime/method.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "os/cache_size.h"
#include "os/pages.h"
#include "os/probes.h"
#include "runtime/runtime.h"

namespace etnp {

void Method::memory(uint64_t* planned, uint64_t* folded, DelegateMemory* delegates) const {
  *planned = 0;
  for (const auto& b : buffers_) *planned += b->size();
  *folded = folded_bytes_;
  for (const auto& d : delegates_) d->add_memory(*delegates);
  delegates->mapped_weights += shared_constant_bytes_;  // (constants viewed in the weight cache's mapping)
}

// Tells the delegates whether their weights stream from memory on every call (DelegateHandle::
// set_weights_stream): where all of them together are more than the last-level cache holds (an
// LLM's decode step: SmolLM-135M's 76 MB of 4-bit weights against a 32 MB L3). ETNP_STREAM_WEIGHTS=0
// or 1 decides instead (comparisons).
void Method::stream_weights() {
  uint64_t planned = 0, folded = 0;
  DelegateMemory m;
  memory(&planned, &folded, &m);
  const int64_t llc = os::last_level_cache_bytes();
  bool stream = llc > 0 && m.packed_weights + m.mapped_weights > (uint64_t)llc;
  if (const char* v = std::getenv("ETNP_STREAM_WEIGHTS")) stream = std::strcmp(v, "0") != 0;
  for (const auto& d : delegates_) d->set_weights_stream(stream);
}

// Back to a freshly loaded method's memory: planned buffers zeroed (large ones' pages given
// back), then the state tensors' initial data (pages it leaves zero not written).
void Method::reset_state() {
  for (const auto& b : buffers_) b->zero();
  for (const State& st : state_) {
    Tensor& t = values_[(size_t)st.value].t;
    if (st.init.data) os::copy_changed_pages(t.data, st.init.data, std::min(st.init.size, t.capacity));
  }
}

// Copies `src`, t's elements in logical row-major order, to `dst` laid out by t's strides.
static void copy_to_dim_order(const Tensor& t, const void* src, void* dst) {
  const size_t es = t.elem_size();
  const int64_t n = t.numel();
  if (n == 0) return;
  int64_t idx[kMaxDims] = {};
  const int last = t.dim - 1;
  const int64_t inner = t.sizes[last], inner_stride = t.strides[last];
  const uint8_t* s = (const uint8_t*)src;
  uint8_t* d = (uint8_t*)dst;
  for (int64_t k = 0; k < n; k += inner) {
    int64_t off = 0;
    for (int j = 0; j < last; j++) off += idx[j] * t.strides[j];
    for (int64_t i = 0; i < inner; i++) std::memcpy(d + (off + i * inner_stride) * es, s + (k + i) * es, es);
    for (int j = last - 1; j >= 0; j--) {
      if (++idx[j] < t.sizes[j]) break;
      idx[j] = 0;
    }
  }
}

void Method::set_inputs(const InputValue* in, size_t n) {
  if (n != inputs_.size())
    throw_exec("method '" + name_ + "' takes " + std::to_string(inputs_.size()) + " inputs, got " + std::to_string(n));
  for (size_t i = 0; i < n; i++) {
    const EValue& p = planned_inputs_[i];
    EValue& v = values_[inputs_[i]];
    const InputValue& u = in[i];
    std::string where = "input " + std::to_string(i) + ": ";
    switch (p.tag) {
      case Tag::Tensor: {
        const Tensor& pt = p.t;
        if (u.kind != ETNP_KIND_TENSOR) throw_exec(where + "expected a tensor");
        if (u.dtype != pt.dtype)
          throw_exec(where + "expected dtype " + dtype_name(pt.dtype) + ", got " + dtype_name(u.dtype));
        if (u.ndim != pt.dim)
          throw_exec(where + "expected rank " + std::to_string(pt.dim) + " (shape " + pt.shape_str() + "), got rank " +
                     std::to_string(u.ndim));
        Tensor t = pt;
        for (int d = 0; d < u.ndim; d++) {
          int64_t s = u.sizes[d];
          bool ok = pt.dynamism == Dynamism::Static ? s == pt.sizes[d]
                    : pt.dynamism == Dynamism::Bound ? (s >= 0 && s <= pt.sizes[d]) : s >= 0;
          if (!ok) {
            Tensor got = pt;
            for (int e = 0; e < u.ndim; e++) got.sizes[e] = u.sizes[e];
            throw_exec(where + "expected shape " + pt.shape_str() +
                       (pt.dynamism == Dynamism::Static ? "" : " (upper bounds)") + ", got " + got.shape_str());
          }
          t.sizes[d] = s;
        }
        t.compute_strides();
        if (u.nbytes != t.nbytes()) throw_exec(where + "data size does not match its shape");
        if (!t.default_dim_order()) {
          // A channels-last (or other dim-order) input: the caller's elements come in logical
          // row-major order; they are laid out in the program's dim order, in the plan or in
          // memory of this method's own.
          void* dst = pt.data;
          if (!dst) {
            if (reordered_inputs_.size() <= i) reordered_inputs_.resize(i + 1);
            reordered_inputs_[i].resize(u.nbytes + 1);
            dst = reordered_inputs_[i].data();
          } else if (u.nbytes > pt.capacity) {
            throw_exec(where + "data exceeds the planned input memory");
          }
          copy_to_dim_order(t, u.data, dst);
          t.data = dst;
          t.capacity = pt.data ? pt.capacity : u.nbytes;
          v.t = t;
          break;
        }
        if (pt.data) {
          // Memory-planned input: other values (aliasing views) may share its memory, so
          // the data goes into the plan, as ExecuTorch's set_input does.
          if (u.nbytes > pt.capacity) throw_exec(where + "data exceeds the planned input memory");
          if (u.nbytes) std::memcpy(pt.data, u.data, u.nbytes);
        } else {  // unplanned input: bound in place, no copy
          t.data = const_cast<void*>(u.data);
          t.capacity = u.nbytes;
          t.owns_external = true;
        }
        v.t = t;
        break;
      }
      case Tag::Int:
        if (u.kind != ETNP_KIND_INT && u.kind != ETNP_KIND_BOOL) throw_exec(where + "expected an int");
        v.i = u.i;
        break;
      case Tag::Bool:
        if (u.kind != ETNP_KIND_BOOL && u.kind != ETNP_KIND_INT) throw_exec(where + "expected a bool");
        v.i = u.i != 0;
        break;
      case Tag::Double:
        if (u.kind == ETNP_KIND_DOUBLE) v.d = u.d;
        else if (u.kind == ETNP_KIND_INT) v.d = (double)u.i;
        else throw_exec(where + "expected a float");
        break;
      case Tag::None:
        if (u.kind != ETNP_KIND_NONE) throw_exec(where + "expected None");
        break;
      default:
        throw_exec(where + std::string("inputs of kind ") + tag_name(p.tag) + " are not supported");
    }
  }
}

// Every tensor a call touches must have memory for its current shape (a corrupt program
// can name tensors that have none).
void Method::check_tensor_args(const Instruction& x) const {
  auto check = [&](const EValue& v) {
    if (v.tag != Tag::Tensor) return;
    const Tensor& t = v.t;
    if (t.numel() > 0 && (!t.data || t.nbytes() > t.capacity))
      throw_exec("a tensor argument of shape " + t.shape_str() + " has no memory of its size (corrupt program?)");
  };
  for (const EValue* a : x.args) {
    check(*a);
    if (a->tag == Tag::TensorList || a->tag == Tag::OptTensorList)
      for (int64_t idx : a->items)
        if (idx >= 0) check(values_[idx]);
  }
}

void Method::execute() {
  const uint64_t call = ++calls_;
  ETNP_PROBE2(method_execute_begin, name_.c_str(), call);
  try {
    run_instructions();
  } catch (...) {
    ETNP_PROBE3(method_execute_end, name_.c_str(), call, (int)current_exception_status());
    throw;
  }
  ETNP_PROBE3(method_execute_end, name_.c_str(), call, 0);
}

// Copies what ExecuTorch's event tracer logs for instruction x into prof.captured: a kernel call's
// output - its last argument, each tensor of it when it is a list (a multi-output op's outputs) -
// or every argument of a delegate call (its inputs, then its outputs).
void Method::capture_output(Profiler& prof, size_t pc, const Instruction& x) const {
  if (x.args.empty()) return;
  auto add = [&](const EValue& v, int32_t item) {
    CapturedValue c;
    c.instruction = (int32_t)pc;
    c.item = item;
    c.kind = (int)v.tag;
    if (v.tag == Tag::Tensor) {
      c.t = v.t;
      size_t nb = v.t.nbytes();
      if (nb && v.t.data) c.bytes.assign((const uint8_t*)v.t.data, (const uint8_t*)v.t.data + nb);
      else c.bytes.assign(nb, 0);
      c.t.data = c.bytes.empty() ? nullptr : c.bytes.data();
    } else if (v.tag == Tag::Int || v.tag == Tag::Bool) {
      c.i = v.i;
    } else if (v.tag == Tag::Double) {
      c.d = v.d;
    } else {
      c.kind = (int)Tag::None;
    }
    prof.captured.push_back(std::move(c));
  };
  if (x.kind == Instruction::Delegate) {
    for (size_t k = 0; k < x.args.size(); k++) add(*x.args[k], (int32_t)k);
    return;
  }
  const EValue& out = *x.args.back();
  if (out.tag == Tag::TensorList || out.tag == Tag::OptTensorList) {
    int32_t k = 0;
    for (int64_t idx : out.items) {
      if (idx >= 0) add(values_[(size_t)idx], k);
      k++;
    }
  } else {
    add(out, 0);
  }
}

// An elided copy's result gets its planned bytes back before the copy or its view runs.
static void replan(const Instruction& x) {
  if (!x.fused) return;
  for (const FusedCall::Planned& p : x.fused->replanned) {
    p.v->t.data = p.data;
    p.v->t.capacity = p.capacity;
  }
}

void Method::run_kernel(KernelContext& ctx, size_t pc, Profiler* prof) {
  Instruction& x = instructions_[pc];
  running_ = pc;  // (an error names this instruction)
  replan(x);
  ctx.op = x.op;
  ctx.user = x.user;
  check_tensor_args(x);
  if (ETNP_PROBE_ENABLED(instruction_begin)) ETNP_PROBE2(instruction_begin, pc, x.op);
  if (prof) {
    prof->instruction = (int32_t)pc;
    prof->chain = x.chain;
    prof->chain_instruction = x.index;
    int64_t t = Profiler::now();
    x.fn(ctx, x.args.data(), x.args.size());
    prof->add(x.op, t, Profiler::now(), 0);
    if (prof->wants(pc)) capture_output(*prof, pc, x);
  } else {
    x.fn(ctx, x.args.data(), x.args.size());
  }
  if (ETNP_PROBE_ENABLED(instruction_end)) ETNP_PROBE2(instruction_end, pc, x.op);
}

// A fused chain at the instruction pc it runs at, its last or its first (runtime/fused_calls.h):
// its kernel, or where that declines the call's tensors, the chain's instructions in order (an
// error named as theirs).
void Method::run_fused(KernelContext& ctx, size_t pc, Profiler* prof) {
  const Instruction& x = instructions_[pc];
  const FusedCall& f = *x.fused;
  replan(x);
  if (f.sunk >= 0) {  // (an elided copy's input, written where the copy's result is planned)
    Tensor& in = f.args[0]->t;
    in.data = f.args[2]->t.data;
    in.capacity = f.args[2]->t.capacity;
    try {
      run_kernel(ctx, (size_t)f.sunk, prof);
    } catch (...) {
      replan(x);
      throw;
    }
    running_ = pc;
  }
  ctx.op = f.name;
  ctx.user = nullptr;
  if (ETNP_PROBE_ENABLED(instruction_begin)) ETNP_PROBE2(instruction_begin, pc, f.name);
  const int64_t t = prof ? Profiler::now() : 0;
  const bool done = f.fn(ctx, f.args.data());
  if (f.sunk >= 0) {  // (the input's own bytes back: its kernel may run at its place next call)
    const FusedCall::Planned& in = f.replanned.back();
    in.v->t.data = in.data;
    in.v->t.capacity = in.capacity;
  }
  if (done && prof) {
    prof->instruction = (int32_t)pc;
    prof->chain = x.chain;
    prof->chain_instruction = x.index;
    prof->add(f.name, t, Profiler::now(), 0);
  }
  if (ETNP_PROBE_ENABLED(instruction_end)) ETNP_PROBE2(instruction_end, pc, f.name);
  if (done) return;
  for (uint32_t k : f.members) run_kernel(ctx, k, prof);
}

void Method::run_instructions() {
  KernelContext ctx;
  ctx.pool = &prog_->runtime().pool();
  ctx.values = values_.data();
  ctx.num_values = values_.size();
  int64_t steps = 0;
  size_t pc = 0, n = instructions_.size();
  control_.begin();
  Profiler* prof = profiler_.get();
  ctx.profiler = prof;
  if (prof) prof->begin_call();
  const bool fusing = !(prof && !prof->capture.empty());  // (captures want each instruction's output)
  while (pc < n) {
    Instruction& x = instructions_[pc];
    control_.poll(name_, ++steps);
    size_t next = pc + 1;
    running_ = pc;
    try {
      switch (x.kind) {
        case Instruction::Kernel:
          if (fusing && x.fused_away) break;  // (its chain runs at another of its instructions)
          if (fusing && x.fused) run_fused(ctx, pc, prof);
          else run_kernel(ctx, pc, prof);
          break;
        case Instruction::Delegate:
          ctx.op = x.op;
          check_tensor_args(x);
          if (ETNP_PROBE_ENABLED(instruction_begin)) ETNP_PROBE2(instruction_begin, pc, x.op);
          if (prof) {  // the delegate's steps are recorded inside it: the call's event goes before them
            prof->instruction = (int32_t)pc;
            prof->chain = x.chain;
            prof->chain_instruction = x.index;
            size_t at = prof->events.size();
            int64_t t = Profiler::now();
            x.delegate->execute(ctx, x.args.data(), x.args.size());
            int64_t end = Profiler::now();
            prof->add(x.op, t, end, 0);
            std::rotate(prof->events.begin() + (std::ptrdiff_t)at, prof->events.end() - 1, prof->events.end());
            if (prof->wants(pc)) capture_output(*prof, pc, x);
          } else {
            x.delegate->execute(ctx, x.args.data(), x.args.size());
          }
          if (ETNP_PROBE_ENABLED(instruction_end)) ETNP_PROBE2(instruction_end, pc, x.op);
          break;
        case Instruction::Move:
          values_[x.b] = values_[x.a];
          break;
        case Instruction::JumpFalse: {
          const EValue& c = values_[x.a];
          bool cond;
          if (c.tag == Tag::Bool || c.tag == Tag::Int) cond = c.i != 0;
          else if (c.tag == Tag::Tensor && c.t.numel() == 1 && c.t.data) cond = load_f64(c.t.data, c.t.dtype, 0) != 0;
          else throw_exec("jump condition is not a bool");
          if (!cond) next = (size_t)x.b;
          break;
        }
        case Instruction::Free:
          break;
      }
    } catch (const Error& e) {
      const Instruction& at = instructions_[running_];  // (a fused chain's member, or x)
      if (x.kind == Instruction::Kernel || x.kind == Instruction::Delegate)
        throw Error(e.code() == ETNP_ERR_PROGRAM_LOAD ? ETNP_ERR_EXECUTION : e.code(),
                    std::string(at.op) + " (instruction " + std::to_string(running_) + "): " + e.what(), e.detail());
      throw;
    } catch (const std::bad_alloc&) {
      throw_exec(std::string(instructions_[running_].op) + ": out of memory");
    }
    pc = next;
  }
}

}  // namespace etnp
