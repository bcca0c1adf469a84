#!/usr/bin/env bash
# The test suite, in two tiers, on every core (pytest-xdist):
#   bash scripts/test.sh            the fast tier, before each commit: every test not marked `slow` (each module's
#                                   unit tests, both verifiers' security tests, the docs' examples, one recipe smoke
#                                   run, one 2-rank run, one learning check); target: 8 min on 2 cores
#   bash scripts/test.sh --all      the full tier, what CI runs: every test, then the vLLM suite in its own
#                                   environment (scripts/test_vllm.sh)
# Other arguments go to pytest (bash scripts/test.sh tests/test_kl.py -x). Models that tests build are cached
# across runs under ~/.cache/trl-r1/tests, keyed by the code that builds them (TRL_R1_TEST_CACHE moves it);
# TRL_R1_TEST_WORKERS sets the number of pytest-xdist workers (default: the CPUs this process may use).
set -euo pipefail
cd "$(dirname "$0")/.."
all=0 args=()
for arg in "$@"; do
  if [ "$arg" = "--all" ]; then all=1; else args+=("$arg"); fi
done
bash scripts/install.sh --test
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
# worksteal: a worker that runs out takes queued tests from the other (long runs then never pile up at the end)
workers="${TRL_R1_TEST_WORKERS:-$(python3 -c "from trl_r1.workers import available_cpus; print(available_cpus())")}"
if [ "$all" = 1 ]; then
  python3 -m pytest -n "$workers" --dist worksteal --durations=10 ${args[@]+"${args[@]}"}
  bash scripts/test_vllm.sh
else
  python3 -m pytest -n "$workers" --dist worksteal --durations=10 -m "not slow" ${args[@]+"${args[@]}"}
fi
