#!/usr/bin/env bash
# aarch64 for real, on an x86-64 machine: cross-compile the native core and its harnesses with
# Debian's aarch64-linux-gnu-g++ and run them under qemu-aarch64 user emulation:
#   kernel_check (thread pool, vec_math, float/int8/4-bit GEMM, transposes vs naive loops) on two
#   emulated CPUs: `max` (the dot-product extension: ETNP_CPU=native takes the SDOT kernels, neon
#   the base NEON ones, generic the portable ones) and cortex-a57 (base ARMv8, no dot product: the
#   run-time detection must pick base NEON), each run checking the paths it reports;
#   leak_harness and race_harness on a few fixtures (on `max`).
#   bash tools/check_aarch64.sh            (SKIPPED when the cross compiler or qemu is absent;
#                                           Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu qemu-user)
# Objects are kept in build/aarch64 (rebuilt when their source or a header they include changed).
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${AARCH64_CXX:-aarch64-linux-gnu-g++}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
command -v "$CXX" >/dev/null 2>&1 && command -v "$QEMU" >/dev/null 2>&1 \
  || { echo "aarch64 check: SKIPPED (needs $CXX and $QEMU)"; exit 0; }
JOBS=${ETNP_BUILD_JOBS:-2}
OUT=build/aarch64
FLAGS="-std=c++17 -O2 -g0 -Inative/include -Inative/src -pthread -Wno-unused-parameter"
echo "== cross-compiling the core for aarch64 ($CXX)"
. tools/cross_objects.sh
for h in kernel_check leak_harness race_harness; do
  $CXX $FLAGS "native_tests/$h.cpp" $OBJS -o "$OUT/$h"
done
file -b "$OUT/kernel_check" | cut -d, -f1-2
RUN="$QEMU -cpu max -L $SYSROOT"
echo "== kernel check under $QEMU"
# (emulated CPU, ETNP_CPU, the kernel path kernel_check must report)
while read -r qcpu cpu want; do
  echo "-- -cpu $qcpu, ETNP_CPU=$cpu"
  log=$(ETNP_CPU=$cpu $QEMU -cpu "$qcpu" -L "$SYSROOT" "$OUT/kernel_check") || { echo "$log"; exit 1; }
  echo "$log"
  echo "$log" | grep -q "^kernel_check ($want):" || { echo "aarch64 check: expected the $want path"; exit 1; }
done <<'RUNS'
max native neon,dotprod
max neon neon
max generic generic
cortex-a57 native neon
RUNS
echo "== leak harness under $QEMU"
for m in add mlp small_cnn_xnn xnn_ops qlinear_dyn_xnn q8da4w_xnn channels_last_xnn kv_state; do
  $RUN "$OUT/leak_harness" "tests/models/$m.pte" 3
done
echo "== race harness under $QEMU"
$RUN "$OUT/race_harness" tests/models/mlp_xnn.pte 4 10
echo "aarch64 check: OK"
