#!/bin/sh
# tc_counters_check.py (scripts/gpu-check.sh's judge of --tc-counters runs) on
# runs under simcuda's range profiler: fp16 and fp32 pass (0), an fp32 run
# judged as fp16 fails (1), counters not permitted give 77 with CUPTI's reason,
# counters unavailable for a reason of mpprof's (a refused parameter) fail.
# usage: tc_counters_check_test.sh PYTHON CHECKER MPPROF MLP_TRAIN SIMCUDA_DIR TC_AUDIT WORKDIR
set -u
py=$1 check=$2 mpprof=$3 mlp=$4 sim=$5 audit=$6 work=$7
rm -rf "$work" && mkdir -p "$work" || exit 1
fails=0
run() { # NAME PRECISION [ENV...]
  name=$1 prec=$2; shift 2
  env LD_LIBRARY_PATH="$sim" "$@" "$mpprof" -o "$work/$name" --tc-counters "$mlp" --precision "$prec" \
    --steps 2 >"$work/$name.log" 2>&1 || { echo "mpprof run $name failed"; cat "$work/$name.log"; exit 1; }
}
expect() { # WANT_RC NAME PRECISION
  "$py" "$check" --raw "$work/$2/raw" --audit "$audit" --expect "$3" --label "$2" >"$work/$2-$3.out" 2>&1
  rc=$?
  if [ $rc -ne "$1" ]; then
    echo "$2 judged as $3: rc $rc, want $1"; cat "$work/$2-$3.out"; fails=$((fails + 1))
  fi
}
run fp16 fp16
run fp32 fp32
run denied fp16 SIMCUDA_PROFILER_DENIED=1
expect 0 fp16 fp16
expect 0 fp32 fp32
expect 1 fp32 fp16
expect 77 denied fp16
# the same run, as if CUPTI had refused a parameter of mpprof's: a failure, not a skip
mkdir -p "$work/badparam/raw" && for f in "$work/denied/raw/"*.json; do
  "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["tc_counters"]["reason"]="cuptiRangeProfilerSetConfig failed: CUPTI_ERROR_INVALID_PARAMETER (1)"; json.dump(d, open(sys.argv[2], "w"))' \
    "$f" "$work/badparam/raw/$(basename "$f")" || exit 1
done
expect 1 badparam fp16
grep -q "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" "$work/denied-fp16.out" ||
  { echo "denied: no reason in the checker's line"; fails=$((fails + 1)); }
grep -q "| fp16 .* 8 / 0 .* GH100 | PASS" "$work/fp16-fp16.out" ||
  { echo "fp16: unexpected table row"; cat "$work/fp16-fp16.out"; fails=$((fails + 1)); }
[ $fails -eq 0 ]
