"""Build mpprof's C++ backward marks for the torch of this interpreter:

    python3 -m mpprof_torch.build        (PYTHONPATH=<libdir>/mpprof/python,
                                          or `mpprof python3 -m mpprof_torch.build`)

mpprof builds its C++ marks (_marks.cpp) only against the machine's own
torch (Debian's libtorch-dev); a C++ extension holds to one torch's ABI, so
on any other torch (pip, conda, a virtualenv) backward marks are Python
tensor hooks, about 1.5-2 us a marked module call against 0.25 us (README,
PyTorch). This compiles _marks.cpp once for this torch, with its own
headers and flags (torch.utils.cpp_extension: a C++ compiler and ninja),
into the directory hooks.py looks in (hooks._marks_cache_dir:
$MPPROF_CACHE_DIR, else $XDG_CACHE_HOME/mpprof, else ~/.cache/mpprof), next
to a _marks.torch.json naming this torch; nothing else is written. Exit 0
when built, 1 with the reason on one line otherwise."""
import json
import os
import shutil
import sys
import tempfile


def main():
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        print("mpprof_torch.build: %s cannot import torch: %s" % (sys.executable, e), file=sys.stderr)
        return 1
    from . import hooks

    here = os.path.dirname(os.path.abspath(__file__))
    ident = hooks._marks_torch(torch)
    out = hooks._marks_cache_dir(ident)
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="mpprof-marks-") as tmp:
            # Debian's torch keeps its headers in /usr/include, the API ones below
            cpp_extension.load(name="_marks", sources=[os.path.join(here, "_marks.cpp")],
                               extra_include_paths=[here, "/usr/include/torch/csrc/api/include"],
                               extra_cflags=["-O2"], build_directory=tmp, verbose=False)
            part = os.path.join(out, "_marks.so.part")
            shutil.copyfile(os.path.join(tmp, "_marks.so"), part)
            os.replace(part, os.path.join(out, "_marks.so"))
        part = os.path.join(out, "_marks.torch.json.part")
        with open(part, "w") as f:
            json.dump(ident, f)
        os.replace(part, os.path.join(out, "_marks.torch.json"))
    except Exception as e:
        msg = " ".join(str(e).split())[:300]
        print("mpprof_torch.build: %s: %s" % (out, msg or type(e).__name__), file=sys.stderr)
        return 1
    print("mpprof_torch.build: C++ backward marks for torch %s in %s" % (ident["version"], out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
