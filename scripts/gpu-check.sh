#!/usr/bin/env bash
# scripts/gpu-check.sh: mpprof's checks on a machine with a real NVIDIA GPU.
#
#   scripts/gpu-check.sh [-B BUILD_DIR] [-o OUT_DIR] [--quick]
#
# Needs: an NVIDIA GPU + driver, nvcc (CUDA 13 toolkit at $CUDA_HOME or
# /usr/local/cuda), gcc, python3; optionally meson + ninja, PyTorch. No network.
# Aims at under 5 minutes on an H200 with a carried build (-B), 7 with build way 3.
#
# Build, first that works:
#   1. -B BUILD_DIR: a build carried from a dev machine (configured with
#      -Ddevice_code=enabled); missing targets are rebuilt with ninja if possible.
#   2. meson + ninja here (needs cJSON, libpng like any full build).
#   3. No meson deps: only the CUDA-side parts with gcc/nvcc directly
#      (libmpprof.so with the embedded fatbin, devscan_check, tc_audit,
#      mlp_train); runs then use LD_PRELOAD without the mpprof launcher and
#      are judged from the raw files (no HTML report).
# Checks:
#   - simcuda's claims about cuBLAS / cuBLASLt (argument statuses, block-scale
#     layouts: tests/simcuda/fidelity) hold for the real libraries
#   - cuobjdump (when installed) lists exactly the architectures that
#     `mpprof --version` reads from the embedded fatbin
#   - device scan vs host scanner, bit-identical (every dtype, random and
#     boundary data, all 8/16-bit patterns, misaligned and strided views), and
#     its bandwidth against a device-to-device copy in the same run (aim 0.9
#     on normal data, issue 16; boundary-heavy data informative)
#   - samples/mlp_train in fp32 (TF32 off), tf32, fp16, bf16 under mpprof:
#     Tensor Core use reported exactly for the modes that use it
#   - samples/mlp_train fp16 and fp32 (TF32 off) with --tc-counters: the CUPTI
#     range profiler measures the first call of each site; fp16 kernels on
#     Tensor Cores, fp32 ones not, by counters (SKIP when counters are not
#     permitted here, with CUPTI's reason); name-rule disagreements as notes
#   - --shadow on a 4096^3 fp16 GEMM (tests/gpu/shadow_check): shadowed on the
#     device, fp16/bf16/fp8 errors measured; op time, program-stream time,
#     time to device idle and memory, with and without --shadow
#   - --shadow on a cuBLASLt FP8 matmul with per-tensor A/B/D scale pointers,
#     and with Hopper's block scales (A 1x128, B 128x128)
#     (tests/gpu/shadow_fp8_check): every call shadowed, the measured error
#     of the op's own precision within 2 % of what the program measures on
#     its real output, the scales rewritten behind each call not reaching it
#   - samples/python/amp_train.py (PyTorch AMP) under mpprof: the Linear
#     layers' GEMMs found with fp16 dtypes on Tensor Cores
# Exit 0 when every check passed, 1 otherwise. Output and logs: OUT_DIR
# (default ./gpu-check-out). GPU_CHECK_MANUAL=1 forces build way 3.
# Time: every step runs under `timeout`, bounded by what is left of
# GPU_CHECK_BUDGET_S (default 420 s) so one hang cannot eat the machine's
# time; a step with no time left is reported as FAIL "no time left".
# Not `set -e`: a failing step must still produce its row and the table.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=$PWD/gpu-check-out
BUILD=""
QUICK=0
while [ $# -gt 0 ]; do
  case $1 in
    -B) if [ $# -lt 2 ] || [ ! -d "$2" ]; then
          echo "gpu-check: -B needs an existing build dir (got '${2:-}')" >&2; exit 2
        fi
        BUILD=$(cd "$2" && pwd); shift 2 ;;
    -o) [ $# -ge 2 ] || { echo "gpu-check: -o needs a directory" >&2; exit 2; }
        OUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/logs
mkdir -p "$LOG"
T0=$(date +%s)
FAILS=0
ROWS=()
row() { ROWS+=("$(printf '| %-40s | %-6s | %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && FAILS=$((FAILS + 1)); return 0; }
say() { echo "[gpu-check $(($(date +%s) - T0))s] $*"; }
BUDGET=${GPU_CHECK_BUDGET_S:-420}
# Seconds a step may take: its own cap, or what is left of the budget (>= 0).
left() { # CAP
  local rest=$((BUDGET - ($(date +%s) - T0)))
  [ $rest -lt 0 ] && rest=0
  echo $(($1 < rest ? $1 : rest))
}
# Why a run failed, from its exit status.
why() { case $1 in 124|137) echo "timed out or no time left" ;; *) echo "rc $1" ;; esac; }
# timeout with a KILL 5 s after the TERM; rc 124/137 = timed out.
tmo() { # SECONDS CMD...
  local s=$1; shift
  [ "$s" -gt 0 ] || return 124
  timeout -k 5 "$s" "$@"
}

# ---------- environment ----------
GPU=$(tmo 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
GPU_CC=$(tmo 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
NVCC=$CUDA/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc || true)
TORCH=$(tmo 60 python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>/dev/null || echo "not importable")
say "GPU: ${GPU:-unknown (nvidia-smi missing)} (cc ${GPU_CC:-?}); nvcc: ${NVCC:-missing}; torch: $TORCH"
# The libraries the runs link and load from $CUDA: said up front, so a run
# that fails for want of one says why (an image may carry them only as
# Python wheels, nvidia-cublas / nvidia-cuda-cupti).
LIBS=""
for l in libcublas.so.13 libcublasLt.so.13 libcupti.so.13 libcudnn.so.9; do
  f=$(ls "$CUDA"/lib64/$l "$CUDA"/extras/CUPTI/lib64/$l "$CUDA"/targets/*/lib/$l 2>/dev/null | head -1)
  LIBS+="${LIBS:+, }$l ${f:-missing}"
done
say "libraries: $LIBS"

# ---------- build ----------
B=""        # build dir in use
MODE=""     # carried | meson | manual
TARGETS="mpprof profiler/libmpprof.so tests/gpu/devscan_check tests/gpu/tc_audit samples/mlp_train"
have_all() { for t in $TARGETS; do [ -e "$1/$t" ] || return 1; done; }
if [ -n "$BUILD" ]; then
  B=$BUILD; MODE=carried
  if ! have_all "$B" && command -v ninja >/dev/null; then
    tmo "$(left 120)" ninja -C "$B" $TARGETS >"$LOG/build.log" 2>&1 || true
  fi
elif [ "${GPU_CHECK_MANUAL:-0}" != 1 ] && command -v meson >/dev/null && command -v ninja >/dev/null; then
  B=$OUT/build; MODE=meson
  [ -f "$B/build.ninja" ] || rm -rf "$B" # a configure that failed before: start clean
  if { [ -f "$B/build.ninja" ] || tmo "$(left 60)" meson setup "$B" "$ROOT" -Ddevice_code=enabled \
         -Dtoolkit_root="$CUDA" --buildtype=release >"$LOG/setup.log" 2>&1; } &&
     tmo "$(left 150)" ninja -C "$B" $TARGETS >"$LOG/build.log" 2>&1; then :; else
    say "meson build not possible here (see $LOG/setup.log, build.log): building the CUDA parts directly"
    B=""
  fi
fi
# A build made on another machine may not run here (older glibc, another
# architecture): probe it, and build the CUDA parts here instead if it fails.
runs_here() { # BUILD_DIR
  local err
  err=$( { "$1/tests/gpu/tc_audit" </dev/null >/dev/null &&
           LD_PRELOAD="$1/profiler/libmpprof.so" MPPROF_DISABLE=1 /bin/true; } 2>&1) || return 1
  [[ $err != *"cannot be preloaded"* && $err != *"GLIBC"* ]]
}
if [ -n "$B" ] && [ -e "$B/profiler/libmpprof.so" ] && ! runs_here "$B"; then
  say "the build in $B does not run here (see $LOG/probe.log): building the CUDA parts directly"
  { echo "probe of $B:"; "$B/tests/gpu/tc_audit" </dev/null; LD_PRELOAD="$B/profiler/libmpprof.so" /bin/true; } \
    >"$LOG/probe.log" 2>&1
  B=""
fi
if [ -z "$B" ] || ! { [ -e "$B/profiler/libmpprof.so" ] && [ -e "$B/tests/gpu/devscan_check" ]; }; then
  MODE=manual; B=$OUT/manual
  mkdir -p "$B/profiler" "$B/tests/gpu" "$B/samples" "$B/kernels"
  CF="-std=gnu11 -O2 -D_GNU_SOURCE -I$ROOT -I$CUDA/include"
  # Only this GPU's architecture (+ its PTX): quick, and works with an nvcc
  # too old for sm_100. All of them when the driver does not say.
  if [[ $GPU_CC =~ ^[0-9]+\.[0-9]+$ ]]; then
    sm=${GPU_CC/./}
    ARCHS="-gencode arch=compute_$sm,code=sm_$sm -gencode arch=compute_$sm,code=compute_$sm"
  else
    ARCHS="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 -gencode arch=compute_100,code=compute_100"
  fi
  {
    tmo "$(left 150)" "$NVCC" -fatbin -O3 --threads 0 -Xfatbin=-compress-all $ARCHS -I "$ROOT/kernels" \
      -o "$B/kernels/mpprof_scan.fatbin" "$ROOT/kernels/device.cu" &&
    python3 "$ROOT/kernels/embed_fatbin.py" "$B/kernels/mpprof_scan.fatbin" "$B/kernels/mpprof_scan_fatbin.c" &&
    tmo "$(left 90)" gcc $CF -shared -fPIC -fvisibility=hidden -o "$B/profiler/libmpprof.so" \
      "$ROOT"/profiler/*.c "$ROOT"/profiler/hooks/*.c "$ROOT"/profiler/gpu/*.c "$ROOT"/analysis/*.c "$ROOT"/common/*.c \
      "$B/kernels/mpprof_scan_fatbin.c" -Wl,--version-script="$ROOT/profiler/libmpprof.map" \
      -Wl,--no-undefined -ldl -lpthread -lm &&
    tmo "$(left 60)" gcc $CF -o "$B/tests/gpu/devscan_check" "$ROOT/tests/gpu/devscan_check.c" \
      "$ROOT/tests/gpu/scan_data.c" "$ROOT"/profiler/gpu/{cuda_driver,devscan,scan_plan}.c \
      "$ROOT"/analysis/*.c "$B/kernels/mpprof_scan_fatbin.c" -ldl -lpthread -lm &&
    tmo "$(left 60)" gcc $CF -o "$B/tests/gpu/tc_audit" "$ROOT/tests/gpu/tc_audit.c" "$ROOT"/analysis/*.c -lm &&
    tmo "$(left 60)" gcc $CF -o "$B/samples/mlp_train" "$ROOT/samples/mlp_train.c" "$ROOT/samples/sample_util.c" \
      -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcudart -lcublas -lcublasLt -ldl -lpthread -lm
  } >"$LOG/build.log" 2>&1 || { say "manual build failed:"; tail -20 "$LOG/build.log"; }
fi
# The PyTorch integration (profiler/python) with its C extension: meson builds
# it when it finds Python's headers through pkg-config; otherwise (or in the
# manual build) compile it here against this python3's own headers.
if [ -n "$B" ] && [ ! -e "$B/profiler/python/mpprof_torch/_fast.abi3.so" ]; then
  mkdir -p "$B/profiler/python/mpprof_torch"
  cp "$ROOT/profiler/python/sitecustomize.py" "$B/profiler/python/" 2>/dev/null
  cp "$ROOT"/profiler/python/mpprof_torch/*.py "$B/profiler/python/mpprof_torch/" 2>/dev/null
  PYINC=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
  tmo 60 gcc -O2 -shared -fPIC -fvisibility=hidden -I"$PYINC" -o "$B/profiler/python/mpprof_torch/_fast.abi3.so" \
    "$ROOT/profiler/python/mpprof_torch/_fast.c" >>"$LOG/build.log" 2>&1 ||
    say "mpprof_torch._fast not built (no Python headers?): PyTorch module names will be missing"
fi
LIB=$B/profiler/libmpprof.so
MPPROF=$B/mpprof
USE_CLI=0
[ -x "$MPPROF" ] && tmo 20 "$MPPROF" --version >"$LOG/version.txt" 2>&1 && USE_CLI=1
if [ -e "$LIB" ]; then
  row "build ($MODE)" PASS "$B"
else
  row "build ($MODE)" FAIL "no libmpprof.so: see $LOG/build.log"
fi
# A carried CLI that does not start here (its libcjson / libpng are not on this
# machine: carry them and put their folder on LD_LIBRARY_PATH) is said, not skipped.
if [ $USE_CLI = 0 ] && [ -x "$MPPROF" ]; then
  row "mpprof --version" FAIL "$(head -1 "$LOG/version.txt" | cut -c1-90) (runs fall back to LD_PRELOAD)"
fi
if [ $USE_CLI = 1 ]; then
  row "mpprof --version" PASS "$(grep 'device code' "$LOG/version.txt" | cut -c1-80)"
  # NVIDIA's own tool (not in every toolkit install) must list exactly the
  # architectures mpprof's fatbin reader reports.
  CUOBJDUMP=$CUDA/bin/cuobjdump
  [ -x "$CUOBJDUMP" ] || CUOBJDUMP=$(command -v cuobjdump || true)
  want=$(sed -n 's/^device code: \(.*\) (embedded in .*/\1/p' "$LOG/version.txt")
  if [ -n "$CUOBJDUMP" ] && [ -n "$want" ]; then
    # The .so carries the fatbin as data (cuobjdump finds no device code in it,
    # seen on the H200); the fatbin file it embeds is what cuobjdump reads.
    FATBIN=$B/kernels/mpprof_scan.fatbin
    [ -e "$FATBIN" ] || FATBIN=$LIB
    if tmo "$(left 30)" sh "$ROOT/tests/gpu/cuobjdump_archs.sh" "$CUOBJDUMP" "$FATBIN" "$want" \
         >"$LOG/cuobjdump.txt" 2>&1; then
      row "cuobjdump lists the embedded archs" PASS "$want"
    else
      row "cuobjdump lists the embedded archs" FAIL "$(tail -2 "$LOG/cuobjdump.txt" | tr '\n' ' ' | cut -c1-90)"
    fi
  else
    row "cuobjdump lists the embedded archs" SKIP \
      "$([ -n "$CUOBJDUMP" ] && echo "no device code in this build" || echo "cuobjdump not installed")"
  fi
fi
say "build: $MODE in $B ($(($(date +%s) - T0)) s)"

# Run a program under mpprof: the launcher when it runs here, else the same
# environment it would set (raw files only). PENV: extra environment.
PENV=()
profile() { # SECONDS OUTDIR CMD...
  local secs=$1 dir=$2; shift 2
  rm -rf "$dir"
  [ "$secs" -gt 0 ] || return 124 # `timeout 0` would mean no limit at all
  if [ $USE_CLI = 1 ]; then
    env ${PENV[@]+"${PENV[@]}"} timeout -k 5 "$secs" "$MPPROF" -o "$dir" "$@"
  else
    mkdir -p "$dir/raw"
    env ${PENV[@]+"${PENV[@]}"} LD_PRELOAD="$LIB${LD_PRELOAD:+:$LD_PRELOAD}" NVTX_INJECTION64_PATH="$LIB" \
      CUDA_INJECTION64_PATH="$LIB" MPPROF_OUT="$dir" timeout -k 5 "$secs" "$@"
  fi
}

# ---------- simcuda's claims about the real cuBLAS / cuBLASLt ----------
# tests/simcuda/fidelity: statuses and block-scale layouts simcuda emulates
# from the documentation; here the real libraries answer the same probes.
say "simcuda fidelity probe against the real cuBLAS / cuBLASLt"
if tmo "$(left 60)" gcc -std=gnu11 -O2 -I"$CUDA/include" -o "$OUT/fidelity_probe" \
     "$ROOT/tests/simcuda/fidelity/fidelity_probe.c" -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" \
     -lcublasLt -lcublas -lcudart -lm -ldl >"$LOG/fidelity_probe.txt" 2>&1; then
  tmo "$(left 60)" "$OUT/fidelity_probe" "$ROOT/tests/simcuda/fidelity/fidelity_probe.expected" \
    >>"$LOG/fidelity_probe.txt" 2>&1
  case $? in
    0) row "simcuda claims hold for real cuBLAS(Lt)" PASS "$(tail -1 "$LOG/fidelity_probe.txt" | cut -c1-90)" ;;
    77) row "simcuda claims hold for real cuBLAS(Lt)" SKIP "no CUDA device" ;;
    *) row "simcuda claims hold for real cuBLAS(Lt)" FAIL \
         "$(grep -c -E '^(MISMATCH|MISSING)' "$LOG/fidelity_probe.txt") differ, see $LOG/fidelity_probe.txt" ;;
  esac
