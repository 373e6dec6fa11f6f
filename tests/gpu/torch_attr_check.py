#!/usr/bin/env python3
"""torch_attr_check.py REPORT_JSON: scripts/gpu-check.sh's check of
samples/python/amp_train.py --nvtx off under mpprof (no NVTX range in the
program: the layers come from mpprof's PyTorch integration alone).
Passes when fc1, fc2 and fc3 are layers of class Linear with forward and
backward sites, and no GEMM/conv site is outside a module (layer "")."""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        rep = json.load(f)
    layers = {l["name"]: l for l in rep["layers"]}
    problems = []
    for name in ("fc1", "fc2", "fc3"):
        l = layers.get(name)
        if l is None:
            problems.append("no layer %s (layers: %s)" % (name, ", ".join(sorted(layers))[:60]))
            continue
        if l.get("module_class") != "Linear":
            problems.append("%s: class %s, not Linear" % (name, l.get("module_class")))
        missing = {"forward", "backward"} - set(l.get("phases", []))
        if missing:
            problems.append("%s: no %s sites" % (name, "/".join(sorted(missing))))
    if "" in layers:
        problems.append("%d calls outside any module" % layers[""]["calls"])
    print("ok: fc1..fc3 are Linear layers, forward and backward" if not problems else "; ".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
