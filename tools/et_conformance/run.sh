#!/usr/bin/env bash
# Run ExecuTorch's XNNPACK op/model tests against an out-of-process runtime.
#   bash tools/et_conformance/run.sh [ours|ref] [pytest args...]
# Test paths may be given relative to executorch/backends/xnnpack/test (ops, models/resnet.py,
# ops/test_add.py::TestAdd::test_fp32_add); with none, the whole ops directory runs.
# Env: ETC_EXPORT_PYTHON (torch + executorch env), ETC_PYTHON (runtime interpreter, overrides the
# preset), ETC_OUT (results dir, default /work/conformance), ETC_TIMEOUT (per-test seconds, 900),
# ETC_CALL_TIMEOUT (per execute call, 180), ETC_NICE (10), ETC_CL_INPUT / ETC_CL_OUTPUT.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODE="${1:-ours}"
case "$MODE" in ours|ref) shift || true ;; *) echo "usage: run.sh [ours|ref] [pytest args]" >&2; exit 2 ;; esac

EXPORT_PY="${ETC_EXPORT_PYTHON:-/work/envs/export-venv/bin/python}"
SITE="$("$EXPORT_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
TESTDIR="$SITE/executorch/backends/xnnpack/test"
OUT="${ETC_OUT:-/work/conformance}"
mkdir -p "$OUT"
export FLATC_EXECUTABLE="${FLATC_EXECUTABLE:-$(dirname "$EXPORT_PY")/flatc}"
export PYTHONPATH="$HERE/..${PYTHONPATH:+:$PYTHONPATH}"
export ETC_RUNTIME="$MODE"
export ETC_RESULTS="${ETC_RESULTS:-$OUT/results-$MODE.jsonl}"
export ETC_LOG_DIR="${ETC_LOG_DIR:-$OUT/logs-$MODE}"
export ETC_THREADS="${ETC_THREADS:-1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
: > "$ETC_RESULTS"

args=() ; have_path=0 ; have_timeout=0
for a in "$@"; do
  if [[ "$a" != -* && ( -e "$TESTDIR/${a%%::*}" ) ]]; then a="$TESTDIR/$a"; have_path=1
  elif [[ "$a" != -* && ( -e "${a%%::*}" ) ]]; then have_path=1; fi
  [[ "$a" == --timeout* ]] && have_timeout=1
  args+=("$a")
done
[[ $have_path == 1 ]] || args+=("$TESTDIR/ops")
[[ $have_timeout == 1 ]] || args+=("--timeout=${ETC_TIMEOUT:-900}")

cd "$OUT"
set -x
exec nice -n "${ETC_NICE:-10}" "$EXPORT_PY" -m pytest -p et_conformance.plugin -p no:cacheprovider \
  --rootdir="$TESTDIR" -o console_output_style=classic -rfE "${args[@]}"