else
  row "simcuda claims hold for real cuBLAS(Lt)" FAIL "probe did not build, see $LOG/fidelity_probe.txt"
fi

# ---------- device scan: bit-identical + bandwidth ----------
DEVSCAN_TABLE=""
if [ -x "$B/tests/gpu/devscan_check" ]; then
  say "device scan check"
  args=(); [ $QUICK = 1 ] && args=(--quick)
  tmo "$(left 120)" "$B/tests/gpu/devscan_check" ${args[@]+"${args[@]}"} >"$LOG/devscan_check.txt" 2>&1
  rc=$?
  DEVSCAN_TABLE=$(cat "$LOG/devscan_check.txt")
  case $rc in
    0) row "device scan == host scanner" PASS "$(grep -c bit-identical "$LOG/devscan_check.txt") layouts bit-identical" ;;
    # A skip is right on a CPU stand-in; with a GPU present it means the check did not run.
    77) row "device scan == host scanner" "$([ -n "$GPU" ] && echo FAIL || echo SKIP)" \
          "$(tail -1 "$LOG/devscan_check.txt" | cut -c1-70)" ;;
    124|137) row "device scan == host scanner" FAIL "timed out (or no time left), see $LOG/devscan_check.txt" ;;
    *) row "device scan == host scanner" FAIL "rc $rc, see $LOG/devscan_check.txt" ;;
  esac
  if [ $QUICK = 0 ] && [ $rc -ne 77 ]; then
    # Bandwidth rows on normal data end in "| met" or "| BELOW" (devscan_check's
    # aim, in its header), boundary-heavy rows in "| -"; field 7 is scan / copy.
    aim=$(sed -n 's/^| dtype .*| aim \([0-9.]*\)$/\1/p' "$LOG/devscan_check.txt" | head -1)
    worst=$(awk -F'|' '/\| (met|BELOW)$/{gsub(/ /,"",$7); print $7}' "$LOG/devscan_check.txt" | sort -n | head -1)
    fp32=$(awk -F'|' '$2 ~ /fp32/ && /\| (met|BELOW)$/{gsub(/ /,"",$7); print $7}' "$LOG/devscan_check.txt")
    if [ -n "$fp32" ]; then
      row "scan bandwidth / copy (aim ${aim:-?})" "$(grep -qE '\| BELOW$' "$LOG/devscan_check.txt" && echo BELOW || echo PASS)" \
        "normal data: fp32 $fp32, worst dtype $worst (informative: not a pass/fail of the tool)"
    else
      row "scan bandwidth / copy" FAIL "no bandwidth table, see $LOG/devscan_check.txt"
    fi
  fi
  if [ $rc -ne 77 ]; then
    # "host us per scanned op: X (...)": the enqueue's CPU cost, one launch for 3 tensors.
    us=$(sed -n 's/^host us per scanned op: \([0-9.]*\).*/\1/p' "$LOG/devscan_check.txt" | head -1)
    if [ -n "$us" ]; then
      row "host us per scanned op (1 launch)" INFO "$us us (informative)"
    else
      row "host us per scanned op (1 launch)" FAIL "not measured, see $LOG/devscan_check.txt"
    fi
  fi
