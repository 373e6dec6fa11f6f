#!/usr/bin/env bash
# tests/style: the functions every hooked call runs carry no `rep stos` or
# `rep movs` (the build's hot_path_c_args, top-level meson.build: their
# start-up costs ~30 cycles, and GCC's generic tuning emits them for a
# struct's memset or a bounded memcpy), and no loop copying one byte at a
# time: what those options make of a memcpy whose size GCC can bound but not
# name (a byte load, then a byte store; mpp_memcpy_n in profiler/mpp.h is
# the way round). From libmpprof.so's disassembly
# (objdump); each function named must be there, so that a rename cannot make
# the check pass unseen. Prints each offending instruction; exit 1 if any.
set -uo pipefail
objdump=${OBJDUMP:-objdump}
(($# >= 2)) || { echo "usage: check_hot_path.sh LIBMPPROF.so FUNCTION..." >&2; exit 2; }
lib=$1
shift
dis=$("$objdump" -d --no-show-raw-insn "$lib") || { echo "check_hot_path: $objdump failed on $lib" >&2; exit 2; }
bad=0
for fn in "$@"; do
  body=$(awk -v fn="<$fn>:" '$2 == fn { on = 1; next } on && /^$/ { exit } on' <<<"$dis")
  if [[ -z $body ]]; then
    echo "check_hot_path: $fn not found in $lib (renamed or inlined? update the list in tests/profiler/meson.build)"
    bad=1
    continue
  fi
  reps=$(grep -E 'rep[a-z]* +(stos|movs)' <<<"$body")
  # an indexed byte load, and the next instruction an indexed byte store
  bytes=$(awk '/movzbl +[^ ]*\(%[a-z0-9]+,%[a-z0-9]+,1\),/ { prev = $0; next }
               prev != "" && /mov +%(al|bl|cl|dl|sil|dil|bpl|r[0-9]+b),[^ ]*\(%[a-z0-9]+,%[a-z0-9]+,1\)/ { print prev " / " $0 }
               { prev = "" }' <<<"$body")
  [[ -n $bytes ]] && reps+=${reps:+$'\n'}$(sed 's/^/byte copy loop: /' <<<"$bytes")
  if [[ -n $reps ]]; then
    while IFS= read -r line; do echo "check_hot_path: $fn: $line"; done <<<"$reps"
    bad=1
  fi
done
((bad == 0)) && echo "check_hot_path: $# functions, no rep stos / rep movs, no byte copy loops"
exit $bad
