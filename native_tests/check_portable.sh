#!/usr/bin/env bash
# Source lint for the portability rules (issue #18): compiler extensions only through
# util/compiler.h (ETNP_TARGET, ETNP_TARGET_INLINE, etnp::mul_overflow/add_overflow) and OS
# calls only in native/src/os/ (file mapping, pages, CPU features and count, SIGINT, spin hint),
# so MSVC and non-Linux systems compile the rest unchanged; then util/compiler.h's plain-C++
# overflow checks (MSVC's) against the GCC builtins (native_tests/compiler_check.cpp). A few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
ALLOWED='^native/src/(util/compiler\.h|os/)'
# fails the check with WHAT and the offending lines, where there are any
reject() { [ -z "$2" ] || { echo "portability check: $1:"; echo "$2"; exit 1; }; }
bad=$(grep -rnE '__builtin_|__attribute__|\basm\b|__asm__|__int128|\btypeof\b|#include <(sys/|unistd\.h|fcntl\.h|pthread\.h|sched\.h|signal\.h|windows\.h|dlfcn\.h)|"/proc/|"/sys/' \
        native/src native/include --include='*.cpp' --include='*.h' \
      | grep -vE "$ALLOWED" \
      | grep -vE ':[0-9]+:#pragma clang attribute' || true)
reject "compiler- or OS-specific code outside util/compiler.h and os/" "$bad"
# A per-thread object with a destructor only through ETNP_THREAD_LOCAL (os/thread_slot.h): with
# mingw-w64 GCC's emulated TLS a plain thread_local's destructor reads freed storage at thread exit.
bad=$(grep -rnE '^[^/]*\bthread_local\b' native/src --include='*.cpp' --include='*.h' \
      | grep -v '^native/src/os/thread_slot\.h:' \
      | grep -vE '\bthread_local\s+(static\s+)?(const\s+)?(bool|char|int|unsigned|u?int(8|16|32|64)_t|size_t|float|double)\b' \
      | grep -vE '\bthread_local\s+(const\s+)?[A-Za-z_][A-Za-z0-9_:]*\s*\*' || true)
reject "thread_local objects that are not scalars or pointers (use ETNP_THREAD_LOCAL)" "$bad"
OUT=build/native_tests
mkdir -p "$OUT"
${CXX:-g++} -std=c++17 -O1 -Inative/src native_tests/compiler_check.cpp -o "$OUT/compiler_check"
"$OUT/compiler_check"
echo "portability check: OK"
