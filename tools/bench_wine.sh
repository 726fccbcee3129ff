#!/usr/bin/env bash
# The Windows x86-64 build's speed under Wine against the Linux build, on this machine (Wine runs
# the x86-64 code natively: what differs is the compiler, the Windows ABI and the OS layer), on
# every kernel path (ETNP_CPU=native, avx2, generic), and whether the two builds' outputs agree.
# native_tests/bench_harness.cpp times N calls of a program's forward method (1 thread, patterned
# inputs) and writes its outputs:
#   Linux:   linked against setup.py's objects (build/etnp-objects/<platform>/native, -O3 as the wheel)
#   Windows: tools/check_wine.sh's objects at ETNP_WINE_OPT (default -O3), mingw-w64 GCC or, with
#            ETNP_WINE_CXX=clang, Clang (the wheel's clang-cl generates the same code).
# Rounds are interleaved (Linux, Windows, Linux, ...) and each cell is the median of the rounds'
# medians; the last column is the largest |difference| between the two builds' outputs (floats;
# integers must be equal).
#   bash tools/bench_wine.sh [PROGRAM.pte:N ...]    (SKIPPED where tools/check_wine.sh skips)
#   ETNP_BENCH_ROUNDS=3   ETNP_BENCH_CPUS="native avx2 generic"
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ETNP_BENCH_ROUNDS:-3}
CPUS=${ETNP_BENCH_CPUS:-native avx2 generic}
export ETNP_WINE_OPT=${ETNP_WINE_OPT:--O3}
KIND=${ETNP_WINE_CXX:-gcc}
PROGRAMS=("$@")
if [ ${#PROGRAMS[@]} = 0 ]; then
  PROGRAMS=(tests/models/mobilenet_v2_xnn.pte:10 tests/models/encoder_xnn.pte:200 tests/models/qbert_dyn_xnn.pte:100
            tests/models/qconv_chain_static_xnn.pte:200 tests/models/llm_8da4w_kv.pte:100)
  for p in /work/fullzoo/full_tv_mobilenet_v3_small.pte:20 /work/fullzoo/full_q8s_resnet50.pte:3; do
    [ -e "${p%:*}" ] && PROGRAMS+=("$p")
  done
fi
# the Windows harness (check_wine.sh builds it; no paths to run: ETNP_WINE_CPUS empty)
build_log=$(ETNP_WINE_CPUS="" bash tools/check_wine.sh) || { echo "$build_log"; exit 1; }
case $build_log in *SKIPPED*) echo "bench wine: SKIPPED"; exit 0 ;; esac
WIN_EXE=build/mingw-$KIND$ETNP_WINE_OPT/bench_harness.exe
WINE=${WINE:-$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)}
# the Linux harness, on the dev build's objects (python setup.py build_ext --inplace)
OBJ=$(python3 -c 'import sysconfig, platform; print(f"build/etnp-objects/{sysconfig.get_platform()}-{platform.python_implementation()}-{sysconfig.get_python_version()}/native")')
[ -d "$OBJ" ] || { echo "bench wine: no Linux build in $OBJ (run: python setup.py build_ext --inplace)"; exit 1; }
mkdir -p build/native_tests
LINUX_EXE=build/native_tests/bench_harness
${CXX:-g++} -std=c++17 -O3 -Inative/include -Inative/src native_tests/bench_harness.cpp $(find "$OBJ" -name '*.o' | sort) -lpthread -o "$LINUX_EXE"
export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$PWD/build/wineprefix}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median_ms() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
for r in $(seq "$ROUNDS"); do
  for p in "${PROGRAMS[@]}"; do
    path=${p%:*} n=${p##*:} key=$(basename "${p%:*}" .pte)
    for cpu in $CPUS; do
      ETNP_CPU=$cpu "$LINUX_EXE" "$path" "$n" 1 "$TMP/$key.$cpu.linux.out" | median_ms >> "$TMP/$key.$cpu.linux.ms"
      # (through a file: a pipe would wait for the wineserver this starts to exit)
      ETNP_CPU=$cpu "$WINE" "$WIN_EXE" "$path" "$n" 1 "$TMP/$key.$cpu.win.out" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
      median_ms < "$TMP/log" >> "$TMP/$key.$cpu.win.ms"
    done
  done
done
python3 - "$TMP" "$KIND $ETNP_WINE_OPT" "$ROUNDS" "$CPUS" "${PROGRAMS[@]}" <<'EOF'
import os, statistics, struct, sys
import numpy as np
tmp, build, rounds, cpus, programs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5:]
DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.float16, 6: np.float32,
          7: np.float64, 11: np.bool_, 15: np.uint16}
def outputs(path):
    data, pos, out = open(path, "rb").read(), 0, []
    while pos < len(data):
        dt, n = struct.unpack_from("<iq", data, pos)
        out.append((dt, np.frombuffer(data[pos + 12:pos + 12 + n], DTYPES.get(dt, np.uint8))))
        pos += 12 + n
    return out
def diff(a, b):
    worst = 0.0
    if len(a) != len(b): return "outputs differ in number"
    for (da, xa), (db, xb) in zip(a, b):
        if da != db or xa.shape != xb.shape: return "outputs differ in type or size"
        if da in (5, 6, 7):
            worst = max(worst, float(np.max(np.abs(xa.astype(np.float64) - xb.astype(np.float64)), initial=0.0)))
        elif not np.array_equal(xa, xb):
            return "integer outputs differ"
    return f"{worst:.2g}"
print(f"bench_harness, 1 thread, median of {rounds} interleaved rounds' medians (ms); Windows: mingw-w64 {build} under Wine")
print(f"| program | ETNP_CPU | Linux ms | Windows ms | Windows / Linux | max abs output diff |")
print("|---|---|---:|---:|---:|---:|")
for p in programs:
    key = os.path.basename(p.rsplit(":", 1)[0])[:-4]
    for cpu in cpus:
        ms = {}
        for side in ("linux", "win"):
            vals = [float(x) for x in open(f"{tmp}/{key}.{cpu}.{side}.ms").read().split()]
            ms[side] = statistics.median(vals) if len(vals) == int(rounds) else float("nan")
        d = diff(outputs(f"{tmp}/{key}.{cpu}.linux.out"), outputs(f"{tmp}/{key}.{cpu}.win.out"))
        print(f"| {key} | {cpu} | {ms['linux']:.3f} | {ms['win']:.3f} | {ms['win'] / ms['linux']:.2f} | {d} |")
EOF