else
  row "device scan == host scanner" FAIL "devscan_check not built"
fi

# ---------- mlp_train: Tensor Core use exactly where eligible ----------
AUDIT=$B/tests/gpu/tc_audit
if [ -x "$B/samples/mlp_train" ] && [ -x "$AUDIT" ] && [ -e "$LIB" ]; then
  for p in fp32 tf32 fp16 bf16; do
    say "mlp_train --precision $p"
    PENV=(); [ $p = fp32 ] && PENV=(NVIDIA_TF32_OVERRIDE=0) # TF32 really off
    # $CUDA/lib64 after anything already there (simcuda first when testing).
    PENV+=(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA/lib64")
    if profile "$(left 45)" "$OUT/mlp_$p" "$B/samples/mlp_train" --precision $p --steps 5 \
         >"$LOG/mlp_$p.txt" 2>&1; then
      if tmo 30 python3 "$ROOT/tests/gpu/tc_check.py" --raw "$OUT/mlp_$p/raw" --audit "$AUDIT" \
           --expect $p --label "mlp_train $p" >"$LOG/mlp_${p}_tc.txt" 2>&1; then
        row "mlp_train $p: TC exactly as eligible" PASS "see Tensor Core table"
      else
        row "mlp_train $p: TC exactly as eligible" FAIL "$(sed -n 2p "$LOG/mlp_${p}_tc.txt" | cut -c1-90)"
      fi
    else
      row "mlp_train $p: TC exactly as eligible" FAIL "run failed ($(why $?)), see $LOG/mlp_$p.txt"
    fi
  done
else
  row "mlp_train" FAIL "mlp_train, tc_audit or libmpprof.so not built"
fi

# ---------- mlp_train --tc-counters: hardware counters decide ----------
# The first call of each GEMM site measured with CUPTI's range profiler (kernel
# replay). Counters unavailable here (no admin rights on GPU counters, another
# profiler): SKIP with the reason; mpprof itself must still have run cleanly.
if [ -x "$B/samples/mlp_train" ] && [ -x "$AUDIT" ] && [ -e "$LIB" ]; then
  for p in fp16 fp32; do
    say "mlp_train --precision $p --tc-counters"
    PENV=(MPPROF_TC_COUNTERS=first) # what --tc-counters sets; used as is without the launcher
    [ $p = fp32 ] && PENV+=(NVIDIA_TF32_OVERRIDE=0)
    PENV+=(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA/lib64")
    if profile "$(left 45)" "$OUT/mlp_${p}_counters" "$B/samples/mlp_train" --precision $p --steps 2 \
         >"$LOG/mlp_${p}_counters.txt" 2>&1; then
      tmo 30 python3 "$ROOT/tests/gpu/tc_counters_check.py" --raw "$OUT/mlp_${p}_counters/raw" \
        --audit "$AUDIT" --expect $p --label "mlp_train $p counters" >"$LOG/mlp_${p}_counters_tc.txt" 2>&1
      rc=$?
      case $rc in
        0) row "mlp_train $p: counters decide TC" PASS "see counters table" ;;
        77) row "mlp_train $p: counters decide TC" SKIP "$(head -1 "$LOG/mlp_${p}_counters_tc.txt" | cut -c36-150)" ;;
        *) row "mlp_train $p: counters decide TC" FAIL "$({ grep -m1 problem "$LOG/mlp_${p}_counters_tc.txt" ||
             tail -1 "$LOG/mlp_${p}_counters_tc.txt"; } | cut -c1-90)" ;;
      esac
    else
      row "mlp_train $p: counters decide TC" FAIL "run failed ($(why $?)), see $LOG/mlp_${p}_counters.txt"
    fi
  done
