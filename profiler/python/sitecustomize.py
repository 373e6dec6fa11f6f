"""mpprof's sitecustomize: `mpprof run` puts this directory first on the
program's PYTHONPATH (profiler/python/ of the mpprof sources).

It arms the PyTorch integration (mpprof_torch), which does nothing until the
program imports torch and nothing at all in a program that never does, then
hands over to the sitecustomize that this one shadows, so the program's own
start-up code still runs. MPPROF_PYTHON=0 (or `mpprof run --python off`)
leaves only the hand-over.
"""
import os as _os
import sys as _sys


def _mpprof_start():
    here = _os.path.dirname(_os.path.abspath(__file__))
    env = _os.environ
    if env.get("MPPROF_PYTHON", "1") not in ("0", "off") and env.get("MPPROF_DISABLE") != "1":
        try:
            import mpprof_torch

            mpprof_torch.arm()
        except Exception as e:  # the program runs as it would without mpprof
            if env.get("MPPROF_LOG", "0") not in ("", "0"):
                print("mpprof[%d]: PyTorch integration not armed: %r" % (_os.getpid(), e),
                      file=_sys.stderr)
    # Hand over: the program sees sys.path as without mpprof (children still
    # inherit PYTHONPATH), and the next sitecustomize on it runs.
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    del _sys.modules["sitecustomize"]
    import sitecustomize  # noqa: F401  (ImportError with name 'sitecustomize': there is none)


_mpprof_start()
