#!/usr/bin/env python3
"""scripts/gpu-check.sh: judge a --shadow run of tests/gpu/shadow_check from
its raw files. Passes when the GEMM site was shadowed at least once on the
device and fp16, bf16 and the fp8 e4m3 recipes were measured with finite
errors, fp16's within the verdict's default limit (2^-8: the operands are
fp16 already, so only the output rounding remains). Prints one line."""
import glob
import json
import math
import sys

MAX_REL = 2.0 ** -8  # analysis/shadow.h MP_SHADOW_DEFAULT_MAX_REL
WANT = ["current", "fp16", "bf16", "fp8_e4m3_current", "fp8_e4m3_delayed", "mxfp8_e4m3"]


def shadows(node):
    if isinstance(node, dict):
        if isinstance(node.get("shadow"), dict):
            yield node["shadow"]
        for v in node.values():
            yield from shadows(v)
    elif isinstance(node, list):
        for v in node:
            yield from shadows(v)


def main():
    raw = sys.argv[1]
    found = []
    for path in sorted(glob.glob(raw + "/*.json")):
        with open(path) as f:
            found.extend(shadows(json.load(f)))
    if not found:
        print("no site has a shadow object")
        return 1
    best = max(found, key=lambda s: s.get("calls", 0))
    cands = best.get("candidates", {})
    skipped = best.get("skipped", {})
    if best.get("calls", 0) < 1:
        print(f"not shadowed: skipped {skipped}")
        return 1
    parts, bad = [], []
    for name in WANT:
        m = cands.get(name)
        rel = None if m is None else m.get("rel_l2")
        if m is None or rel is None or not math.isfinite(rel):
            bad.append(f"{name} {'missing' if m is None else 'not finite'}")
            continue
        parts.append(f"{name} {rel:.2e}")
    if cands.get("fp16", {}).get("rel_l2") is not None and cands["fp16"]["rel_l2"] > MAX_REL:
        bad.append(f"fp16 rel_l2 {cands['fp16']['rel_l2']:.2e} > 2^-8")
    head = f"{best['calls']} calls shadowed, skipped {skipped or 'none'}: " + ", ".join(parts)
    print(head if not bad else "problem: " + "; ".join(bad) + " | " + head)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
