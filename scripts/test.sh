#!/usr/bin/env bash
# Set up (scripts/setup.sh), then lint and run the whole test suite, doctests included.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
# Spark tests share one SparkSession: --dist loadgroup keeps them on one worker. A worker
# that crashes is not restarted: with loadgroup, xdist would otherwise wait forever for
# the crashed worker's group, so the run ends and reports the crash instead.
.venv/bin/python -m pytest -n 2 --dist loadgroup --max-worker-restart 0 "$@"
