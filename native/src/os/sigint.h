// SIGINT (Ctrl+C) observation: a handler that calls HOOK and then whatever handler it replaced
// (e.g. Python's), so the host still sees the signal. POSIX (sigaction) in sigint_posix.cpp,
// Windows (the C runtime's signal()) in sigint_win32.cpp.
#pragma once

namespace etnp::os {

// Installs the chaining handler once (later calls with the same HOOK are no-ops). Returns false
// when the handler cannot be installed; true also when SIGINT is ignored (then nothing is
// installed: an ignored signal must not stop calls). HOOK must be async-signal-safe.
bool install_sigint_hook(void (*hook)());

}  // namespace etnp::os
