#!/usr/bin/env bash
# Build the wheel into DIR (default dist/) from this checkout, in its environment (run
# after scripts/setup.sh; PYTHON overrides the interpreter, default .venv/bin/python).
# Any wheel build ships the query kernels compiled for this machine
# (build_backend/uncertain_cep_build.py): `pip wheel .` or `python -m build` anywhere do
# the same in an isolated environment; this only skips creating one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
py=${PYTHON:-.venv/bin/python}
"$py" -m pip wheel --no-deps --no-build-isolation -q -w "$out" .
echo "built $(ls -t "$out"/uncertain_cep-*.whl | head -n 1)"
