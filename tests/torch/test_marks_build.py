"""`python3 -m mpprof_torch.build` (profiler/python/mpprof_torch/build.py):
the C++ backward marks compiled for the torch of this interpreter into the
cache directory, and then used by the integration, when mpprof's own build
has none for it; a failed build says why on one line, exits 1 and leaves no
marks behind.

usage: /usr/bin/python3 test_marks_build.py PYTHON_DIR (build/profiler/python) WORKDIR
Exit 77 when this interpreter cannot import torch."""
import glob
import os
import shutil
import subprocess
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print("SKIP: %s cannot import torch (python3-torch): %s" % (sys.executable, e))
    sys.exit(77)

src, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
pkg = os.path.join(work, "python", "mpprof_torch")
# the integration as installed with mpprof built without the machine's torch: no _marks
shutil.copytree(os.path.join(src, "mpprof_torch"), pkg,
                ignore=shutil.ignore_patterns("_marks*.so", "_marks.torch.json", "*.p"))
env = dict(os.environ, PYTHONPATH=os.path.join(work, "python"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


# a build that cannot compile: one line naming the directory, exit 1, nothing left
bad = dict(env, MPPROF_CACHE_DIR=os.path.join(work, "bad-cache"), CXX="/nonexistent/c++")
p = subprocess.run([sys.executable, "-m", "mpprof_torch.build"], env=bad, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, universal_newlines=True)
lines = [l for l in p.stderr.splitlines() if l.startswith("mpprof_torch.build:")]
check(p.returncode == 1, "a failed build exits 1 (got %d)" % p.returncode)
check(len(lines) == 1 and "bad-cache" in lines[0], "a failed build says where and why on one line: %r" % lines)
check(not glob.glob(os.path.join(work, "bad-cache", "torch-marks", "*", "_marks*")),
      "a failed build leaves no marks behind")

# the build for this torch
good = dict(env, MPPROF_CACHE_DIR=os.path.join(work, "cache"))
p = subprocess.run([sys.executable, "-m", "mpprof_torch.build"], env=good, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, universal_newlines=True)
check(p.returncode == 0, "the build exits 0: %s" % p.stderr[-2000:])
built = glob.glob(os.path.join(work, "cache", "torch-marks", "*", "_marks.torch.json"))
check(len(built) == 1, "one build, named for this torch: %r" % built)

# the integration finds and uses it (the unit tests, expecting C++ marks)
p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_hooks_unit.py"),
                    os.path.join(work, "python")], env=dict(good, MPP_EXPECT_CXX_MARKS="1"),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
check(p.returncode == 0, "the unit tests pass with the built marks:\n" + p.stdout[-3000:])

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
