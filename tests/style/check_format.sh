#!/usr/bin/env bash
# tests/style: every C source, header and CUDA file of the project is
# formatted as .clang-format says (clang-format --dry-run -Werror). Prints
# each file that is not, with its first differences; exit 1 if any.
set -uo pipefail
root=${1:?usage: check_format.sh SOURCE_ROOT [CLANG_FORMAT]}
cf=${2:-clang-format}
cd "$root" || exit 2
bad=0
n=0
while IFS= read -r -d '' f; do
  n=$((n + 1))
  if ! out=$("$cf" --dry-run -Werror --style=file "$f" 2>&1); then
    bad=$((bad + 1))
    echo "not formatted: $f"
    printf '%s\n' "$out" | head -6
  fi
done < <(find analysis bench common kernels profiler report samples tests \
  \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -type f -print0 2>/dev/null | sort -z)
echo "clang-format: $bad of $n files not formatted (fix: clang-format -i FILE)"
((bad == 0))
