#!/bin/sh
# scripts/gpu-check.sh's FP8 shadow row on simcuda (the host path): the
# program under `mpprof --shadow=1` keeps its output, the judge passes (0) on
# the run, and fails (1) when told to expect more calls than were shadowed.
# usage: shadow_fp8_check_test.sh PYTHON CHECKER MPPROF PROGRAM SIMCUDA_DIR WORKDIR
set -u
py=$1 check=$2 mpprof=$3 prog=$4 sim=$5 work=$6
rm -rf "$work" && mkdir -p "$work" || exit 1
LD_LIBRARY_PATH="$sim" "$prog" 4 64 >"$work/bare.txt" 2>&1 || { echo "bare run failed"; exit 1; }
LD_LIBRARY_PATH="$sim" MPPROF_SCAN=none MPPROF_SHADOW=1 "$mpprof" -o "$work/run" "$prog" 4 64 \
  >"$work/out.txt" 2>"$work/err.txt" || { echo "mpprof run failed"; cat "$work/err.txt"; exit 1; }
cmp -s "$work/bare.txt" "$work/out.txt" || { echo "output changed under mpprof"; exit 1; }
"$py" "$check" "$work/run/raw" "$work/out.txt" 4 >"$work/judge.txt" 2>&1 ||
  { echo "judge failed on a good run:"; cat "$work/judge.txt"; exit 1; }
"$py" "$check" "$work/run/raw" "$work/out.txt" 5 >"$work/judge5.txt" 2>&1 &&
  { echo "judge passed 4 shadowed calls as 5"; exit 1; }
cat "$work/judge.txt"
