#!/usr/bin/env bash
# Install the package into a fresh PyPy venv and run the test suite there.
# Skips (exit 0, with a visible message) when no PyPy with its headers is available.
set -euo pipefail
cd "$(dirname "$0")/.."
PYPY=${PYPY:-pypy3}
if ! command -v "$PYPY" >/dev/null 2>&1; then
  echo "== PyPy: SKIPPED (no $PYPY on PATH; Debian: apt-get install pypy3 pypy3-dev pypy3-venv)"; exit 0
fi
if ! "$PYPY" -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; then
  echo "== PyPy: SKIPPED ($PYPY has no C headers; Debian: apt-get install pypy3-dev)"; exit 0
fi
echo "== PyPy: $("$PYPY" -c 'import sys; print(sys.version.replace(chr(10), " "))')"
rm -rf .venv-pypy
"$PYPY" -m venv .venv-pypy
ETNP_BUILD_JOBS=${ETNP_BUILD_JOBS:-2} .venv-pypy/bin/python -m pip install -q -e ".[test]"
.venv-pypy/bin/python -m pytest -q tests
