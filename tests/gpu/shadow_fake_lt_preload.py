#!/usr/bin/env python3
"""--shadow on device memory in a program that uses cuBLASLt alone (no
libcublas.so.13 in the process), as a user runs it: tests/gpu/shadow_fake_lt_prog
on the fake libcuda.so.1 and libcublasLt.so.13 of tests/gpu/fakecuda, with
libmpprof.so preloaded. Its output and exit code are those of the bare run
(exit 4: libcublas.so.13 was loaded); the raw file has one site, the
program's cublasLtMatmul with its 3 calls (mpprof's own matmuls are not the
program's ops), all 3 shadowed on the device (not skipped for want of a
cuBLAS handle) with every candidate measured, and each candidate's figures
are exactly those of the same GEMM shadowed through cuBLAS
(shadow_fake_prog); mpprof's matmuls ran at COMPUTE_32F_PEDANTIC, none on the
program's stream, and left none of their descriptors and layouts behind (the
program's stderr line from the fake cuBLASLt).

usage: shadow_fake_lt_preload.py LT_PROG CUBLAS_PROG LIBMPPROF FAKECUDA_DIR WORKDIR"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shadow_fake_preload import profile, report, shadow_problems  # noqa: E402
from shadow_raw_check import shadows  # noqa: E402


def facts(run):
    """The fake cuBLASLt's counts from the program's stderr."""
    m = re.search(rb"fake cuBLASLt: matmuls (-?\d+) pedantic (-?\d+) on_program_stream (-?\d+) "
                  rb"live (-?\d+)", run.stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def main():
    lt_prog, blas_prog, lib, fake, work = sys.argv[1:6]
    bare, run, sites, problems = profile(lt_prog, lib, fake, os.path.join(work, "lt"))
    if bare.returncode == 4:
        problems.append("libcublas.so.13 is loaded in the bare run: not a cuBLASLt-only program")
    if len(sites) != 1 or sites[0].get("api") != "cublasLtMatmul" or sites[0].get("calls") != 3:
        problems.append("want one site, cublasLtMatmul with 3 calls; got "
                        + str([(s.get("api"), s.get("calls")) for s in sites]))
    lt = [sh for site in sites for sh in shadows(site)]
    if len(lt) != 1:
        problems.append(f"{len(lt)} sites with a shadow object, want 1")
    else:
        problems += shadow_problems(lt[0])
    f_bare, f_run = facts(bare), facts(run)
    if f_bare != (3, 0, 3, 0):
        problems.append(f"bare run: fake cuBLASLt counts {f_bare}, want 3 matmuls on the program's stream")
    if f_run is None:
        problems.append("no fake cuBLASLt counts on stderr")
    else:
        matmuls, pedantic, on_prog, live = f_run
        if pedantic <= 0 or matmuls != 3 + pedantic:
            problems.append(f"{matmuls} matmuls, {pedantic} pedantic: want the program's 3, "
                            "and mpprof's all at COMPUTE_32F_PEDANTIC")
        if on_prog != 3:
            problems.append(f"{on_prog} matmuls on the program's stream, want its own 3")
        if live != 0:
            problems.append(f"{live} cuBLASLt descriptors or layouts left behind")
    _, blas_run, blas_sites, blas_problems = profile(blas_prog, lib, fake, os.path.join(work, "blas"))
    problems += ["cuBLAS run: " + p for p in blas_problems]
    blas = [sh for site in blas_sites for sh in shadows(site)]
    if len(lt) == 1 and len(blas) == 1 and lt[0].get("candidates") != blas[0].get("candidates"):
        for name in sorted(set(lt[0].get("candidates", {})) | set(blas[0].get("candidates", {}))):
            a, b = lt[0]["candidates"].get(name), blas[0]["candidates"].get(name)
            if a != b:
                problems.append(f"{name}: {a} through cuBLASLt, {b} through cuBLAS")
    return report(problems, run, "cuBLASLt-only program: 3 calls shadowed through a private "
                  "cuBLASLt handle, as through cuBLAS; output identical")


if __name__ == "__main__":
    sys.exit(main())
