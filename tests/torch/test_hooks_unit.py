"""Unit tests of mpprof_torch.hooks with libmpprof.so replaced by a recording
stub (no simcuda, no cuBLAS): the scope each op runs in is read by a probe
autograd Function in forward and backward; GradScaler's replayed scale is
compared with the real scaler's after every update.

usage: /usr/bin/python3 test_hooks_unit.py PYTHON_DIR  (build/profiler/python)
Exit 77 when this interpreter cannot import torch."""
import collections
import ctypes
import inspect
import os
import pickle
import sys
import threading
import traceback
import unittest

try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print("SKIP: %s cannot import torch (python3-torch): %s" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else os.environ["MPP_PYTHON_DIR"])
from mpprof_torch import hooks  # noqa: E402

PHASES = {1: "forward", 2: "backward", 3: "optimizer", 4: "recompute", 5: "eval"}


class StubLib:
    """What libmpprof.so's scope functions do, per thread, in Python."""

    def __init__(self):
        self.names = []
        self.tls = threading.local()
        self.calls = []

    def stack(self):
        if not hasattr(self.tls, "s"):
            self.tls.s = []
        return self.tls.s

    def layer_id(self, name, cls):
        key = (name.decode(), cls.decode() if cls else None)
        if key not in self.names:
            self.names.append(key)
        return self.names.index(key)

    def push(self, lid, phase):
        self.stack().append([lid, phase, 0])

    def pop(self):
        if self.stack():
            self.stack().pop()

    def set(self, lid, phase):
        if self.stack():
            self.stack()[-1] = [lid, phase, 0]
        else:
            self.push(lid, phase)

    def op(self):
        """An op attributed to the innermost scope (what mpp_layer_current counts)."""
        if self.stack():
            self.stack()[-1][2] += 1

    def ops(self):
        return self.stack()[-1][2] if self.stack() else 0

    def current(self):
        s = self.stack()
        if not s:
            return ("", "none")
        lid, phase, _ = s[-1]
        return (self.names[lid][0] if lid >= 0 else "", PHASES.get(phase, "none"))


stub = StubLib()
seen = []  # (tag, scope) recorded by Probe


class Probe(torch.autograd.Function):
    """y = x; records the scope of its forward and of its backward."""

    @staticmethod
    def forward(ctx, x, tag):
        ctx.tag = tag
        seen.append((tag, stub.current()))
        stub.op()
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        seen.append((ctx.tag + "'", stub.current()))
        return g.clone(), None


_SCOPE = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)
_POP = ctypes.CFUNCTYPE(None)
_OPS = ctypes.CFUNCTYPE(ctypes.c_uint32)
# ctypes function pointers to the stub's Python methods, as _fast calls libmpprof's (kept alive here)
_c_stub = (_SCOPE(stub.push), _POP(stub.pop), _SCOPE(stub.set), _OPS(stub.ops))


def install():
    hooks._installed = True
    hooks._lib = stub
    from mpprof_torch import _fast

    hooks._fast = _fast
    hooks.bind(torch, *_c_stub[:3], stub.layer_id, ops=_c_stub[3],
               loss_scale=lambda s: stub.calls.append(("loss_scale", s)),
               step=lambda n: stub.calls.append(("step", n)),
               step_skipped=lambda n: stub.calls.append(("step_skipped", n)),
               model_root=lambda name, cls: stub.calls.append(("model", name, cls)))


def as_at_the_start_of_a_run():
    """The next training work starts (marks) the step in progress, as the
    run's first starts step 0: a test's step marks do not depend on what
    the tests before it left pending."""
    hooks._fast.step_next(hooks._step_n, hooks._step)


class Leaf(nn.Module):
    def __init__(self, tag):
        super().__init__()
        self.tag = tag
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return Probe.apply(x * self.w, self.tag)


class OneFc(nn.Module):
    """A model of one child, fc = Leaf(tag); subclassed where a test needs
    models of their own classes (root names follow the class)."""

    def __init__(self, tag):
        super().__init__()
        self.fc = Leaf(tag)

    def forward(self, x):
        return self.fc(x)


class Attn(nn.Module):  # a container with an op of its own between two children
    def __init__(self):
        super().__init__()
        self.q = Leaf("q")
        self.proj = Leaf("proj")

    def forward(self, x):
        h = self.q(x)
        h = Probe.apply(h, "attn-own")
        return self.proj(h)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Attn(), Attn()])
        self.head = Leaf("head")

    def forward(self, x):
        for l in self.layers:
            x = l(x)
        return self.head(x)


