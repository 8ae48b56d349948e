#!/usr/bin/env bash
# Set up (scripts/setup.sh), then lint and run the whole test suite, doctests included.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
# Two workers, each with at most one SparkSession (tests/conftest.py). A worker that
# crashes is not restarted: the run ends and reports the crash.
.venv/bin/python -m pytest -n 2 --max-worker-restart 0 "$@"
