#!/usr/bin/env bash
# The Windows x86-64 build for real, on Linux: compile the native core and its harnesses for
# Windows (mingw-w64, static, so no DLLs to find) and run them under Wine on every kernel path the
# run-time dispatch has - ETNP_CPU=native (AVX-512 where the CPU has it), avx2, generic:
# kernel_check (thread pool, vec_math, float / int8 / 4-bit GEMMs, depthwise, transposes, ...
# against naive loops) and leak_harness on a few fixtures (every load's outputs equal the first's;
# file reading, VirtualAlloc pages, CPU count and features through the Windows OS layer). The
# AVX2 / AVX-512 kernels are those of the Windows wheel: they are compiled wherever __x86_64__ is
# defined - mingw-w64's GCC and Clang, and clang-cl, which builds the wheel (setup.py).
#   bash tools/check_wine.sh      (SKIPPED without the cross compiler or Wine;
#                                  Debian: apt-get install g++-mingw-w64-x86-64-posix wine64)
#   ETNP_WINE_CXX=clang   compile with clang++ --target=x86_64-w64-mingw32 (clang-cl's code
#                         generator; the newest clang++-NN found, or ETNP_WINE_CLANG; with
#                         mingw-w64 g++'s libstdc++, linked by that g++). Default: gcc.
#   ETNP_WINE_OPT=-O3     the optimisation level (default -O1: the quickest build).
#   ETNP_WINE_CPUS="native generic"   the paths to run (default: native avx2 generic; empty:
#                         build only - tools/bench_wine.sh).
# Objects are kept in build/mingw-<compiler><opt> (rebuilt when their source or a header changed).
# GCC cannot align the stack beyond 16 bytes on Windows (GCC bug 54412): a __m256 / __m512 it
# spilled, or an alignas(32) local it read, with an aligned move (vmovaps, vmovdqa*) would fault
# when the slot is misaligned. GCC 12 emits unaligned moves there (none aligned in the -O1 and
# -O3 builds); the GCC objects are scanned for aligned 32 / 64-byte memory moves so that a
# compiler that does otherwise fails here (then assemble with -Wa,-muse-unaligned-vector-move,
# binutils >= 2.38). Clang realigns its stack frames; the wheel's clang-cl has no such hazard.
set -euo pipefail
cd "$(dirname "$0")/.."
MINGW_GXX=${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}
WINE=${WINE:-$(command -v wine64 || command -v wine || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || true)}
command -v "$MINGW_GXX" >/dev/null 2>&1 && [ -n "$WINE" ] || { echo "wine check: SKIPPED (needs $MINGW_GXX and wine64)"; exit 0; }
KIND=${ETNP_WINE_CXX:-gcc}
OPT=${ETNP_WINE_OPT:--O1}
CPUS=${ETNP_WINE_CPUS-native avx2 generic}
JOBS=${ETNP_BUILD_JOBS:-2}
OUT=build/mingw-$KIND$OPT
FLAGS="-std=c++17 $OPT -g0 -Inative/include -Inative/src -Wno-unused-parameter"
if [ "$KIND" = clang ]; then
  CLANG=${ETNP_WINE_CLANG:-$(command -v clang++-21 || command -v clang++-20 || command -v clang++-19 || command -v clang++ || true)}
  [ -n "$CLANG" ] || { echo "wine check: SKIPPED (ETNP_WINE_CXX=clang needs clang++)"; exit 0; }
  CXX="$CLANG --target=x86_64-w64-mingw32"
  # mingw-w64 g++'s own C++ headers (libstdc++), which not every clang finds by itself
  for d in $($MINGW_GXX -x c++ -E -v /dev/null 2>&1 | sed -n '/<...> search starts/,/End of search/p' | grep '^ .*/c++'); do
    FLAGS="$FLAGS -isystem $d"
  done
  FLAGS="$FLAGS -nostdinc++ -Wno-deprecated-declarations"  # (libstdc++ 12 headers under a newer clang)