fi

# ---------- shadow execution of a 4096^3 fp16 GEMM ----------
# tests/gpu/shadow_check under mpprof without and with --shadow=1 (every call
# shadowed on the device): the op's device time, the program's per-call time
# on its own stream (the shadow must not add to it beyond sharing the GPU),
# the time until the device is idle (shadow work included), and memory. A
# 4096^3 call needs 256 MiB + a few KiB of work memory whole: under the
# default cap (256 MiB) it is done in 2 slices of 2,048 columns.
say "shadow execution, 4096^3 fp16"
if tmo "$(left 60)" gcc -std=gnu11 -O2 -I"$CUDA/include" -o "$OUT/shadow_check" "$ROOT/tests/gpu/shadow_check.c" \
     -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcublas -lcudart -lm >"$LOG/shadow_check.txt" 2>&1 && [ -e "$LIB" ]; then
  PENV=(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA/lib64" MPPROF_SCAN=none)
  profile "$(left 60)" "$OUT/shadow_off" "$OUT/shadow_check" 8 4096 >>"$LOG/shadow_check.txt" 2>&1
  rc_off=$?
  PENV+=(MPPROF_SHADOW=1)
  profile "$(left 90)" "$OUT/shadow_on" "$OUT/shadow_check" 8 4096 >>"$LOG/shadow_check.txt" 2>&1
  rc_on=$?
  PENV=()
  if [ $rc_off = 77 ] || [ $rc_on = 77 ]; then
    row "shadow 4096^3 fp16 on the device" "$([ -n "$GPU" ] && echo FAIL || echo SKIP)" "no CUDA device"
  elif [ $rc_off != 0 ] || [ $rc_on != 0 ]; then
    row "shadow 4096^3 fp16 on the device" FAIL "run failed ($rc_off/$rc_on), see $LOG/shadow_check.txt"
  elif tmo 30 python3 "$ROOT/tests/gpu/shadow_raw_check.py" "$OUT/shadow_on/raw" >"$LOG/shadow_raw.txt" 2>&1; then
    row "shadow 4096^3 fp16 on the device" PASS "$(cut -c1-90 "$LOG/shadow_raw.txt")"
  else
    row "shadow 4096^3 fp16 on the device" FAIL "$(cut -c1-90 "$LOG/shadow_raw.txt")"
  fi
  # "op X ms ..., program's stream Y ms per call, device idle after Z ms per call, ... W MiB"
  grep '^shadow_check:' "$LOG/shadow_check.txt" | sed 's/^shadow_check: //' |
    awk 'NR==1{print "shadow off: " $0} NR==2{print "shadow on:  " $0}' >"$LOG/shadow_times.txt"
  [ -s "$LOG/shadow_times.txt" ] && row "shadow cost (informative)" INFO "see the shadow lines below the table"
else
  row "shadow 4096^3 fp16 on the device" FAIL "shadow_check did not build (or no libmpprof), see $LOG/shadow_check.txt"
fi

# ---------- shadow execution of an FP8 matmul at its scales ----------
# tests/gpu/shadow_fp8_check under mpprof --shadow=1: e4m3 A (transposed) x
# e4m3 B, A/B/D scales in device memory, e4m3 D; the program prints the
# error of the op's real output against an exact host reference, the raw
# file has the error mpprof's device shadow measured for the op's precision.
say "shadow execution, FP8 matmuls with scale pointers"
if tmo "$(left 60)" gcc -std=gnu11 -O2 -I"$CUDA/include" -o "$OUT/shadow_fp8_check" "$ROOT/tests/gpu/shadow_fp8_check.c" \
     -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcublasLt -lcudart -lm >"$LOG/shadow_fp8_check.txt" 2>&1 && [ -e "$LIB" ]; then
  # scalar: per-tensor A/B/D scales, e4m3 D; h128: Hopper's 1x128 / 128x128 block scales, bf16 D
  for mode in scalar h128; do
    # cuBLASLt's own log (level 4: errors, traces, hints, info) says why a call it refuses failed.
    PENV=(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA/lib64" MPPROF_SCAN=none MPPROF_SHADOW=1
          CUBLASLT_LOG_LEVEL=4 CUBLASLT_LOG_FILE="$LOG/cublaslt_fp8_$mode.log")
    profile "$(left 60)" "$OUT/shadow_fp8_$mode" "$OUT/shadow_fp8_check" 4 256 "$mode" \
      >"$LOG/shadow_fp8_${mode}_out.txt" 2>>"$LOG/shadow_fp8_check.txt"
    rc=$?
    PENV=()
    name="shadow FP8 $mode scales on the device"
    if [ $rc = 77 ]; then
      row "$name" "$([ -n "$GPU" ] && echo FAIL || echo SKIP)" "no CUDA device"
    elif [ $rc != 0 ]; then
      row "$name" FAIL "run failed ($(why $rc)), see $LOG/shadow_fp8_check.txt"
    elif tmo 30 python3 "$ROOT/tests/gpu/shadow_fp8_raw_check.py" "$OUT/shadow_fp8_$mode/raw" \
         "$LOG/shadow_fp8_${mode}_out.txt" 4 >"$LOG/shadow_fp8_${mode}_raw.txt" 2>&1; then
      row "$name" PASS "$(cut -c1-90 "$LOG/shadow_fp8_${mode}_raw.txt")"
    else
      row "$name" FAIL "$(cut -c1-90 "$LOG/shadow_fp8_${mode}_raw.txt")"
    fi
  done
else
  row "shadow FP8 scales on the device" FAIL "shadow_fp8_check did not build (or no libmpprof), see $LOG/shadow_fp8_check.txt"
fi

# ---------- PyTorch AMP ----------
if [[ $TORCH == *"gpu True"* ]]; then
  say "samples/python/amp_train.py"
  PENV=()
  if profile "$(left 120)" "$OUT/amp" python3 "$ROOT/samples/python/amp_train.py" --steps 10 >"$LOG/amp.txt" 2>&1; then
    if tmo 30 python3 "$ROOT/tests/gpu/tc_check.py" --raw "$OUT/amp/raw" --audit "$AUDIT" --expect amp \
         --label "amp_train" >"$LOG/amp_tc.txt" 2>&1; then
      row "PyTorch AMP: Linear GEMMs fp16 on TC" PASS "see Tensor Core table"
    else
      row "PyTorch AMP: Linear GEMMs fp16 on TC" FAIL "$(sed -n 2p "$LOG/amp_tc.txt" | cut -c1-90)"
    fi
  else
    row "PyTorch AMP: Linear GEMMs fp16 on TC" FAIL "run failed ($(why $?)), see $LOG/amp.txt"
  fi
  # The same sample without any NVTX range: module names from mpprof's PyTorch integration.
  # Judged from report.json: needs the mpprof CLI (not in build way 3).
  if [ $USE_CLI = 0 ]; then
    row "PyTorch: layers = modules, fwd+bwd" SKIP "no mpprof CLI that runs here: no report.json"
  else
    say "samples/python/amp_train.py --nvtx off"
    if profile "$(left 120)" "$OUT/amp_modules" python3 "$ROOT/samples/python/amp_train.py" --steps 10 --nvtx off \
         >"$LOG/amp_modules.txt" 2>&1; then
      if tmo 30 python3 "$ROOT/tests/gpu/torch_attr_check.py" "$OUT/amp_modules/report.json" \
           >"$LOG/amp_modules_check.txt" 2>&1; then
        row "PyTorch: layers = modules, fwd+bwd" PASS "$(head -1 "$LOG/amp_modules_check.txt" | cut -c1-70)"
      else
        row "PyTorch: layers = modules, fwd+bwd" FAIL "$(head -1 "$LOG/amp_modules_check.txt" | cut -c1-70)"
      fi
    else
      row "PyTorch: layers = modules, fwd+bwd" FAIL "run failed ($(why $?)), see $LOG/amp_modules.txt"
    fi
  fi
  PENV=()
else
  row "PyTorch AMP" SKIP "torch with CUDA not importable ($TORCH)"
fi

# ---------- table ----------
echo
echo "mpprof gpu-check: ${GPU:-unknown GPU}; torch $TORCH; build $MODE; $(($(date +%s) - T0)) s"
printf '| %-40s | %-6s | %s\n' check result detail
printf '|%s|%s|%s\n' "$(printf -- '-%.0s' {1..42})" "--------" "--------"
printf '%s\n' "${ROWS[@]}"
# The device scan's bandwidth table and verdict line (its per-layout rows are in the log).
if [ -n "$DEVSCAN_TABLE" ]; then echo; echo "$DEVSCAN_TABLE" | sed -n -e '/^| dtype    | data/,$p' -e '/^devscan_check on/p' -e '/^host us per scanned op/p'; fi
echo
# tc_check.py pads the run label to 14 columns; the header matches it.
echo "GEMM sites with kernels, per run:"
printf '| %-14s | sites | on TC | TC dtypes  | result\n' run
for p in fp32 tf32 fp16 bf16; do f=$LOG/mlp_${p}_tc.txt; [ -f "$f" ] && cat "$f"; done
[ -f "$LOG/amp_tc.txt" ] && cat "$LOG/amp_tc.txt"
if ls "$LOG"/mlp_*_counters_tc.txt >/dev/null 2>&1; then
  echo
  printf '| %-30s | sites | measured | TC yes/no | names agree | chip | result\n' "run (hardware counters)"
  for p in fp16 fp32; do f=$LOG/mlp_${p}_counters_tc.txt; [ -f "$f" ] && cat "$f"; done
fi
[ -s "$LOG/shadow_times.txt" ] && { echo; cat "$LOG/shadow_times.txt"; }
echo "logs: $LOG"
exit $((FAILS > 0))
