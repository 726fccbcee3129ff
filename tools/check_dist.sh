#!/usr/bin/env bash
# Build an sdist and, from it, a wheel with `python -m build`; install the wheel into a fresh
# venv and run the test suite against the installed package (not the source tree).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
rm -rf dist .venv-dist
"$PY" -m venv .venv-dist
.venv-dist/bin/python -m pip install -q build
ETNP_BUILD_JOBS=${ETNP_BUILD_JOBS:-2} .venv-dist/bin/python -m build -q . >/dev/null
ls dist
.venv-dist/bin/python -m pip install -q "$(ls dist/*.whl)" pytest ml_dtypes
# run the tests from a copy outside the tree so `import executorch_numpy_runtime` is the wheel
T=$(mktemp -d)
cp -r tests tools README.md "$T/"  # the README tests run its examples
(cd "$T" && "$OLDPWD/.venv-dist/bin/python" -m pytest -q -p no:cacheprovider tests)
rm -rf "$T"
echo "dist check: OK ($(cd dist && ls | tr '\n' ' '))"
