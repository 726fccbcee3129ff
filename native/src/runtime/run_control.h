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
  std::atomic<double> timeout_s{0};        // 0 or +inf: none
  std::atomic<bool> interruptible{false};  // a SIGINT during the call cancels it

  // State of the call in progress (the runtime's mutex is held).
  int64_t deadline_ns = 0;
  uint64_t sigints = 0;
  bool poll_sigint = false;

  // The steady-clock time `t` seconds after `now` (ns), or 0 (no deadline) for t <= 0, NaN, +inf
  // and any t whose deadline lies past the clock's range (~292 years): converting such a t * 1e9
  // to int64_t would be undefined.
  static int64_t deadline_after(double t, int64_t now) {
    if (!(t > 0)) return 0;
    // room less a 1 ms margin, far above a double's spacing there (2 us near 2^63 ns)
    const double ns = t * 1e9, room = (double)(INT64_MAX - now) - 1e6;
    if (!(ns < room)) return 0;
    const int64_t d = now + (int64_t)ns;
    return d > now ? d : now + 1;  // a positive timeout below 1 ns still has a deadline
  }
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
    deadline_ns = deadline_after(timeout_s.load(std::memory_order_relaxed), now_ns());
    poll_sigint = interruptible.load(std::memory_order_relaxed);
    const bool was_marked = marked.exchange(false, std::memory_order_acquire);
    sigints = poll_sigint ? (was_marked ? marked_sigints.load(std::memory_order_relaxed) : sigint_count()) : 0;
  }
  // Throws when the call must stop; `steps` instructions have run so far.
  void poll(const std::string& method, int64_t steps);
};

}  // namespace etnp
