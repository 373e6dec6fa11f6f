#!/usr/bin/env python3
"""scripts/gpu-check.sh: judge a --shadow=1 run of tests/gpu/shadow_fp8_check.

    shadow_fp8_raw_check.py RAW_DIR PROGRAM_LOG N

Passes when the cublasLtMatmul site was shadowed on every one of its N
calls (none skipped: an FP8 call with per-tensor scale pointers is
supported) and the `current` error mpprof measured (its own re-computation
of the op at the scales the op used) is within 2 % of the error the program
measured on the op's real output against an exact host reference. Prints
one line."""
import glob
import json
import math
import re
import sys

TOLERANCE = 0.02  # relative: the shadow's fp32 sums round a few outputs differently


def main():
    raw, log, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(log) as f:
        m = re.search(r"current rel_l2 ([0-9.e+-]+)", f.read())
    if not m:
        print("the program printed no rel_l2")
        return 1
    want = float(m.group(1))
    sites = []
    for path in sorted(glob.glob(raw + "/*.json")):
        with open(path) as f:
            sites += [s for s in json.load(f).get("sites", []) if s.get("api") == "cublasLtMatmul"]
    if len(sites) != 1:
        print(f"{len(sites)} cublasLtMatmul sites, want 1")
        return 1
    sh = sites[0].get("shadow") or {}
    got = (sh.get("candidates", {}).get("current") or {}).get("rel_l2")
    head = (f"{sh.get('calls', 0)} of {calls} calls shadowed, skipped {sh.get('skipped') or 'none'}; "
            f"current rel_l2 {got if got is None else f'{got:.4e}'}, the op's own {want:.4e}")
    ok = (sh.get("calls") == calls and not sh.get("skipped") and got is not None
          and math.isfinite(got) and abs(got - want) <= TOLERANCE * want)
    print(head if ok else "problem: " + head)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
