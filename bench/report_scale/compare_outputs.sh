#!/usr/bin/env bash
# Byte-compare everything `mpprof report` writes (report.json, report.html,
# ops.csv, layers.csv, trace.json, plan.json, the summary on stdout, stderr
# and the exit status) by two builds on the same raw files: a change meant to
# make the report cheaper must not change a byte of it.
# usage: compare_outputs.sh REF_MPPROF NEW_MPPROF INPUT_DIR...   (each INPUT_DIR holds raw/)
# Inputs: report_scale --make DIR N for N = 1000, 10000, 100000; raw files of samples.
set -uo pipefail
(($# >= 3)) || { echo "usage: $0 REF_MPPROF NEW_MPPROF INPUT_DIR..." >&2; exit 2; }
ref=$(realpath "$1") new=$(realpath "$2")
shift 2
w=$(mktemp -d "${TMPDIR:-/tmp}/mpprof-compare-XXXXXX") || exit 2
trap 'rm -rf "$w"' EXIT
bad=0
for d in "$@"; do
  name=$(basename "$d")
  for which in ref new; do
    bin=$ref
    [[ $which == new ]] && bin=$new
    # the same path for both runs: the summary names the directory
    rm -rf "$w/run"
    mkdir -p "$w/run/$name" "$w/$which"
    cp -r "$d/raw" "$w/run/$name/raw"
    (cd "$w/run" && "$bin" report "$name" >"$name/summary.txt" 2>"$name/stderr.txt"
     echo "rc=$?" >>"$name/summary.txt")
    rm -rf "$w/run/$name/raw"
    mv "$w/run/$name" "$w/$which/$name"
  done
  if diff -r -q "$w/ref/$name" "$w/new/$name" >/dev/null; then
    echo "same    $name: $(ls "$w/ref/$name" | tr '\n' ' ')"
  else
    echo "DIFFER  $name:"
    diff -r -q "$w/ref/$name" "$w/new/$name"
    bad=1
  fi
  rm -rf "$w/ref/$name" "$w/new/$name"
done
exit $bad
