// Profiling of method calls: when a method has a Profiler (etnp_method_set_profiling), the
// interpreter records each kernel/delegate instruction's time and delegates record their own
// steps (XNNPACK: each node) inside it. Without one, the only cost is a null-pointer test per
// instruction (and per delegate call).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace etnp {

struct ProfileEvent {
  std::string name;      // operator ("aten::add.out"), delegate id, or a delegate's step ("XNNConv2d+Add")
  int64_t start_ns = 0;  // from the start of the call
  int64_t duration_ns = 0;
  int32_t instruction = -1;  // the instruction it belongs to
  int32_t depth = 0;         // 0: an instruction; 1: a step inside a delegate call
  int32_t node = -1;         // the delegate's step index (XNNPACK node), -1 for instructions
  std::string shape;         // the step's output shape ("1x32x112x112"), when known
  int32_t chain = 0;              // the program's chain of the instruction
  int32_t chain_instruction = -1; // the instruction's index in its chain (ExecuTorch's instruction id)
};

// A value an instruction produced, copied after it ran (ETDump debug events: intermediate outputs).
struct CapturedValue {
  int32_t instruction = -1;
  int32_t item = 0;      // the tensor's index in a tensor list output, else 0
  int kind = 0;          // etnp_kind: tensor, int, bool, double, or none
  Tensor t;              // dtype, sizes, strides and dim order; data points into bytes
  std::vector<uint8_t> bytes;
  int64_t i = 0;
  double d = 0;
};

struct Profiler {
  std::vector<ProfileEvent> events;  // of the last call
  int64_t t0 = 0;
  int32_t instruction = -1;  // the instruction running
  int32_t chain = 0, chain_instruction = -1;
  // Intermediate outputs: capture[pc] != 0 copies instruction pc's output (its last argument)
  // after it runs into captured (empty: none).
  std::vector<uint8_t> capture;
  std::vector<CapturedValue> captured;  // of the last call
  bool wants(size_t pc) const { return pc < capture.size() && capture[pc]; }

  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void begin_call() {
    events.clear();
    captured.clear();
    t0 = now();
  }
  // Records [start, end) (absolute now() values) for a step of the instruction running.
  void add(std::string name, int64_t start, int64_t end, int32_t depth, int32_t node = -1, std::string shape = {}) {
    ProfileEvent e;
    e.name = std::move(name);
    e.start_ns = start - t0;
    e.duration_ns = end - start;
    e.instruction = instruction;
    e.depth = depth;
    e.node = node;
    e.shape = std::move(shape);
    e.chain = chain;
    e.chain_instruction = chain_instruction;
    events.push_back(std::move(e));
  }
};

}  // namespace etnp
