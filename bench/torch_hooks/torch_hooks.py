"""Cost of mpprof's PyTorch integration (profiler/python/mpprof_torch) on CPU
PyTorch, in one run.

Per module call: one interpreter with libmpprof.so preloaded and the
integration installed (as `mpprof run --scan none` sets it up),
stepping the same model with the integration's global module hooks on and
off, interleaved over ROUNDS rounds (each state keeps its fastest round);
the difference over the module calls of a step is the integration's cost,
libmpprof's own op hooks being the same in both states. Two models, each a
Sequential of 200 layers (width 16, batch 8):
  no-ops      torch.nn.Linear on the CPU: modules that issue no CUDA matrix
              op (as activations, norms and containers on a GPU): forward
              hooks only, no backward mark
  gemm        a Linear whose forward and backward call cuBLAS (simcuda's,
              through ctypes): every module gets a backward mark (a tensor
              hook on its output) and its backward GEMMs run under it
Per step: 8 x Linear(512, 512), batch 128 (a step of >= 10 ms), fresh
interpreters interleaved: bare (no mpprof) against mpprof; and, as the
alternative's lower bound, op-records: no mpprof,
torch.autograd.profiler.profile(use_kineto=False), the RecordFunction
callback on every op that emit_nvtx's "seq = N" ranges ride on (emit_nvtx
itself needs a CUDA build).
Prints each figure with the limit it is judged against (2 us per module
call, 1% of a >= 10 ms step) and their ratio.

usage: torch_hooks.py LIBMPPROF PYDIR SIMCUDA_DIR [PYTHON]"""
import json
import os
import subprocess
import sys
import tempfile

ROUNDS = 5
INPROC_ROUNDS = 30
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


def child_per_call(simcuda):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    hooks = sys.modules.get("mpprof_torch.hooks")
    if hooks is None or hooks._lib is None or hooks._fast is None:
        print(json.dumps({"hooked": False}))
        return
    mm = torch.nn.modules.module
    on = (dict(mm._global_forward_pre_hooks), dict(mm._global_forward_hooks))

    def hooks_on(v):
        for d, saved in zip((mm._global_forward_pre_hooks, mm._global_forward_hooks), on):
            d.clear()
            if v:
                d.update(saved)

    GemmLinear = gemm_linear(torch, simcuda)
    x = torch.randn(8, 16)
    out = {"hooked": True}
    for name, layer in (("no-ops", torch.nn.Linear), ("gemm", GemmLinear)):
        model = torch.nn.Sequential(*[layer(16, 16) for _ in range(200)])
        calls = sum(1 for _ in model.modules())

        def step():
            model(x).sum().backward()

        best = {False: float("inf"), True: float("inf")}
        for _ in range(INPROC_ROUNDS):
            for v in (False, True):
                hooks_on(v)
                step()
                best[v] = min(best[v], timed(step, 5, 1))
        hooks_on(True)
        out[name] = {"off_s": best[False], "on_s": best[True], "module_calls": calls}
    print(json.dumps(out))


def child_step(kind):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)])
    x = torch.randn(128, 512)

    def step():
        model(x).sum().backward()

    for _ in range(3):
        step()
    if kind == "op-records":
        with torch.autograd.profiler.profile(use_kineto=False):
            t = timed(step, 5)
    else:
        t = timed(step, 5)
    hooked = "mpprof_torch.hooks" in sys.modules and sys.modules["mpprof_torch.hooks"]._fast is not None
    print(json.dumps({"step_s": t, "module_calls": 9, "hooked": hooked}))


def run_child(python, args, env_extra, mpprof, lib, pydir, out):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MPPROF_") or k in ("LD_PRELOAD", "PYTHONPATH"):
            del env[k]
    env.update(env_extra)
    if mpprof:
        env.update(LD_PRELOAD=lib, PYTHONPATH=pydir, MPPROF_OUT=out, MPPROF_SCAN="none",
                   MPPROF_CHECKPOINT_S="0")
    p = subprocess.run([python, os.path.abspath(__file__), "--child"] + args, env=env,
                       stdout=subprocess.PIPE, check=True)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        if sys.argv[2] == "per-call":
            child_per_call(sys.argv[3])
        else:
            child_step(sys.argv[3])
        return 0
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    lib, pydir, simcuda = sys.argv[1], sys.argv[2], sys.argv[3]
    python = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/python3"
    if subprocess.run([python, "-c", "import torch"], stderr=subprocess.DEVNULL).returncode:
        print("SKIP: %s cannot import torch (python3-torch)" % python)
        return 77
    sim_env = {"LD_LIBRARY_PATH": simcuda}
    with tempfile.TemporaryDirectory() as out:
        r = run_child(python, ["per-call", simcuda], sim_env, True, lib, pydir, out)
        if not r["hooked"]:
            print("mpprof configuration did not install the hooks (mpprof_torch._fast built?)")
            return 1
        print("per module call: one interpreter, the integration's hooks off/on, fastest of %d "
              "interleaved rounds" % INPROC_ROUNDS)
        for name in ("no-ops", "gemm"):
            m = r[name]
            extra_us = (m["on_s"] - m["off_s"]) / m["module_calls"] * 1e6
            print("  %-7s %d module calls/step: step %7.3f ms off, %7.3f ms on: per module call %+6.2f us"
                  "  ratio to the %.0f us limit %.2f" % (name, m["module_calls"], m["off_s"] * 1e3,
                                                        m["on_s"] * 1e3, extra_us, LIMIT_US_PER_CALL,
                                                        extra_us / LIMIT_US_PER_CALL))
        kinds = (("bare", False), ("mpprof", True), ("op-records", False))
        best = {}
        for _ in range(ROUNDS):
            for k, with_mpprof in kinds:
                r = run_child(python, ["step", k], {}, with_mpprof, lib, pydir, out)
                if with_mpprof and not r["hooked"]:
                    print("mpprof configuration did not install the hooks")
                    return 1
                if k not in best or r["step_s"] < best[k]["step_s"]:
                    best[k] = r
    bare = best["bare"]["step_s"]
    print("per step: 8 x Linear(512, 512), batch 128, %d module calls; fresh interpreters, "
          "fastest of %d interleaved rounds" % (best["bare"]["module_calls"], ROUNDS))
    for k, _ in kinds:
        t = best[k]["step_s"]
        share = (t - bare) / bare
        line = "  %-10s step %8.3f ms  overhead %+6.2f%% of the step" % (k, t * 1e3, share * 100)
        if k != "bare":
            line += "  ratio to the 1%% limit %.2f" % (share / LIMIT_STEP_SHARE)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
