// Method: one execution plan made runnable - values, planned memory, resolved kernels
// and delegates - and its interpreter.
#pragma once
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/evalue.h"
#include "core/profiler.h"
#include "delegates/backend.h"
#include "kernels/registry.h"
#include "runtime/fused_calls.h"
#include "runtime/planned_buffer.h"
#include "runtime/program.h"
#include "runtime/run_control.h"

namespace etnp {
namespace os { class ReadOnlyMapping; }

struct Instruction {
  enum Kind { Kernel, Delegate, Move, JumpFalse, Free } kind;
  KernelFn fn = nullptr;
  const char* op = "";
  const void* user = nullptr;
  DelegateHandle* delegate = nullptr;
  std::vector<EValue*> args;
  int64_t a = 0, b = 0;  // Move: from, to. JumpFalse: cond, destination.
  int32_t chain = 0, index = 0;  // where the program has it: chain, index in the chain
  // The instruction a fused chain runs at (its last or its first) carries its call; its other
  // instructions are fused_away (runtime/fused_calls.h)
  std::shared_ptr<const FusedCall> fused;
  bool fused_away = false;
};

struct InputValue {  // what etnp_method_run binds
  int kind;
  DType dtype;
  int ndim;
  const int64_t* sizes;
  const void* data;
  size_t nbytes;
  int64_t i;
  double d;
};

class Method {
 public:
  Method(std::shared_ptr<Program> prog, const std::string& name);
  const std::string& name() const { return name_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const EValue& input(size_t i) const { return values_[inputs_.at(i)]; }
  const EValue& output(size_t i) const { return values_[outputs_.at(i)]; }
  const EValue& planned_input(size_t i) const { return planned_inputs_.at(i); }
  void set_inputs(const InputValue* in, size_t n);
  void execute();
  Program& program() { return *prog_; }
  RunControl& control() { return control_; }

  // State: mutable tensors (registered buffers a forward updates, e.g. KV caches) - planned
  // tensors with initial data in the program, or written back by copy_ / index_put_; they keep
  // their contents across calls.
  struct State {
    int64_t value;      // index in the value table
    Span init;          // initial contents (empty: zeros)
    std::string name;   // fully qualified name when the program gives one
  };
  const std::vector<State>& state() const { return state_; }
  const EValue& value(int64_t i) const { return values_.at((size_t)i); }
  // Puts every state tensor back to its initial contents.
  void reset_state();
  // Profiling of the following calls (null: off); the events of the last call.
  void set_profiling(bool on) { profiler_.reset(on ? new Profiler() : nullptr); }
  const Profiler* profiler() const { return profiler_.get(); }
  Profiler* profiler() { return profiler_.get(); }
  size_t num_instructions() const { return instructions_.size(); }
  // Bytes of planned buffers, folded constant copies, and what the delegates hold
  void memory(uint64_t* planned, uint64_t* folded, DelegateMemory* delegates) const;

 private:
  void parse_values(const fb::Table& plan);
  void parse_tensor(const fb::Table& t, EValue& v);
  void prepare_instructions(const fb::Table& plan, WeightCacheSession* weight_cache);
  void share_constants(WeightCacheSession& cache);  // runtime/shared_constants.cpp
  std::vector<bool> written_values() const;
  std::vector<bool> pinned_values() const;  // the inputs, outputs and state: kept past a call
  void check_tensor_args(const Instruction& x) const;
  void stream_weights();
  void fold_constant_copies();  // runtime/fold_constants.cpp
  void fuse_chains();           // runtime/fused_calls.cpp
  void elide_copies();          // runtime/copy_elision.cpp
  void run_kernel(KernelContext& ctx, size_t pc, Profiler* prof);
  void run_fused(KernelContext& ctx, size_t pc, Profiler* prof);
  void collect_state();
  bool is_io(const EValue* e) const;  // a method input or output
  void update_state_in_place();  // runtime/inplace_state.cpp
  void check_plan_consistency() const;  // runtime/plan_checks.cpp
  void protect_tensor_data();
  void run_instructions();
  void capture_output(Profiler& prof, size_t pc, const Instruction& x) const;

  std::shared_ptr<Program> prog_;
  std::string name_;
  std::vector<EValue> values_;
  std::vector<EValue> planned_inputs_;  // inputs as planned (bounds for dynamic dims)
  std::vector<int64_t> inputs_, outputs_;
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<PlannedBuffer>> buffers_;
  // planned buffer i's first byte (64-byte aligned)
  uint8_t* buffer_base(size_t i) const { return buffers_[i]->data(); }
  std::vector<Instruction> instructions_;
  size_t running_ = 0;  // the instruction the interpreter is running
  std::vector<std::vector<uint8_t>> reordered_inputs_;
  std::vector<State> state_;  // unplanned non-default dim-order inputs
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> folded_;  // storage of copies folded at load
  uint64_t folded_bytes_ = 0;
  std::vector<std::unique_ptr<DelegateHandle>> delegates_;
  std::shared_ptr<const os::ReadOnlyMapping> shared_constants_;  // the weight cache file constants are viewed in
  uint64_t shared_constant_bytes_ = 0;
  std::vector<std::shared_ptr<const struct CallbackOp>> callback_ops_;  // kept alive while loaded
  RunControl control_;
  std::unique_ptr<Profiler> profiler_;
  uint64_t calls_ = 0;  // execute() calls so far (the USDT probes' call id)
};

// Operator names ("ns::name.overload") and delegate ids used by a plan.
std::vector<std::string> plan_operator_names(const fb::Table& plan);
std::vector<std::string> plan_delegate_ids(const fb::Table& plan);
// A method's i-th input (or output) as its plan declares it, read without loading the method:
// kind, and for tensors dtype, sizes (upper bounds when dynamic) and dynamism. Throws on a
// malformed plan.
size_t plan_num_io(const fb::Table& plan, bool output);
EValue plan_io_value(const fb::Table& plan, bool output, size_t i);

}  // namespace etnp
