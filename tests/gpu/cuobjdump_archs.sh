#!/bin/sh
# cuobjdump_archs.sh CUOBJDUMP FILE "sm_75 ... compute_100": NVIDIA's own tool
# lists exactly these SASS architectures (--list-elf) and PTX (--list-ptx).
set -eu
tool=$1 file=$2 want=$3
elf=$("$tool" --list-elf "$file" | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.cubin.*/\1/p' | sort -u -t_ -k2n | tr '\n' ' ')
ptx=$("$tool" --list-ptx "$file" | sed -n 's/.*\.sm_\([0-9a-z]*\)\.ptx.*/compute_\1/p' | sort -u -t_ -k2n | tr '\n' ' ')
got=$(echo "$elf$ptx" | sed 's/ *$//')
echo "$file: $got"
[ "$got" = "$want" ] || { echo "$file: expected $want" >&2; exit 1; }
