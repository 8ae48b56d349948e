#!/usr/bin/env bash
# Set up (scripts/setup.sh), then lint and run the whole test suite, doctests included.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
# mypy checks beside the tests (they leave a core idle while Spark starts); its verdict
# is waited for, and shown, before the script exits.
# Its cache lives in the environment (shared by the checkouts of one pyproject.toml:
# scripts/setup.sh), so a fresh clone checks only what changed (0.6 s instead of 38 s).
.venv/bin/python -m mypy --cache-dir .venv/.mypy_cache >.venv/mypy.log 2>&1 &
mypy_pid=$!
status=0
# Two workers, each with at most one SparkSession (tests/conftest.py). A worker that
# crashes is not restarted: the run ends and reports the crash. A worker that runs out
# of tests takes over half of the other's (worksteal), so long tests do not leave a
# core idle at the end.
# The 25 slowest tests are listed at the end: where CI's minutes go.
.venv/bin/python -m pytest -n 2 --dist worksteal --max-worker-restart 0 --durations=25 "$@" \
  || status=$?
if ! wait "$mypy_pid"; then
  cat .venv/mypy.log >&2
  echo "mypy found type errors (above)" >&2
  exit 1
fi
tail -n 1 .venv/mypy.log
exit "$status"
