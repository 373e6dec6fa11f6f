#!/usr/bin/env bash
# Test driver for the sample programs under simcuda (run by meson with
# LD_LIBRARY_PATH pointing at the simcuda libraries).
#
#   check_sample.sh stable     EXE ARGS...  two runs: both exit 0, both report
#                                           verification, identical result lines
#   check_sample.sh threads    EXE ARGS...  --threads 3 twice (identical) and
#                                           model 0 identical to --threads 1
#   check_sample.sh loss-scale EXE ARGS...  the fc2 underflow line shows >50%
#                                           flushed at scale 1 and <0.1% at the
#                                           given scale; the dW2 error drops from
#                                           >1% (scale 1) to <0.1%
#   check_sample.sh rejects    EXE ARGS...  exit status 1 and a one-line message
#   check_sample.sh catches    EXE SHIM FUNC ARGS...
#                                           with SHIM preloaded corrupting FUNC's
#                                           result: exit status 1, "verification
#                                           failed" on stderr
# Every run must say it ran on simcuda, so a test never passes on the real
# libraries by accident.
set -u
mode=$1
exe=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL ($mode $(basename "$exe") $*)" >&2
  for f in "$tmp"/*; do
    [[ -f $f ]] && { echo "--- $(basename "$f")"; cat "$f"; } >&2
  done
  exit 1
}

# run NAME ARGS...: run the sample, demand success, verification and simcuda.
run() {
  local name=$1
  shift
  "$exe" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "'$*' exited with status $?"
  head -n1 "$tmp/$name.out" | grep -q 'device simcuda' || fail "'$*' did not run on simcuda"
  grep -q '^verification: ' "$tmp/$name.out" || fail "'$*' printed no verification line"
  grep -E '^(model [0-9]+: |loss )' "$tmp/$name.out" >"$tmp/$name.result"
  [[ -s $tmp/$name.result ]] || fail "'$*' printed no result line"
}

case $mode in
stable)
  run first "$@"
  run second "$@"
  cmp -s "$tmp/first.result" "$tmp/second.result" || fail "results differ between two runs"
  ;;
threads)
  run t1 "$@" --threads 1
  run t3a "$@" --threads 3
  run t3b "$@" --threads 3
  cmp -s "$tmp/t3a.result" "$tmp/t3b.result" || fail "--threads 3 results differ between runs"
  [[ $(wc -l <"$tmp/t3a.result") -eq 3 ]] || fail "--threads 3 did not report 3 models"
  cmp -s "$tmp/t1.result" <(grep '^model 0: ' "$tmp/t3a.result") ||
    fail "model 0 differs between --threads 1 and --threads 3"
  ;;
loss-scale)
  run demo "$@"
  line=$(grep '^fc2 backward.D (dX, dW) fp16 flush to zero, of [0-9]* finite non-zero values: at scale 1: ' "$tmp/demo.out") || fail "no underflow line"
  read -r at1 atS < <(sed -E 's/.*at scale 1: ([0-9.e+-]+)%, at scale [0-9.e+]+: ([0-9.e+-]+)%.*/\1 \2/' <<<"$line")
  awk -v a="$at1" -v b="$atS" 'BEGIN { exit !(a > 50 && b < 0.1) }' ||
    fail "underflow at scale 1 = $at1%, at the loss scale = $atS% (want >50% and <0.1%)"
  run unscaled "$@" --loss-scale 1
  e1=$(sed -nE 's/^fc2 weight-gradient error .*: ([0-9.e+-]+)%$/\1/p' "$tmp/unscaled.out")
  eS=$(sed -nE 's/^fc2 weight-gradient error .*: ([0-9.e+-]+)%$/\1/p' "$tmp/demo.out")
  awk -v a="$e1" -v b="$eS" 'BEGIN { exit !(a > 1 && b < 0.1) }' ||
    fail "fc2 dW error at scale 1 = $e1%, at the loss scale = $eS% (want >1% and <0.1%)"
  ;;
rejects)
  "$exe" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
  [[ $status -eq 1 ]] || fail "'$*' exited with $status, want 1"
  grep -q . "$tmp/err" || fail "'$*' printed no message"
  ;;
catches)
  shim=$1
  func=$2
  shift 2
  LD_PRELOAD=$shim SAMPLES_CORRUPT=$func "$exe" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
  [[ $status -eq 1 ]] || fail "'$*' with $func corrupted exited with $status, want 1"
  grep -q 'verification failed' "$tmp/err" || fail "'$*' with $func corrupted: no verification failure"
  ;;
*)
  echo "check_sample.sh: unknown mode '$mode'" >&2
  exit 2
  ;;
esac
exit 0
