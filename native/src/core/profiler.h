// Profiling of method calls: when a method has a Profiler (etnp_method_set_profiling), the
// interpreter records each kernel/delegate instruction's time and delegates record their own
// steps (XNNPACK: each node) inside it. Without one, the only cost is a null-pointer test per
// instruction (and per delegate call).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace etnp {

struct ProfileEvent {
  std::string name;      // operator ("aten::add.out"), delegate id, or a delegate's step ("XNNConv2d+Add")
  int64_t start_ns = 0;  // from the start of the call
  int64_t duration_ns = 0;
  int32_t instruction = -1;  // the instruction it belongs to
  int32_t depth = 0;         // 0: an instruction; 1: a step inside a delegate call
  int32_t node = -1;         // the delegate's step index (XNNPACK node), -1 for instructions
  std::string shape;         // the step's output shape ("1x32x112x112"), when known
};

struct Profiler {
  std::vector<ProfileEvent> events;  // of the last call
  int64_t t0 = 0;
  int32_t instruction = -1;  // the instruction running

  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void begin_call() {
    events.clear();
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
    events.push_back(std::move(e));
  }
};

}  // namespace etnp
