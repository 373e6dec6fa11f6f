#!/usr/bin/env bash
# The demo: the product's main job as it stands. Installs what is missing,
# builds build/, then profiles samples/mlp_train with mpprof -- on the GPU
# when one is present, otherwise on simcuda (the CPU stand-in of the CUDA
# libraries), saying which -- then writes three generated tensors
# (tests/inspect/gen_tensors) and runs `mpprof inspect` on them (no GPU
# needed), and ends with where the HTML report is.
# MPPROF_DEMO_DIR=DIR keeps the output somewhere else than a fresh temp dir.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/setup.sh

mpprof_install_packages "${MPPROF_PACKAGES[@]}" || exit 1
mpprof_build build || exit 1

out=${MPPROF_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mpprof-demo-XXXXXX")/out}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "== running on the GPU: $(nvidia-smi -L | head -n 1)"
else
  echo "== no GPU here: running on simcuda, the CPU stand-in of the CUDA libraries (build/tests/simcuda)"
  export LD_LIBRARY_PATH="$PWD/build/tests/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

echo "== mpprof -o $out build/samples/mlp_train"
echo
build/mpprof -o "$out" --force build/samples/mlp_train
rc=$?
echo
if ((rc != 0)) || [[ ! -f $out/report.html ]]; then
  echo "demo: mpprof exited with status $rc" >&2
  exit 1
fi
tensors=$out/tensors
echo "== tensors saved to disk work without a GPU too: three generated ones in $tensors/"
echo "== (a ReLU activation, a gradient that needs a loss scale, values spanning 50 binades)"
echo "== mpprof inspect $tensors/*.npy"
echo
if ! mkdir -p "$tensors" || ! build/tests/inspect/gen_tensors "$tensors" >/dev/null ||
  ! build/mpprof inspect "$tensors"/activation.npy "$tensors"/grad_underflow.npy \
    "$tensors"/overflow.npy; then
  echo "demo: mpprof inspect on the generated tensors failed" >&2
  exit 1
fi
echo
echo "== the HTML report: $out/report.html"
echo "   (the other files beside it are named above; raw files in $out/raw/)"
