#!/usr/bin/env bash
# The demo (interim, until the profiler runs programs): installs what is
# missing, builds build/, writes three generated tensors -- a well-behaved
# activation, a gradient that underflows FP16 but fits with a loss scale, and a
# tensor that overflows FP16 -- and runs `mpprof inspect` on them, printing the
# summary and verdict of each. Set MPPROF_DEMO_DIR to keep the tensors somewhere.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/setup.sh

mpprof_install_packages "${MPPROF_PACKAGES[@]}" || exit 1
mpprof_build build || exit 1

out=${MPPROF_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mpprof-demo-XXXXXX")}
mkdir -p "$out" || exit 1
build/tests/inspect/gen_tensors "$out" >/dev/null || exit 1
tensors=("$out/activation.npy" "$out/grad_underflow.npy" "$out/overflow.npy")

echo "== mpprof inspect on generated tensors (in $out)"
echo
build/mpprof inspect "${tensors[@]}" || exit 1

echo
echo "== verdicts"
for t in "${tensors[@]}"; do
  rec=$(build/mpprof inspect "$t" | sed -n 's/^  recommended *//p')
  printf '  %-20s %s\n' "$(basename "$t")" "$rec"
done
echo
echo "Machine-readable: build/mpprof inspect --json FILE (one mpprof.tensor/1 object per line)."
