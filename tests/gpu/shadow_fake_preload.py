#!/usr/bin/env python3
"""libmpprof.so --shadow on device memory, as a user runs it (LD_PRELOAD, the
fake libcuda.so.1 and libcublas.so.13 of tests/gpu/fakecuda): the program's
output is byte-identical with and without mpprof, its exit code the same, and
the raw file's GEMM site has its 3 calls shadowed on the device path (through
the real cuBLAS functions hooks/cublas.c hands devshadow.c), every candidate
measured, the fp32 call's own precision with zero error against the device's
fp32 reference.

usage: shadow_fake_preload.py PROG LIBMPPROF FAKECUDA_DIR WORKDIR"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shadow_raw_check import shadows  # noqa: E402  (one walk of the raw files' sites)


def profile(prog, lib, fake, work):
    """prog bare and under libmpprof.so --shadow=1 (raw files in WORK/out):
    the two runs and the sites of the raw files, with the problems seen so far."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, LD_LIBRARY_PATH=fake)
    bare = subprocess.run([prog], env=env, capture_output=True)
    out = os.path.join(work, "out")
    penv = dict(env, LD_PRELOAD=lib, MPPROF_OUT=out, MPPROF_SHADOW="1", MPPROF_CUPTI="off")
    run = subprocess.run([prog], env=penv, capture_output=True)
    problems = []
    if bare.returncode != 0:
        problems.append(f"the program itself failed: {bare.returncode}")
    if run.returncode != bare.returncode or run.stdout != bare.stdout:
        problems.append(f"output or exit code ({run.returncode}) differs under mpprof")
    sites = []
    for path in glob.glob(os.path.join(out, "raw", "*.json")):
        with open(path) as f:
            sites.extend(json.load(f).get("sites", []))
    return bare, run, sites, problems


def shadow_problems(sh):
    """What is wrong with the shadow object of the three calls' site."""
    problems = []
    cands = sh.get("candidates", {})
    if sh.get("calls") != 3 or sh.get("skipped"):
        problems.append(f"calls {sh.get('calls')}, skipped {sh.get('skipped')}: want 3, none")
    for name in ["current", "fp16", "bf16", "fp8_e4m3_current", "fp8_e4m3_delayed",
                 "mxfp8_e4m3", "fp8_e5m2_current", "mxfp8_e5m2"]:
        if name not in cands:
            problems.append(f"{name} not measured")
    if cands.get("current", {}).get("rel_l2") != 0:
        problems.append(f"current rel_l2 {cands.get('current', {}).get('rel_l2')}, want 0")
    if cands.get("fp8_e4m3_delayed", {}).get("calls") != 2:
        problems.append("delayed scaling: want 2 calls (the first seeds the history)")
    rel = cands.get("fp16", {}).get("rel_l2")
    if rel is None or not 0 < rel < 2 ** -8:
        problems.append(f"fp16 rel_l2 {rel}")
    return problems


def report(problems, run, ok_line):
    for p in problems:
        print("problem:", p)
    if problems:
        sys.stderr.write(run.stderr.decode(errors="replace"))
        return 1
    print(ok_line)
    return 0


def main():
    prog, lib, fake, work = sys.argv[1:5]
    bare, run, sites, problems = profile(prog, lib, fake, work)
    found = [s for site in sites for s in shadows(site)]
    if len(found) != 1:
        problems.append(f"{len(found)} sites with a shadow object, want 1")
    else:
        problems += shadow_problems(found[0])
    return report(problems, run, "shadow on device memory under LD_PRELOAD: 3 calls, output identical")


if __name__ == "__main__":
    sys.exit(main())
