"""Cost of mpprof's PyTorch integration (profiler/python/mpprof_torch) on CPU
PyTorch, against the same program without mpprof, in one run.

Configurations, each a fresh interpreter, interleaved over ROUNDS rounds
(each keeps its fastest round):
  bare        no mpprof
  mpprof      libmpprof.so preloaded with the Python integration on, as
              `mpprof run --scan none` sets it up (CPU ops call no cuBLAS, so
              what is measured is the hooks and their scope calls)
  op-records  no mpprof, torch.autograd.profiler.profile(use_kineto=False):
              a RecordFunction callback on every op, the mechanism
              emit_nvtx's per-op "seq = N" ranges ride on (emit_nvtx itself
              needs a CUDA build); a lower bound of that alternative's cost
Models:
  many        Sequential of 200 Linear(16, 16), batch 8: the per-module-call
              cost, (t_mpprof - t_bare) / module calls per step (forward
              calls; each also registers its backward hooks)
  big         8 x Linear(512, 512), batch 128 (a step of >= 10 ms): the
              overhead as a share of the step
Prints each figure with the limit it is judged against (2 us per module
call, 1% of a >= 10 ms step) and their ratio.

usage: torch_hooks.py LIBMPPROF PYDIR [PYTHON]"""
import json
import os
import subprocess
import sys
import tempfile

ROUNDS = 5
MODELS = {"many": (200, 16, 8), "big": (8, 512, 128)}
LIMIT_US_PER_CALL = 2.0
LIMIT_STEP_SHARE = 0.01


def child(model_name, kind):
    import time

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    n, width, batch = MODELS[model_name]
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(n)])
    x = torch.randn(batch, width)
    calls = sum(1 for _ in model.modules())  # forward calls per step

    def step():
        model(x).sum().backward()

    reps = 20 if model_name == "many" else 5

    def timed():
        for _ in range(3):
            step()
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                step()
            best = min(best, (time.perf_counter() - t0) / reps)
        return best

    if kind == "op-records":
        with torch.autograd.profiler.profile(use_kineto=False):
            t = timed()
    else:
        t = timed()
    hooked = "mpprof_torch.hooks" in sys.modules and sys.modules["mpprof_torch.hooks"]._lib is not None
    print(json.dumps({"step_s": t, "module_calls": calls, "hooked": hooked}))


def run_child(python, model_name, kind, lib, pydir, out):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MPPROF_") or k in ("LD_PRELOAD", "PYTHONPATH"):
            del env[k]
    if kind == "mpprof":
        env.update(LD_PRELOAD=lib, PYTHONPATH=pydir, MPPROF_OUT=out, MPPROF_SCAN="none",
                   MPPROF_CHECKPOINT_S="0")
    p = subprocess.run([python, os.path.abspath(__file__), "--child", model_name, kind], env=env,
                       stdout=subprocess.PIPE, check=True)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    lib, pydir = sys.argv[1], sys.argv[2]
    python = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/python3"
    if subprocess.run([python, "-c", "import torch"], stderr=subprocess.DEVNULL).returncode:
        print("SKIP: %s cannot import torch (python3-torch)" % python)
        return 77
    kinds = ("bare", "mpprof", "op-records")
    best = {}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(ROUNDS):
            for m in MODELS:
                for k in kinds:
                    r = run_child(python, m, k, lib, pydir, out)
                    if k == "mpprof" and not r["hooked"]:
                        print("mpprof configuration did not install the hooks")
                        return 1
                    key = (m, k)
                    if key not in best or r["step_s"] < best[key]["step_s"]:
                        best[key] = r
    calls = best[("many", "bare")]["module_calls"]
    print("model 'many': %d module calls per step (forward), best of %d rounds" % (calls, ROUNDS))
    bare = best[("many", "bare")]["step_s"]
    for k in kinds:
        t = best[("many", k)]["step_s"]
        extra_us = (t - bare) / calls * 1e6
        line = "  %-10s step %8.3f ms  per module call %+7.2f us" % (k, t * 1e3, extra_us)
        if k != "bare":
            line += "  ratio to the %.0f us limit %.2f" % (LIMIT_US_PER_CALL, extra_us / LIMIT_US_PER_CALL)
        print(line)
    bare = best[("big", "bare")]["step_s"]
    print("model 'big': %d module calls per step" % best[("big", "bare")]["module_calls"])
    for k in kinds:
        t = best[("big", k)]["step_s"]
        share = (t - bare) / bare
        line = "  %-10s step %8.3f ms  overhead %+6.2f%% of the step" % (k, t * 1e3, share * 100)
        if k != "bare":
            line += "  ratio to the 1%% limit %.2f" % (share / LIMIT_STEP_SHARE)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
