#!/usr/bin/env bash
# Native QA gates: builds the core with ASan+UBSan, with TSan and plain (g++), and runs the kernel
# check (thread pool contract, float/int8 GEMM), the leak harness (LLM programs included), the
# loader fuzzer (bounded), valgrind memcheck, the race harness and the kernel check again under
# TSan; then, where the package imports, the Python-side readers' fuzzer (tools/fuzz_python.py).
#   bash native_tests/run_gates.sh [FUZZ_SECONDS [LIBFUZZER_SECONDS]]
# With clang++ and its fuzzer runtime present, also builds and runs the libFuzzer target.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${1:-${ETNP_FUZZ_SECONDS:-60}}
LIBFUZZER_SECONDS=${2:-${ETNP_LIBFUZZER_SECONDS:-240}}
JOBS=${ETNP_BUILD_JOBS:-2}
OUT=build/native_tests
mkdir -p "$OUT"
SRCS=$(find native/src -name '*.cpp' | sort)
COMMON="-std=c++17 -O1 -g -fno-omit-frame-pointer -Inative/include -Inative/src -pthread"

build() {  # [CXX=clang++] build NAME "FLAGS" HARNESS...  (harness flags: $LINK_FLAGS or FLAGS)
  local name=$1 flags=$2; shift 2
  local cxx=${CXX:-g++} link=${LINK_FLAGS:-$flags}
  local dir="$OUT/$name"
  mkdir -p "$dir"
  # a core header newer than the last build invalidates every object (no per-file dependency
  # tracking); native_tests/*.h only reach the harnesses, which are compiled on every run
  if [ -e "$dir/.stamp" ] && [ -n "$(find native -name '*.h' -newer "$dir/.stamp")" ]; then
    rm -f "$dir"/*.o
  fi
  echo "$SRCS" | tr ' ' '\n' | xargs -P "$JOBS" -I{} sh -c \
    'o="'"$dir"'/$(echo {} | tr / _).o"; [ "$o" -nt {} ] || '"$cxx $COMMON $flags"' -c {} -o "$o"'
  for h in "$@"; do
    $cxx $COMMON $link "native_tests/$h.cpp" "$dir"/*.o -o "$dir/$h"
  done
  touch "$dir/.stamp"
}

echo "== building ASan+UBSan harnesses"
build asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined" leak_harness fuzz_loader kernel_check
echo "== building TSan harness"
build tsan "-fsanitize=thread" race_harness kernel_check

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== kernel check (float and int8 GEMM vs naive loops, every CPU path)"
for cpu in native avx512 avx2 generic; do ETNP_CPU=$cpu "$OUT/asan/kernel_check"; done
for m in add mlp small_cnn_xnn xnn_ops qlinear_dyn_xnn qadd_constant_xnn q8da4w_xnn channels_last_xnn kv_state ops_kv_state \
         conv_regimes_xnn half_xnn winograd_xnn winograd1d_xnn dead_taps_xnn \
         act_cnn_xnn qact_cnn_static_xnn; do  # (the last two: SiLU chains - one pass, int8 tables)
  "$OUT/asan/leak_harness" "tests/models/$m.pte" 20
done
# the Winograd transforms' other CPU paths (AVX2, scalar); static int8 with XNNPACK's
# requantization (integer biases in every GEMM / depthwise path, fixed-point adds, exact multiplies,
# pooling, a clamp fused onto another grid) on each path
for cpu in native avx2 generic; do
  for m in winograd_xnn winograd1d_xnn qref_static_xnn; do ETNP_CPU=$cpu "$OUT/asan/leak_harness" "tests/models/$m.pte" 3; done
done
# LLM programs (token ids below the vocabulary, input_pos 0): KV caches as state (index_put, then
# reset), llama::update_cache / custom_sdpa, 4-bit (8da4w) linears in the XNNPACK delegate
for m in llm_fp32_kv llm_fp32_kv_static llm_fp32_sdpa llm_8da4w_kv llm_8da4w_sdpa llm_fp32_nokv; do
  "$OUT/asan/leak_harness" "tests/models/$m.pte" 3
done
# fused chains (RMSNorm, SwiGLU, RoPE) whose kernels decline: each chain's instructions at its place
for m in llm_fp32_sdpa llm_8da4w_kv; do ETNP_FUSE_CHAINS=decline "$OUT/asan/leak_harness" "tests/models/$m.pte" 3; done
# copies made views of their input's bytes, or their input written where they are planned
# (runtime/copy_elision.cpp): programs that have such copies
for m in encoder encoder_xnn ops_index ops_more_shapes qbert_ln_dyn_xnn; do
  "$OUT/asan/leak_harness" "tests/models/$m.pte" 3
done
mkdir -p "$OUT/crashes"
cp tests/models/*.pte "$OUT/crashes/" 2>/dev/null || true
# capped by executions too (fixed RNG seed, sorted seeds): CI mutates exactly the inputs a dry run did
"$OUT/asan/fuzz_loader" tests/models "$FUZZ_SECONDS" "$OUT/crashes" "${ETNP_FUZZ_MAX_EXECS:-50000}"
# replay the kept crash corpus too
"$OUT/asan/fuzz_loader" tests/fuzz_corpus 2 "$OUT/crashes"

# libFuzzer (coverage-guided) where clang with its fuzzer runtime exists
if command -v clang++ >/dev/null 2>&1 && echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}' \
    | clang++ -x c++ -fsanitize=fuzzer - -o "$OUT/.probe" 2>/dev/null; then
  echo "== building libFuzzer target (clang)"
  CXX=clang++ LINK_FLAGS="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined" \
    build libfuzzer "-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" fuzz_libfuzzer
  CORPUS="$OUT/libfuzzer-corpus"
  rm -rf "$CORPUS" "$OUT/libfuzzer-crashes"  # a fresh start every time: the run is reproducible
  mkdir -p "$CORPUS" "$OUT/libfuzzer-crashes"
  SEEDS="$OUT/libfuzzer-seeds"
  rm -rf "$SEEDS"; mkdir -p "$SEEDS"
  # .pte programs, .ptd data files (fuzzed as mlp_external.pte's weights), .bpte bundles (their
  # program reaches the core; the test cases are Python's: tools/fuzz_python.py below)
  find tests/models tests/fuzz_corpus -type f -size -1024k \( -name '*.pte' -o -name '*.ptd' -o -name '*.bpte' \
    -o -name 'crash-*' -o -name 'seed-*' \) -exec cp {} "$SEEDS/" \;
  # huge planned buffers are legal in the format: the allocator refuses them (-> ProgramLoadError).
  # One refused allocation is 1 GiB and more: a mutated graph may declare a node whose output is
  # legal but huge (a 1.5 GB convolution result), and two such allocated and written, with ASan's
  # shadow, exceed the 4 GiB RSS limit below - an OOM of the harness's own budget, not a finding.
  # -seed and -runs make the mutations the same for the same binary; the time stays a cap
  ASAN_OPTIONS=max_allocation_size_mb=1024:allocator_may_return_null=1:detect_leaks=1 \
  "$OUT/libfuzzer/fuzz_libfuzzer" "$CORPUS" "$SEEDS" -seed="${ETNP_LIBFUZZER_SEED:-1}" \
    -runs="${ETNP_LIBFUZZER_RUNS:-150000}" -max_total_time="$LIBFUZZER_SECONDS" -max_len=65536 \
    -rss_limit_mb=4096 -malloc_limit_mb=4096 -timeout=300 -report_slow_units=300 -print_final_stats=1 \
    -artifact_prefix="$OUT/libfuzzer-crashes/" 2>&1 \
    | grep -E '^(stat::|#[0-9]+ *(DONE|INITED)|==|SUMMARY|Done)' || true
  # A mutated program may legally declare a lot of work (a huge convolution: ~0.5 s in release,
  # tens of seconds under ASan); only a crash, leak, OOM or a 300 s timeout fails the gate.
  [ -z "$(ls -A "$OUT/libfuzzer-crashes" | grep -v '^slow-unit-')" ] || { echo "libFuzzer found crashes in $OUT/libfuzzer-crashes"; exit 1; }
else
  echo "== libFuzzer: SKIPPED (no clang++ with -fsanitize=fuzzer; apt-get install clang libclang-rt-14-dev)"
fi

# the Python-side readers the core never sees: mutated .bpte (bundled.parse, load_program, verify),
# .ptd (with their programs), and the CLI's .npz inputs (tools/fuzz_python.py; capped by cases too,
# so that CI runs the same cases as a dry run). Any finding fails the gate.
PYTHON=${PYTHON:-python3}
if "$PYTHON" -c "import executorch_numpy_runtime" >/dev/null 2>&1; then
  echo "== Python readers fuzzer (.bpte, .ptd, .npz)"
  rm -rf "$OUT/pyfuzz"  # its reproducers are this run's only
  "$PYTHON" tools/fuzz_python.py --seed 1 --seconds "${ETNP_PYFUZZ_SECONDS:-60}" \
    --max-cases "${ETNP_PYFUZZ_MAX_CASES:-2500}" --out "$OUT/pyfuzz"
else
  echo "== Python readers fuzzer: SKIPPED (executorch_numpy_runtime not importable by $PYTHON)"
fi

# uninitialised memory (the role MSan would have): valgrind memcheck on an unsanitised build;
# leak_harness compares every run's outputs with the first load's, so outputs computed from
# uninitialised memory are reported
if command -v valgrind >/dev/null 2>&1; then
  echo "== building plain harness for valgrind memcheck"
  build plain "" leak_harness
  for m in mlp_xnn small_cnn_xnn xnn_ops encoder_xnn qcnn_static_xnn qlinear_dyn_xnn mobilenet_v2_xnn small_cnn \
           ops_conv_norm ops_index ops_mask_index custom_lstm q8da4w_xnn kv_state llm_8da4w_kv llm_fp32_sdpa \
           conv_regimes_xnn half_xnn winograd_xnn winograd1d_xnn; do
    valgrind --error-exitcode=9 -q "$OUT/plain/leak_harness" "tests/models/$m.pte" 2
  done
else
  echo "== valgrind memcheck: SKIPPED (valgrind not installed)"
fi

RUN_TSAN="env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1"
if command -v setarch >/dev/null 2>&1; then RUN_TSAN="setarch $(uname -m) -R $RUN_TSAN"; fi
$RUN_TSAN "$OUT/tsan/race_harness" tests/models/mlp_xnn.pte 8 50
$RUN_TSAN "$OUT/tsan/race_harness" tests/models/small_cnn.pte 4 20
for m in winograd_xnn winograd1d_xnn; do  # (their blocks on the pool's threads)
  $RUN_TSAN "$OUT/tsan/race_harness" "tests/models/$m.pte" 4 10
done
# state shared by threads (results checked against consecutive calls) and the LLM kernels
for m in kv_state ops_kv_state; do $RUN_TSAN "$OUT/tsan/race_harness" "tests/models/$m.pte" 4 10; done
for m in llm_fp32_kv llm_8da4w_kv llm_fp32_sdpa llm_8da4w_sdpa; do $RUN_TSAN "$OUT/tsan/race_harness" "tests/models/$m.pte" 3 3; done
$RUN_TSAN "$OUT/tsan/kernel_check"  # the thread pool's contract and threaded GEMMs under TSan
echo "native gates: OK"
