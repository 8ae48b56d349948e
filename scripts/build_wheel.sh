#!/usr/bin/env bash
# Build the wheel into DIR (default dist/), with the query kernels compiled for this
# machine inside it (uncertain_cep/_kernels/<kernel version>/): an install on a machine
# of the same CPU kind answers its first query without compiling
# (uncertain_cep/kernel_cache.py). Run after scripts/setup.sh; PYTHON overrides the
# interpreter (default .venv/bin/python). Built without isolation: the environment holds
# numba, which names the kernels' version.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
py=${PYTHON:-.venv/bin/python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # this tree's sources, compiled
"$py" scripts/warm_kernels.py
cache=$("$py" -c 'from uncertain_cep.kernel_cache import kernel_cache_dir; print(kernel_cache_dir())')
# setuptools' build/ keeps what an earlier build copied: the kernels of older versions too.
trap 'rm -rf uncertain_cep/_kernels build/lib/uncertain_cep/_kernels' EXIT
rm -rf uncertain_cep/_kernels build/lib/uncertain_cep/_kernels
mkdir -p uncertain_cep/_kernels
cp -r "$cache" uncertain_cep/_kernels/
# Only the cache's modules: no drafts of a copy under way (hidden folders).
find uncertain_cep/_kernels -mindepth 2 -name '.*' -prune -exec rm -rf {} +
"$py" -m pip wheel --no-deps --no-build-isolation -q -w "$out" .
echo "built $(ls -t "$out"/uncertain_cep-*.whl | head -n 1) with the kernels of $(basename "$cache")"
