"""A small training program for the PyTorch end-to-end test (test_torch_e2e.py),
run as `mpprof /usr/bin/python3 torch_model.py` with no mpprof code in it.

Its linear layers are a custom autograd Function that calls simcuda's cuBLAS
(cublasSgemm_v2 / cublasGemmEx) on CPU tensors' data pointers (under simcuda
a device pointer is a host pointer), in forward and backward. The model has
nested containers (Sequential, ModuleList), a module called twice per step
(`shared`), a DataParallel-style `module.` wrapper, a GEMM in a container's
own forward (Block.mix), activation checkpointing on body.1, loss.backward()
on another thread, an optimizer whose step runs GEMMs, and the real
torch.cuda.amp.GradScaler made to run on the CPU (its two CUDA-only ops
replaced by Python stand-ins) with one step whose gradients are infinite,
and an evaluation pass under torch.no_grad() at the end.

Prints the model's final weights' checksum (the same with and without
mpprof) and exits 0."""
import collections
import ctypes
import os
import sys
import threading

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

c_int, c_void_p, c_float = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
ctypes.CDLL(os.path.join(os.environ["MPP_SIMCUDA"], "libcublas.so.13"), mode=ctypes.RTLD_GLOBAL)
_g = ctypes.CDLL(None)  # global lookup: what the program would call (mpprof's hook when preloaded)
_handle = c_void_p()
assert _g.cublasCreate_v2(ctypes.byref(_handle)) == 0
_sgemm = _g.cublasSgemm_v2
_sgemm.argtypes = [c_void_p, c_int, c_int, c_int, c_int, c_int, ctypes.POINTER(c_float), c_void_p,
                   c_int, c_void_p, c_int, ctypes.POINTER(c_float), c_void_p, c_int]
_gemmex = _g.cublasGemmEx
_gemmex.argtypes = [c_void_p, c_int, c_int, c_int, c_int, c_int, c_void_p, c_void_p, c_int, c_int,
                    c_void_p, c_int, c_int, c_void_p, c_void_p, c_int, c_int, c_int, c_int]
_ONE, _ZERO = c_float(1.0), c_float(0.0)
CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT = 0, 68, -1


def mm(a, b, ex=False):
    """a @ b (row-major fp32) through cuBLAS: C^T = B^T A^T in column-major terms."""
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty(m, n)
    if ex:
        rc = _gemmex(_handle, 0, 0, n, m, k, ctypes.byref(_ONE), b.data_ptr(), CUDA_R_32F, n,
                     a.data_ptr(), CUDA_R_32F, k, ctypes.byref(_ZERO), c.data_ptr(), CUDA_R_32F, n,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
    else:
        rc = _sgemm(_handle, 0, 0, n, m, k, ctypes.byref(_ONE), b.data_ptr(), n, a.data_ptr(), k,
                    ctypes.byref(_ZERO), c.data_ptr(), n)
    assert rc == 0, rc
    return c


class MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, ex):
        ctx.save_for_backward(x, w)
        ctx.ex = ex
        return mm(x, w, ex)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        gx = mm(gy, w.t(), ctx.ex) if ctx.needs_input_grad[0] else None
        gw = mm(x.t(), gy, ctx.ex)
        return gx, gw, None


class CLinear(nn.Module):
    def __init__(self, i, o, ex=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(i, o) / i**0.5)
        self.ex = ex

    def forward(self, x):
        return MatMul.apply(x, self.weight, self.ex)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = CLinear(d, 2 * d)
        self.fc2 = CLinear(2 * d, d, ex=True)
        self.mix = nn.Parameter(torch.eye(d))

    def forward(self, x):
        h = self.fc2(torch.relu(self.fc1(x)))
        return x + MatMul.apply(h, self.mix, False)  # a GEMM of the block itself


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = CLinear(16, 32)
        self.shared = CLinear(32, 32)
        self.body = nn.Sequential(Block(32), Block(32))
        self.heads = nn.ModuleList([CLinear(32, 32), CLinear(32, 8)])

    def forward(self, x):
        h = self.shared(self.embed(x))
        h = self.body[0](h)
        h = checkpoint(self.body[1], h)
        h = self.shared(h)
        for head in self.heads:
            h = head(h)
        return h


class Wrapper(nn.Module):  # what DataParallel / DDP look like: the model is `module`
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)


class MatrixSGD(torch.optim.Optimizer):
    """SGD through a (identity) preconditioner GEMM per matrix parameter."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and p.dim() == 2:
                    eye = torch.eye(p.shape[0])
                    p.sub_(group["lr"] * mm(eye, p.grad))


# The real GradScaler on the CPU: 1.13 disables it without CUDA and has no CPU
# kernel for its scale update; this stand-in does what the CUDA kernel does.
def _update_scale(scale, tracker, found_inf, growth, backoff, interval):
    if found_inf.item():
        scale.mul_(backoff)
        tracker.fill_(0)
    else:
        tracker.add_(1)
        if tracker.item() == interval:
            scale.mul_(growth)
            tracker.fill_(0)
    return scale


torch._amp_update_scale_ = _update_scale


class CpuGradScaler(torch.cuda.amp.GradScaler):
    def __init__(self, init_scale, growth_interval):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            super().__init__(init_scale=init_scale, growth_interval=growth_interval)
        from torch.cuda.amp.grad_scaler import _refresh_per_optimizer_state

        self._enabled = True
        self._init_scale, self._growth_factor, self._backoff_factor = init_scale, 2.0, 0.5
        self._growth_interval, self._init_growth_tracker = growth_interval, 0
        self._scale = self._growth_tracker = None
        self._per_optimizer_states = collections.defaultdict(_refresh_per_optimizer_state)

    def scale(self, outputs):  # the CUDA class asserts outputs.is_cuda
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):  # CUDA-only upstream
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if not torch.isfinite(p.grad).all():
                        found_inf.fill_(1.0)
                    p.grad.mul_(inv_scale)
        return {found_inf.device: found_inf}


def main():
    torch.manual_seed(0)
    model = Wrapper(Net())
    with torch.no_grad():  # MPP_TINY: modules whose outputs flush to zero in bf16 (the plan test)
        for name in filter(None, os.environ.get("MPP_TINY", "").split(",")):
            model.module.get_submodule(name).weight.mul_(2.0**-140)
    opt = MatrixSGD(model.parameters(), lr=0.01)
    scaler = CpuGradScaler(init_scale=1024.0, growth_interval=2)
    x = torch.randn(4, 16)
    steps = int(os.environ.get("MPP_STEPS", "4"))
    for step in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = (out * out).mean()
        if step == 2:
            loss = loss * float("inf")  # this step's gradients overflow: skipped
        scaled = scaler.scale(loss)
        t = threading.Thread(target=scaled.backward)  # backward on another thread
        t.start()
        t.join()
        scaler.step(opt)
        scaler.update()
    with torch.no_grad():  # an evaluation pass: phase eval, no step
        model(x)
    user_site = getattr(__import__("builtins"), "MPP_USER_SITECUSTOMIZE", False)
    print("user sitecustomize ran: %s" % user_site)
    print("scale %.1f" % scaler._scale.item())
    print("checksum %.6f" % sum(float(p.double().sum()) for p in model.parameters()))


if __name__ == "__main__":
    main()
