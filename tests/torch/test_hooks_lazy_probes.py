"""mpprof_torch.hooks runs no autograd while torch is imported: any
backward or grad starts torch's autograd device threads (the device count,
which initialises CUDA in the parent; the fork check that then fails a
forked worker's first backward, Hogwild or mp.Process). The start-up check
of the C++ marks waits for the program's first backward. libmpprof.so is
test_hooks_unit's recording stub; one fresh process, as at import.

usage: /usr/bin/python3 test_hooks_lazy_probes.py PYTHON_DIR
Exit 77 when this interpreter cannot import torch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_hooks_unit as u  # noqa: E402 (exits 77 without torch)

torch = u.torch


class EngineRuns:
    """torch's autograd engine with its runs counted: every backward and grad
    started from Python (torch.autograd's and the Tensor's) goes through it."""

    def __init__(self, engine):
        self.engine = engine
        self.runs = 0

    def run_backward(self, *args, **kwargs):
        self.runs += 1
        return self.engine.run_backward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.engine, name)


engine = EngineRuns(torch.autograd.variable.Variable._execution_engine)
torch.autograd.variable.Variable._execution_engine = engine
u.install()  # what mpprof_torch does once torch's import has finished
runs_at_import = engine.runs


class LazyProbeTests(unittest.TestCase):
    def test_binding_to_torch_runs_no_autograd(self):
        self.assertEqual(runs_at_import, 0)

    def test_the_first_backward_is_named_with_the_marks_checked(self):
        model = u.Net()
        out = model(torch.ones(2, requires_grad=True))
        self.assertEqual(u.marks(out), 1)
        u.seen.clear()
        out.sum().backward()
        self.assertIsNone(u.hooks._unconfirmed)  # the C++ marks' check ran (where they are loaded)
        self.assertEqual([s for t, s in u.seen if t.endswith("'")][:3],
                         [("head", "backward"), ("layers.1.proj", "backward"), ("layers.1", "backward")])
        self.assertTrue(u.hooks._direct)
        expect = os.environ.get("MPP_EXPECT_CXX_MARKS")
        if expect is not None:  # the check ran, and kept them where they were built for this torch
            self.assertEqual(u.hooks._cxx, expect == "1")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
