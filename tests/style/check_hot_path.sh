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
# One pass over the disassembly (a sanitized build's is large).
"$objdump" -d --no-show-raw-insn "$lib" | awk -v list="$*" '
  BEGIN { n = split(list, names, " "); for (i = 1; i <= n; i++) want["<" names[i] ">:"] = names[i] }
  /^[0-9a-f]+ <.*>:$/ { fn = ($2 in want) ? want[$2] : ""; if (fn != "") seen[fn] = 1; prev = ""; next }
  fn == "" { next }
  /rep[a-z]* +(stos|movs)/ { print "check_hot_path: " fn ": " $0; bad = 1 }
  # an indexed byte load, and the next instruction an indexed byte store
  prev != "" && /mov +%(al|bl|cl|dl|sil|dil|bpl|r[0-9]+b),[^ ]*\(%[a-z0-9]+,%[a-z0-9]+,1\)/ {
    print "check_hot_path: " fn ": byte copy loop: " prev " / " $0; bad = 1
  }
  { prev = $0 ~ /movzbl +[^ ]*\(%[a-z0-9]+,%[a-z0-9]+,1\),/ ? $0 : "" }
  END {
    for (i = 1; i <= n; i++)
      if (!(names[i] in seen)) {
        print "check_hot_path: " names[i] " not found (renamed or inlined? update the list in tests/profiler/meson.build)"
        bad = 1
      }
    if (!bad) print "check_hot_path: " n " functions, no rep stos / rep movs, no byte copy loops"
    exit bad
  }'
st=("${PIPESTATUS[@]}")
((st[0] == 0)) || { echo "check_hot_path: $objdump failed on $lib" >&2; exit 2; }
exit "${st[1]}"
