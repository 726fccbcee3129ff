// SIGINT and the run limits: a chaining SIGINT handler counts interrupts (then calls the handler
// it replaced, e.g. Python's, so the host still sees the signal), and RunControl::poll turns a
// count change, a cancel request, a passed deadline or too many instructions into an error.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "runtime/error.h"
#include "runtime/run_control.h"

namespace etnp {

namespace {
std::atomic<uint64_t> g_sigints{0};
struct sigaction g_previous;
std::atomic<bool> g_installed{false};

void on_sigint(int sig, siginfo_t* info, void* uc) {
  g_sigints.fetch_add(1, std::memory_order_relaxed);
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, uc);
  } else if (g_previous.sa_handler == SIG_DFL) {
    signal(SIGINT, SIG_DFL);  // what would have happened without us
    raise(SIGINT);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
  }
}
}  // namespace

uint64_t sigint_count() { return g_sigints.load(std::memory_order_relaxed); }

bool install_interrupt_handler() {
  struct sigaction cur;
  if (sigaction(SIGINT, nullptr, &cur) != 0) return false;
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == &on_sigint) return true;  // already ours
  if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN) return true;  // ignored: must not stop calls
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = &on_sigint;
  sa.sa_flags = SA_SIGINFO | (cur.sa_flags & SA_RESTART);
  sigemptyset(&sa.sa_mask);
  g_previous = cur;
  if (sigaction(SIGINT, &sa, nullptr) != 0) return false;
  g_installed.store(true);
  return true;
}

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