class DDPLike(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.module = m

    def forward(self, x):
        return self.module(x)


def as_in_a_new_run():
    """Root models are named as at the start of a run: the names the roots
    of the tests before took are free (in a run, a root's name stays its own
    while a root of that name is called in the step)."""
    hooks._main_root = None
    hooks._root_prefix.clear()
    hooks._bare_names.clear()
    hooks._slots.clear()


class Tests(unittest.TestCase):
    def setUp(self):
        seen.clear()
        as_in_a_new_run()

    def test_forward_names_are_qualified_and_unwrapped(self):
        model = DDPLike(Net())
        model(torch.ones(2, requires_grad=True))
        self.assertEqual(seen, [("q", ("layers.0.q", "forward")), ("attn-own", ("layers.0", "forward")),
                                ("proj", ("layers.0.proj", "forward")), ("q", ("layers.1.q", "forward")),
                                ("attn-own", ("layers.1", "forward")), ("proj", ("layers.1.proj", "forward")),
                                ("head", ("head", "forward"))])
        self.assertIn(("layers.0.q", "Leaf"), stub.names)
        self.assertIn(("Net", "Net"), stub.names)  # the wrapped root: its class, no "module"

    def test_backward_goes_to_the_module_that_created_the_op_on_another_thread(self):
        model = Net()
        loss = model(torch.ones(2, requires_grad=True)).sum()
        seen.clear()
        t = threading.Thread(target=loss.backward)
        t.start()
        t.join()
        self.assertEqual(seen, [("head'", ("head", "backward")), ("proj'", ("layers.1.proj", "backward")),
                                ("attn-own'", ("layers.1", "backward")), ("q'", ("layers.1.q", "backward")),
                                ("proj'", ("layers.0.proj", "backward")), ("attn-own'", ("layers.0", "backward")),
                                ("q'", ("layers.0.q", "backward"))])
        self.assertEqual(stub.current(), ("", "none"))  # the main thread's scopes are untouched

    def test_checkpointed_forward_is_recompute_inside_backward(self):
        from torch.utils.checkpoint import checkpoint

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf("a")
                self.b = Leaf("b")

            def forward(self, x):
                return self.b(checkpoint(self.a, self.a(x)))

        model = Outer()
        loss = model(torch.ones(2, requires_grad=True)).sum()
        loss.backward()
        self.assertEqual(seen, [("a", ("a", "forward")), ("a", ("a", "forward")), ("b", ("b", "forward")),
                                ("b'", ("b", "backward")), ("a", ("a", "recompute")),
                                ("a'", ("a", "backward")), ("a'", ("a", "backward"))])

    def test_a_model_called_under_no_grad_is_eval_all_through(self):
        # an evaluation loop between training steps; a frozen part called
        # under no_grad inside a training forward stays forward
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.frozen = Leaf("frozen")
                self.head = Leaf("head")

            def forward(self, x):
                with torch.no_grad():
                    f = self.frozen(x)
                return self.head(x + f)

        model = Model()
        x = torch.ones(2, requires_grad=True)
        model(x)
        with torch.no_grad():
            model(x)
        with torch.inference_mode():
            model(x)
        self.assertEqual([s for _, s in seen], [("frozen", "forward"), ("head", "forward")]
                         + [("frozen", "eval"), ("head", "eval")] * 2)

    def test_a_second_root_model_is_prefixed_by_its_class(self):
        class Gen(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = Leaf("g")

            def forward(self, x):
                return self.fc(x)

        class Disc(Gen):
            pass

        g, d = Gen(), Disc()
        d(g(torch.ones(2)))
        self.assertEqual(seen[-2:], [("g", ("fc", "forward")), ("g", ("Disc.fc", "forward"))])

    def test_a_model_fed_by_another_models_output_leaves_its_backward_alone(self):
        # a GAN's D(G(z)), an encoder and a decoder called as two roots: G's
        # output is marked by G's last layer ("its backward starts") and then
        # by D as a root input ("back to no module"); G's backward is G's
        class Two(nn.Module):
            def __init__(self, tag):
                super().__init__()
                self.fc1 = Leaf(tag + "1")
                self.fc2 = Leaf(tag + "2")

            def forward(self, x):
                return self.fc2(self.fc1(x))

        class Gen(Two):
            pass

        class Disc(Two):
            pass

        g, d = Gen("g"), Disc("d")
        z = torch.ones(2, requires_grad=True)
        g(z)  # names g's layers first: the first root model
        seen.clear()
        d(g(z)).sum().backward()
        name = lambda m: hooks._lib_names[hooks._ids[id(m)][1]]  # noqa: E731
        self.assertEqual([(t, s) for t, s in seen if t.endswith("'")],
                         [("d2'", (name(d.fc2), "backward")), ("d1'", (name(d.fc1), "backward")),
                          ("g2'", (name(g.fc2), "backward")), ("g1'", (name(g.fc1), "backward"))])

    def test_another_threads_root_forward_leaves_this_forwards_marks_alone(self):
        # DataParallel's replicas, a multi-threaded trainer: a root forward
        # begun on another thread while a block's forward runs must not make
        # the block's own output mark "afresh" (it took the innermost start,
        # b.inner, and gave the op to b)
        class Block(nn.Module):
            def __init__(self, tag, pause=None):
                super().__init__()
                self.tag, self.pause = tag, pause
                self.inner = Leaf(tag + ".inner")

            def forward(self, x):
                y = self.inner(Probe.apply(x, self.tag + "-own"))
                if self.pause is not None:
                    self.pause()  # the other thread's root forward runs now
                return y  # the output of inner: its start stays innermost

        class Model(nn.Module):
            def __init__(self, pause=None):
                super().__init__()
                self.b = Block("b", pause)

            def forward(self, x):
                return self.b(x)

        started, done = threading.Event(), threading.Event()

        def pause():
            started.set()
            self.assertTrue(done.wait(30))

        other = Model()

        def run_other():
            started.wait(30)
            other(torch.ones(2, requires_grad=True))
            done.set()

        model = Model(pause)
        th = threading.Thread(target=run_other)
        th.start()
        out = model(torch.ones(2, requires_grad=True))
        th.join()
        seen.clear()
        out.sum().backward()
        name = lambda m: hooks._lib_names[hooks._ids[id(m)][1]]  # noqa: E731
        self.assertEqual([(t, s) for t, s in seen if t.endswith("'")],
                         [("b.inner'", (name(model.b.inner), "backward")), ("b-own'", (name(model.b), "backward"))])

    def test_a_child_called_with_keyword_arguments_hands_back_to_its_parent(self):
        # HuggingFace calls submodules so: self.proj(hidden_states=h); h got
        # no "end" mark and the parent's own op went to the child's backward
        class Proj(Leaf):
            def forward(self, hidden_states):
                return super().forward(hidden_states)

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = Proj("proj")

            def forward(self, x, by_keyword):
                h = Probe.apply(x, "attn-own")
                return self.proj(hidden_states=h) if by_keyword else self.proj(h)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = Attn()

            def forward(self, x, by_keyword):
                return self.attn(x, by_keyword)

        model = Model()
        name = lambda m: hooks._lib_names[hooks._ids[id(m)][1]]  # noqa: E731
        for by_keyword in (False, True):
            seen.clear()
            model(torch.ones(2, requires_grad=True), by_keyword).sum().backward()
            self.assertEqual([(t, s) for t, s in seen if t.endswith("'")],
                             [("proj'", (name(model.attn.proj), "backward")),
                              ("attn-own'", (name(model.attn), "backward"))], by_keyword)

    def test_parts_called_as_models_keep_their_names_once_the_whole_is_called(self):
        # a VAE trained as m.decoder(m.encoder(x)), then called whole (a
        # validation or sampling call): its Linears were renamed (fc ->
        # encoder.fc), each one then two layers; a module's first name stays
        class Part(nn.Module):
            def __init__(self, tag):
                super().__init__()
                self.fc = Leaf(tag)

            def forward(self, x):
                return self.fc(x)

        class Enc(Part):
            pass

        class Dec(Part):
            pass

        class VAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder, self.decoder = Enc("enc"), Dec("dec")

            def forward(self, x):
                return self.decoder(self.encoder(x))

        m = VAE()
        scopes = []
        for whole in (False, True, False):
            seen.clear()
            x = torch.ones(2, requires_grad=True)
            (m(x) if whole else m.decoder(m.encoder(x))).sum().backward()
            scopes.append(seen[:])
        self.assertEqual(scopes[1], scopes[0])
        self.assertEqual(scopes[2], scopes[0])
        self.assertEqual(len({s[0] for _, s in scopes[0]}), 2, scopes[0])  # two layers, not one

    def test_other_root_models_of_one_class_keep_apart(self):
        # a GAN whose G and D are both nn.Sequential, with an EMA copy of G:
        # D and the copy are two models, not one set of layers
        class Main(OneFc):
            pass

        main, d, ema = Main("main"), nn.Sequential(Leaf("d")), nn.Sequential(Leaf("ema"))
        x = torch.ones(2)
        for m in (main, d, ema, d, ema):
            m(x)
        names = {t: s[0] for t, s in seen}
        self.assertEqual(len({names["main"], names["d"], names["ema"]}), 3, names)
        self.assertEqual(names["d"], "Sequential.0")
        # each model named to libmpprof.so once, by the prefix its layers carry:
        # the plan's keep_in() lines look a layer up in its own model
        models = [c[1:] for c in stub.calls if c[0] == "model"]
        self.assertEqual(models[-3:], [(b"", b"Main"), (b"Sequential", b"Sequential"),
                                       (b"Sequential_2", b"Sequential")])

    def test_other_root_models_own_ops_keep_apart(self):
        # two models of one class beside the main one, each running an op of
        # its own in its forward (outside its children): each model's own
        # ops are its layer, named by its prefix. They were one layer,
        # "Head", for both (the class name alone).
        class Main(OneFc):
            pass

        class Head(nn.Module):
            def __init__(self, tag):
                super().__init__()
                self.tag, self.fc = tag, Leaf(tag + ".fc")

            def forward(self, x):
                return Probe.apply(self.fc(x), self.tag)

        main, h1, h2 = Main("main"), Head("h1"), Head("h2")
        x = torch.ones(2)
        for m in (main, h1, h2, h1, h2):
            m(x)
        names = {t: s[0] for t, s in seen}
        self.assertEqual(names["h1.fc"], "Head.fc")
        self.assertEqual(names["h2.fc"], "Head_2.fc")
        self.assertEqual((names["h1"], names["h2"]), ("Head", "Head_2"))
        self.assertEqual(len({names["main"], names["h1"], names["h2"]}), 3, names)

    def test_bare_root_layers_of_one_class_keep_apart(self):
        # layers used as models (no children): two nn.Linear of a small script
        a, b = Leaf("a"), Leaf("b")
        x = torch.ones(2)
        for m in (a, b, a):
            m(x)
        self.assertEqual([(t, s[0]) for t, s in seen], [("a", "Leaf"), ("b", "Leaf_2"), ("a", "Leaf")])

    def test_modules_called_in_a_forward_without_being_its_children_keep_apart(self):
        # layers kept in a plain list (not a ModuleList), and a teacher model
        # hidden from registration, called inside the model's forward: each
        # module is its own layer. It was: every one of them was
        # "<parent>.<class>", so h0 and h1 were one layer, and so were the
        # teacher's q and proj ("Model.Attn.Leaf")
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Leaf("head")
                self.helpers = [Leaf("h0"), Leaf("h1")]  # a plain list: not registered
                object.__setattr__(self, "teacher", Attn())

            def forward(self, x):
                for h in self.helpers:
                    x = h(x)
                with torch.no_grad():
                    t = self.teacher(x)
                return self.head(x + 0 * t)

        model = Model()
        for _ in range(2):
            model(torch.ones(2, requires_grad=True))
        names = {}
        for tag, (name, phase) in seen:
            names.setdefault(tag, set()).add(name)
        self.assertEqual(sorted(names), ["attn-own", "h0", "h1", "head", "proj", "q"])
        self.assertTrue(all(len(n) == 1 for n in names.values()), names)  # the same name in both calls
        self.assertEqual(len(set.union(*names.values())), 6, names)
        self.assertEqual(names["head"], {"head"})

    def test_modules_made_anew_in_every_forward_are_named_by_their_calls_not_by_the_gc(self):
        # a module made in forward (two per forward here), freed only by the
        # garbage collector (a reference cycle): the same names in every
        # forward, collected or not. They were numbered by the modules still
        # alive: "Model.Cyc", "Model.Cyc_2" after a collection, and
        # "Model.Cyc_3", "Model.Cyc_4", ... while the dead of earlier forwards
        # waited for the collector
        import gc

        class Cyc(Leaf):
            def __init__(self, tag):
                super().__init__(tag)
                self.__dict__["me"] = self  # a cycle

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Leaf("head")

            def forward(self, x):
                return self.head(Cyc("c1")(Cyc("c2")(x)))

        model = Model()
        runs = []
        enabled = gc.isenabled()
        try:
            for collect in (True, False, False, True, False):
                gc.disable()
                seen.clear()
                model(torch.ones(2))
                if collect:
                    gc.collect()
                runs.append([s[0] for _, s in seen])
        finally:
            if enabled:
                gc.enable()
        prefix = "" if hooks._main_root() is model else "Model."
        self.assertEqual(runs, [["Model.Cyc", "Model.Cyc_2", prefix + "head"]] * 5)

    def test_root_models_made_anew_are_named_by_their_calls_not_by_the_gc(self):
        # a layer used as a model and a whole model made anew in each
        # training step, each freed only by the garbage collector (a cycle):
        # the same names in every step and run, collected or not. A root took
        # the first name no live root held: "Cyc" or "Cyc_2", "fc" or
        # "Net.fc", as the collector had or had not freed the last one
        import gc

        class Cyc(Leaf):
            def __init__(self, tag):
                super().__init__(tag)
                self.__dict__["me"] = self  # a cycle

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = Leaf("fc")
                self.__dict__["me"] = self

            def forward(self, x):
                return self.fc(x)

        def run(collect_at):
            names = []
            enabled = gc.isenabled()
            gc.disable()
            try:
                for step in range(4):
                    seen.clear()
                    m, model = Cyc("bare"), Net()
                    opt = torch.optim.SGD(list(m.parameters()) + list(model.parameters()), lr=0.0)
                    (m(torch.ones(2)) + model(torch.ones(2))).sum().backward()
                    opt.step()
                    del m, model, opt
                    if step in collect_at:
                        gc.collect()
                    names.append([s[0] for _, s in seen])
            finally:
                if enabled:
                    gc.enable()
            return names

        runs = [run(c) for c in ((), (0, 1, 2, 3), (1,), (0, 2))]
        self.assertEqual(runs[0], [["Cyc", "fc", "fc", "Cyc"]] * 4)  # the previous step's made way
        for r in runs[1:]:
            self.assertEqual(r, runs[0])

    def test_a_model_of_another_class_called_before_the_main_one_keeps_apart(self):
        # a teacher made after the first step and called before the student
        # in each later step: its layers carry its class, the student's stay
        # plain. It took the student's plain names ("fc" for both), so the
        # two models' layers were one.
        class Student(OneFc):
            pass

        class Teacher(OneFc):
            pass

        student = Student("student")
        opt = torch.optim.SGD(student.parameters(), lr=0.0)
        teacher = None
        names = []
        for step in range(3):
            seen.clear()
            x = torch.ones(2)
            if step > 0:
                teacher = teacher or Teacher("teacher")
                x = teacher(x).detach()  # with grad on: training work starts the step
            student(x).sum().backward()
            opt.step()
            names.append({t: s[0] for t, s in seen if not t.endswith("'")})
        self.assertEqual(names[0], {"student": "fc"})
        self.assertEqual(names[1], {"teacher": "Teacher.fc", "student": "fc"})
        self.assertEqual(names[2], names[1])

    def test_a_container_made_in_every_forward_is_named_by_its_calls_not_by_the_gc(self):
        # an nn.Sequential made in forward, freed only by the garbage
        # collector: its layers have the same names in every forward, however
        # many dead ones wait for it. They were "Sequential.0" or
        # "Sequential_2.0", "Sequential_3.0", ... as it had collected or not
        import gc

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Leaf("head")

            def forward(self, x):
                s = nn.Sequential(Leaf("s0"), Leaf("s1"))
                s.__dict__["me"] = s  # a cycle
                return self.head(s(x))

        model = Model()

        def run(collect_at):
            names = []
            enabled = gc.isenabled()
            gc.disable()
            try:
                for i in range(4):
                    seen.clear()
                    model(torch.ones(2))
                    if i in collect_at:
                        gc.collect()
                    names.append([(t, s[0]) for t, s in seen])
            finally:
                if enabled:
                    gc.enable()
            return names

        runs = [run(c) for c in ((), (0, 1, 2, 3), (1,))]
        self.assertEqual(runs[0], [runs[0][0]] * 4)
        self.assertEqual(len({n for _, n in runs[0][0]}), 3, runs[0][0])
        for r in runs[1:]:
            self.assertEqual(r, runs[0])

    def test_what_a_modules_own_forward_hook_runs_is_that_modules(self):
        # an adapter called from a forward hook of the layer it adapts, as a
        # child of the layer (fc.lora) or kept outside the model (a leaf:
        # "fc2.Leaf", nested under the hooked layer), and an op of the hook
        # itself (fc3): each the hooked layer's, forward and backward. They
        # were the parent's ("Block", "Block.Leaf"): torch runs a module's own
        # forward hooks after the global post-hook, which had ended its call
        class LoRA(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf("lora.a")

            def forward(self, x):
                return Probe.apply(self.a(x), "lora-own")

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.fc2, self.fc3 = Leaf("fc"), Leaf("fc2"), Leaf("fc3")
                self.fc.lora = LoRA()
                side = Leaf("side")
                self.fc.register_forward_hook(lambda m, i, o: o + m.lora(i[0]))
                self.fc2.register_forward_hook(lambda m, i, o: o + side(i[0]))
                self.fc3.register_forward_hook(lambda m, i, o: Probe.apply(o * 2, "hook-op"))

            def forward(self, x):
                return Probe.apply(self.fc3(self.fc2(self.fc(x))), "block-own")

        model = Block()
        x = torch.ones(2, requires_grad=True)
        y = model(x)
        y.sum().backward()
        self.assertEqual(seen, [("fc", ("fc", "forward")), ("lora.a", ("fc.lora.a", "forward")),
                                ("lora-own", ("fc.lora", "forward")), ("fc2", ("fc2", "forward")),
                                ("side", ("fc2.Leaf", "forward")), ("fc3", ("fc3", "forward")),
                                ("hook-op", ("fc3", "forward")), ("block-own", ("Block", "forward")),
                                ("block-own'", ("Block", "backward")), ("hook-op'", ("fc3", "backward")),
                                ("fc3'", ("fc3", "backward")), ("side'", ("fc2.Leaf", "backward")),
                                ("fc2'", ("fc2", "backward")), ("lora-own'", ("fc.lora", "backward")),
                                ("lora.a'", ("fc.lora.a", "backward")), ("fc'", ("fc", "backward"))])
        self.assertEqual(y.tolist(), [8.0, 8.0])  # what the hooks return is the output: ((1 + 1) * 2) * 2
        self.assertEqual(hooks._fast.depth()[0], 0)

    def test_a_forward_hook_that_raises_leaves_nothing_behind(self):
        def boom(m, i, o):
            raise KeyError("hook")

        model = nn.Sequential(Leaf("a"), Leaf("b"))
        handle = model[1].register_forward_hook(boom)
        with self.assertRaises(KeyError):
            model(torch.ones(2))
        handle.remove()
        seen.clear()
        model(torch.ones(2))
        self.assertEqual(hooks._fast.depth()[0], 0)
        self.assertEqual([s for _, s in seen], [("0", "forward"), ("1", "forward")])

    def test_a_module_whose_forward_hooks_were_removed_pickles_without_mpprof(self):
        # the tail mpprof appends after the program's forward hooks pickles
        # as a no-op of the standard library: such a module, saved whole
        # under mpprof, loads where mpprof_torch is not importable
        import copy

        model = nn.Sequential(nn.Linear(2, 2))
        model[0].register_forward_hook(lambda m, i, o: None).remove()
        import io

        class WithoutMpprof(pickle.Unpickler):  # as where mpprof_torch cannot be imported
            def find_class(self, module, name):
                if module.split(".")[0] == "mpprof_torch":
                    raise pickle.UnpicklingError("needs %s.%s" % (module, name))
                return super().find_class(module, name)

        again = WithoutMpprof(io.BytesIO(pickle.dumps(model))).load()
        self.assertEqual(again(torch.ones(2)).tolist(), model(torch.ones(2)).tolist())
        twin = copy.deepcopy(model)
        self.assertIs(twin[0]._forward_hooks.get(hooks._TAIL_KEY), model[0]._forward_hooks.get(hooks._TAIL_KEY))

    def test_a_module_of_a_plain_list_keeps_its_name_in_a_forward_that_skips_another(self):
        # layers in a plain list, the first skipped in some forwards (a layer
        # drop), and one made anew in each: h1 stays "Model.Leaf_2", the new
        # one takes the first name none called before it took
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.helpers = [Leaf("h0"), Leaf("h1")]  # a plain list: not registered

            def forward(self, x, skip):
                for h in self.helpers[skip:]:
                    x = h(x)
                return Leaf("new")(x)

        model = Model()
        runs = []
        for skip in (0, 1, 0):
            seen.clear()
            model(torch.ones(2), skip)
            runs.append([(t, s[0]) for t, s in seen])
        self.assertEqual(runs, [[("h0", "Model.Leaf"), ("h1", "Model.Leaf_2"), ("new", "Model.Leaf_3")],
                                [("h1", "Model.Leaf_2"), ("new", "Model.Leaf")],
                                [("h0", "Model.Leaf"), ("h1", "Model.Leaf_2"), ("new", "Model.Leaf_3")]])

    def test_a_model_whose_forward_is_called_directly_names_its_layers_in_it(self):
        # Lightning style: training_step calls self.forward(x), so no hook
        # sees the model itself; its layers are still named in it (not enc's
        # children as a model of their own, "0", nor head as a bare "Leaf")
        class Lit(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Sequential(Leaf("e0"), Leaf("e1"))
                self.head = Leaf("head")

            def forward(self, x):
                return self.head(self.enc(x))

            def training_step(self, x):
                return self.forward(x).sum()

        model = Lit()
        model.training_step(torch.ones(2))
        prefix = "" if hooks._main_root() is model else "Lit."  # (a model of an earlier test may live)
        self.assertEqual([s for _, s in seen], [(prefix + "enc.0", "forward"), (prefix + "enc.1", "forward"),
                                                (prefix + "head", "forward")])

    def test_a_dataclass_output_is_marked_for_backward(self):
        # models that return a dataclass (not a dict: a plain @dataclass
        # ModelOutput) name their backward as a tuple's or a dict's would
        import dataclasses

        @dataclasses.dataclass
        class Out:
            logits: torch.Tensor
            aux: object = None

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = Leaf("fc")

            def forward(self, x):
                return Out(Probe.apply(self.fc(x), "head-own"), [Probe.apply(x, "aux")])

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()
                self.post = Leaf("post")

            def forward(self, x):
                o = self.head(x)
                return self.post(o.logits) + o.aux[0]

        model = Model()
        model(torch.ones(2, requires_grad=True)).sum().backward()
        self.assertEqual(sorted((t, s) for t, s in seen if t.endswith("'")),
                         [("aux'", ("head", "backward")), ("fc'", ("head.fc", "backward")),
                          ("head-own'", ("head", "backward")), ("post'", ("post", "backward"))])

    def test_optimizer_step_is_phase_optimizer_and_ends_a_step(self):
        class Opt(torch.optim.SGD):
            @torch.no_grad()
            def step(self):
                Probe.apply(torch.ones(1), "opt")
                return super().step()

        w = nn.Parameter(torch.ones(1))
        w.grad = torch.ones(1)
        opt = Opt([w], lr=0.1)
        as_at_the_start_of_a_run()
        stub.calls.clear()
        opt.step()
        opt.step()
        scopes = [s for t, s in seen if t == "opt"]
        self.assertEqual(len(scopes), 2)
        self.assertEqual(scopes[0], scopes[1])
        self.assertEqual(scopes[0][1], "optimizer")
        self.assertIn((scopes[0][0], "Opt"), stub.names)  # "optimizer", or "optimizer.N" for the Nth
        n = hooks._step_n  # each step marked when it starts (its optimizer step), then ended
        self.assertEqual(stub.calls, [("step", n - 2), ("step", n - 1)])


    def test_two_optimizers_without_a_scaler_make_one_step_per_iteration(self):
        # a bf16 GAN's opt_d.step(); opt_g.step(), or Muon for the matrices
        # and AdamW for the rest: the first optimizer's steps end the steps
        wd, wg = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
        wd.grad, wg.grad = torch.ones(2), torch.ones(2)
        opt_d, opt_g = torch.optim.SGD([wd], lr=0.1), torch.optim.Adam([wg], lr=0.1)
        stub.calls.clear()
        n0 = hooks._step_n
        for it in range(4):
            opt_d.step()
            opt_g.step()
        self.assertEqual(hooks._step_n - n0, 4)  # steps ended
        steps = [n for k, n in stub.calls if k == "step"]
        self.assertEqual(steps, list(range(steps[0], steps[0] + len(steps))) if steps else [], stub.calls)
        # opt_d no longer stepped (it stays alive): opt_g's steps end them
        n0 = hooks._step_n
        for it in range(3):
            opt_g.step()
        self.assertEqual(hooks._step_n - n0, 3)

    def test_a_second_optimizer_stepped_right_after_the_first_is_in_its_step(self):
        # Muon for the matrices and AdamW for the rest, or an optimizer per
        # part, stepped back to back: the iteration is one step, with both
        # updates in it. It was: the second update started the next step (an
        # optimizer step is training work), so each iteration's second update
        # was in the next step, and the last one made a step of its own.
        import gc

        gc.collect()
        self.assertFalse(hooks._scaler_in_use())
        hooks._optimizer_updates = hooks._Updaters()  # no primary left by the tests before

        class Opt(torch.optim.SGD):
            def step(self):
                stub.calls.append(("update", self.tag))
                return super().step()

        model = nn.Sequential(Leaf("a"), Leaf("b"))
        opt_a, opt_b = Opt(model[0].parameters(), lr=0.1), Opt(model[1].parameters(), lr=0.1)
        opt_a.tag, opt_b.tag = "a", "b"
        as_at_the_start_of_a_run()
        stub.calls.clear()
        n0 = hooks._step_n
        for it in range(3):
            model(torch.ones(2)).sum().backward()
            opt_a.step()
            opt_b.step()
        with torch.no_grad():  # an evaluation after the loop stays in the last step
            model(torch.ones(2))
        self.assertEqual([c for c in stub.calls if c[0] in ("step", "update")],
                         [("step", n0), ("update", "a"), ("update", "b"),
                          ("step", n0 + 1), ("update", "a"), ("update", "b"),
                          ("step", n0 + 2), ("update", "a"), ("update", "b")])
        self.assertEqual(hooks._step_n - n0, 3)  # steps ended: opt_a's, the first to update


class FastPathTests(unittest.TestCase):
    """What the C hot path (mpprof_torch/_fast.c) must keep true of the program."""

    def setUp(self):
        seen.clear()
        as_in_a_new_run()

    def test_marks_are_registered_directly_on_this_torch(self):
        self.assertTrue(hooks._direct, "start-up check failed: marks fall back to Tensor.register_hook")

    def test_marks_are_cxx_pre_hooks_where_built_for_this_torch(self):
        # MPP_EXPECT_CXX_MARKS: 1 where the build made them for this torch (meson
        # says so), 0 where they are off or absent; unset: not known here
        expect = os.environ.get("MPP_EXPECT_CXX_MARKS")
        if expect is None:
            self.skipTest("whether C++ marks were built for this torch is not known (MPP_EXPECT_CXX_MARKS)")
        self.assertEqual(hooks._cxx, expect == "1")

    def test_marks_built_for_another_torch_are_not_loaded(self):
        saved = hooks._marks_torch
        try:
            for other in ({"version": "0.0.1"}, {"cxx11_abi": None}, {"file": "/elsewhere/torch/__init__.py"}):
                hooks._marks_torch = lambda t, other=other: dict(saved(t), **other)
                self.assertFalse(hooks._cxx_marks(torch), other)
        finally:
            hooks._marks_torch = saved

    def test_a_raising_forward_leaves_no_frames(self):
        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf("a")
                self.boom = Boom()

            def forward(self, x):
                x = self.a(x)
                try:
                    self.boom(x)
                except ValueError:
                    pass
                return Leaf.forward(self.a, x)

        Outer()(torch.ones(2, requires_grad=True))
        self.assertEqual(_fast().depth()[0], 0)
        self.assertEqual(stub.stack(), [])  # every push popped

    def test_a_keyboard_interrupt_in_mpprofs_helpers_reaches_the_program(self):
        # A signal handler's KeyboardInterrupt that lands while mpprof names a
        # module (here raised by the model's own named_modules, which the
        # naming calls) is the program's: it leaves the module call, as it
        # would have without mpprof at that moment (it was dropped).
        class Touchy(nn.Module):
            armed = True

            def __init__(self):
                super().__init__()
                self.a = Leaf("a")

            def named_modules(self, *args, **kwargs):
                if Touchy.armed:
                    Touchy.armed = False
                    raise KeyboardInterrupt
                return super().named_modules(*args, **kwargs)

            def forward(self, x):
                return self.a(x)

        m = Touchy()
        with self.assertRaises(KeyboardInterrupt):
            m(torch.ones(2, requires_grad=True))
        m(torch.ones(2, requires_grad=True))  # the next call runs (and names it)
        self.assertEqual(_fast().depth()[0], 0)
        self.assertEqual(stub.stack(), [])

    def test_scripted_autograd_grad_compiles(self):
        # TorchScript finds torch.autograd.grad by identity: the wrapper is
        # registered as aten::grad (scripted force fields failed to compile).
        class Energy(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 1)

            def forward(self, pos: torch.Tensor) -> torch.Tensor:
                g = torch.autograd.grad([self.lin(pos).sum()], [pos], create_graph=True)[0]
                assert g is not None
                return -g

        self.assertTrue(getattr(torch.autograd.grad, "_mpprof", False))  # the wrapper is in place
        eager = Energy()
        m = torch.jit.script(eager)
        pos = torch.ones(2, 3, requires_grad=True)
        self.assertTrue(torch.equal(m(pos), eager(pos)))

    def test_an_error_raised_in_backward_has_the_programs_traceback(self):
        # torch's in-place-modification error raised inside backward and
        # autograd.grad: the same traceback text, frame for frame, as with
        # torch's own functions (the Python wrapper added a frame of hooks.py)
        w = nn.Linear(4, 4)

        def traceback_of(call):
            y = torch.relu(w(torch.randn(2, 4)))
            y.add_(1)  # autograd saved y
            try:
                call(y.sum())
            except RuntimeError:
                return traceback.format_exc()
            self.fail("no in-place error")

        for name, call in (("backward", lambda loss: loss.backward()),
                           ("backward", lambda loss: torch.autograd.backward(loss)),
                           ("grad", lambda loss: torch.autograd.grad(loss, [w.weight]))):
            wrapped = getattr(torch.autograd, name)
            self.assertTrue(wrapped._mpprof)
            under_mpprof = traceback_of(call)
            setattr(torch.autograd, name, wrapped.__wrapped__)
            try:
                without = traceback_of(call)
            finally:
                setattr(torch.autograd, name, wrapped)
            self.assertIn("modified by an inplace operation", without)
            self.assertEqual(under_mpprof, without)
        self.assertEqual(_fast().depth()[:2], (0, 0))  # the backward scopes closed
        self.assertEqual(stub.stack(), [])

    def test_the_autograd_wrappers_look_like_torchs_functions(self):
        for name in ("backward", "grad"):
            wrapped = getattr(torch.autograd, name)
            real = wrapped.__wrapped__
            self.assertIsNot(wrapped, real)
            for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
                self.assertEqual(getattr(wrapped, attr), getattr(real, attr), attr)
            self.assertEqual(inspect.signature(wrapped), inspect.signature(real))
            self.assertIs(pickle.loads(pickle.dumps(wrapped)), wrapped)

    def test_a_backward_root_keeps_its_hooks_and_retained_grad_with_cxx_marks(self):
        # The root of a backward (a loss) was marked with a Python hook dict,
        # which torch 1.13 runs ahead of a retain_grad() called later: the
        # program's later x7 hook then showed in loss.grad (7 instead of 1).
        # With the C++ marks the root's mark is a C++ pre-hook too.
        if not hooks._cxx:
            self.skipTest("C++ marks not loaded (the Python marks keep this difference)")
        w = torch.ones(3, requires_grad=True)
        loss = (w * 2).sum()
        loss.backward(retain_graph=True)
        self.assertIsNone(loss._backward_hooks)
        loss.retain_grad()
        loss.register_hook(lambda g: g * 7)
        loss.backward()
        self.assertEqual(loss.grad.item(), 1.0)

    def test_the_torch_version_is_compared_as_text(self):
        # a TorchVersion compared with the marks' recorded version imported
        # packaging (or pkg_resources, ~70 modules) into the program
        self.assertIs(type(hooks._marks_torch(torch)["version"]), str)

    def test_an_exception_escaping_the_model_leaves_nothing_behind(self):
        # the training loop catches it (an OOM retried, a bad batch skipped)
        # and goes on: the raising module is not the scope of later ops, nor
        # the parent of a model called later (before torch 2.1 no post-hook
        # runs when forward raises)
        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf("a")
                self.boom = Boom()

            def forward(self, x, fail):
                x = self.a(x)
                return self.boom(x) if fail else x

        model, other = Model(), Leaf("other")
        for retry in (model, other):
            with self.assertRaises(ValueError):
                model(torch.ones(2, requires_grad=True), True)
            seen.clear()
            if retry is model:  # the same model again
                out = model(torch.ones(2, requires_grad=True), False)
            else:  # a model never called before
                out = other(torch.ones(2, requires_grad=True))
            Probe.apply(torch.ones(1), "outside")
            out.sum().backward()
            want = ("a", "a") if retry is model else ("other", "Leaf")
            self.assertEqual(seen, [(want[0], (want[1], "forward")), ("outside", ("", "none")),
                                    (want[0] + "'", (want[1], "backward"))])
            self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))

    def test_a_closure_raising_inside_optimizer_step_leaves_nothing_behind(self):
        # LBFGS-style: the closure's forward raises out of opt.step(closure)
        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf("a")
                self.boom = Boom()

            def forward(self, x):
                return self.boom(self.a(x))

        model = Model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertRaises(ValueError):
            opt.step(lambda: model(torch.ones(2, requires_grad=True)).sum())
        self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))

    def test_deeper_than_the_kept_stack_stays_balanced(self):
        class Chain(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.inner = Chain(n - 1) if n > 1 else Leaf("deep")

            def forward(self, x):
                return self.inner(x)

        model = Chain(300)  # > MAX_STACK (256) frames
        model(torch.ones(2, requires_grad=True)).sum().backward()
        self.assertEqual(_fast().depth()[0], 0)
        self.assertEqual(stub.stack(), [])
        self.assertEqual(seen[0][1][1], "forward")
        self.assertEqual(seen[1][0], "deep'")

    def test_the_programs_hook_handles_have_the_ids_they_have_without_mpprof(self):
        # mpprof's own registrations (its global module hooks, the start-up
        # check's stand-in) take no id of RemovableHandle's counter: the
        # program's handle.id values are those of a run without mpprof (they
        # were 3 more). No handle of the program meets mpprof's hooks: a global
        # hook the program adds and removes leaves mpprof's in place.
        self.assertEqual(handle_ids[1], handle_ids[0])
        mm = torch.nn.modules.module
        before = (list(mm._global_forward_pre_hooks), list(mm._global_forward_hooks))
        ran = []
        h1 = mm.register_module_forward_pre_hook(lambda m, a: ran.append("pre"))
        h2 = mm.register_module_forward_hook(lambda m, a, o: ran.append("post"))
        self.assertEqual(h2.id, h1.id + 1)
        self.assertNotIn(h1.id, before[0] + before[1])
        Leaf("x")(torch.ones(1, requires_grad=True))
        h1.remove()
        h2.remove()
        self.assertEqual((list(mm._global_forward_pre_hooks), list(mm._global_forward_hooks)), before)
        Leaf("y")(torch.ones(1, requires_grad=True))
        self.assertEqual(ran, ["pre", "post"])
        self.assertEqual([phase for (_, phase) in (s for _, s in seen)], ["forward", "forward"])

    def test_user_hooks_on_marked_tensors_still_run_and_can_be_removed(self):
        model = Net()
        out = model(torch.ones(2, requires_grad=True))
        self.assertEqual(marks(out), 1)  # mpprof's mark is there
        got = []
        h1 = out.register_hook(lambda g: got.append("kept"))
        h2 = out.register_hook(lambda g: got.append("removed"))
        h2.remove()
        out.sum().backward()
        self.assertEqual(got, ["kept"])

    def test_only_modules_with_ops_of_their_own_are_marked(self):
        class NoOps(nn.Module):  # an activation: no CUDA matrix op
            def forward(self, x):
                return x * 2

        class Wrap(nn.Module):  # a container whose ops are all its children's
            def __init__(self):
                super().__init__()
                self.act = NoOps()
                self.fc = Leaf("fc")

            def forward(self, x):
                return self.fc(self.act(x))

        class Root(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = Wrap()
                self.act2 = NoOps()

            def forward(self, x):
                h = self.w.act(x)  # (not marked: no ops, and the parent Wrap has none)
                self.h = h
                return self.act2(self.w(x))

        root = Root()
        x = torch.ones(2, requires_grad=True)
        out = root(x)
        self.assertEqual(marks(root.h), 0)
        self.assertEqual(marks(out), 0)  # act2: no ops of its own, Root none either
        out.sum().backward()
        self.assertEqual(seen[-1], ("fc'", ("w.fc", "backward")))
        del root.h

    def test_while_dynamo_traces_the_hooks_do_nothing(self):
        tracing = [True]
        pre, post = hooks._module_hooks(lambda: tracing[0])  # as bound where torch has Dynamo
        m, x = Leaf("t"), torch.ones(2, requires_grad=True)
        pre(m, (x,))
        self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))
        post(m, (x,), x * 1)
        self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))
        tracing[0] = False
        pre(m, (x,))
        self.assertEqual(_fast().depth()[0], 1)
        post(m, (x,), x * 1)
        self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))

    def test_keyword_arguments_are_marked_as_each_torch_hands_them(self):
        # torch 2.6+ gives a global post-hook registered with_kwargs the
        # keyword arguments; 2.2-2.5 run the hooks in a closure of
        # _call_impl, where _fast reads them (1.13: test above). Here both
        # module calls in outline, each with _fast's C hooks and with the
        # Python hooks bound where torch has Dynamo.
        for with_kwargs in (True, False):
            for hook_kind in ("C", "Python"):
                with self.subTest(with_kwargs=with_kwargs, hooks=hook_kind):
                    seen.clear()
                    call = _OutlineCall(with_kwargs, hook_kind == "Python")
                    attn, proj = Leaf("attn"), Leaf("proj")  # (named as models of their own)

                    def attn_forward(x):
                        return call(proj, hidden_states=Probe.apply(x, "attn-own"))

                    attn.forward = attn_forward
                    proj.forward = lambda hidden_states: Leaf.forward(proj, hidden_states)
                    call(attn, torch.ones(2, requires_grad=True)).sum().backward()
                    self.assertEqual([(t, s[0]) for t, s in seen if t.endswith("'")],
                                     [("proj'", hooks._lib_names[hooks._ids[id(proj)][1]]),
                                      ("attn-own'", hooks._lib_names[hooks._ids[id(attn)][1]])])
                    self.assertEqual((_fast().depth()[0], stub.stack()), (0, []))

    def test_a_torch_that_hands_hooks_keyword_arguments_is_asked_for_them(self):
        # 2.6+: register_module_forward_hook(with_kwargs=True); _fast then
        # reads no frame (what it is given is what the call had)
        got = []

        class Module:  # torch.nn.modules.module of 2.6+, in outline
            @staticmethod
            def register_module_forward_pre_hook(hook):
                got.append(("pre", hook))

            @staticmethod
            def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
                got.append(("post", hook, with_kwargs, always_call))

        fake = type("torch", (), {"nn": type("nn", (), {"modules": type("m", (), {"module": Module})})})
        codes, roots = _fast().kwargs_from(None), _fast().follow_roots(None)  # (as bind set them)
        try:
            hooks._register_module_hooks(fake, "pre", "post")
        finally:
            self.assertIsNone(_fast().kwargs_from(codes))
            self.assertIsNone(_fast().follow_roots(roots))  # (it runs when forward raises)
        self.assertEqual(got, [("pre", "pre"), ("post", "post", True, True)])

    def test_a_tensor_marked_in_many_forwards_keeps_one_mark(self):
        x = torch.ones(2, requires_grad=True) * 1  # not a leaf: root inputs get an "end" mark
        m = Leaf("r")
        for _ in range(5):
            m(x)
        self.assertEqual(marks(x), 1)
        if not hooks._cxx:
            self.assertEqual(len(x._backward_hooks), 1)  # nothing else left behind either

    def test_a_tensor_subclass_sees_only_the_programs_calls(self):
        # __torch_function__ of a subclass sees every attribute read and
        # register_hook made on its instances: the marks' reads of module
        # outputs and of the backward root are not the program's, and must
        # not show there (nor change what it counts), while the backward is
        # still attributed to its modules.
        log = []

        class Logged(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(getattr(func, "__name__", str(func)))
                return super().__torch_function__(func, types, args, kwargs or {})

        seen.clear()
        model = Net()
        loss = model(torch.ones(2, requires_grad=True).as_subclass(Logged)).sum()
        loss.backward()
        self.assertEqual(sorted(set(log)), ["backward", "clone", "mul", "sum"])
        self.assertIn(("q'", ("layers.0.q", "backward")), seen)
        self.assertIn(("head'", ("head", "backward")), seen)

    def test_saving_a_marked_tensor_warns_of_nothing(self):
        import io
        import warnings

        out = Net()(torch.ones(2, requires_grad=True))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            torch.save(out, io.BytesIO())
        self.assertEqual([str(x.message) for x in w if "hook" in str(x.message)], [])


class _OutlineCall:
    """Module._call_impl of torch 2.2+ in outline (the hooks run in a
    closure of it, `inner`), calling _fast's hooks or the Python ones: with
    the keyword arguments (a post-hook registered with_kwargs, 2.6+), or
    without, _fast told where to find them (as bind does before 2.6)."""

    def __init__(self, with_kwargs, python_hooks):
        self.with_kwargs = with_kwargs
        self.pre, self.post = (hooks._module_hooks(lambda: False) if python_hooks
                               else (_fast().pre, _fast().post))

    def __call__(self, module, *args, **kwargs):
        codes = None if self.with_kwargs else hooks._call_kwargs(
            type("torch", (), {"nn": type("nn", (), {"Module": _OutlineCall})}))
        real = _fast().kwargs_from(codes)  # (what bind set)
        try:
            return self._call_impl(module, *args, **kwargs)
        finally:
            _fast().kwargs_from(real)

    def _call_impl(self, module, *args, **kwargs):
        result = None

        def inner():
            nonlocal result, args, kwargs
            self.pre(module, args)
            result = module.forward(*args, **kwargs)
            if self.with_kwargs:
                self.post(module, args, kwargs, result)
            else:
                self.post(module, args, result)
            return result

        return inner()


def _fast():
    return hooks._fast


def marks(x):
    """mpprof's marks on x: C++ pre-hooks on its grad_fn, or MarkHooks in
    its _backward_hooks (whichever this run uses)."""
    if hooks._cxx:
        return hooks._fast.cxx_marks(x)
    d = x._backward_hooks or {}
    return sum(isinstance(v, hooks._fast.MarkHook) for v in d.values())


def _update_scale(scale, tracker, found_inf, growth, backoff, interval):
    """The CUDA kernel on the CPU: float scale times double factor, stored as float."""
    if found_inf.item():
        scale.fill_(scale.item() * backoff)
        tracker.fill_(0)
    else:
        tracker.add_(1)
        if tracker.item() == interval:
            scale.fill_(scale.item() * growth)
            tracker.fill_(0)
    return scale


class CpuGradScaler(torch.cuda.amp.GradScaler):
    def __init__(self, init_scale, growth_factor, backoff_factor, growth_interval):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            super().__init__()
        from torch.cuda.amp.grad_scaler import _refresh_per_optimizer_state

        self._enabled = True
        self._init_scale, self._growth_factor, self._backoff_factor = init_scale, growth_factor, backoff_factor
        self._growth_interval, self._init_growth_tracker = growth_interval, 0
        self._scale = self._growth_tracker = None
        self._per_optimizer_states = collections.defaultdict(_refresh_per_optimizer_state)

    def scale(self, outputs):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        for g in optimizer.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if not torch.isfinite(p.grad).all():
                        found_inf.fill_(1.0)
                    p.grad.mul_(inv_scale)
        return {found_inf.device: found_inf}


class ScalerTests(unittest.TestCase):
    def test_replayed_scale_equals_the_scalers_own_after_every_update(self):
        torch._amp_update_scale_ = _update_scale
        # float32 rounding matters with these factors
        scaler = CpuGradScaler(init_scale=1000.0, growth_factor=1.7, backoff_factor=0.3, growth_interval=2)
        w = nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=1e-3)
        as_at_the_start_of_a_run()
        stub.calls.clear()
        overflow = {3, 4, 9}
        for step in range(12):
            opt.zero_grad()
            loss = (w * (float("inf") if step in overflow else 1.0)).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            fed = [v for k, v in stub.calls if k == "loss_scale"]
            self.assertEqual(fed[-1], scaler._scale.item(), "step %d" % step)
        self.assertEqual(fed[0], 1000.0)  # fed when the scaler first scales, before backward
        self.assertEqual(len(fed), 13)
        skipped = [v for k, v in stub.calls if k == "step_skipped"]
        steps = [v for k, v in stub.calls if k == "step"]
        self.assertEqual(len(skipped), 3)
        self.assertEqual(len(steps), 12)  # each step, skipped or not, starts (its backward) and ends
        self.assertEqual([s - steps[0] for s in skipped], sorted(overflow))

    def test_each_iteration_is_the_step_it_starts_and_an_eval_after_stays_in_the_last(self):
        # step n is marked by its first training work (here its forward), not
        # when step n-1 ends: the first iteration is a step, every step marked
        # ran, and the evaluation after the loop is in the last one (it was:
        # step n+1 marked at each update(), the first iteration before any
        # step mark, and a step that never ran marked last)
        torch._amp_update_scale_ = _update_scale
        scaler = CpuGradScaler(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)

        class Rec(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(3))

            def forward(self, x):
                stub.calls.append(("forward", torch.is_grad_enabled()))
                return x * self.w

        m = Rec()
        opt = torch.optim.SGD(m.parameters(), lr=1e-3)
        as_at_the_start_of_a_run()
        stub.calls.clear()
        for it in range(6):
            opt.zero_grad()
            loss = m(torch.ones(3)).sum() * (float("inf") if it == 1 else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        with torch.no_grad():
            m(torch.ones(3))
        order = [c for c in stub.calls if c[0] in ("step", "forward")]
        n0 = order[0][1] if order[0][0] == "step" else None
        self.assertEqual(order, [c for it in range(6) for c in (("step", n0 + it), ("forward", True))]
                         + [("forward", False)], stub.calls)
        skipped = [c[1] for c in stub.calls if c[0] == "step_skipped"]
        self.assertEqual([s - n0 for s in skipped], [1])

    def test_without_an_optimizer_each_backward_pass_ends_a_step(self):
        # a training loop with a manual SGD update under no_grad and no
        # torch.optim.Optimizer: one step per loss.backward(), the update in
        # the step of its backward; a reentrant checkpoint's backward inside
        # it and an autograd.grad (a gradient penalty) end none. It was: one
        # step 0 for the whole run (no optimizer step ever ended it)
        from torch.utils.checkpoint import checkpoint

        class Rec(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(3))
                self.inner = Leaf("inner")

            def forward(self, x):
                stub.calls.append(("forward", torch.is_grad_enabled()))
                return checkpoint(self.inner, x * self.w)

        made, scalers = getattr(hooks, "_optimizer_made", True), dict(hooks._scalers)
        hooks._optimizer_made = False  # (as in a program that makes none: earlier tests made some)
        hooks._scalers.clear()
        try:
            m = Rec()
            as_at_the_start_of_a_run()
            stub.calls.clear()
            for it in range(3):
                x = torch.ones(3, requires_grad=True)
                loss = m(x).sum()
                (g,) = torch.autograd.grad((x * m.w).pow(2).sum(), x, create_graph=True)
                (loss + g.sum()).backward()
                with torch.no_grad():
                    stub.calls.append(("update",))
                    for p in m.parameters():
                        p -= 0.01 * p.grad
                        p.grad = None
            with torch.no_grad():
                m(torch.ones(3))
        finally:
            hooks._optimizer_made = made
            hooks._scalers.update(scalers)
        order = [c for c in stub.calls if c[0] in ("step", "forward", "update")]
        n0 = order[0][1] if order[0][0] == "step" else None
        self.assertEqual(order, [c for it in range(3) for c in (("step", n0 + it), ("forward", True), ("update",))]
                         + [("forward", False)], stub.calls)
        self.assertEqual(hooks._step_n, n0 + 3)

    def test_two_optimizers_sharing_a_scaler_make_one_step_per_update(self):
        # a GAN's loop: scaler.step(opt_d); scaler.step(opt_g); scaler.update()
        # is one training step, skipped when either optimizer's step was
        torch._amp_update_scale_ = _update_scale
        scaler = CpuGradScaler(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
        wd, wg = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
        opt_d, opt_g = torch.optim.SGD([wd], lr=1e-3), torch.optim.Adam([wg], lr=1e-3)
        as_at_the_start_of_a_run()
        stub.calls.clear()
        inf_d, inf_g = {2, 4}, {4, 5}
        for it in range(7):
            opt_d.zero_grad()
            scaler.scale((wd * (float("inf") if it in inf_d else 1.0)).sum()).backward()
            scaler.step(opt_d)
            opt_g.zero_grad()
            scaler.scale((wg * (float("inf") if it in inf_g else 1.0)).sum()).backward()
            scaler.step(opt_g)
            scaler.update()
            fed = [v for k, v in stub.calls if k == "loss_scale"]
            self.assertEqual(fed[-1], scaler._scale.item(), "iteration %d" % it)
        steps = [v for k, v in stub.calls if k == "step"]
        skipped = [v for k, v in stub.calls if k == "step_skipped"]
        self.assertEqual(len(steps), 7, stub.calls)
        self.assertEqual(steps, list(range(steps[0], steps[0] + 7)))
        self.assertEqual([s - steps[0] for s in skipped], [2, 4, 5])

    def test_one_scaler_per_optimizer_declares_each_backwards_scale_and_one_step(self):
        # scaler_d / scaler_g, each with its own update(): each backward's
        # gradients carry its own scaler's scale, and an iteration is one step
        torch._amp_update_scale_ = _update_scale

        class Scaler(CpuGradScaler):  # scale() of its own, wrapped as torch's is
            def scale(self, outputs):
                return super().scale(outputs)

        hooks._patch_scaler(Scaler)
        sd = Scaler(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=1)
        sg = Scaler(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=1000)
        wd, wg = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
        opt_d, opt_g = torch.optim.SGD([wd], lr=1e-3), torch.optim.SGD([wg], lr=1e-3)
        stub.calls.clear()
        n0 = hooks._step_n
        under = []  # (the scale declared when each backward ran, the scaler's own)

        def backward(scaler, w, inf):
            loss = scaler.scale((w * (float("inf") if inf else 1.0)).sum())
            under.append(([v for k, v in stub.calls if k == "loss_scale"][-1], scaler._scale.item()))
            loss.backward()

        for it in range(5):
            opt_d.zero_grad()
            backward(sd, wd, False)
            sd.step(opt_d)
            sd.update()
            opt_g.zero_grad()
            backward(sg, wg, it == 2)
            sg.step(opt_g)
            sg.update()
        self.assertEqual([a for a, _ in under], [b for _, b in under])
        self.assertEqual(hooks._step_n - n0, 5, stub.calls)  # steps ended
        skipped = [v for k, v in stub.calls if k == "step_skipped"]
        self.assertEqual([s - n0 for s in skipped], [3])  # counted when the next step ends
        # scaler_d no longer used (it stays alive): scaler_g's updates end the
        # steps (from its second update since scaler_d's last: here the first)
        n0 = hooks._step_n
        for it in range(4):
            opt_g.zero_grad()
            sg.scale(wg.sum()).backward()
            sg.step(opt_g)
            sg.update()
        self.assertEqual(hooks._step_n - n0, 4)

    def test_a_second_scalers_step_right_after_the_first_update_is_in_its_step(self):
        # one scaler per part, both backwards first, then each part's
        # scaler.step and update: the second part's update is in the step
        # the first scaler's update ended (it started the next one)
        torch._amp_update_scale_ = _update_scale
        hooks._scaler_updates = hooks._Updaters()  # no primary left by the tests before

        class Opt(torch.optim.SGD):
            def step(self):
                stub.calls.append(("update", self.tag))
                return super().step()

        sd = CpuGradScaler(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=1000)
        sg = CpuGradScaler(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=1000)
        wd, wg = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
        opt_d, opt_g = Opt([wd], lr=1e-3), Opt([wg], lr=1e-3)
        opt_d.tag, opt_g.tag = "d", "g"
        as_at_the_start_of_a_run()
        stub.calls.clear()
        n0 = hooks._step_n
        for it in range(3):
            sd.scale(wd.sum()).backward()
            sg.scale(wg.sum()).backward()
            sd.step(opt_d)
            sd.update()
            sg.step(opt_g)
            sg.update()
        self.assertEqual([c for c in stub.calls if c[0] in ("step", "update")],
                         [("step", n0), ("update", "d"), ("update", "g"),
                          ("step", n0 + 1), ("update", "d"), ("update", "g"),
                          ("step", n0 + 2), ("update", "d"), ("update", "g")])
        self.assertEqual(hooks._step_n - n0, 3)

    def test_an_optimizer_unscaled_and_not_stepped_backs_the_scale_off(self):
        # a loop that skips scaler.step itself on a non-finite gradient norm:
        # unscale_ found the inf, update() backs off from it (the scale was
        # replayed as grown, 1024, 2048, 2048, 4096, and no step skipped)
        torch._amp_update_scale_ = _update_scale
        scaler = CpuGradScaler(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
        w = nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=1e-3)
        as_at_the_start_of_a_run()
        stub.calls.clear()
        for step in range(4):
            opt.zero_grad()
            scaler.scale((w * (float("inf") if step == 1 else 1.0)).sum()).backward()
            scaler.unscale_(opt)
            if torch.isfinite(torch.nn.utils.clip_grad_norm_([w], 1.0)):
                scaler.step(opt)
            scaler.update()
            fed = [v for k, v in stub.calls if k == "loss_scale"]
            self.assertEqual(fed[-1], scaler._scale.item(), "step %d" % step)
        steps = [v for k, v in stub.calls if k == "step"]
        skipped = [v for k, v in stub.calls if k == "step_skipped"]
        self.assertEqual([s - steps[0] for s in skipped], [1])

    def test_a_found_inf_that_cannot_be_read_stops_the_replay(self):
        # a GradScaler fork that keeps an unscaled optimizer's found_inf its
        # own way: the scale is no longer declared rather than guessed
        torch._amp_update_scale_ = _update_scale

        class KeepsItsOwn(CpuGradScaler):
            stepping = False

            def step(self, optimizer):
                self.stepping = True
                try:
                    return super().step(optimizer)
                finally:
                    self.stepping = False

            def unscale_(self, optimizer):
                super().unscale_(optimizer)
                if not self.stepping:
                    state = self._per_optimizer_states[id(optimizer)]
                    state["own"] = state.pop("found_inf_per_device")

            def update(self, new_scale=None):
                for state in self._per_optimizer_states.values():
                    state.setdefault("found_inf_per_device", state.pop("own", {}))
                return super().update(new_scale)

        hooks._patch_scaler(KeepsItsOwn)
        scaler = KeepsItsOwn(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=1)
        w = nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=1e-3)
        stub.calls.clear()
        for step in range(3):
            opt.zero_grad()
            scaler.scale((w * (float("inf") if step == 1 else 1.0)).sum()).backward()
            if step == 1:
                scaler.unscale_(opt)  # and no scaler.step: the loop skips it
            else:
                scaler.step(opt)
            scaler.update()
        self.assertEqual([v for k, v in stub.calls if k == "loss_scale"], [1024.0, 2048.0])

    def test_a_state_dict_loaded_mid_run_is_the_scale_in_force(self):
        # resuming (or rolling back) a scaler already in use: load_state_dict
        # refills its scale and tracker; the replay follows at once
        torch._amp_update_scale_ = _update_scale
        scaler = CpuGradScaler(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
        w = nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=1e-3)
        stub.calls.clear()
        for step in range(6):
            if step == 3:
                sd = scaler.state_dict()
                sd["scale"], sd["_growth_tracker"] = 8.0, 1
                scaler.load_state_dict(sd)
                fed = [v for k, v in stub.calls if k == "loss_scale"]
                self.assertEqual(fed[-1], 8.0, "after load_state_dict")
            opt.zero_grad()
            scaler.scale((w * 1.0).sum()).backward()
            scaler.step(opt)
            scaler.update()
            fed = [v for k, v in stub.calls if k == "loss_scale"]
            self.assertEqual(fed[-1], scaler._scale.item(), "step %d" % step)


if __name__ == "__main__":
    handle_ids = torch.utils.hooks.RemovableHandle.next_id
    install()
    handle_ids = (handle_ids, torch.utils.hooks.RemovableHandle.next_id)  # before and after
    unittest.main(argv=[sys.argv[0]], verbosity=2)
