#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the main job on the bundled sample archive.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh demo
.venv/bin/uncertain-cep demo "$@"
