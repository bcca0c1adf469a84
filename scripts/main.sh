#!/usr/bin/env bash
# The main job: the full R1 pipeline (cold-start SFT -> GRPO -> rejection sampling -> SFT) on a tiny
# model built locally, on CPU, in minutes. Outputs and the run report go to runs/tiny/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
trl-r1 run recipes/tiny/pipeline.yaml "$@"
