#!/usr/bin/env bash
# Compile-only portability check: every native/src/*.cpp through the mingw-w64 cross compiler
# (x86_64-w64-mingw32-g++, POSIX threads flavour: std::thread needs it), so the Windows side of
# the OS layer (native/src/os/*_win32.cpp) and everything else builds for Windows. -Wpedantic
# errors catch GNU extensions (VLAs, designated initialisers, ...) that MSVC lacks;
# native_tests/check_portable.sh catches the GCC builtins and attributes.
#   bash native_tests/check_mingw.sh          (SKIPPED when the cross compiler is absent;
#                                              Debian/Ubuntu: apt-get install g++-mingw-w64-x86-64-posix)
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${MINGW_CXX:-}
if [ -z "$CXX" ]; then
  for c in x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-g++; do
    command -v "$c" >/dev/null 2>&1 && { CXX=$c; break; }
  done
fi
[ -n "$CXX" ] || { echo "mingw check: SKIPPED (no x86_64-w64-mingw32-g++)"; exit 0; }
JOBS=${ETNP_BUILD_JOBS:-2}
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
FLAGS="-std=c++17 -fsyntax-only -Inative/include -Inative/src -Wall -Wno-unused-parameter -Wpedantic -Werror=pedantic -Werror=vla"
export CXX FLAGS LOG
find native/src -name '*.cpp' | sort | xargs -P "$JOBS" -I{} sh -c \
  '$CXX $FLAGS {} > "$LOG/$(echo {} | tr / _).log" 2>&1 || { echo "FAILED: {}"; cat "$LOG/$(echo {} | tr / _).log" | head -40; exit 255; }'
echo "mingw check: OK ($(find native/src -name '*.cpp' | wc -l) sources compile with $CXX)"