else
  CXX=$MINGW_GXX
fi
echo "== compiling the core for Windows ($CXX $OPT)"
EXTRA_SOURCES="native_tests/kernel_check.cpp native_tests/leak_harness.cpp native_tests/bench_harness.cpp"
. tools/cross_objects.sh
CORE=$(echo "$OBJS" | grep -v '/native_tests_')
LINK_LOG=$(mktemp)
for h in kernel_check leak_harness bench_harness; do
  $MINGW_GXX -static "$OBJ_DIR/native_tests_$h.cpp.o" $CORE -o "$OUT/$h.exe" > "$LINK_LOG" 2>&1 || { cat "$LINK_LOG"; exit 1; }
  # (not the linker's notes that Clang's and GCC's copies of a type_info name differ in size)
  grep -v 'duplicate section .* has different size' "$LINK_LOG" || true
done
rm -f "$LINK_LOG"
if [ "$KIND" = gcc ]; then  # aligned 32 / 64-byte memory moves (see above)
  aligned=$(for o in $OBJS; do x86_64-w64-mingw32-objdump -d --no-show-raw-insn "$o"; done |
    grep -E '[[:space:]]v(mova|movdqa|movnt)[a-z0-9]*[[:space:]].*%[yz]mm' | grep -c '(' || true)
  echo "aligned ymm/zmm memory moves in the GCC objects: $aligned"
  [ "$aligned" = 0 ] || { echo "wine check: FAILED (aligned 32/64-byte moves: GCC bug 54412)"; exit 1; }
fi

export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$PWD/build/wineprefix}
# the path each ETNP_CPU must select on this CPU (as runtime_info()["cpu_features"] says it)
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
best=generic
case " $flags " in *" avx2 "*) case " $flags " in *" fma "*) best="avx2,fma" ;; esac ;; esac
[ "$best" != generic ] && case " $flags " in *" avx512f "*) best="avx512f,avx2,fma" ;; esac
want_path() {
  case $1 in
    generic) echo generic ;;
    avx2) [ "$best" = generic ] && echo generic || echo "avx2,fma" ;;
    *) echo "$best" ;;
  esac
}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
# A Wine run's output goes through a file: the wineserver the first run starts would hold a pipe
# open (and a reader waiting) until it exits, seconds after the last run.
# A fault Wine reports fails the run even where the exit status stays 0 (a worker thread's fault
# at exit, after the program's last line, left it 0).
run() {
  local rc=0
  "$WINE" "$@" > "$LOG" 2>&1 || rc=$?
  grep -v '^wine:' "$LOG" || true
  ! grep -q -E 'Unhandled (exception|page fault)' "$LOG" || return 1
  return $rc
}
if [ -n "$CPUS" ] && { run "$OUT/leak_harness.exe" >/dev/null; ! grep -q '^usage' "$LOG"; }; then
  echo "wine check: SKIPPED ($WINE does not run Windows programs here)"
  exit 0
fi
for cpu in $CPUS; do
  want=$(want_path "$cpu")
  echo "== ETNP_CPU=$cpu under $WINE (expect the $want kernels)"
  ETNP_CPU=$cpu run "$OUT/kernel_check.exe" || { echo "wine check: FAILED (kernel_check, ETNP_CPU=$cpu)"; exit 1; }
  grep -q "^kernel_check ($want)" "$LOG" || { echo "wine check: FAILED (ETNP_CPU=$cpu ran other kernels than $want)"; exit 1; }
  for m in add mlp small_cnn_xnn xnn_ops qlinear_dyn_xnn q8da4w_xnn qconv_chain_static_xnn half_xnn kv_state; do
    echo -n "$m: "
    ETNP_CPU=$cpu run "$OUT/leak_harness.exe" "tests/models/$m.pte" 2 || { echo "wine check: FAILED (leak_harness $m, ETNP_CPU=$cpu)"; exit 1; }
  done
done
echo "wine check: OK ($KIND $OPT; paths: $CPUS)"
