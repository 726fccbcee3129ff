#ifdef _WIN32
#include "os/sigint.h"

#include <atomic>
#include <csignal>

namespace etnp::os {

namespace {
using Handler = void (*)(int);
std::atomic<Handler> g_previous{nullptr};
std::atomic<void (*)()> g_hook{nullptr};

// The handler it replaced first (Python's records the signal), then the hook: a call the count
// stops returns with its host's handler already tripped (as on POSIX).
void on_sigint(int sig) {
  std::signal(SIGINT, &on_sigint);  // the C runtime resets the handler before calling it
  Handler prev = g_previous.load();
  if (prev == SIG_DFL) {
    std::signal(SIGINT, SIG_DFL);  // what would have happened without us
    std::raise(SIGINT);
  } else if (prev != SIG_IGN && prev) {
    prev(sig);
  }
  if (auto h = g_hook.load(std::memory_order_relaxed)) h();
}
}  // namespace

bool install_sigint_hook(void (*hook)()) {
  Handler cur = std::signal(SIGINT, &on_sigint);
  if (cur == SIG_ERR) return false;
  if (cur == &on_sigint) return true;  // already ours
  if (cur == SIG_IGN) {  // ignored: must not stop calls
    std::signal(SIGINT, SIG_IGN);
    return true;
  }
  g_previous.store(cur);
  g_hook.store(hook);
  return true;
}

}  // namespace etnp::os
#endif  // _WIN32
