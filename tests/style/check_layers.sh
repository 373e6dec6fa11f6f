#!/usr/bin/env bash
# tests/style: libmpprof.so's modules depend on each other one way
# (docs/profiler.md, "Layers inside libmpprof.so"). From the objects' symbol
# tables (nm): every reference from one module to a function or variable
# another module defines must go to a lower layer, with no exceptions left
# (the list below is empty). Prints each edge that breaks the order; exit 1 if any.
set -uo pipefail
nm=${NM:-nm}
((${#} > 0)) || { echo "usage: check_layers.sh OBJECT|DIR..." >&2; exit 2; }
objs=()
for a in "$@"; do
  if [[ -d $a ]]; then objs+=("$a"/*.o); else objs+=("$a"); fi
done
set -- "${objs[@]}"

# Layers, lowest first; a module is an object's file name without .c.o and
# the meson target prefix (hooks_cublas.c.o -> hooks_cublas).
layers=(
  "jsonw hooks_cuda_types gpu_scan_plan gpu_shadow_plan ptrmap settings"
  "core"
  "clock"
  "gpu_cuda_driver"
  "gpu_cupti gpu_devscan"
  "gpu_devshadow"
  "gpu_tc_counters"
  "op hostmem"
  "sites"
  "process train"
  "capture"
  "nvtx"
  "scope"
  "shadow"
  "hooks_conv_decode"
  "call rawwrite hooks_gemm_decode"
  "runtime"
  "dlsym exec entry hooks_cublas hooks_cublaslt hooks_cudnn hooks_cupti_activity hooks_profiler_api hooks_profiler_api_driver"
  "hooks_cudnn_backend"
)
# No back edges: a site frees its shadow state with free() (shadow.c makes
# it one block), the exported entry points that initialise the runtime live
# in entry.c, and dlsym.c hands core the C library's dlsym (mpp_real_dlsym).
allowed=" "

ranks=""
for i in "${!layers[@]}"; do
  for m in ${layers[$i]}; do ranks+="$m=$i "; done
done

# One pass over every object's symbols: "object: [address] type name".
"$nm" -A "$@" | awk -v ranks="$ranks" -v allowed="$allowed" -v nobj=$# '
  function module(path, b) {
    b = path; sub(/:.*/, "", b); sub(/.*\//, "", b); sub(/\.o$/, "", b); sub(/\.c$/, "", b)
    return b
  }
  BEGIN {
    n = split(ranks, r, " ")
    for (i = 1; i <= n; i++) { split(r[i], kv, "="); rank[kv[1]] = kv[2] }
  }
  {
    m = module($1); s = $NF; t = $(NF - 1)
    if (m ~ /fatbin/) next
    seen[m] = 1
    if (s !~ /^(mpp_|mpprof_)/) next  # dlsym.c and exec.c also define the C library'"'"'s
    if (t == "U" || t == "w") use[m, s] = 1  # weak references count too
    else if (t ~ /[A-Z]/) def[s] = m
  }
  END {
    bad = 0
    for (m in seen)
      if (!(m in rank)) { print "no layer for module " m " (add it to tests/style/check_layers.sh)"; bad = 1 }
    for (k in use) {
      split(k, p, SUBSEP); m = p[1]; s = p[2]; d = def[s]
      if (d == "" || d == m || !(m in rank)) continue
      if (index(allowed, " " m "->" d " ")) continue
      if (!(d in rank) || rank[d] >= rank[m]) { print "layer order broken: " m " uses " s " of " d; bad = 1 }
    }
    print "layers: " nobj " objects checked"
    exit bad
  }'
