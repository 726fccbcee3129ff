#!/usr/bin/env bash
# Instructions per GEMM call on each aarch64 kernel path, counted under qemu-aarch64 (-cpu max) by
# a TCG plugin (tools/qemu/insn_count_plugin.c): the 4-bit (qgemm_qb4) and int8 (qgemm_q8) GEMMs
# on the dot-product (ETNP_CPU=native), base NEON (neon) and portable (generic) paths, for a few
# shapes; per call (count with 3 calls less the count with none, over 3) and per 512 multiply-adds
# (a row x 16 columns x 32 k). Emulated time means nothing for a real core; instruction counts are
# deterministic and compare the code paths. Needs what tools/check_aarch64.sh needs (it builds
# the objects, at -O2, into build/aarch64) and a host gcc for the plugin.
#   bash tools/count_aarch64_insns.sh ["qb4 M N K bs" ...]
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${AARCH64_CXX:-aarch64-linux-gnu-g++}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
command -v "$CXX" >/dev/null 2>&1 && command -v "$QEMU" >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1 \
  || { echo "instruction count: SKIPPED (needs $CXX, $QEMU and gcc)"; exit 0; }
JOBS=${ETNP_BUILD_JOBS:-2}
OUT=build/aarch64
FLAGS="-std=c++17 -O2 -g0 -Inative/include -Inative/src -pthread -Wno-unused-parameter"
. tools/cross_objects.sh
$CXX $FLAGS native_tests/gemm_insn_count.cpp $OBJS -o "$OUT/gemm_insn_count"
gcc -shared -fPIC -O2 tools/qemu/insn_count_plugin.c -o "$OUT/insn_count_plugin.so"
count() {  # path kind M N K bs reps -> instructions of the whole run
  ETNP_CPU=$1 "$QEMU" -cpu max -L "$SYSROOT" -plugin "$OUT/insn_count_plugin.so" "$OUT/gemm_insn_count" "${@:2}" 2>&1 \
    | sed -n 's/^insns: //p'
}
if [ $# -eq 0 ]; then
  set -- "qb4 1 2048 2048 32" "qb4 1 576 1536 32" "qb4 4 576 576 32" "qb4 17 576 576 32" "qb4 32 576 576 32" \
         "q8 1 1024 1024 32" "q8 32 256 512 32"
fi
printf "%-22s %26s %26s %26s\n" "GEMM M N K (bs)" "native (dot product)" "neon" "generic"
for shape in "$@"; do
  read -r kind M N K bs <<<"$shape"
  line=$(printf "%-22s" "$kind $M $N $K ($bs)")
  for path in native neon generic; do
    none=$(count "$path" "$kind" "$M" "$N" "$K" "$bs" 0)
    three=$(count "$path" "$kind" "$M" "$N" "$K" "$bs" 3)
    per=$(( (three - none) / 3 ))
    line="$line $(printf "%13d (%6.1f/512)" "$per" "$(echo "$per * 512 / ($M * $N * $K)" | bc -l)")"
  done
  echo "$line"
done
