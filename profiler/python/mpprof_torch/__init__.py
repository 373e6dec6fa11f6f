"""The PyTorch side of mpprof: armed by mpprof's sitecustomize, it waits for
the program to import torch and then installs the module attribution of
mpprof_torch.hooks. Without torch it never does anything else."""
import sys

__all__ = ["arm"]


class _TorchWatcher:
    """A meta path finder that only watches for `torch`: it lets the usual
    finders find it and runs mpprof_torch.hooks.install once torch's own
    __init__ has finished."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_install(module):
            exec_module(module)
            _disarm()
            try:
                from . import hooks

                hooks.install(module)
            except Exception as e:  # never break the program's import
                _log("PyTorch hooks not installed: %r" % (e,))

        loader.exec_module = exec_then_install
        return spec


_watcher = None


def _log(msg):
    import os

    if os.environ.get("MPPROF_LOG", "0") not in ("", "0"):
        print("mpprof[%d]: %s" % (os.getpid(), msg), file=sys.stderr)


def _disarm():
    global _watcher
    if _watcher is not None and _watcher in sys.meta_path:
        sys.meta_path.remove(_watcher)
    _watcher = None


def arm():
    """Install the torch watcher (idempotent). If torch is somehow already
    imported, install the hooks now."""
    global _watcher
    if "torch" in sys.modules:
        from . import hooks

        hooks.install(sys.modules["torch"])
        return
    if _watcher is None:
        _watcher = _TorchWatcher()
        sys.meta_path.insert(0, _watcher)
