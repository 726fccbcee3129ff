#ifndef _WIN32
#include "os/sigint.h"

#include <signal.h>

#include <atomic>
#include <cstring>

namespace etnp::os {

namespace {
struct sigaction g_previous;
std::atomic<void (*)()> g_hook{nullptr};

// The handler it replaced first (Python's records the signal), then the hook (the count a running
// call polls): a call the count stops returns with its host's handler already tripped.
void on_sigint(int sig, siginfo_t* info, void* uc) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, uc);
  } else if (g_previous.sa_handler == SIG_DFL) {
    signal(SIGINT, SIG_DFL);  // what would have happened without us
    raise(SIGINT);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
  }
  if (auto h = g_hook.load(std::memory_order_relaxed)) h();
}
}  // namespace

bool install_sigint_hook(void (*hook)()) {
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
  g_hook.store(hook);
  return sigaction(SIGINT, &sa, nullptr) == 0;
}

}  // namespace etnp::os
#endif  // !_WIN32
