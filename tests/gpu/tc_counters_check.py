#!/usr/bin/env python3
"""tc_counters_check.py: judge one `mpprof --tc-counters` run (scripts/gpu-check.sh).

Reads OUT/raw/*.json. The counters must have run ("tc_counters".status ok,
some kernels measured, no measured call left unmatched), every GEMM site with
kernels must have its kernels decided by counters, and the verdicts must
be what the precision implies:
  fp16 / bf16 / tf32  some measured kernel on Tensor Cores (sites without one
                      are printed as notes, as tc_check.py does)
  fp32 (TF32 off)     no measured kernel used Tensor Cores
The kernel-name rules (tc_audit, one kernel per line) are asked too, and each
disagreement is printed as a note: counters are the ground truth, a
disagreement is a name-rule bug to look at, not a failure of this check.
Prints one table row (plus problem and note lines). Exit 0 pass, 1 fail, 77
when counters were unavailable on this machine (the reason is printed: e.g.
CUPTI_ERROR_INSUFFICIENT_PRIVILEGES without admin rights on GPU counters).
Only reasons that are the machine's give 77 (MACHINE_REASONS); any other
(CUPTI_ERROR_INVALID_PARAMETER, ...: mpprof calling CUPTI wrongly) fails.
"""
import argparse
import glob
import json
import subprocess
import sys


# "unavailable" reasons that say the machine cannot give counters (no
# permission, a device or driver without the range profiler, no metric list
# for the chip), not that mpprof called CUPTI wrongly.
MACHINE_REASONS = ("INSUFFICIENT_PRIVILEGES", "NOT_SUPPORTED", "CUPTI not loaded",
                   "not in this CUPTI", "no Tensor Core metric known for chip")


def name_verdicts(audit, names):
    """tc_audit's name-rule verdict (yes/no/unknown) for each kernel name."""
    if not names:
        return []
    # Only the kernel matters for "used": the other fields are placeholders.
    lines = "".join("-\t" * 14 + n.replace("\t", " ") + "\n" for n in names)
    out = subprocess.run([audit], input=lines, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"tc_audit failed: {out.stderr.strip()}")
    return [ln.split("\t")[2] for ln in out.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--audit", required=True)
    ap.add_argument("--expect", required=True, choices=["fp32", "tf32", "fp16", "bf16"])
    ap.add_argument("--label", required=True)
    o = ap.parse_args()

    files = sorted(glob.glob(o.raw + "/*.json"))
    problems, notes = [], []
    status, reason, chip, metrics = "missing", None, None, []
    measured = unmatched = 0
    sites = []
    for fn in files:
        try:
            raw = json.load(open(fn))
        except (OSError, ValueError) as e:
            problems.append(f"{fn}: unreadable raw file: {e}")
            continue
        tcc = raw.get("tc_counters")
        if tcc is None:
            continue  # a process that never asked (should not happen under the option)
        status, reason = tcc.get("status", "missing"), tcc.get("reason")
        chip, metrics = tcc.get("chip"), tcc.get("metrics") or []
        measured += tcc.get("kernels_profiled", 0)
        unmatched += tcc.get("ops_unmatched", 0)
        sites += [s for s in raw.get("sites", []) if s.get("kernels")]
    if not files:
        problems.append("no raw file")
    if status == "unavailable":
        if any(m in (reason or "") for m in MACHINE_REASONS):
            print(f"| {o.label:<30} | counters unavailable: {reason}")
            return 77
        problems.append(f"counters unavailable for a reason that is not the machine's: {reason}")
    if status != "ok":
        problems.append(f"tc_counters status '{status}' (reason: {reason})")
    if not measured:
        problems.append("no kernel measured")
    if unmatched:
        problems.append(f"{unmatched} measured call(s) whose kernel records did not match the ranges")

    names = [k["name"] for s in sites for k in s["kernels"]]
    try:
        by_name = dict(zip(names, name_verdicts(o.audit, names)))
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        problems.append(str(e))
        by_name = {}
    nk = yes = no = agree = 0
    for s in sites:
        where = f"{s.get('layer') or '-'} {s.get('api')}"
        ks = s["kernels"]
        dec = [k for k in ks if isinstance(k.get("tc"), bool)]
        if len(dec) != len(ks):
            problems.append(f"{where}: {len(ks) - len(dec)} of {len(ks)} kernel(s) not measured")
        for k in dec:
            nk += 1
            yes += k["tc"]
            no += not k["tc"]
            nv = by_name.get(k["name"], "unknown")
            if nv == ("yes" if k["tc"] else "no"):
                agree += 1
            else:
                notes.append(f"{k['name'][:90]}: counters say {'TC' if k['tc'] else 'no TC'}, "
                             f"name rules '{nv}' (values {k.get('tc_values')})")
        on_tc = any(k["tc"] for k in dec)
        if o.expect == "fp32" and on_tc:
            problems.append(f"{where}: counters saw Tensor Cores with TF32 off")
        if o.expect != "fp32" and dec and not on_tc:
            # cuBLAS may pick a CUDA-core kernel for a tiny shape: a note, as in tc_check.py.
            notes.append(f"{where}: no measured kernel on Tensor Cores ({o.expect})")
    if o.expect != "fp32" and nk and not yes:
        problems.append(f"no measured kernel on Tensor Cores in the {o.expect} run")
    ok = not problems
    print(f"| {o.label:<30} | {len(sites):>5} | {nk:>8} | {yes:>3} / {no:<3} | {agree:>3}/{nk:<3} "
          f"| {chip or '-'} | {'PASS' if ok else 'FAIL'}")
    for p in problems:
        print(f"  problem: {p}")
    for n in notes:
        print(f"  note: {n}")
    if metrics:
        print(f"  metrics: {', '.join(metrics)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
