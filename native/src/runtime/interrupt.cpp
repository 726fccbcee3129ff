// SIGINT and the run limits: a chaining SIGINT handler counts interrupts (then calls the handler
// it replaced, e.g. Python's, so the host still sees the signal), and RunControl::poll turns a
// count change, a cancel request, a passed deadline or too many instructions into an error.
#include <atomic>
#include <cstdio>

#include "core/error.h"
#include "os/sigint.h"
#include "runtime/run_control.h"

namespace etnp {

namespace {
std::atomic<uint64_t> g_sigints{0};
void count_sigint() { g_sigints.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

uint64_t sigint_count() { return g_sigints.load(std::memory_order_relaxed); }

bool install_interrupt_handler() { return os::install_sigint_hook(&count_sigint); }

void RunControl::poll(const std::string& method, int64_t steps) {
  if (steps > kMaxInstructionsPerCall)
    throw Error(ETNP_ERR_CANCELLED, "method '" + method + "' exceeded the limit of " +
                                        std::to_string(kMaxInstructionsPerCall) +
                                        " instructions per call (a loop that does not end?)", "instructions");
  if (cancel.load(std::memory_order_relaxed))
    throw Error(ETNP_ERR_CANCELLED, "method '" + method + "' was cancelled", "cancel");
  if (poll_sigint && g_sigints.load(std::memory_order_relaxed) != sigints)
    throw Error(ETNP_ERR_CANCELLED, "method '" + method + "' was interrupted (SIGINT)", "interrupt");
  if (deadline_ns && (steps & 15) == 0 && now_ns() > deadline_ns) {
    char t[32];
    std::snprintf(t, sizeof(t), "%g", timeout_s.load());
    throw Error(ETNP_ERR_CANCELLED, "method '" + method + "' timed out after " + t + " s", "timeout");
  }
}

}  // namespace etnp
