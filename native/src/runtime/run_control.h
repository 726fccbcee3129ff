// Limits of one method call: the instruction cap (as ExecuTorch's), cancellation from another
// thread (etnp_method_cancel), a deadline (etnp_method_set_run_limits) and, for calls that ask
// for it, SIGINT (etnp_install_interrupt_handler). The interpreter polls it between instructions.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace etnp {

constexpr int64_t kMaxInstructionsPerCall = 10000000;

// SIGINTs seen since etnp_install_interrupt_handler (0 when not installed). runtime/interrupt.cpp
uint64_t sigint_count();
bool install_interrupt_handler();

struct RunControl {
  std::atomic<bool> cancel{false};
  std::atomic<double> timeout_s{0};        // 0: none
  std::atomic<bool> interruptible{false};  // a SIGINT during the call cancels it

  // State of the call in progress (the runtime's mutex is held).
  int64_t deadline_ns = 0;
  uint64_t sigints = 0;
  bool poll_sigint = false;

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // The SIGINT count a caller marked before preparing the next call (etnp_method_mark_interrupts).
  std::atomic<uint64_t> marked_sigints{0};
  std::atomic<bool> marked{false};
  void mark_interrupts() {
    marked_sigints.store(sigint_count(), std::memory_order_relaxed);
    marked.store(true, std::memory_order_release);
  }

  void begin() {
    cancel.store(false, std::memory_order_relaxed);
    double t = timeout_s.load(std::memory_order_relaxed);
    deadline_ns = t > 0 ? now_ns() + (int64_t)(t * 1e9) : 0;
    poll_sigint = interruptible.load(std::memory_order_relaxed);
    const bool was_marked = marked.exchange(false, std::memory_order_acquire);
    sigints = poll_sigint ? (was_marked ? marked_sigints.load(std::memory_order_relaxed) : sigint_count()) : 0;
  }
  // Throws when the call must stop; `steps` instructions have run so far.
  void poll(const std::string& method, int64_t steps);
};

}  // namespace etnp
