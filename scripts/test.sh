#!/usr/bin/env bash
# The test suite: installs what it needs, then runs every test and doctest on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
python3 -m pytest "$@"
