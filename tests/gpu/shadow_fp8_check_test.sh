#!/bin/sh
# scripts/gpu-check.sh's FP8 shadow rows on simcuda (the host path): the
# program under `mpprof --shadow=1` keeps its output, the judge passes (0) on
# the run with per-tensor scales and with block scales (Hopper's 1x128 and
# 128x128, MXFP8 on simcuda's sm_100), and fails (1) when told to expect more
# calls than were shadowed.
# usage: shadow_fp8_check_test.sh PYTHON CHECKER MPPROF PROGRAM SIMCUDA_DIR WORKDIR
set -u
py=$1 check=$2 mpprof=$3 prog=$4 sim=$5 work=$6
rm -rf "$work" && mkdir -p "$work" || exit 1
run() { # NAME SIZE MODE [ENV...]
  name=$1 size=$2 mode=$3; shift 3
  env LD_LIBRARY_PATH="$sim" "$@" "$prog" 4 "$size" "$mode" >"$work/$name-bare.txt" 2>&1 ||
    { echo "$name: bare run failed"; cat "$work/$name-bare.txt"; exit 1; }
  env LD_LIBRARY_PATH="$sim" MPPROF_SCAN=none MPPROF_SHADOW=1 "$@" "$mpprof" -o "$work/$name" \
    "$prog" 4 "$size" "$mode" >"$work/$name-out.txt" 2>"$work/$name-err.txt" ||
    { echo "$name: mpprof run failed"; cat "$work/$name-err.txt"; exit 1; }
  cmp -s "$work/$name-bare.txt" "$work/$name-out.txt" || { echo "$name: output changed"; exit 1; }
  "$py" "$check" "$work/$name/raw" "$work/$name-out.txt" 4 >"$work/$name-judge.txt" 2>&1 ||
    { echo "$name: judge failed on a good run:"; cat "$work/$name-judge.txt"; exit 1; }
  echo "$name: $(cat "$work/$name-judge.txt")"
}
run scalar 128 scalar
run h128 256 h128
run mx 256 mx SIMCUDA_SM=100
"$py" "$check" "$work/scalar/raw" "$work/scalar-out.txt" 5 >"$work/judge5.txt" 2>&1 &&
  { echo "judge passed 4 shadowed calls as 5"; exit 1; }
exit 0
