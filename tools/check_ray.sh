#!/usr/bin/env bash
# The Ray / Dask batch-inference tests (tests/test_distributed.py) on a real local Ray cluster
# (ray.init(num_cpus=2)): they skip in CI, where the [ray] extra (~200 MB of wheels) is not
# installed. This installs the package with that extra into a fresh venv and runs them.
#   bash tools/check_ray.sh [VENV_DIR]      (default: build/ray-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-build/ray-venv}
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e ".[test,ray]" dask
"$VENV/bin/python" -c "import ray, dask; print('ray', ray.__version__, 'dask', dask.__version__)"
"$VENV/bin/python" -m pytest -q -rs tests/test_distributed.py
