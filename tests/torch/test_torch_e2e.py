"""PyTorch end-to-end: `mpprof /usr/bin/python3 torch_model.py` with no code
change names every op by its module, forward and backward, and the program's
output is the same as without mpprof; GradScaler's scale per step and its
skipped step reach the report; a program ended by Ctrl-C (an uncaught
KeyboardInterrupt, which CPython turns into SIGINT) keeps its status and its
ops, and so do a forked multiprocessing child and a program that end by
os._exit(). Also: a shell script that starts python and a
launcher starting 2 ranked workers are attributed the same, and so are 2
workers of torch.multiprocessing.spawn that pass their rank to
init_process_group only (each with its rank); the program's own
sitecustomize
still runs, --python off / MPPROF_PYTHON=0 leave attribution to NVTX, a
Python program without torch and a non-Python program are unaffected.

Environment (from meson): MPP_MPPROF, MPP_SIMCUDA, MPP_MLP_TRAIN, MPP_WORKDIR,
MPP_TORCH_PYTHON (the interpreter Debian's python3-torch is built for).
Exit 77 (skipped) only when that interpreter cannot import torch."""
import collections
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MPPROF = os.environ["MPP_MPPROF"]
SIM = os.environ["MPP_SIMCUDA"]
WORK = os.environ["MPP_WORKDIR"]
PY = os.environ.get("MPP_TORCH_PYTHON", "/usr/bin/python3")
MODEL = os.path.join(HERE, "torch_model.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def env(**extra):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("MPPROF_") or k in ("PYTHONPATH", "LD_PRELOAD"):
            del e[k]
    if "MPPROF_TORCH_MARKS" in os.environ:  # which backward marks this test is of (meson)
        e["MPPROF_TORCH_MARKS"] = os.environ["MPPROF_TORCH_MARKS"]
    e["LD_LIBRARY_PATH"] = SIM
    e["MPP_SIMCUDA"] = SIM
    e.update(extra)
    return e


def run(argv, **extra):
    e = env(**extra)
    if "ASAN_OPTIONS" in e and any(a == PY or a.endswith(".sh") for a in argv):
        # The sanitized suite preloads an ASan libmpprof.so into the interpreter
        # (and into the shell of run.sh):
        # LeakSanitizer would report CPython's and torch's own allocations at exit
        # (none of libmpprof's), so leak checking is off for the Python runs.
        e["ASAN_OPTIONS"] += ":detect_leaks=0"
    p = subprocess.run(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def profile(name, argv, *opts, **extra):
    out = os.path.join(WORK, name)
    rc, so, se = run([MPPROF, "-o", out, "--force", *opts, "--", *argv], **extra)
    rep = None
    try:
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    except OSError:
        print(se)
    return rc, so, se, rep


def calls_by(rep):
    c = collections.Counter()
    for s in rep["sites"]:
        c[(s["layer_name"], s["phase"])] += s["calls"]
    return c


# Layers of torch_model.Net (under its `module.` wrapper), their class, the
# width pairs (in, out) of their GEMMs, forward GEMMs per step and whether
# they are recomputed (body.1 is checkpointed).
LAYERS = {
    "embed": ("CLinear", (16, 32), 1),
    "shared": ("CLinear", (32, 32), 2),  # called twice per step: one layer
    "body.0": ("Block", (32, 32), 1),  # the Block's own GEMM (mix)
    "body.0.fc1": ("CLinear", (32, 64), 1),
    "body.0.fc2": ("CLinear", (64, 32), 1),
    "body.1": ("Block", (32, 32), 1),
    "body.1.fc1": ("CLinear", (32, 64), 1),
    "body.1.fc2": ("CLinear", (64, 32), 1),
    "heads.0": ("CLinear", (32, 32), 1),
    "heads.1": ("CLinear", (32, 8), 1),
}
STEPS, SKIPPED, BATCH = 4, 1, 4


def check_model_report(rep):
    # The report says which torch ran and how its backward ops were named
    # (MPP_EXPECT_CXX_MARKS: C++ marks built for this torch and not turned off).
    want = "cxx" if os.environ.get("MPP_EXPECT_CXX_MARKS") == "1" else "python"
    version = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"],
                             stdout=subprocess.PIPE).stdout.decode().strip()
    fws = [p["framework"] for p in rep["processes"]]
    check(fws == [{"name": "torch", "version": version, "backward_marks": want}],
          "framework: %s, want torch %s with %s marks" % (fws, version, want))
    kinds = [f["kind"] for f in rep["findings"]]
    check(("python_backward_marks" in kinds) == (want == "python"),
          "python_backward_marks finding with %s marks: %s" % (want, kinds))
    calls = calls_by(rep)
    names = {l["name"]: l for l in rep["layers"]}
    check("" not in names, "no op in (no NVTX range): %s" % sorted(names))
    check(set(names) == set(LAYERS) | {"optimizer"}, "layers are the module names: %s" % sorted(names))
    for name, (cls, (i, o), fwd) in LAYERS.items():
        l = names.get(name)
        if not l:
            continue
        check(l["module_class"] == cls, "%s: class %s" % (name, l["module_class"]))
        rec = name.startswith("body.1")
        check(calls[(name, "forward")] == STEPS * fwd, "%s: forward calls %d" % (name, calls[(name, "forward")]))
        check(calls[(name, "recompute")] == (STEPS * fwd if rec else 0),
              "%s: recompute calls %d" % (name, calls[(name, "recompute")]))
        check(calls[(name, "eval")] == fwd, "%s: eval calls %d (one pass under no_grad)" % (name, calls[(name, "eval")]))
        # dx and dw per forward GEMM; embed's input needs no gradient: dw only
        bwd = STEPS * fwd * (1 if name == "embed" else 2)
        check(calls[(name, "backward")] == bwd, "%s: backward calls %d, want %d" % (name, calls[(name, "backward")], bwd))
        for s in rep["sites"]:
            if s["layer_name"] == name:
                dims = {s["m"], s["n"], s["k"]}
                check(dims <= {BATCH, i, o} and {i, o} <= dims | {BATCH} and s["phase"] != "unknown",
                      "%s: %s site of shape %s does not belong to it" % (name, s["phase"], sorted(dims)))
    # GradScaler (init 1024, growth every 2 clean steps; step 2's gradients are
    # infinite): its scales reach the report as the loss-scale protocol, with
    # the skipped step, so the report works in unscaled terms. Step n is the
    # n-th iteration, marked by its forward: step 0 under 1024 (declared at
    # its scale(loss)), step 2 under the grown 2048, step 3 under the
    # backed-off 1024, and the evaluation after the loop in step 3 (it was:
    # step 0 never marked, and a step 4 that held only the evaluation).
    # Forward, recomputed and eval ops compute no scaled values: a layer's
    # forward GEMM is one site under both scales (was one per scale), while
    # its backward sites are split by the scale, as the report unscales them.
    nsites = collections.Counter((s["layer_name"], s["phase"]) for s in rep["sites"])
    for (name, phase), n in sorted(nsites.items()):
        if phase in ("forward", "recompute", "eval"):
            check(n == 1, "%s: %d %s sites (one GEMM, split by the loss scale?)" % (name, n, phase))
    check(nsites[("embed", "backward")] == 2,
          "embed: %d backward sites, want 2 (dw under 1024 and under 2048)" % nsites[("embed", "backward")])
    ap = rep["loss_scale"]["applied"]
    runs = [(r["first"], r["last"], r["scale"]) for r in ap["per_step"]]
    check(ap["source"] == "marks" and runs == [(0, 1, 1024), (2, 2, 2048), (3, 3, 1024)],
          "GradScaler's scale per step: %s %s" % (ap["source"], runs))
    check(ap["steps_marked"] == STEPS and ap["skipped_steps"] == SKIPPED,
          "steps %s, skipped %s" % (ap["steps_marked"], ap["skipped_steps"]))
    opt = names.get("optimizer")
    check(opt is not None and opt["module_class"] == "MatrixSGD" and opt["phases"] == ["optimizer"],
          "optimizer layer: %r" % ((opt and (opt["module_class"], opt["phases"])),))
    # 10 matrix parameters, one GEMM each, on every step that was not skipped
    check(calls[("optimizer", "optimizer")] == 10 * (STEPS - SKIPPED),
          "optimizer calls %d" % calls[("optimizer", "optimizer")])


# The plan's PyTorch snippet, run on the model the program trains: body.1.fc1's
# weights scaled by 2^-140 make its values, and so its block's (body.1, the
# block's own GEMM) and body.1.fc2's, flush to zero in bf16, so the plan keeps
# those three in fp32. The keep_in() lines must wrap exactly those modules of
# the DDP-style wrapped model, with no warning (body.0.fc1 shares the last
# name component with body.1.fc1; "fc1" is no submodule of the model), and
# the wrapped model must still run.
PLAN_CHECK = r"""
import json, sys, warnings
sys.path.insert(0, %r)
import torch, torch_model
plan = json.load(open(%r))
model = torch_model.Wrapper(torch_model.Net())
x = torch.randn(4, 16)
before = model(x)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    exec(plan["pytorch"].split("\nfor inputs")[0], {"model": model})
wrapped = sorted(n for n, m in model.named_modules() if "forward" in m.__dict__)
print(json.dumps({"wrapped": wrapped, "warnings": [str(x.message) for x in w
                  if "mpprof" in str(x.message)], "same": bool(torch.equal(before, model(x)))}))
"""


def check_steps_window():
    # --steps 0 records the first training iteration (its forward, backward
    # and optimizer step), as it does for a C program that marks step 0
    # itself; --steps 1:2 the second and third. The evaluation after the
    # loop is in the last step (3). It was: nothing recorded by --steps 0,
    # yet "17 before it opened, 40 after it closed"; 0:1 only the second.
    for window, iters in (("0", 1), ("1:2", 2)):
        rc, out, err, rep = profile("steps" + window.replace(":", "-"), [PY, MODEL], "--steps", window)
        if not rep:
            check(False, "report.json of --steps %s (rc %d): %s" % (window, rc, err[-500:]))
            continue
        calls = calls_by(rep)
        cap = rep["summary"]["capture"]
        check(cap["never_opened"] == 0, "--steps %s opened: %s" % (window, cap))
        for name, (_, _, fwd) in LAYERS.items():
            check(calls[(name, "forward")] == iters * fwd and calls[(name, "eval")] == 0,
                  "--steps %s: %s forward calls %d, eval %d" % (window, name, calls[(name, "forward")],
                                                                calls[(name, "eval")]))
        # 10 matrix parameters, one GEMM each, in step 0, and in step 1 (step 2's update is skipped)
        check(calls[("optimizer", "optimizer")] == 10,
              "--steps %s: optimizer calls %d" % (window, calls[("optimizer", "optimizer")]))


def check_plan_snippet():
    rc, out, err, rep = profile("plan", [PY, MODEL], MPP_STEPS="1", MPP_TINY="body.1.fc1")
    plan = os.path.join(WORK, "plan", "plan.json")
    kept = []
    try:
        with open(plan) as f:
            layers = json.load(f)["recommended"]["layers"]
        kept = sorted(n for n, l in layers.items() if not l["autocast"])
    except (OSError, KeyError, TypeError, ValueError) as e:
        check(False, "plan.json of the plan run (rc %d): %s %s" % (rc, e, err[-500:]))
    check(kept == ["body.1", "body.1.fc1", "body.1.fc2"], "plan keeps body.1's modules: %s" % kept)
    rc, out, err = run([PY, "-c", PLAN_CHECK % (HERE, plan)])
    try:
        got = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = None
    check(rc == 0 and got == {"wrapped": ["module.body.1", "module.body.1.fc1", "module.body.1.fc2"],
                              "warnings": [], "same": True},
          "the plan's keep_in lines wrap the kept modules: rc %d, %s %s" % (rc, got, err[-800:]))


# A loss scaled by hand, with no GradScaler and nothing declared: the
# program's loss is small (its true gradients need a scale of about 2^13 or
# more in fp16) and it backpropagates loss * 2^20, then divides the gradients
# itself. mpprof sees the gradients as computed, 2^20 times the true ones, so
# its loss-scale window is in those terms ("not needed"): the report must say
# that its figures are relative to the gradients as computed, in report.json
# and in the terminal summary (it said nothing: "not needed" read as advice
# on the unscaled gradients, and dropping the manual scale would break fp16).
# Declared with --loss-scale 2^20, the window is absolute (a scale needed),
# named with its source, and no such note is given.
MANUAL_SCALE = r"""
import sys
sys.path.insert(0, %r)
import torch, torch_model
torch.manual_seed(0)
model = torch_model.Net()
opt = torch_model.MatrixSGD(model.parameters(), lr=0.01)
x = torch.randn(4, 16)
for step in range(2):
    opt.zero_grad()
    loss = (model(x) ** 2).mean() * 2.0**-22
    (loss * 2.0**20).backward()
    for p in model.parameters():
        p.grad.div_(2.0**20)
    opt.step()
print("done")
"""


def check_manual_loss_scale():
    prog = os.path.join(WORK, "manual_scale.py")
    with open(prog, "w") as f:
        f.write(MANUAL_SCALE % HERE)
    for opts in ((), ("--loss-scale", "2^20")):
        name = "manual-scale" + ("-declared" if opts else "")
        rc, out, err, rep = profile(name, [PY, prog], *opts)
        if not rep:
            check(False, "report.json of %s (rc %d): %s" % (name, rc, err[-500:]))
            continue
        ls, text = rep["loss_scale"], out + err
        note = rep["summary"]["loss_scale_note"]
        lo, hi = ls["window_log2"] or (None, None)
        if opts:
            check(note is None and ls["applied"]["note"] is None and ls["applied"]["source"] == "option",
                  "%s: note %r, applied %r" % (name, note, ls["applied"]))
            check(ls["needed"] and lo is not None and lo > 0,
                  "%s: window %s..%s is of the unscaled gradients (a scale needed)" % (name, lo, hi))
            check("applied loss scale: 2^20 (from --loss-scale; " in text,
                  "%s: the terminal names the declared scale and its source:\n%s" % (name, text))
            continue
        check(not ls["needed"] and lo is not None and lo <= 0 <= hi,
              "%s: window %s..%s of the gradients as computed (scale 1 fits)" % (name, lo, hi))
        check(isinstance(note, str) and "--loss-scale S" in note and ls["applied"]["note"] == note,
              "%s: summary.loss_scale_note %r, loss_scale.applied.note %r" % (name, note, ls["applied"]["note"]))
        check(isinstance(note, str) and "; not needed)\n  " + note + "\n" in text,
              "%s: the terminal's loss-scale line is followed by the note:\n%s" % (name, text))
        try:
            with open(os.path.join(WORK, name, "plan.json")) as f:
                plan = json.load(f)
            fp16 = [p for p in (plan["recommended"], plan["alternative"]) if p and p["autocast"] == "fp16"]
        except (OSError, KeyError, TypeError, ValueError) as e:
            fp16 = []
            check(False, "%s: plan.json: %s" % (name, e))
        check(fp16 and all(p.get("loss_scale_note") == note and note in p["summary"] for p in fp16),
              "%s: the fp16 plan says it too: %s" % (name, fp16 and [(p.get("loss_scale_note"), p["summary"]) for p in fp16]))


def main():
    os.makedirs(WORK, exist_ok=True)
    probe = subprocess.run([PY, "-c", "import torch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        print("SKIP: %s cannot import torch (Debian package python3-torch, installed by "
              "scripts/setup.sh): %s" % (PY, probe.stderr.decode().strip().splitlines()[-1:]))
        return 77

    # The program's own sitecustomize (first on its PYTHONPATH) must still run.
    site = os.path.join(WORK, "usersite")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write("import builtins\nbuiltins.MPP_USER_SITECUSTOMIZE = True\n")

    rc0, plain, _ = run([PY, MODEL], PYTHONPATH=site)
    check(rc0 == 0, "model runs without mpprof (rc %d)" % rc0)
    check("user sitecustomize ran: True" in plain, "user sitecustomize without mpprof")

    rc, out, err, rep = profile("model", [PY, MODEL], PYTHONPATH=site)
    check(rc == 0 and out == plain, "same output and status with mpprof: %r vs %r" % (out, plain))
    if rep:
        check_model_report(rep)
    else:
        check(False, "report.json of the model run")

    check_plan_snippet()
    check_manual_loss_scale()
    check_steps_window()

    # Ctrl-C: an uncaught KeyboardInterrupt ends CPython by SIGINT after its
    # own finalisation, so C exit handlers never run. The status is the same
    # as without mpprof (130 for the shell), and the ops run so far are still
    # in the report (--checkpoint 0: no periodic checkpoint to fall back on).
    kbint = os.path.join(WORK, "kbint.py")
    with open(kbint, "w") as f:
        f.write("import runpy, sys\nsys.argv = [%r]\nrunpy.run_path(%r, run_name='__main__')\n"
                "raise KeyboardInterrupt\n" % (MODEL, MODEL))
    rc0, plain, _ = run([PY, kbint], MPP_STEPS="1")
    rc, out, err, rep = profile("kbint", [PY, kbint], "--checkpoint", "0", MPP_STEPS="1")
    check(rc0 == -2 and rc == 130 and out == plain,
          "KeyboardInterrupt: status %d under mpprof (%d without), same output: %s" % (rc, rc0, out == plain))
    names = sorted(l["name"] for l in rep["layers"]) if rep else []
    check(names == sorted(set(LAYERS) | {"optimizer"}),
          "KeyboardInterrupt: the ops before it are reported by module: %s %s" % (names, err[-300:]))

    # os._exit(): no exit handler runs, C or Python. A multiprocessing child
    # started by fork (mp.Process, Hogwild) always ends so; here one trains
    # the model (the parent never touches torch), and a program calls
    # os._exit(5) itself. Each keeps its ops (final: the process ended) and the status.
    forked = os.path.join(WORK, "forked.py")
    with open(forked, "w") as f:
        f.write("import multiprocessing as mp, os, runpy, sys\n"
                "def child():\n    sys.argv = [%r]\n    runpy.run_path(%r, run_name='__main__')\n"
                "if __name__ == '__main__':\n"
                "    p = mp.get_context('fork').Process(target=child)\n    p.start()\n    p.join()\n"
                "    if os.environ.get('MPP_OS_EXIT'):\n        child()\n        sys.stdout.flush()\n"
                "        os._exit(5)\n"
                "    sys.exit(p.exitcode)\n" % (MODEL, MODEL))
    for name, want_rc, want_procs, extra in (("fork", 0, 1, {}), ("os-exit", 5, 2, {"MPP_OS_EXIT": "1"})):
        rc0, plain, _ = run([PY, forked], MPP_STEPS="1", **extra)
        rc, out, err, rep = profile(name, [PY, forked], "--checkpoint", "0", MPP_STEPS="1", **extra)
        names = sorted(l["name"] for l in rep["layers"]) if rep else []
        procs = len(rep["processes"]) if rep else 0
        # the process ended: its raw file is final, not "checkpoint only"
        final = rep is not None and all(p["final"] for p in rep["processes"])
        check(rc == rc0 == want_rc and out == plain and procs == want_procs and final
              and names == sorted(set(LAYERS) | {"optimizer"}),
              "%s: status %d (%d without mpprof), same output %s, %d processes, final %s, layers %s %s"
              % (name, rc, rc0, out == plain, procs, final, names, err[-300:]))

    # A shell script that starts python, and torchrun with 2 workers: the
    # integration reaches every interpreter through the environment.
    script = os.path.join(WORK, "run.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexec \"%s\" \"%s\" \"$@\"\n" % (PY, MODEL))
    os.chmod(script, 0o755)
    rc, out, err, rep = profile("script", [script], MPP_STEPS="1")
    names = sorted(l["name"] for l in rep["layers"]) if rep else []
    check(rc == 0 and names == sorted(set(LAYERS) | {"optimizer"}),
          "./run.sh: layers are the module names: %s" % names)
    # A launcher in the manner of torchrun (Debian's 1.13 torchrun itself fails
    # on Python 3.11 before starting workers): a Python parent that imports
    # torch and starts 2 workers with RANK set.
    launcher = os.path.join(WORK, "launch.py")
    with open(launcher, "w") as f:
        f.write("import os, subprocess, sys, torch\n"
                "ps = [subprocess.Popen([sys.executable, %r], env=dict(os.environ, RANK=str(r)))\n"
                "      for r in range(2)]\n"
                "sys.exit(max(p.wait() for p in ps))\n" % MODEL)
    rc, out, err, rep = profile("launcher", [PY, launcher], MPP_STEPS="1")
    if rep:
        ranks = sorted(p["rank"] for p in rep["processes"])
        names = sorted(l["name"] for l in rep["layers"])
        check(rc == 0 and ranks == [0, 1] and names == sorted(set(LAYERS) | {"optimizer"}),
              "launcher with 2 ranks: ranks %s, layers %s" % (ranks, names))
    else:
        check(False, "launcher report (rc %d): %s" % (rc, err[-2000:]))

    # torch.multiprocessing.spawn with init_process_group("gloo", rank=r): no
    # RANK in any environment; the rank comes from init_process_group. Rank 0
    # learns it before its first CUDA call, rank 1 after its ops ran and a
    # checkpoint (mpprof_checkpoint) was written without it: each is one
    # process with its rank. The spawn parent never touches CUDA.
    spawn = os.path.join(WORK, "spawn.py")
    with open(spawn, "w") as f:
        f.write("import ctypes, os, runpy, sys, tempfile\n"
                "import torch.distributed as dist, torch.multiprocessing as mp\n"
                "def run_model():\n    sys.argv = [%r]\n    runpy.run_path(%r, run_name='__main__')\n"
                "def worker(r, init):\n"
                "    if r == 1:\n        run_model()\n"
                "        getattr(ctypes.CDLL(None), 'mpprof_checkpoint', lambda: None)()\n"
                "    dist.init_process_group('gloo', init_method='file://' + init, rank=r, world_size=2)\n"
                "    if r == 0:\n        run_model()\n"
                "    dist.barrier()\n    dist.destroy_process_group()\n"
                "if __name__ == '__main__':\n"
                "    assert 'RANK' not in os.environ\n"
                "    mp.spawn(worker, args=(os.path.join(tempfile.mkdtemp(), 'init'),), nprocs=2)\n"
                % (MODEL, MODEL))
    rc, out, err, rep = profile("spawn", [PY, spawn], MPP_STEPS="1")
    if rep:
        ranks = sorted((p["rank"] is None, p["rank"]) for p in rep["processes"])
        names = sorted(l["name"] for l in rep["layers"])
        check(rc == 0 and ranks == [(False, 0), (False, 1)]
              and names == sorted(set(LAYERS) | {"optimizer"}),
              "mp.spawn + init_process_group(rank=r): ranks %s, layers %s %s" % (ranks, names, err[-1000:]))
    else:
        check(False, "mp.spawn report (rc %d): %s" % (rc, err[-2000:]))

    # --python off / MPPROF_PYTHON=0: no module names (the model pushes no NVTX ranges)
    for name, opts, extra in (("off", ["--python", "off"], {}), ("env0", [], {"MPPROF_PYTHON": "0"})):
        rc, out, err, rep = profile("model-" + name, [PY, MODEL], *opts, MPP_STEPS="1", **extra)
        layers = sorted(l["name"] for l in rep["layers"]) if rep else None
        check(rc == 0 and layers == [""], "%s: all ops unattributed, got %s" % (name, layers))
    # --python on stands for the variable, as the other options do: it wins
    # over MPPROF_PYTHON=0 in mpprof's environment (which the child kept)
    rc, out, err, rep = profile("model-on-env0", [PY, MODEL], "--python", "on", MPP_STEPS="1",
                                MPPROF_PYTHON="0")
    names = sorted(l["name"] for l in rep["layers"]) if rep else None
    check(rc == 0 and names == sorted(set(LAYERS) | {"optimizer"}),
          "--python on over MPPROF_PYTHON=0: layers are the module names: %s" % names)

    # A Python program that never imports torch: nothing of torch is loaded, same output.
    notorch = os.path.join(WORK, "notorch.py")
    with open(notorch, "w") as f:
        f.write("import sys\nprint('torch' in sys.modules, 'mpprof_torch.hooks' in sys.modules)\n"
                "print(sys.path[1:])\nsys.exit(3)\n")
    rc0, plain, _ = run([PY, notorch])
    rc, out, err, rep = profile("notorch", [PY, notorch])
    check(rc == rc0 == 3 and out == plain and out.startswith("False False"),
          "program without torch unaffected: %r (%d) vs %r (%d)" % (out, rc, plain, rc0))

    # A non-Python program: the same report with and without the Python integration.
    mlp = os.environ.get("MPP_MLP_TRAIN")
    if mlp:
        reps = []
        for opts in ([], ["--python", "off"]):
            rc, out, err, rep = profile("mlp" + str(len(opts)), [mlp, "--steps", "2"], *opts)
            check(rc == 0 and rep is not None, "mlp_train runs under mpprof %s" % opts)
            reps.append(sorted(calls_by(rep).items()) if rep else None)
        check(reps[0] == reps[1], "non-Python program: same layers and calls with --python on/off")

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
