#!/usr/bin/env bash
# Create or refresh .venv with everything the project needs, and make sure Java 17+ is
# present (PySpark needs it). Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "uncertain-cep needs Python 3.11 or newer as '$PYTHON' (set PYTHON=...)." >&2
  exit 1
fi

java_major() {
  command -v java >/dev/null 2>&1 || { echo 0; return; }
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
JAVA_MAJOR=$(java_major)
if [ -z "$JAVA_MAJOR" ] || [ "$JAVA_MAJOR" -lt 17 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Java 17+ not found: installing Debian's openjdk-17-jre-headless" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless
  else
    echo "uncertain-cep needs Java 17 or newer for Spark. Install it, e.g." >&2
    echo "  sudo apt-get install openjdk-17-jre-headless" >&2
    exit 1
  fi
fi

# The libraries a checkout needs are those of its pyproject.toml on this Python: a
# checkout without .venv (a fresh clone) links it to the environment every checkout of
# this machine with the same pyproject.toml shares, under the user's cache directory,
# so that only its first setup installs them (86 s: most of a fresh clone's setup).
key=$( { cat pyproject.toml; "$PYTHON" -VV; } | sha256sum | cut -c1-16)
if [ ! -e .venv ]; then
  shared="${XDG_CACHE_HOME:-$HOME/.cache}/uncertain-cep/venv-$key"
  mkdir -p "$(dirname "$shared")"
  if [ ! -x "$shared/bin/python" ]; then
    "$PYTHON" -m venv "$shared"
  fi
  touch "$shared"
  # Environments of older pyproject.toml files, unused for a week, go.
  find "$(dirname "$shared")" -maxdepth 1 -name 'venv-*' ! -name "venv-$key" -mtime +7 \
    -exec rm -rf {} + 2>/dev/null || true
  ln -s "$shared" .venv
elif [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# Dependency groups (PEP 735) need pip >= 25.1. pip's chatter goes to a log, shown only
# when an install fails. pip compiles the installed files to bytecode on one core (50 of
# a fresh setup's 86 s, PySpark's thousands of files among them): compileall does it on
# every core afterwards (27 s). Once an environment holds them (.venv/.installed-<key>),
# only the project itself is installed again (this checkout's path, a few seconds).
# `setup.sh demo` (scripts/demo.sh) installs what the demo runs, without the test, lint,
# benchmark and notebook groups (half the download and bytecode of a fresh setup): a
# later full setup adds them.
log=.venv/setup.log
installed=".venv/.installed-$key"
if [ "${1:-}" = demo ] && [ ! -e "$installed" ]; then
  installed=".venv/.installed-$key-demo"
  wanted=(-e ".[spark,plot]")
else
  wanted=(--group dev -e ".[spark,connect,plot]")
fi
# pip writes its interpreter's path into the scripts it installs (mypy, ruff's wrapper):
# the environment's own, not this checkout's link to it, which goes with the checkout.
py="$(cd .venv && pwd -P)/bin/python"
if [ -e "$installed" ]; then
  install=("$py" -m pip install -q --no-compile --no-deps -e .)
else
  install=("$py" -m pip install -q --no-compile "${wanted[@]}")
fi
if ! { "$py" -m pip install -q --upgrade "pip>=25.1" && "${install[@]}"; } \
     >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup failed: pip could not install the project (log above, also in $log)" >&2
  exit 1
fi
# The query kernels, compiled at install time rather than by a first query: into the
# machine's cache, shared by every checkout, environment and Spark worker of the machine,
# once per version of the kernels (about a minute on two cores; a version the machine
# knows costs a look at one file). An editable install ships none (a wheel does:
# build_backend/uncertain_cep_build.py). Beside the bytecode compilation below: the
# kernels' compiler leaves a core idle for a third of its minute.
.venv/bin/python -m uncertain_cep.kernel_build &
kernels=$!
if [ ! -e "$installed" ]; then
  # As with pip's own step, a file that does not compile is left to fail if imported.
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -m compileall -q -j 0 "$site" >>"$log" 2>&1 || true
  touch "$installed"
fi
# The project's own modules too: where PYTHONDONTWRITEBYTECODE is set, every process
# (each test command, each Spark Python worker) would otherwise compile them again.
.venv/bin/python -m compileall -q -j 0 uncertain_cep index query >>"$log" 2>&1 || true
wait "$kernels" || {
  echo "setup failed: the query kernels did not compile (above)" >&2; exit 1; }
.venv/bin/python -c 'import uncertain_cep, rtree, lark, pyarrow, pyspark' || {
  echo "setup failed: the virtual environment cannot import the project" >&2; exit 1; }
