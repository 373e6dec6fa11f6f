#!/usr/bin/env bash
# scripts/gpu-scan-variants.sh: every entry point of the device scan kernel
# (kernels/scan.cu: mpp_scan_ops and, in a build configured with
# -Dscan_variants=true, its variants) checked and measured in one command,
# so that one short GPU session compares them all.
#
#   scripts/gpu-scan-variants.sh [-B BUILD_DIR] [--bytes N] [KERNEL ...]
#
# For each kernel (default: every `mpp_scan_ops*` entry point that
# kernels/scan.cu defines), tests/gpu/devscan_check --kernel KERNEL --bytes N
# (default 1 GiB): the records bit for bit against the host scanner, then
# scan bandwidth against a device-to-device copy in the same run. Prints one
# line per kernel with the scan / copy ratio on N(0, 1) data for each dtype
# (the aim is devscan_check's BW_AIM), and keeps each full output under
# OUT_DIR (default ./gpu-scan-variants-out). Exit 0 when every kernel's
# records matched, 1 otherwise, 77 without a GPU.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
BYTES=$((1 << 30))
OUT=${OUT_DIR:-$PWD/gpu-scan-variants-out}
KERNELS=()
while [ $# -gt 0 ]; do
  case $1 in
    -B|--bytes)
      if [ $# -lt 2 ]; then echo "gpu-scan-variants: $1 needs a value" >&2; exit 2; fi
      if [ "$1" = -B ]; then B=$2; else BYTES=$2; fi
      shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "gpu-scan-variants: unknown option $1" >&2; exit 2 ;;
    *) KERNELS+=("$1"); shift ;;
  esac
done
CHECK=$B/tests/gpu/devscan_check
if [ ! -x "$CHECK" ]; then
  echo "gpu-scan-variants: $CHECK not built (configure with -Ddevice_code=enabled -Dscan_variants=true)" >&2
  exit 2
fi
if [ ${#KERNELS[@]} -eq 0 ]; then
  # The entry points as kernels/scan.cu declares them: the one list there is.
  mapfile -t KERNELS < <(grep -o 'mpp_scan_ops[a-z0-9_]*(mpp_scan_launch' "$ROOT/kernels/scan.cu" |
                          sed 's/(mpp_scan_launch//' | sort -u)
fi
mkdir -p "$OUT"
status=0
printf '%-22s %-10s %s\n' kernel records "scan / copy on N(0, 1) data, per dtype"
for k in "${KERNELS[@]}"; do
  log=$OUT/$k.txt
  "$CHECK" --kernel "$k" --bytes "$BYTES" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then
    echo "gpu-scan-variants: no GPU (devscan_check skipped)"
    exit 77
  fi
  case $rc in
    0) rec=identical ;;
    *) rec="FAIL($rc)"; status=1 ;;
  esac
  # devscan_check's bandwidth rows: | dtype | data | GiB | scan | copy | ratio | aim
  ratios=$(awk -F'|' '$3 ~ /normal/ { gsub(/ /, "", $2); gsub(/ /, "", $7); printf "%s %s  ", $2, $7 }' "$log")
  printf '%-22s %-10s %s\n' "$k" "$rec" "${ratios:-no bandwidth rows (see $log)}"
done
echo "full outputs: $OUT"
exit $status
