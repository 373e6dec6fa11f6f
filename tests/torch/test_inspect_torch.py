"""`mpprof inspect` on files PyTorch and NumPy write: torch.save checkpoints
(a state_dict, a whole model, a training checkpoint with optimizer state, a
bare tensor, views with strides and offsets into shared storages, fp16, bf16,
fp64, integer buffers) and np.savez archives.

The oracle is mpprof's own .npy path, tested on its own against direct scans
(tests/inspect): every tensor of a checkpoint must give the very stats and
advice that the same values saved as .npy give (bf16 as its int16 bits with
--dtype bf16), and the names must be the state_dict's. Hostile archives (cut
short, a storage missing or too small, a tensor beyond its storage, a
compressed member) are one stderr line naming the file, exit status 1.

Environment (from meson): MPP_MPPROF, MPP_WORKDIR. Exit 77 (skipped) only
when /usr/bin/python3 cannot import torch."""
import collections
import io
import json
import os
import re
import subprocess
import sys
import time
import warnings
import zipfile

MPPROF = os.environ["MPP_MPPROF"]
WORK = os.environ["MPP_WORKDIR"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def inspect(*args):
    p = subprocess.run([MPPROF, "inspect", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def stats_only(obj):
    return {k: v for k, v in obj.items() if k not in ("file", "tensor")}


def npy_oracle(torch, np, name, t):
    """The JSON object of t's values saved as .npy and inspected."""
    path = os.path.join(WORK, "oracle-%s.npy" % name.replace(".", "_") or "bare")
    t = t.detach().contiguous()
    opts = []
    if t.dtype == torch.bfloat16:
        np.save(path, t.view(torch.int16).numpy())
        opts = ["--dtype", "bf16"]
    else:
        np.save(path, t.numpy())
    rc, out, err = inspect("--json", *opts, path)
    return json.loads(out) if rc == 0 else {"error": err}


def check_file(torch, np, path, want):
    """Every tensor of want (name -> tensor) reported with the .npy oracle's
    stats, in some order, and nothing else; non-float tensors skipped."""
    rc, out, err = inspect("--json", path)
    check(rc == 0, "%s: exit %d: %s" % (path, rc, err))
    got = {}
    for line in out.splitlines():
        o = json.loads(line)
        check(o["file"] == path, "%s: file key %r" % (path, o["file"]))
        got[o["tensor"]] = o
    floats = {n: t for n, t in want.items() if t.is_floating_point()}
    check(sorted(got) == sorted(floats), "%s: tensors %s, expected %s" % (path, sorted(got), sorted(floats)))
    for n, t in floats.items():
        if n in got:
            exp = npy_oracle(torch, np, os.path.basename(path) + "-" + n, t)
            check(stats_only(got[n]) == stats_only(exp),
                  "%s: %s differs from its .npy: %s vs %s" % (path, n, stats_only(got[n]), stats_only(exp)))
    rc, out, err = inspect(path)
    skipped = [n for n, t in want.items() if not t.is_floating_point()]
    for n in skipped:
        check(("%s:%s: " % (path, n)) in out and "skipped" in out, "%s: %s not listed as skipped" % (path, n))


def main():
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("SKIP: /usr/bin/python3 cannot import torch/numpy (python3-torch): %s" % e)
        return 77
    os.makedirs(WORK, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(5, 8)).sum().backward()
    opt.step()
    sd = model.state_dict()

    p = os.path.join(WORK, "sd.pt")
    torch.save(sd, p)
    check_file(torch, np, p, dict(sd))

    p = os.path.join(WORK, "model.pt")  # the whole module: named as its state_dict
    torch.save(model, p)
    check_file(torch, np, p, dict(sd))

    p = os.path.join(WORK, "ckpt.pt")
    ck = {"model": sd, "optimizer": opt.state_dict(), "epoch": 3, "note": "x"}
    torch.save(ck, p)
    want = {"model." + k: v for k, v in sd.items()}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            want["optimizer.state.%d.%s" % (i, k)] = v
    check_file(torch, np, p, want)

    # views: a transpose (strides), a strided slice at an offset of a bf16
    # storage, an fp16 half sharing its storage with the whole, fp64, a list
    # and a tuple, a tensor reached twice (reported once)
    w = torch.randn(7, 5) * 1e3
    h = (torch.randn(4, 6) * 1e-5).half()
    b = (torch.randn(9, 4) * 1e6).bfloat16()
    views = collections.OrderedDict([
        ("t", w.t()), ("bf", b[1::2, 1:]), ("h", h), ("h_tail", h[2:]), ("f64", w.double() * 1e-300),
        ("lst", [h[:, ::3], torch.zeros(0, 3)]), ("tup", (w[3],)), ("again", w.t()),
    ])
    p = os.path.join(WORK, "views.pt")
    torch.save(views, p)
    want = {"t": w.t(), "bf": b[1::2, 1:], "h": h, "h_tail": h[2:], "f64": w.double() * 1e-300,
            "lst.0": h[:, ::3], "lst.1": torch.zeros(0, 3), "tup.0": w[3], "again": w.t()}
    check_file(torch, np, p, want)

    # the same views as a big-endian host writes them (torch 2.1+ records the
    # byte order): the very same statistics
    views_pt = open(p, "rb").read()
    for order, data in (("big", big_endian_copy(views_pt)), ("little", views_pt)):
        q = os.path.join(WORK, "views_%s.pt" % order)
        with open(q, "wb") as f:
            f.write(with_byteorder(data, order.encode()))
        got = [inspect("--json", x) for x in (p, q)]
        check(got[1][0] == 0 and got[0][1].replace(p, q) == got[1][1],
              "byteorder %s: %d %r differs from %r" % (order, got[1][0], got[1][2] or got[1][1][:300],
                                                       got[0][1][:300]))

    p = os.path.join(WORK, "bare.pt")
    torch.save(h, p)
    rc, out, err = inspect("--json", p)
    o = json.loads(out) if rc == 0 else {}
    check(rc == 0 and o.get("tensor") == "" and stats_only(o) == stats_only(npy_oracle(torch, np, "bare", h)),
          "bare tensor: %d %s %s" % (rc, out[:200], err))
    rc, out, err = inspect(p)
    check(out.startswith("%s: fp16 (4, 6), 24 values\n" % p), "bare tensor summary names the file: %r" % out[:80])

    p = os.path.join(WORK, "a.npz")
    x, y = np.linspace(-3, 3, 11).astype(np.float32), np.full((2, 3), 6e4, np.float16)
    np.savez(p, x=x, y=y, labels=np.arange(4))
    rc, out, err = inspect("--json", p)
    got = {json.loads(l)["tensor"]: json.loads(l) for l in out.splitlines()}
    check(rc == 0 and sorted(got) == ["x", "y"], ".npz members: %d %s %s" % (rc, sorted(got), err))
    for n, arr in (("x", x), ("y", y)):
        np.save(os.path.join(WORK, "npz-%s.npy" % n), arr)
        rc2, out2, _ = inspect("--json", os.path.join(WORK, "npz-%s.npy" % n))
        check(n in got and rc2 == 0 and stats_only(got[n]) == stats_only(json.loads(out2)),
              ".npz member %s differs from its .npy" % n)
    rc, out, err = inspect(p)
    check(rc == 0 and ("%s:labels: <i8 (4,): not a floating-point format mpprof reads, skipped" % p) in out,
          ".npz integer member listed as skipped: %r" % out[-300:])

    # torch.save(model) names a tied weight and a shared submodule under each
    # of their names, as the model's state_dict does
    tied = tied_model(torch)
    p = os.path.join(WORK, "tied.pt")
    torch.save(tied, p)
    check_file(torch, np, p, dict(tied.state_dict()))

    # a key is named in full: two keys of 100 characters differing at the end
    long_key = "encoder." * 12
    p = os.path.join(WORK, "longkeys.pt")
    torch.save({long_key + "a": torch.randn(2), long_key + "b": torch.randn(3)}, p)
    check_file(torch, np, p, {long_key + "a": torch.load(p)[long_key + "a"],
                              long_key + "b": torch.load(p)[long_key + "b"]})

    # quantized tensors are listed under their state_dict names (skipped: not
    # a floating-point format); they were left out, and a per-channel one's
    # scales and zero points were listed as "qc.4.1" and "qc.4.2"
    p = os.path.join(WORK, "quantized.pt")
    q = {"q": torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8),
         "qc": torch.quantize_per_channel(torch.randn(3, 4), torch.tensor([0.1, 0.2, 0.3]),
                                          torch.tensor([0, 0, 0]), 0, torch.qint8),
         "w": w}
    torch.save(q, p)
    check_file(torch, np, p, q)
    rc, out, err = inspect(p)
    check(rc == 0 and "%s:q: QInt8Storage (4,): not a floating-point format mpprof reads, skipped" % p in out
          and "%s:qc: QInt8Storage (3, 4): not" % p in out and "3 tensors: 1 read" in out,
          "quantized tensors listed: %d %r %r" % (rc, out[-400:], err))

    # pickle protocol 4 (a frozenset is its own opcode there)
    p = os.path.join(WORK, "proto4.pt")
    torch.save({"w": w, "tags": frozenset(["a"]), "n": "x" * 300}, p, pickle_protocol=4)
    check_file(torch, np, p, {"w": w})

    # 100000 storages: looked up by name in one pass, not one scan of the
    # directory each
    buf = io.BytesIO()
    n_st = 100000
    pkl = [b"\x80\x02}(" ]
    for i in range(n_st):
        k = str(i).encode()
        pkl.append(b"X" + len(k).to_bytes(4, "little") + k + b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\n" +
                   b"X" + len(k).to_bytes(4, "little") + k + b"X\x03\x00\x00\x00cpuK\x01tQ")
    pkl.append(b"u.")
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("many/data.pkl", b"".join(pkl))
        for i in range(n_st):
            out.writestr("many/data/%d" % i, b"\0\0\0\0")
    p = os.path.join(WORK, "many_storages.pt")
    with open(p, "wb") as f:
        f.write(buf.getvalue())
    t0 = time.monotonic()
    rc, out, err = inspect(p)
    took = time.monotonic() - t0
    check(rc == 0 and "with no tensors" in out and took < 20,
          "100000 storages: exit %d in %.1f s: %r" % (rc, took, err or out[-200:]))

    tied_weights_are_scanned_once(torch, np)
    expanded_tensors_are_read_once(torch, np)
    identical_views_are_scanned_once(torch, np)
    overlapping_views_beyond_the_bound_are_refused()
    names_beyond_the_memory_bound_are_refused()
    long_keys_along_many_paths_cost_a_visit_each()

    # hostile archives: one stderr line naming the file and the problem, exit 1
    good = open(os.path.join(WORK, "sd.pt"), "rb").read()

    def refused(name, data, problem):
        q = os.path.join(WORK, name)
        with open(q, "wb") as f:
            f.write(data)
        rc, out, err = inspect(q)
        check(rc == 1 and err.count("\n") == 1 and err.startswith("mpprof: inspect: %s: " % q) and problem in err,
              "%s: expected one line with %r, got %d %r" % (name, problem, rc, err))

    refused("cut.pt", good[: len(good) // 2], "no zip directory")
    refused("middle.pt", with_byteorder(good, b"middle"), 'byteorder "middle" is neither "little" nor "big"')
    refused("newline.pt", with_byteorder(good, b"big\n"), 'byteorder is neither "little" nor "big"')
    refused("zbig.pt", with_byteorder(good, b"big", zipfile.ZIP_DEFLATED), "byteorder is compressed")
    for proto in (2, 4):
        buf = io.BytesIO()
        torch.save(sd, buf, _use_new_zipfile_serialization=False, pickle_protocol=proto)
        refused("legacy%d.pt" % proto, buf.getvalue(), "torch.save's legacy format")

    def rezip(drop=None, replace=None, compress=None):
        src = zipfile.ZipFile(io.BytesIO(good))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as out:
            for info in src.infolist():
                if drop and info.filename.endswith(drop):
                    continue
                data = src.read(info.filename)
                if replace and info.filename.endswith(replace[0]):
                    data = replace[1](data)
                ct = zipfile.ZIP_DEFLATED if compress and info.filename.endswith(compress) else zipfile.ZIP_STORED
                out.writestr(info.filename, data, compress_type=ct)
        return buf.getvalue()

    refused("nostorage.pt", rezip(drop="/data/0"), "storage '0' is not in the archive")
    refused("small.pt", rezip(replace=("/data/0", lambda d: d[:8])), "storage '0': 48 elements of FloatStorage need more than its 8 bytes")
    refused("deflated.pt", rezip(compress="data.pkl"), "data.pkl is compressed")
    refused("nopickle.pt", rezip(replace=("data.pkl", lambda d: b"\x80\x02garbage")), "data.pkl: not a pickle this reader follows")
    # a memo index no pickler writes (LONG_BINPUT 2^24 - 16 in a pickle of
    # ~200 bytes): accepted before, with a memo of 128 MiB
    memo_pt = os.path.join(WORK, "memo_src.pt")
    torch_zip(memo_pt, bytes(16), collections.OrderedDict([("w", (0, (4,), (1,)))]),
              extra_pickle=b"r\xf0\xff\xff\x00")
    memo_pkl = zipfile.ZipFile(memo_pt).read("archive/data.pkl")
    refused("memo.pt", open(memo_pt, "rb").read(),
            "data.pkl: memo index 16777200 beyond the pickle's %d bytes" % len(memo_pkl))
    torch_zip(memo_pt, bytes(16), collections.OrderedDict([("w", (0, (4,), (1,)))]),
              extra_pickle=b"r\x05\x00\x00\x00")  # an index within the pickle: read
    rc, out, err = inspect(memo_pt)
    check(rc == 0 and ":w: fp32 (4,), 4 values" in out, "memo index within the pickle: %d %r" % (rc, err or out[:200]))
    # a view reaching past its storage: the pickle's offset patched upward
    t = torch.randn(4)
    q = os.path.join(WORK, "beyond.pt")
    torch.save(t[1:], q)
    z = zipfile.ZipFile(q)
    pkl = [i.filename for i in z.infolist() if i.filename.endswith("data.pkl")][0]
    data = z.read(pkl)
    z.close()
    # _rebuild_tensor_v2(storage, 1, (3,), (1,), ...): BININT1 1 -> BININT1 2
    i = data.index(b"K\x01K\x03\x85")
    patched = data[:i] + b"K\x02" + data[i + 2:]
    refused("beyond2.pt", rezip_bytes(open(q, "rb").read(), pkl, patched), "a tensor reaches element 4 of a storage of 4")
    # a storage of a dtype listed, not scanned, is checked as a scanned one is
    # (a LongStorage cut short, or a view beyond it, was "skipped", exit 0)
    q = os.path.join(WORK, "long.pt")
    torch.save({"w": torch.randn(3), "idx": torch.arange(10)}, q)
    z = zipfile.ZipFile(q)
    idx = [i.filename for i in z.infolist() if i.file_size == 80][0]
    z.close()
    long_pt = open(q, "rb").read()
    refused("cut_long.pt", rezip_bytes(long_pt, idx, bytes(16)),
            "storage '%s': 10 elements of LongStorage need more than its 16 bytes" % idx.rsplit("/", 1)[1])
    torch.save(torch.arange(4)[1:], q)
    z = zipfile.ZipFile(q)
    pkl = [i.filename for i in z.infolist() if i.filename.endswith("data.pkl")][0]
    data = z.read(pkl)
    z.close()
    i = data.index(b"K\x01K\x03\x85")
    refused("beyond_long.pt", rezip_bytes(open(q, "rb").read(), pkl, data[:i] + b"K\x02" + data[i + 2:]),
            "a tensor reaches element 4 of a storage of 4")
    np.savez_compressed(os.path.join(WORK, "c.npz"), x=x)
    rc, out, err = inspect(os.path.join(WORK, "c.npz"))
    check(rc == 1 and "np.savez_compressed" in err, "compressed .npz refused: %d %r" % (rc, err))
    # np.savez of no arrays: an archive of no members (it starts with the end
    # record, no local header), read as such; it was "bad magic: not a .npy file"
    np.savez(os.path.join(WORK, "e.npz"))
    rc, out, err = inspect(os.path.join(WORK, "e.npz"))
    check(rc == 0 and out == "%s: a zip archive (torch.save or .npz) with no tensors\n" % os.path.join(WORK, "e.npz")
          and not err, "empty .npz: %d %r %r" % (rc, out, err))
    # an .npz member of a dtype mpprof does not read is still checked whole:
    # cut short (or with bytes after it) it is an error, not "skipped"
    a_npz = open(os.path.join(WORK, "a.npz"), "rb").read()
    labels = zipfile.ZipFile(io.BytesIO(a_npz)).read("labels.npy")
    refused("cut_labels.npz", rezip_bytes(a_npz, "labels.npy", labels[:-8]),
            "member 'labels': truncated data: shape (4,) of <i8 needs 32 bytes, 24 present")
    refused("long_labels.npz", rezip_bytes(a_npz, "labels.npy", labels + b"\0" * 8),
            "member 'labels': 8 bytes after the data: shape (4,) of <i8 needs 32")
    # a member name twice: np.load reads the last, mpprof listed both under
    # one name (an .npz) or read the first (a storage of a .pt)
    def with_twice(archive, member, data):
        buf = io.BytesIO(archive)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile: "Duplicate name"
            with zipfile.ZipFile(buf, "a") as out:
                out.writestr(member, data)
        return buf.getvalue()
    refused("twice.npz", with_twice(a_npz, "x.npy", zipfile.ZipFile(io.BytesIO(a_npz)).read("y.npy")),
            "zip member 'x.npy' twice in the archive")
    refused("twice.pt", with_twice(long_pt, idx, bytes(80)), "zip member '%s' twice in the archive" % idx)
    rc, out, err = inspect("--dtype", "fp16", os.path.join(WORK, "sd.pt"))
    check(rc == 1 and "names its tensors' dtypes" in err, "--dtype with a .pt refused: %d %r" % (rc, err))

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


def inspect_logged(*args):
    """inspect with MPPROF_LOG=2: (exit status, stdout, stderr without the
    cost lines, {file: (tensors, scans, bytes scanned, file bytes)})."""
    env = dict(os.environ, MPPROF_LOG="2")
    try:
        p = subprocess.run([MPPROF, "inspect", *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300, env=env)
    except subprocess.TimeoutExpired as e:
        return -1, "", "still running after %g s" % e.timeout, {}
    cost, rest = {}, []
    for line in p.stderr.decode().splitlines(True):
        m = re.match(r"mpprof: inspect: (.*): (\d+) tensors, (\d+) scans of (\d+) bytes in all "
                     r"\(file: (\d+) bytes\)$", line.rstrip("\n"))
        if m:
            cost[m.group(1)] = tuple(int(g) for g in m.groups()[1:])
        else:
            rest.append(line)
    return p.returncode, p.stdout.decode(), "".join(rest), cost


def torch_zip(path, storage, views, extra_pickle=b""):
    """A torch.save-style archive written by hand: one FloatStorage of the
    float32 bytes storage, and a dict of name -> (offset, shape, stride)
    views of it, each a _rebuild_tensor_v2 call (the GLOBAL and the storage's
    persistent id memoized, as torch.save writes them)."""
    def s(text):
        b = text.encode()
        return b"X" + len(b).to_bytes(4, "little") + b

    def i32(n):
        return b"J" + n.to_bytes(4, "little", signed=True)

    def tup(ns):
        return b"(" + b"".join(i32(n) for n in ns) + b"t"

    pkl = [b"\x80\x02}(", ]
    first = True
    for name, (offset, shape, stride) in views.items():
        pkl.append(s(name))
        if first:
            pkl.append(b"ctorch._utils\n_rebuild_tensor_v2\nq\x00(" + b"(" + s("storage") +
                       b"ctorch\nFloatStorage\n" + s("0") + s("cpu") + i32(len(storage) // 4) +
                       b"tQq\x01")
            first = False
        else:
            pkl.append(b"h\x00(h\x01")
        pkl.append(i32(offset) + tup(shape) + tup(stride) + b"tR")
    pkl.append(b"u" + extra_pickle + b".")
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", b"".join(pkl))
        out.writestr("archive/data/0", storage)


def identical_views_are_scanned_once(torch, np):
    """2000 names of one view of a 64 KiB storage, and 3 other views of it
    named in turn: every name is reported with the stats of its view, and
    each distinct view is scanned once (without that, 125 MiB would be
    scanned from a file of about 200 KiB)."""
    vals = (torch.randn(16384) * 3e3).float()
    views = collections.OrderedDict()
    for i in range(2000):
        views["same.%d" % i] = (0, (128, 128), (128, 1))
    parts = {"head": (0, (100,), (1,)), "tail": (16000, (384,), (1,)), "cols": (5, (128, 60), (128, 2))}
    for i in range(30):
        for k, v in parts.items():
            views["%s.%d" % (k, i)] = v
    p = os.path.join(WORK, "identical_views.pt")
    torch_zip(p, vals.numpy().tobytes(), views)
    rc, out, err, cost = inspect_logged("--json", p)
    lines = [json.loads(l) for l in out.splitlines()] if rc == 0 else []
    check(rc == 0 and [o["tensor"] for o in lines] == list(views),
          "identical views: exit %d, %d of %d names: %r" % (rc, len(lines), len(views), err[:300]))
    full = vals.view(128, 128)
    want = {"same": full, "head": vals[:100], "tail": vals[16000:], "cols": full[:, 5:125:2]}
    oracle = {k: stats_only(npy_oracle(torch, np, "identical-" + k, t)) for k, t in want.items()}
    wrong = [o["tensor"] for o in lines if stats_only(o) != oracle[o["tensor"].split(".")[0]]]
    check(not wrong, "identical views: stats differ from the view's .npy for %s" % wrong[:5])
    scanned = 65536 + 400 + 384 * 4 + 128 * 60 * 4
    check(cost.get(p, (0,) * 4)[:3] == (len(views), 4, scanned),
          "identical views: expected %d tensors, 4 scans of %d bytes, got %r" % (len(views), scanned, cost))

    # 300 views each named twice, all first names before the second ones:
    # the stats of 256 are kept for their second name, 44 are scanned again
    views = collections.OrderedDict()
    for k in ("x", "y"):
        for i in range(300):
            views["%s.%d" % (k, i)] = (i, (2,), (1,))
    p = os.path.join(WORK, "twice_named_views.pt")
    torch_zip(p, vals[:301].numpy().tobytes(), views)
    rc, out, err, cost = inspect_logged("--json", p)
    got = {json.loads(l)["tensor"]: stats_only(json.loads(l)) for l in out.splitlines()} if rc == 0 else {}
    check(rc == 0 and len(got) == 600 and all(got["x.%d" % i] == got["y.%d" % i] for i in range(300)) and
          got["x.0"] != got["x.1"], "views named twice: exit %d, %d names: %r" % (rc, len(got), err[:300]))
    check(cost.get(p, (0,) * 4)[:3] == (600, 344, 344 * 8),
          "views named twice: expected 600 tensors, 344 scans of %d bytes, got %r" % (344 * 8, cost))


def tied_weights_are_scanned_once(torch, np):
    """torch.save of a state_dict whose lm_head is tied to the embedding (and
    a submodule kept under two names): every name is reported, and the summary of each is the very text of the
    same checkpoint with the weight untied (a copy of its own), while the tied
    storage is scanned once."""
    torch.manual_seed(1)
    tied = tied_model(torch)
    sd = tied.state_dict()
    check(sd["emb.weight"].data_ptr() == sd["head.weight"].data_ptr(), "tied model shares its storage")
    p_tied, p_copy = os.path.join(WORK, "tied_sd.pt"), os.path.join(WORK, "untied_sd.pt")
    torch.save(sd, p_tied)
    untied = collections.OrderedDict((k, v.clone()) for k, v in sd.items())
    torch.save(untied, p_copy)
    check_file(torch, np, p_tied, dict(sd))
    for args in ((), ("--json",)):
        rc, out, err, cost = inspect_logged(*args, p_tied)
        rc2, out2, err2, cost2 = inspect_logged(*args, p_copy)
        check(rc == 0 and rc2 == 0 and out.replace(p_tied, "F") == out2.replace(p_copy, "F"),
              "tied weights %s: output differs from the untied copy's:\n%s\n---\n%s" % (args, out[:600], out2[:600]))
        n, views = len(sd), len({(v.data_ptr(), v.shape, v.stride()) for v in sd.values()})
        check(views < n and cost.get(p_tied, (0, 0))[:2] == (n, views) and cost2.get(p_copy, (0, 0))[:2] == (n, n),
              "tied weights %s: expected %d tensors in %d scans (untied: %d), got %r %r" % (args, n, views, n, cost, cost2))


def expanded_tensors_are_read_once(torch, np):
    """torch.save keeps an expanded tensor as a view of stride 0 over its small
    storage. Its summary is the very text of its contiguous copy's (every
    count multiplied by the repeats), and reading it costs its storage, not
    every repeated element (which was refused beyond 64 times the file's size,
    1.2 MB of scans from a file of about 2 KB)."""
    torch.manual_seed(3)
    tensors = collections.OrderedDict([
        ("row", torch.randn(100).expand(3000, 100)),             # strides (0, 1)
        ("mid", (torch.randn(60, 1, 50) * 1e4).expand(60, 40, 50)),  # (50, 0, 1)
        ("one", torch.tensor(-0.0).expand(7, 9)),                # (0, 0): one element
        ("half", torch.randn(1, 64).half().expand(500, 64)),     # fp16, (64, 1) -> (0, 1)
    ])
    check(all(0 in t.stride() for t in tensors.values()), "expanded views have a stride 0")
    p_exp, p_copy = os.path.join(WORK, "expanded.pt"), os.path.join(WORK, "expanded_copy.pt")
    torch.save(tensors, p_exp)
    torch.save(collections.OrderedDict((k, v.contiguous()) for k, v in tensors.items()), p_copy)
    once = sum(t.numel() // max(1, int(np.prod([n for n, st in zip(t.shape, t.stride()) if st == 0])))
               * t.element_size() for t in tensors.values())
    for args in ((), ("--json",)):
        rc, out, err, cost = inspect_logged(*args, p_exp)
        rc2, out2, err2, cost2 = inspect_logged(*args, p_copy)
        check(rc == 0 and rc2 == 0 and out.replace(p_exp, "F") == out2.replace(p_copy, "F"),
              "expanded %s: output differs from the contiguous copy's (%d %r):\n%s\n---\n%s"
              % (args, rc, err[:300], out[:600], out2[:600]))
        check(cost.get(p_exp, (0,) * 4)[:3] == (4, 4, once),
              "expanded %s: expected 4 scans of %d bytes, got %r" % (args, once, cost))


def overlapping_views_beyond_the_bound_are_refused():
    """100000 different views of one 1 MiB storage, overlapping (each starts
    one element after the one before): reading them would scan 50 GB from a
    file of about 4 MB. Refused before anything is printed, one line naming
    the file and the problem, exit 1; the cost line says what it would have
    scanned."""
    views = collections.OrderedDict(("v%d" % i, (i, (131072,), (1,))) for i in range(100000))
    p = os.path.join(WORK, "overlapping_views.pt")
    torch_zip(p, bytes(1 << 20), views)
    for args in ((), ("--json",)):
        rc, out, err, cost = inspect_logged(*args, p)
        check(rc == 1 and out == "" and err.count("\n") == 1 and
              err.startswith("mpprof: inspect: %s: its tensors overlap too much: reading them scans 52428800000 "
                             "bytes, more than 64 times the file's %d" % (p, os.path.getsize(p))),
              "overlapping views %s: expected one line, refused: %d %r %r" % (args, rc, out[:200], err[:300]))
        check(cost.get(p, (0,) * 4)[:3] == (100000, 100000, 52428800000),
              "overlapping views: cost line %r" % cost)


def names_beyond_the_memory_bound_are_refused():
    """A pickle of 60 KB that names one tensor 12 times at the bottom of 150
    nested dicts, each under the same key of 60000 characters: 12 names of
    9 MB each. The names a pickle makes are bounded by the file's size (64
    bytes per byte, 64 MiB at least): refused, one line, exit 1 (before:
    108 MB of names printed)."""
    def string(b):
        return b"X" + len(b).to_bytes(4, "little") + b

    depth, refs = 150, 12
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\n((" + string(b"storage") + b"ctorch\nFloatStorage\n" +
              string(b"0") + string(b"cpu") + b"K\x04tQK\x00(K\x04t(K\x01ttR")
    pkl = (b"\x80\x02" + string(b"k" * 60000) + b"q\x020" + b"}h\x02" * depth +
           b"](" + tensor + b"q\x03" + b"h\x03" * (refs - 1) + b"e" + b"s" * depth + b".")
    p = os.path.join(WORK, "long_names.pt")
    with zipfile.ZipFile(p, "w") as out:
        out.writestr("archive/data.pkl", pkl)
        out.writestr("archive/data/0", bytes(16))
    rc, out, err = inspect("--json", p)
    check(rc == 1 and out == "" and err.count("\n") == 1 and
          err.startswith("mpprof: inspect: %s: data.pkl: its tensors' names would take more than %d bytes of memory"
                         % (p, 64 << 20)),
          "names beyond the memory bound: expected one line, refused: %d %d bytes out %r" % (rc, len(out), err[:300]))


def long_keys_along_many_paths_cost_a_visit_each():
    """A pickle of 256 KiB: one dict {KEY: []} (KEY of 256 KiB) shared along
    2^L paths by L levels of (prev, prev) tuples, no tensor. The walk copied
    KEY into the path at each of its visits (2^L times 256 KiB: 256 GiB at
    L = 20, killed at 30 s); the path is joined only where a tensor is reached, so a
    visit costs the same whatever the keys above it. L = 20: read (no
    tensors) at once; L = 22: beyond the walk's 2^22 visits, refused at once."""
    key = b"A" * (256 << 10)
    for levels, want_rc, want in ((20, 0, "with no tensors"),
                                  (22, 1, "data.pkl: more than 4194304 objects to walk")):
        pkl = b"\x80\x02}X" + len(key).to_bytes(4, "little") + key + b"]sq\x000"
        for i in range(levels):  # T(i+1) = (T(i), T(i))
            pkl += b"h%ch%c\x86q%c" % (i, i, i + 1) + (b"0" if i + 1 < levels else b"")
        pkl += b"."
        p = os.path.join(WORK, "long_keys_%d.pt" % levels)
        with zipfile.ZipFile(p, "w") as out:
            out.writestr("archive/data.pkl", pkl)
        t0 = time.monotonic()
        try:
            r = subprocess.run([MPPROF, "inspect", p], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            rc, out, err = r.returncode, r.stdout.decode(), r.stderr.decode()
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", "(killed after 30 s)"
        took = time.monotonic() - t0
        line = err if want_rc else out
        check(rc == want_rc and took < 10 and line.count("\n") == 1 and line.startswith(
                  ("mpprof: inspect: " if want_rc else "") + p + ": ") and want in line,
              "long keys along 2^%d paths: expected %d and %r in %.1f s, got %r %r"
              % (levels, want_rc, want, took, rc, (err or out)[:200]))


def tied_model(torch):
    """A model with a tied weight (head.weight is emb.weight) and a submodule
    under two names (b is a)."""
    global Tied

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.emb.weight
            self.a = torch.nn.Linear(3, 2)
            self.b = self.a

    Tied.__qualname__ = "Tied"
    return Tied()


def with_byteorder(archive, order, compress=zipfile.ZIP_STORED):
    """archive with a byteorder record (torch.save's, beside data.pkl)."""
    src = zipfile.ZipFile(io.BytesIO(archive))
    prefix = next(n for n in src.namelist() if n.endswith("/data.pkl"))[: -len("data.pkl")]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info.filename))
        out.writestr(prefix + "byteorder", order, compress_type=compress)
    return buf.getvalue()


def big_endian_copy(archive):
    """archive's storages byte-swapped element by element, as a big-endian
    host's torch.save writes them (the element size from each storage's
    class in data.pkl)."""
    import pickle

    src = zipfile.ZipFile(io.BytesIO(archive))
    pkl = next(n for n in src.namelist() if n.endswith("/data.pkl"))
    sizes = {}

    class Storages(pickle.Unpickler):
        def find_class(self, module, name):
            if name.startswith("_rebuild"):  # tensors: only their storages matter here
                return lambda *a, **k: None
            return super().find_class(module, name)

        def persistent_load(self, pid):
            sizes[pid[2]] = pid[1](0).element_size()

    Storages(io.BytesIO(src.read(pkl))).load()
    prefix = pkl[: -len("data.pkl")] + "data/"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for info in src.infolist():
            data = src.read(info.filename)
            key = info.filename[len(prefix):] if info.filename.startswith(prefix) else None
            if key in sizes:
                n = sizes[key]
                data = b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
            out.writestr(info.filename, data)
    return buf.getvalue()


def rezip_bytes(archive, member, data):
    src = zipfile.ZipFile(io.BytesIO(archive))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for info in src.infolist():
            out.writestr(info.filename, data if info.filename == member else src.read(info.filename))
    return buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
