#!/usr/bin/env bash
# The Windows build for real, on Linux: compile the native core and its harnesses with mingw-w64
# (static, so no DLLs to find) and run them under Wine: kernel_check (thread pool, vec_math,
# float/int8 GEMM, transposes) and leak_harness on a few fixtures, which goes through the Windows
# OS layer (file reading, VirtualAlloc pages, CPU count and features).
#   bash tools/check_wine.sh      (SKIPPED without x86_64-w64-mingw32-g++-posix or Wine;
#                                  Debian: apt-get install g++-mingw-w64-x86-64-posix wine64)
# Objects are kept in build/mingw (rebuilt when their source or a header they include changed).
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}
WINE=${WINE:-$(command -v wine64 || command -v wine || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || true)}
command -v "$CXX" >/dev/null 2>&1 && [ -n "$WINE" ] || { echo "wine check: SKIPPED (needs $CXX and wine64)"; exit 0; }
JOBS=${ETNP_BUILD_JOBS:-2}
OUT=build/mingw
FLAGS="-std=c++17 -O1 -g0 -Inative/include -Inative/src -Wno-unused-parameter"
echo "== compiling the core for Windows ($CXX)"
. tools/cross_objects.sh
for h in kernel_check leak_harness; do
  $CXX $FLAGS -static "native_tests/$h.cpp" $OBJS -o "$OUT/$h.exe"
done
export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$PWD/build/wineprefix}
echo "== kernel check under $WINE"
for cpu in native generic; do ETNP_CPU=$cpu "$WINE" "$OUT/kernel_check.exe" 2>&1 | grep -v '^wine:'; done
echo "== leak harness under $WINE"
for m in add mlp small_cnn_xnn xnn_ops qlinear_dyn_xnn q8da4w_xnn kv_state; do
  "$WINE" "$OUT/leak_harness.exe" "tests/models/$m.pte" 2 2>&1 | grep -v '^wine:'
done
echo "wine check: OK"
