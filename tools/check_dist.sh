#!/usr/bin/env bash
# Build an sdist and, from it, ONE wheel with `python -m build`; check the wheel is tagged
# cp39-abi3 (the extension is built against the limited API), then install that same wheel into
# fresh venvs of several CPython versions and run the test suite against the installed package
# (not the source tree) on each.
#   PYTHON=python3            the interpreter that builds (default python3)
#   DIST_PYTHONS="a b ..."    interpreters to test the wheel on (default: PYTHON plus the oldest
#                             and newest other CPython 3.9+ found on PATH or under pyenv)
# At least two distinct CPython versions must be tested, or the check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
rm -rf dist .venv-dist .venv-dist-*
"$PY" -m venv .venv-dist
.venv-dist/bin/python -m pip install -q build
ETNP_BUILD_JOBS=${ETNP_BUILD_JOBS:-2} .venv-dist/bin/python -m build -q . >/dev/null
ls dist
WHEELS=(dist/*.whl)
[ ${#WHEELS[@]} = 1 ] || { echo "expected one wheel, got: ${WHEELS[*]}"; exit 1; }
WHL=${WHEELS[0]}
case "$WHL" in
  *-cp39-abi3-*.whl) ;;
  *) echo "wheel is not tagged cp39-abi3: $WHL"; exit 1 ;;
esac
# the extension module inside must be the limited-API one (no version-specific suffix)
.venv-dist/bin/python -c "import sys, zipfile; n=[x for x in zipfile.ZipFile(sys.argv[1]).namelist() if '_etnp' in x]; print('extension:', n); \
sys.exit(0 if n and all('.abi3.' in x or x.endswith('.pyd') for x in n) else 1)" "$WHL"
# and it must import only stable-ABI symbols of 3.9 or older (abi3audit, where PyPI is reachable)
if .venv-dist/bin/python -m pip install -q abi3audit >/dev/null 2>&1; then
  .venv-dist/bin/abi3audit --strict "$WHL" && echo "abi3audit: only stable-ABI symbols of CPython 3.9"
else
  echo "abi3audit could not be installed: stable-ABI symbol audit SKIPPED"
fi

version_of() { "$1" -c 'import sys, platform; assert platform.python_implementation() == "CPython"; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# Candidate interpreters: python3.9 .. python3.14 on PATH, then pyenv's installed versions.
discover() {
  local v p
  for v in 9 10 11 12 13 14; do
    p=$(command -v "python3.$v" 2>/dev/null) && echo "$p"
  done
  if command -v pyenv >/dev/null 2>&1; then
    for p in "$(pyenv root)"/versions/3.*/bin/python3; do [ -x "$p" ] && echo "$p"; done
  fi
  return 0
}

if [ -n "${DIST_PYTHONS:-}" ]; then
  read -r -a CHOSEN <<<"$DIST_PYTHONS"
else
  # one interpreter per minor version (3.9+), working ones only, sorted by version
  declare -A BY_VERSION=()
  for p in "$PY" $(discover); do
    v=$(version_of "$p") || continue
    case "$v" in 3.[0-8]) continue ;; esac
    [ -n "${BY_VERSION[$v]:-}" ] || BY_VERSION[$v]=$p
  done
  mapfile -t SORTED < <(printf '%s\n' "${!BY_VERSION[@]}" | sort -t. -k2,2n)
  BUILD_V=$(version_of "$PY")
  CHOSEN=("$PY")
  for v in "${SORTED[0]}" "${SORTED[-1]}"; do
    [ "$v" != "$BUILD_V" ] && [[ ! " ${CHOSEN[*]} " == *" ${BY_VERSION[$v]} "* ]] && CHOSEN+=("${BY_VERSION[$v]}")
  done
fi

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp -r tests tools README.md "$T/"  # the README tests run its examples
TESTED=()
for p in "${CHOSEN[@]}"; do
  v=$(version_of "$p") || { echo "not a CPython interpreter: $p"; exit 1; }
  venv=".venv-dist-$v"
  echo "== wheel on CPython $v ($p)"
  "$p" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "$WHL" pytest ml_dtypes
  # run the tests from a copy outside the tree so `import executorch_numpy_runtime` is the wheel
  (cd "$T" && "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider tests | tail -2)
  TESTED+=("$v")
done
n=$(printf '%s\n' "${TESTED[@]}" | sort -u | wc -l)
[ "$n" -ge 2 ] || { echo "dist check: the wheel was tested on only one CPython version (${TESTED[*]}); set DIST_PYTHONS"; exit 1; }
echo "dist check: OK ($(cd dist && ls | tr '\n' ' ')) on CPython ${TESTED[*]}"
