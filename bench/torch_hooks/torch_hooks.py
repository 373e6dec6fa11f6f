"""Cost of mpprof's PyTorch integration (profiler/python/mpprof_torch) on CPU
PyTorch, in one run.

One interpreter with libmpprof.so preloaded and the integration installed
(as `mpprof run --scan none` sets it up) steps each model with the
integration's global module hooks on and off, interleaved over rounds (each
state keeps its fastest round); libmpprof's own op hooks run in both states,
so the difference is the integration's cost. Models:
  no-ops      Sequential of 200 torch.nn.Linear(16, 16), batch 8, on the
              CPU: modules that issue no CUDA matrix op (as activations,
              norms and containers on a GPU): forward hooks, no backward mark
  gemm        the same with a Linear whose forward and backward call cuBLAS
              (simcuda's, through ctypes): every module gets a backward mark
              (a tensor hook on its output) and its backward GEMMs run under it
  mixed       50 x (that Linear, ReLU, LayerNorm, Dropout): one module call in
              four issues GEMMs, as in a usual block
  big         8 x Linear(512, 512), batch 128 (a step of >= 10 ms): the share
              of the step; also "op-records", hooks off and
              torch.autograd.profiler.profile(use_kineto=False) on, the
              RecordFunction callback on every op that emit_nvtx's "seq = N"
              ranges ride on (emit_nvtx itself needs a CUDA build): a lower
              bound of the alternative's cost
Per module call = the median over rounds of (step on - step off), the two
runs of a round side by side (in alternating order), / module calls of a
step: a shared machine's speed drifts over seconds, which the fastest round
of each state alone does not cancel. Prints each
figure with the limit it is judged against (2 us per module call, 1% of a
>= 10 ms step) and their ratio, once for each kind of backward mark (a child
interpreter each, alternating, MPPROF_TORCH_MARKS=1 and 0: C++ pre-hooks on
grad_fn where _marks is built for this torch, and Python tensor hooks); each
child says which kind it really ran.

usage: torch_hooks.py LIBMPPROF PYDIR SIMCUDA_DIR [PYTHON]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

INPROC_ROUNDS = 30
BIG_ROUNDS = 8
LIMIT_US_PER_CALL = 2.0
LIMIT_STEP_SHARE = 0.01


def gemm_linear(torch, simcuda):
    """A Linear whose matrix products are simcuda cuBLAS SGEMMs (a device
    pointer is a host pointer under simcuda), as tests/torch/torch_model.py."""
    import ctypes

    c_int, c_void_p, c_float = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    ctypes.CDLL(os.path.join(simcuda, "libcublas.so.13"), mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)  # mpprof's hook when preloaded
    handle = c_void_p()
    assert g.cublasCreate_v2(ctypes.byref(handle)) == 0
    sgemm = g.cublasSgemm_v2
    sgemm.argtypes = [c_void_p, c_int, c_int, c_int, c_int, c_int, ctypes.POINTER(c_float), c_void_p,
                      c_int, c_void_p, c_int, ctypes.POINTER(c_float), c_void_p, c_int]
    one, zero = c_float(1.0), c_float(0.0)

    def mm(a, b):
        a, b = a.contiguous(), b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty(m, n)
        assert sgemm(handle, 0, 0, n, m, k, ctypes.byref(one), b.data_ptr(), n, a.data_ptr(), k,
                     ctypes.byref(zero), c.data_ptr(), n) == 0
        return c

    class MatMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return mm(x, w)

        @staticmethod
        def backward(ctx, gy):
            x, w = ctx.saved_tensors
            return mm(gy, w.t()), mm(x.t(), gy)

    class GemmLinear(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(i, o) / i**0.5)

        def forward(self, x):
            return MatMul.apply(x, self.weight)

    return GemmLinear


def timed(step, reps, rounds=3):
    import time

    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def child(simcuda):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    hooks = sys.modules.get("mpprof_torch.hooks")
    if hooks is None or hooks._lib is None or hooks._fast is None:
        print(json.dumps({"hooked": False}))
        return
    marks = "C++ pre-hooks on grad_fn" if hooks._cxx else "Python tensor hooks"
    mm = torch.nn.modules.module
    on = (dict(mm._global_forward_pre_hooks), dict(mm._global_forward_hooks))

    def state(name):
        for d, saved in zip((mm._global_forward_pre_hooks, mm._global_forward_hooks), on):
            d.clear()
            if name == "on":
                d.update(saved)

    def measure(model, x, states, rounds, reps):
        def step():
            model(x).sum().backward()

        best = {k: float("inf") for k in states}
        runs = {k: [] for k in states}
        for r in range(rounds):
            for k in states if r % 2 == 0 else tuple(reversed(states)):  # neither always first
                state(k)
                if k == "op-records":
                    with torch.autograd.profiler.profile(use_kineto=False):
                        step()
                        runs[k].append(timed(step, reps, 1))
                else:
                    step()
                    runs[k].append(timed(step, reps, 1))
                best[k] = min(best[k], runs[k][-1])
        state("on")
        out = {"best_s": best, "module_calls": sum(1 for _ in model.modules())}
        if "on" in runs and "off" in runs:  # each round's on - off, its two runs side by side
            out["paired_s"] = statistics.median(a - b for a, b in zip(runs["on"], runs["off"]))
        return out

    GemmLinear = gemm_linear(torch, simcuda)
    nn = torch.nn

    def mixed():  # a block's usual mix: 1 module of 4 issues GEMMs
        return nn.Sequential(*[m for _ in range(50)
                               for m in (GemmLinear(16, 16), nn.ReLU(), nn.LayerNorm(16), nn.Dropout(0.0))])

    out = {"hooked": True, "marks": marks}
    for name, make in (("no-ops", lambda: nn.Sequential(*[nn.Linear(16, 16) for _ in range(200)])),
                       ("gemm", lambda: nn.Sequential(*[GemmLinear(16, 16) for _ in range(200)])),
                       ("mixed", mixed)):
        out[name] = measure(make(), torch.randn(8, 16), ("off", "on"), INPROC_ROUNDS, 5)
    model = nn.Sequential(*[nn.Linear(512, 512) for _ in range(8)])
    x = torch.randn(128, 512)
    big = measure(model, x, ("off", "on"), BIG_ROUNDS, 2)
    # the profiler's state can outlast its context: its rounds come last
    big["best_s"]["op-records"] = measure(model, x, ("op-records",), BIG_ROUNDS // 2, 2)["best_s"]["op-records"]
    out["big"] = big
    print(json.dumps(out))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    lib, pydir, simcuda = sys.argv[1], sys.argv[2], sys.argv[3]
    python = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/python3"
    if subprocess.run([python, "-c", "import torch"], stderr=subprocess.DEVNULL).returncode:
        print("SKIP: %s cannot import torch (python3-torch)" % python)
        return 77
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MPPROF_") or k in ("LD_PRELOAD", "PYTHONPATH"):
            del env[k]
    results = []
    for marks in ("1", "0"):
        with tempfile.TemporaryDirectory() as out:
            env.update(LD_PRELOAD=lib, PYTHONPATH=pydir, LD_LIBRARY_PATH=simcuda, MPPROF_OUT=out,
                       MPPROF_SCAN="none", MPPROF_CHECKPOINT_S="0", MPPROF_TORCH_MARKS=marks)
            p = subprocess.run([python, os.path.abspath(__file__), "--child", simcuda], env=env,
                               stdout=subprocess.PIPE, check=True)
        r = json.loads(p.stdout.decode().strip().splitlines()[-1])
        if not r["hooked"]:
            print("mpprof configuration did not install the hooks (mpprof_torch._fast built?)")
            return 1
        results.append((marks, r))
    for marks, r in results:
        report(marks, r)
    return 0


def report(marks, r):
    print("MPPROF_TORCH_MARKS=%s: backward marks are %s" % (marks, r["marks"]))
    print("per module call: the integration's hooks off/on in one interpreter, %d rounds of one "
          "run each, side by side; the median of the rounds' differences (steps: the fastest "
          "round)" % INPROC_ROUNDS)
    for name in ("no-ops", "gemm", "mixed"):
        m = r[name]
        off, on = m["best_s"]["off"], m["best_s"]["on"]
        extra_us = m["paired_s"] / m["module_calls"] * 1e6
        print("  %-7s %d module calls/step: step %7.3f ms off, %7.3f ms on: per module call %+6.2f us"
              "  ratio to the %.0f us limit %.2f" % (name, m["module_calls"], off * 1e3, on * 1e3,
                                                    extra_us, LIMIT_US_PER_CALL,
                                                    extra_us / LIMIT_US_PER_CALL))
    m = r["big"]
    off = m["best_s"]["off"]
    print("per step: 8 x Linear(512, 512), batch 128, %d module calls, %d rounds; on: the median of "
          "the rounds' differences, as above; op-records (its rounds last): its fastest round "
          "against the fastest off" % (m["module_calls"], BIG_ROUNDS))
    for k in ("off", "on", "op-records"):
        t = m["best_s"][k]
        share = m["paired_s"] / off if k == "on" else (t - off) / off
        line = "  %-10s step %8.3f ms  overhead %+6.2f%% of the step" % (k, t * 1e3, share * 100)
        if k != "off":
            line += "  ratio to the 1%% limit %.2f" % (share / LIMIT_STEP_SHARE)
        print(line)


if __name__ == "__main__":
    sys.exit(main())
