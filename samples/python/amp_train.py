#!/usr/bin/env python3
"""amp_train.py: a small PyTorch mixed-precision training loop for mpprof's GPU
checks. Three Linear layers (fc1, fc2, fc3) in fp16 autocast with a
GradScaler, each forward wrapped in an NVTX range named after the layer, so
mpprof can attribute the GEMMs to layers (with --nvtx off there is no range at
all: mpprof's PyTorch integration names the layers by module on its own). TF32 is off, so only the autocast
GEMMs are eligible for Tensor Cores. Dimensions are multiples of 8 (16 bytes
of fp16), so every GEMM is also efficient; the output layer is 128 wide (not a
handful of classes) so that cuBLAS has no reason to pick a non-Tensor-Core
GEMV-like kernel for it. With bias, nn.Linear's forward is addmm, which
PyTorch sends to cublasLtMatmul (bias epilogue) or, depending on version and
DISABLE_ADDMM_CUDA_LT, cublasGemmEx: the checker accepts either API.

    python3 amp_train.py [--steps N] [--batch B] [--hidden H] [--nvtx on|off]
"""
import argparse
import sys

import torch
import torch.nn as nn


NVTX = True


def range_push(name):
    if NVTX:
        torch.cuda.nvtx.range_push(name)


def range_pop():
    if NVTX:
        torch.cuda.nvtx.range_pop()


class MLP(nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        for name, layer, act in (("fc1", self.fc1, True), ("fc2", self.fc2, True),
                                 ("fc3", self.fc3, False)):
            range_push(name)
            x = layer(x)
            if act:
                x = torch.relu(x)
            range_pop()
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--nvtx", choices=["on", "off"], default="on")
    o = ap.parse_args()
    global NVTX
    NVTX = o.nvtx == "on"
    if not torch.cuda.is_available():
        print("amp_train: no CUDA device", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = MLP(512, o.hidden, 128).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    # torch.amp.GradScaler("cuda") since 2.3; torch.cuda.amp.GradScaler before.
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda")
    else:
        scaler = torch.cuda.amp.GradScaler()
    x = torch.randn(o.batch, 512, device=dev)
    y = torch.randn(o.batch, 128, device=dev)
    for step in range(o.steps):
        range_push("step")
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            out = model(x)
            loss = nn.functional.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        range_pop()
    torch.cuda.synchronize()
    print(f"amp_train: {o.steps} steps, loss {loss.item():.4f}, scale {scaler.get_scale():g}, "
          f"device {torch.cuda.get_device_name()}, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
