"""Module attribution for PyTorch, through the scopes of libmpprof.so
(profiler/include/mpprof.h): libmpprof stays the one place that attributes
ops; this file only tells it, per thread, which module and phase run now.

The per-module-call work is in C (_fast.c, one stable-ABI extension):
- Forward: global forward pre/post hooks push/pop a scope (module qualified
  name, class, phase forward; recompute while a backward runs on the thread).
- Backward: in a module's forward post-hook, a tensor hook on each output
  ("this module's backward starts": innermost module wins) when its forward
  issued ops of its own (mpprof_scope_ops), and on each input ("it ends:
  back to the parent"; outermost wins, and a start wins over an end) when
  the parent did or the module is a root. Tensor hooks run on the autograd thread right before the node that
  consumes the gradient, so they `set` that thread's scope; no
  register_full_backward_hook (it breaks in-place ops in user modules).
  Where _marks (_marks.cpp) is built for this very torch, a mark is a C++
  pre-hook on grad_fn instead (the same moment, no interpreter lock, no
  Python tensor for the gradient); MPPROF_TORCH_MARKS=0 keeps Python hooks.
- torch.autograd.backward/grad open a "backward, no module" scope on the
  calling thread (and restore the caller's afterwards), wrapped by a C
  callable (_fast's AutogradCall: no frame of this file in the traceback of
  an error raised in backward); Optimizer.step opens
  an optimizer scope. A training step (mpprof_step) ends at
  GradScaler.update() while an enabled GradScaler is in use (all optimizers
  it steps, one update: one step), else at each Optimizer.step(), and, in a
  program that made no torch.optim.Optimizer, at the end of each backward
  pass (_backward_done; _step_ended is the one place); the next one starts
  with the next training work (_fast: a forward with grad, a backward, an
  optimizer step), step 0 with the first. GradScaler's scale and skipped
  steps go through mpprof_loss_scale / mpprof_step_skipped when libmpprof
  has them.
- While Dynamo traces, every hook returns at once.
- torch.distributed.init_process_group, once it returned, tells libmpprof
  the process group's rank (mpprof_rank), for launchers that set no RANK
  (torch.multiprocessing.spawn).
"""
import collections
import ctypes
import functools
import itertools
import math
import os
import struct
import sys
import threading
import weakref

OPTIMIZER = 3  # MPPROF_SCOPE_OPTIMIZER of mpprof.h (_fast.c has the module phases)
# Segments wrappers insert into qualified names: DDP/DataParallel ("module",
# leading only), FSDP, torch.compile, activation-checkpoint wrappers.
_WRAPPER_SEGMENTS = frozenset(("_fsdp_wrapped_module", "_orig_mod", "_checkpoint_wrapped_module"))

_installed = False
_lib = None
_push = _pop = _layer_id = None
_model_root = None  # mpprof_model_root, or None (a libmpprof.so without it)
_loss_scale = _step = _step_skipped = None
_compiling = None
_fast = None  # the C hot path (_fast.c), imported by install
_direct = False  # marks registered as Tensor.register_hook would, without its handle (bind)
_cxx = False  # marks are C++ pre-hooks on grad_fn (_marks.cpp), set by bind


def _log(msg):
    if os.environ.get("MPPROF_LOG", "0") not in ("", "0"):
        print("mpprof[%d]: %s" % (os.getpid(), msg), file=sys.stderr)


def _find_lib():
    """The libmpprof.so already in the process (preloaded by `mpprof run`), or None."""
    handles = []
    try:
        handles.append(ctypes.CDLL(None))
    except OSError:
        pass
    for var in ("NVTX_INJECTION64_PATH", "LD_PRELOAD"):
        for path in os.environ.get(var, "").split(":"):
            if path.endswith("libmpprof.so"):
                try:  # RTLD_NOLOAD: the copy already loaded, never a second one
                    handles.append(ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL))
                except OSError:
                    pass
    for h in handles:
        if hasattr(h, "mpprof_scope_push"):
            return h
    return None


def _fn(lib, name, restype, *argtypes):
    f = getattr(lib, name, None)
    if f is not None:
        f.restype = restype
        f.argtypes = argtypes
    return f


# --- per-thread state (what _fast does not keep) ---


class _Thread(threading.local):
    def __init__(self):
        self.opt_stepped = False
        self.in_step = False
        self.in_scaler = 0
        self.scaler = None  # the scaler whose step() runs (in_scaler)


_t = _Thread()

# --- names ---

_ids = {}  # id(module) -> (weakref to it, layer id[, base, name: an unregistered one's]); _fast reads it
_main_root = None  # weakref: the first root with children; its names carry no prefix
_main_class = None  # its class (_inner_class): a model made anew is of the same class
_opt_ids = {}  # id(optimizer) -> (weakref, layer id)
_lock = threading.Lock()
_lib_names = {}  # layer id -> name, for the fallback names of unregistered children


def _strip(qualname):
    parts = [p for p in qualname.split(".") if p and p not in _WRAPPER_SEGMENTS]
    if parts and parts[0] == "module":
        parts = parts[1:]
    return ".".join(parts)


def _inner_class(module):
    """The class a wrapper stands for (DDP(Net) -> Net)."""
    seen = 0
    while seen < 8:
        inner = None
        for attr in ("module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"):
            m = module.__dict__.get("_modules", {}).get(attr)
            if m is not None:
                inner = m
                break
        if inner is None:
            break
        module, seen = inner, seen + 1
    return type(module).__name__


def _label(module, qualname, prefix):
    name = _strip(qualname)
    if not name:  # the root itself (or a wrapper's inner module): the main one's class,
        return prefix[:-1] or _inner_class(module)  # another's name ("Head_2", not "Head")
    return prefix + name


_root_prefix = weakref.WeakKeyDictionary()  # a root model -> the prefix its names carry ("": the main one's)
_bare_names = weakref.WeakKeyDictionary()  # a root without children -> its name
_slots = {}  # the name of a root (its prefix, a bare root's name) -> its slot in _fast's calls of roots
_slot_numbers = itertools.count()


def _slot(name):
    slot = _slots.get(name)
    if slot is None:
        slot = _slots[name] = next(_slot_numbers)
    return slot


def _taken(name, gen):
    """Whether another root model holds name now: a root of that name was
    called in this training step (the step the last training work started),
    or, for a root called inside another's forward (gen: that root
    forward), at the top of a thread in this step or at all in gen. By the
    calls alone: a name is never held by a module because the garbage
    collector has not freed it yet (a model made anew in every step, a
    container made in every forward), so the same program gives the same
    names in every run. A program that marks no step (no backward pass, no
    optimizer) is one step: each new root of a class takes a new name."""
    calls = _fast.root_calls(_slots[name]) if name in _slots else None
    if calls is None:
        return False
    step, top, any_, last_gen = calls
    return any_ == step if gen is None else (top == step or last_gen == gen)


def _numbered(base, gen, suffix=""):
    """base + suffix, or base_N + suffix with the first N from 2 that makes a
    name no other root model holds (_taken)."""
    name, n = base + suffix, 1
    while _taken(name, gen):
        n += 1
        name = "%s_%d%s" % (base, n, suffix)
    return name


def _name_root(root, gen=None):
    """Name every module under a newly seen root; gen: the root forward it
    is called in, where it is called inside another root's forward (a
    container made in forward, a model kept out of the module tree)."""
    global _main_root, _main_class
    children = list(root.named_modules())
    main = _main_root() if _main_root is not None else None
    prefix = bare = None
    if len(children) > 1:
        prefix = _root_prefix.get(root)
        if prefix is None:
            # the main model: the first, one that holds it (DDP(model)), or,
            # at the top of a thread, a new one of its class where the last
            # was not called in this step (the model made anew): its names
            # carry no prefix. One of another class called before it in a
            # step (a teacher made late) is another model: it took the
            # main one's names, and their layers were one.
            if (_main_root is None or any(m is main for _, m in children)
                    or (gen is None and not _taken("", None)
                        and _inner_class(root) == _main_class)):
                _main_root, _main_class, prefix = weakref.ref(root), _inner_class(root), ""
            else:  # D and an EMA copy of G, both Sequential, stay apart
                prefix = _numbered(_inner_class(root), gen, ".")
            _root_prefix[root] = prefix
            _note_model(prefix[:-1], root)
        slot = _slot(prefix)
    else:  # a bare root (a layer used as a model): its class, numbered from the second
        bare = _bare_names.get(root)
        if bare is None:
            bare = _bare_names[root] = _numbered(_inner_class(root), gen)
            _note_model(bare, root)
        slot = _slot(bare)
    _fast.root_called(slot, gen is not None, gen or 0)
    for qualname, m in children:
        ent = _ids.get(id(m))
        if ent is not None and ent[0]() is m:
            # named already, as a model of its own (m.decoder(m.encoder(x))
            # before m(x)): its first name stays, one layer all the run
            lid = ent[1]
        else:
            name = _label(m, qualname, prefix) if bare is None else bare
            lid = _layer_id(name.encode(), type(m).__name__.encode())
            _lib_names[lid] = name
        if ent is None or ent[0]() is not m or (m is root and len(ent) == 2):
            # the root's own calls are noted in its name's slot (_fast.pre)
            _ids[id(m)] = (weakref.ref(m), lid, slot) if m is root else (weakref.ref(m), lid)


def _note_model(name, root):
    """Tell libmpprof.so that layers named name + "." + a path are root's
    modules (name "": the main model's), so that the plan's keep_in() lines
    name the model each layer is in."""
    if _model_root is not None:
        _model_root(name.encode("utf-8", "replace"), _inner_class(root).encode("utf-8", "replace"))


def _forward_owner(module):
    """The innermost module whose forward runs on this thread without its
    __call__ (`self.forward(x)` in a Lightning-style training_step,
    `model.forward(x)`), so no hook saw it, and that holds module; None when
    there is none. Its children are then named in it, as they would be had it
    been called: not module taken for a model of its own."""
    f = sys._getframe(1)
    for _ in range(64):
        if f is None:
            break
        if f.f_code.co_name == "forward" and "self" in f.f_code.co_varnames:
            owner = f.f_locals.get("self")
            if (owner is not module and isinstance(owner, _Module)
                    and any(m is module for m in owner.modules())):
                return owner
        f = f.f_back
    return None


class _Unregistered(threading.local):
    """This thread's root forward (gen: _fast's generation) and the modules
    called in it that are not in a model (_unregistered_layer)."""

    def __init__(self):
        self.gen = None
        self.called = {}  # id(module) -> (weakref, layer id): called in this root forward
        self.used = set()  # the names of the modules called in this root forward


_u = _Unregistered()
_unregistered_lids = {}  # (name, class) -> layer id


def _unregistered_layer(module, base, gen):
    """Layer id of a module that a model's forward calls but that is not one
    of its modules (layers kept in a plain list, a module made anew in every
    forward): the name it had in the last forward that called it, unless a
    module called before it in this root forward (gen) took it; else the
    first of base (parent.Class), base_2, base_3, ... that none has taken in
    it. A module called again in it keeps its layer. By the calls alone, so
    the same forwards give the same names in every run: numbering by the
    live modules made a module made anew in every forward base_2, base_3,
    ... or base, as the garbage collector had or had not freed the last
    one."""
    u = _u
    if u.gen != gen:
        u.gen, u.called, u.used = gen, {}, set()
    ent = u.called.get(id(module))
    if ent is not None and ent[0]() is module:
        return ent[1]
    ent = _ids.get(id(module))
    name = ent[3] if ent is not None and len(ent) == 4 and ent[0]() is module else None
    if name is None or name in u.used:
        name, n = base, 1
        while name in u.used:
            n += 1
            name = "%s_%d" % (base, n)
    u.used.add(name)
    cls = type(module).__name__
    lid = _unregistered_lids.get((name, cls))
    if lid is None:
        lid = _unregistered_lids[(name, cls)] = _layer_id(name.encode(), cls.encode())
        _lib_names[lid] = name
    ref = weakref.ref(module)
    u.called[id(module)] = (ref, lid)
    # more than 2 items: _fast takes it for a miss, so that every call comes here
    _ids[id(module)] = (ref, lid, base, name)
    return lid


def _resolve(module, root, parent, gen):
    """Layer id of a module not named yet (_fast calls this on a miss of
    _ids): root and parent are the outermost and innermost modules whose
    forward runs on this thread, or None; gen numbers the root forward."""
    with _lock:
        ent = _ids.get(id(module))
        if root is not None and ent is not None and len(ent) == 4 and ent[0]() is module:
            return _unregistered_layer(module, ent[2], gen)
        if root is not None:  # added to a known model after it was named, or not registered as a child
            _name_root(root)
            ent = _ids.get(id(module))
            if ent is not None and ent[0]() is module:
                return ent[1]
            if next(iter(module.children()), None) is not None:
                # a model of its own (a teacher kept out of the module tree):
                # named as it is when called by itself, its parts apart
                _name_root(module, gen)
                ent = _ids.get(id(module))
                if ent is not None and ent[0]() is module:
                    return ent[1]
            pent = _ids.get(id(parent))
            pname = _lib_names.get(pent[1]) if pent else None
            return _unregistered_layer(module, (pname + "." if pname else "") + type(module).__name__, gen)
        owner = _forward_owner(module)
        _name_root(owner if owner is not None else module)
        ent = _ids.get(id(module))
        if ent is not None and ent[0]() is module:
            return ent[1]
        name = type(module).__name__
        lid = _layer_id(name.encode(), type(module).__name__.encode())
        _ids[id(module)] = (weakref.ref(module), lid)
        _lib_names[lid] = name
        return lid


# --- forward and backward marks: _fast.c (pre, post, MarkHook) ---


def _tensors(obj, depth=0):
    if isinstance(obj, _Tensor):
        yield obj
    elif depth < 2:
        if isinstance(obj, (tuple, list)):
            for x in obj:
                yield from _tensors(x, depth + 1)
        elif isinstance(obj, dict):
            for x in obj.values():
                yield from _tensors(x, depth + 1)


# --- backward, optimizer, steps ---

_roots_hooked = weakref.WeakSet()


def _backward_roots(args, kwargs):
    """What torch.autograd.backward/grad do under mpprof before the real
    call (_fast's AutogradCall runs it, then the call in a "backward, no
    module" scope): the C++ marks' check on the first one, and the roots
    marked so that autograd threads start the graph with "backward, no
    module" (unless a module's output mark already names it). It returns
    before the call, so no frame of it is in a traceback the call raises."""
    if _unconfirmed is not None:  # the engine starts now anyway
        _confirm_cxx_marks()
    kwargs = kwargs or {}
    roots = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
    try:  # a tensor subclass's __torch_function__ does not see these reads
        with _no_torch_function():
            for x in _tensors(roots):
                if (x.requires_grad and x.grad_fn is not None and x._backward_hooks is None
                        and not _fast.cxx_marks(x) and x not in _roots_hooked):
                    _fast.mark_root(x)
                    _roots_hooked.add(x)
    except Exception:
        pass


def _wrap_autograd(fn, post=None):
    """fn (torch.autograd.backward or grad) called by a C callable
    (_fast.wrap_autograd), not a Python function: an exception raised inside
    the backward (torch's in-place-modification error) has the program's
    own traceback, where a Python wrapper added a frame of this file; post()
    runs after a backward pass (_fast: once no other such call runs). It
    carries what functools.wraps gives (__wrapped__, __name__, __qualname__,
    __doc__, __module__: inspect.signature, help, pickling by name) and
    `_mpprof`."""
    run_backward = _fast.wrap_autograd(fn, _backward_roots, post)
    functools.update_wrapper(run_backward, fn)
    run_backward._mpprof = True
    return run_backward


def _script_as_builtins(torch):
    """TorchScript compiles torch.autograd.grad and backward as the ops
    aten::grad and aten::backward, found by the functions' identity: the
    wrappers are registered as those ops too, else scripted code that calls
    them (force fields, gradient penalties) fails to compile under mpprof
    (the wrapper read as Python source). Scripted code runs the ops without
    the wrapper's marks."""
    try:
        from torch.jit import _builtins
        _builtins._register_builtin(torch.autograd.grad, "aten::grad")
        _builtins._register_builtin(torch.autograd.backward, "aten::backward")
    except Exception as e:
        _log("TorchScript builtins not registered (%r): scripted autograd.grad may not compile" % (e,))


_step_n = 0


def _step_ended(skipped):
    """Step n ends (skipped: its update was skipped for non-finite
    gradients); n+1 starts with the next training work (a forward with grad,
    a backward, an optimizer step: _fast.step_next), so an evaluation after
    the last step stays in it and no step that never ran is marked. Called
    (through _Updaters) by GradScaler.update() while an enabled scaler is in
    use (_scaler_in_use), else by Optimizer.step(), and, in a program that
    made no optimizer, by the end of a backward pass (_backward_done): the
    one definition of a step. Step 0 starts with the run's first training work (bind)."""
    global _step_n
    with _lock:
        n = _step_n
        _step_n += 1
    if skipped and _step_skipped is not None:
        _step_skipped(n)
    _fast.step_next(n + 1, _step)


_optimizer_made = False  # a torch.optim.Optimizer was made: its step() (or a scaler's update()) ends steps


def _backward_done():
    """A backward pass (torch.autograd.backward, loss.backward()) has
    returned, none other running: in a program that made no
    torch.optim.Optimizer (inference with gradients, a manual SGD update
    under no_grad) it ends a step, the one definition of a step there.
    Without it, every op of such a training loop was at step 0, and
    `--steps 1:2` never opened. A program that makes its optimizer after
    some backward passes counts those, then its optimizer's steps."""
    if not _optimizer_made and not _scaler_in_use():
        _step_ended(False)


def _optimizer_layer(opt):
    ent = _opt_ids.get(id(opt))
    if ent is not None and ent[0]() is opt:
        return ent[1]
    with _lock:
        name = "optimizer" if not _opt_ids else "optimizer.%d" % len(_opt_ids)
        lid = _layer_id(name.encode(), type(opt).__name__.encode())
        _opt_ids[id(opt)] = (weakref.ref(opt), lid)
    return lid


def _wrap_step(step):
    @functools.wraps(step)
    def mpprof_step(self, *args, **kwargs):
        t = _t
        t.opt_stepped = True
        if t.in_step:  # a subclass's step calling super().step(): one step
            return step(self, *args, **kwargs)
        t.in_step = True
        _fast.scope_enter(_optimizer_layer(self), OPTIMIZER, _update_starts_step(self))
        try:
            return step(self, *args, **kwargs)
        finally:
            try:  # (it raises what a signal handler raised in mpprof's helpers)
                _fast.scope_exit()  # (and module frames a raising closure left)
            finally:
                t.in_step = False
                if not t.in_scaler and not _scaler_in_use():  # else the scaler's update() ends it
                    _optimizer_updates.updated(self, False)

    mpprof_step._mpprof = True
    return mpprof_step


def _patch_optimizer(torch):
    Optimizer = torch.optim.Optimizer
    init = Optimizer.__init__

    @functools.wraps(init)
    def mpprof_init(self, *args, **kwargs):
        global _optimizer_made
        init(self, *args, **kwargs)
        _optimizer_made = True
        cls = type(self)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_mpprof", False):
            cls.step = _wrap_step(step)

    Optimizer.__init__ = mpprof_init


# --- GradScaler: the scale in force, replayed on the host (no device sync) ---
#
# The scale only changes in update(): backoff when some optimizer unscaled
# since the last update found an inf (update() combines the found_inf of
# every optimizer in _per_optimizer_states), growth after growth_interval
# clean steps, as torch._amp_update_scale_ does, in float32; and in
# load_state_dict (a resumed or rolled-back scaler). An optimizer stepped
# through scaler.step found an inf when the scaler did not call its step (the
# scaler has synced to decide); one only unscaled (unscale_, then the loop
# skipped scaler.step itself) has its found_inf read in update(), a sync
# where it is on the device (the loop that skipped has just synced to decide).
# A skip happening inside a fused optimizer (_step_supports_amp_scaling),
# update(new_scale=<tensor>), or a found_inf that cannot be read, cannot be
# followed: that scaler is then no longer fed.


def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class _ScaleState:
    __slots__ = ("scale", "tracker", "reliable", "found_inf", "stepped")

    def __init__(self, scaler):
        self.scale = _f32(float(scaler._init_scale))
        self.tracker = int(scaler._init_growth_tracker)
        self.reliable = True
        self.found_inf = False
        self.stepped = set()  # id() of the optimizers stepped through scaler.step since the last update


def _unstepped_found_inf(scaler, stepped):
    """Whether an optimizer unscaled but not stepped through scaler.step
    since the last update found an inf, as update() is about to read it from
    the scaler's per-optimizer state; None where that state is not what
    torch's GradScaler keeps (1.13 to 2.x: {"found_inf_per_device": {device:
    tensor}} per id(optimizer))."""
    states = getattr(scaler, "_per_optimizer_states", None)
    if not isinstance(states, dict):
        return None
    found = False
    try:
        for key, state in list(states.items()):
            if key in stepped:
                continue
            per_device = state.get("found_inf_per_device") if isinstance(state, dict) else None
            if not isinstance(per_device, dict):
                return None
            if sum(v.item() for v in per_device.values()):
                found = True
    except Exception as e:
        _log("GradScaler's found_inf not read (%r): its scale is no longer fed" % (e,))
        return None
    return found


_scalers = weakref.WeakKeyDictionary()


_declared = None  # the scale last declared (mpprof_loss_scale), process-wide


def _declare(st):
    """The scale st replays is in force from now on (when it is known)."""
    global _declared
    if st.reliable and _loss_scale is not None:
        _loss_scale(st.scale)
        _declared = st.scale


class _Updaters:
    """One step per update of the primary updater (the first to update; one
    updating twice within a step takes over from one no longer used): with
    one scaler (or optimizer), each update; with one per part of the model
    (scaler_d and scaler_g; an optimizer per parameter kind, Muon and AdamW;
    a GAN's two optimizers without a scaler), one per iteration, the others'
    skipped steps counting in the step in progress."""

    def __init__(self):
        self.primary = None  # weakref
        self.since = weakref.WeakSet()  # the others that updated since the last step end
        self.skipped = False

    def ends(self, who):
        """Whether who's next update ends a step (updated's rule)."""
        p = self.primary() if self.primary is not None else None
        return p is None or p is who or who in self.since

    def updated(self, who, skipped):
        if self.ends(who):
            self.primary = weakref.ref(who)
        p = self.primary()
        self.skipped = self.skipped or skipped
        if p is who:
            skipped, self.skipped = self.skipped, False
            self.since.clear()
            _step_ended(skipped)
        else:
            self.since.add(who)


_scaler_updates = _Updaters()  # GradScaler.update() while an enabled scaler is in use
_optimizer_updates = _Updaters()  # Optimizer.step() otherwise


def _update_starts_step(optimizer):
    """Whether optimizer.step(), about to run, is training work that starts
    the next step when the last one has ended and none began since: only
    when its update ends a step (_Updaters.ends). Another updater's (the
    second of two optimizers stepped back to back, Muon's and AdamW's; a
    second scaler's step; an optimizer stepped outside the scaler in use)
    belongs to the step in progress, or to the one the first just ended."""
    t = _t
    if t.in_scaler:
        return _scaler_updates.ends(t.scaler)
    if _scaler_in_use():
        return False
    return _optimizer_updates.ends(optimizer)


def _scaler_in_use():
    """An enabled GradScaler has scaled a loss (its state is made then): its
    update() ends the steps, and optimizer steps do not."""
    return len(_scalers) > 0


def _scaler_state(scaler, create):
    st = _scalers.get(scaler)
    if st is None and create:
        st = _scalers[scaler] = _ScaleState(scaler)
        _declare(st)
    return st


def _patch_scaler(cls):
    d = cls.__dict__

    if "_lazy_init_scale_growth_tracker" in d:
        lazy = d["_lazy_init_scale_growth_tracker"]

        @functools.wraps(lazy)
        def mpprof_lazy_init(self, *args, **kwargs):
            r = lazy(self, *args, **kwargs)
            _scalers.pop(self, None)  # (re)starts from _init_scale (also after load_state_dict)
            _scaler_state(self, True)
            return r

        cls._lazy_init_scale_growth_tracker = mpprof_lazy_init

    if "load_state_dict" in d:
        load = d["load_state_dict"]

        @functools.wraps(load)
        def mpprof_load_state_dict(self, *args, **kwargs):
            r = load(self, *args, **kwargs)
            # It sets _init_scale / _init_growth_tracker and refills a scale
            # already made (a scaler in use: no lazy init follows): the replay
            # restarts from the loaded values now.
            if getattr(self, "_enabled", False) and getattr(self, "_scale", None) is not None:
                _scalers.pop(self, None)
                _scaler_state(self, True)
            return r

        cls.load_state_dict = mpprof_load_state_dict

    if "scale" in d:
        scale = d["scale"]

        @functools.wraps(scale)
        def mpprof_scale(self, outputs):
            r = scale(self, outputs)
            # the gradients of this loss carry this scaler's scale: with one
            # scaler per optimizer, each backward's own (one scaler: already so)
            st = _scalers.get(self) if getattr(self, "_enabled", False) else None
            if st is not None and st.scale != _declared:
                _declare(st)
            return r

        cls.scale = mpprof_scale

    if "step" in d:
        step = d["step"]

        @functools.wraps(step)
        def mpprof_scaler_step(self, optimizer, *args, **kwargs):
            t = _t
            if not getattr(self, "_enabled", False) or t.in_scaler:
                return step(self, optimizer, *args, **kwargs)
            st = _scaler_state(self, True)
            t.opt_stepped = False
            t.in_scaler += 1
            t.scaler = self
            try:
                r = step(self, optimizer, *args, **kwargs)
            finally:
                t.in_scaler -= 1
                t.scaler = None
            if getattr(optimizer, "_step_supports_amp_scaling", False):
                st.reliable = False
            if not t.opt_stepped:  # this optimizer's step was skipped: update() backs off
                st.found_inf = True
            st.stepped.add(id(optimizer))
            return r

        cls.step = mpprof_scaler_step

    if "update" in d:
        update = d["update"]

        @functools.wraps(update)
        def mpprof_scaler_update(self, new_scale=None):
            t = _t
            if not getattr(self, "_enabled", False) or t.in_scaler:
                return update(self, new_scale)
            st = _scaler_state(self, True)
            unstepped = None if new_scale is not None else _unstepped_found_inf(self, st.stepped)
            st.stepped.clear()
            t.in_scaler += 1
            try:
                r = update(self, new_scale)
            finally:
                t.in_scaler -= 1
            if unstepped is None and new_scale is None:
                st.reliable = False
            st.found_inf = st.found_inf or bool(unstepped)
            if new_scale is not None:
                if isinstance(new_scale, (int, float)):
                    st.scale = _f32(float(new_scale))
                else:
                    st.reliable = False
            elif st.found_inf:
                st.scale = _f32(st.scale * self._backoff_factor)
                st.tracker = 0
            else:
                st.tracker += 1
                if st.tracker == self._growth_interval:
                    grown = _f32(st.scale * self._growth_factor)
                    if math.isfinite(grown):
                        st.scale = grown
                    st.tracker = 0
            skipped, st.found_inf = st.found_inf, False
            _declare(st)  # before the next step starts: it runs under this scale
            _scaler_updates.updated(self, skipped)
            return r

        cls.update = mpprof_scaler_update


# --- install ---


def _compiling_fn(torch):
    compiler = getattr(torch, "compiler", None)
    fn = getattr(compiler, "is_compiling", None)
    if fn is not None:
        return fn
    if hasattr(torch, "compile"):  # 2.0-2.2: torch._dynamo.is_compiling once Dynamo is loaded

        def dynamo_compiling():
            d = sys.modules.get("torch._dynamo")
            f = getattr(d, "is_compiling", None)
            return f() if f is not None else False

        return dynamo_compiling
    return None  # before 2.0: no Dynamo


class _HookProtocol:
    """A stand-in tensor that records what Tensor.register_hook does to it."""

    requires_grad = True

    def __init__(self):
        self._backward_hooks = None
        self.grad_fn = self
        self.dicts = []  # what grad_fn._register_hook_dict was handed, and _backward_hooks then

    def _register_hook_dict(self, tensor):
        self.dicts.append((tensor, tensor._backward_hooks))


def _direct_registration_works(torch):
    """_fast registers marks the way this torch's Tensor.register_hook does
    (an OrderedDict set as _backward_hooks, handed to grad_fn once, the hook
    an item of it): check that register_hook does just that, on a stand-in,
    before relying on it. No autograd runs here (bind runs while torch is
    imported: see _confirm_cxx_marks)."""
    x = _HookProtocol()
    hook = lambda g: None  # noqa: E731
    try:
        torch.Tensor.register_hook(x, hook)
    except Exception as e:
        _log("direct hook registration unavailable (%r): using Tensor.register_hook" % (e,))
        return False
    d = x._backward_hooks
    return (type(d) is collections.OrderedDict and list(d.values()) == [hook]
            and len(x.dicts) == 1 and x.dicts[0][0] is x and x.dicts[0][1] is d)


def _marks_torch(torch):
    """This torch as _marks.torch.json names the one _marks was built for."""
    # str(): comparing a TorchVersion imports packaging (or pkg_resources)
    return {"file": os.path.realpath(torch.__file__), "version": str(torch.__version__),
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI)}


def _marks_cache_dir(ident):
    """Where `python3 -m mpprof_torch.build` puts _marks for the torch
    `ident` names (_marks_torch), and where it is looked for:
    $MPPROF_CACHE_DIR, else $XDG_CACHE_HOME/mpprof, else ~/.cache/mpprof."""
    import hashlib
    import json
    base = os.environ.get("MPPROF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mpprof")
    key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(base, "torch-marks", key)


def _find_marks(this):
    """The file of a _marks built for this very torch (`this`, from
    _marks_torch): mpprof's own (built with it, against the machine's
    torch), else one `python3 -m mpprof_torch.build` made; None when
    neither matches (a C++ extension holds to one torch's ABI: one built for
    another is never imported)."""
    import glob
    import json
    for d in (os.path.dirname(os.path.abspath(__file__)), _marks_cache_dir(this)):
        try:
            with open(os.path.join(d, "_marks.torch.json")) as f:
                built = json.load(f)
        except (OSError, ValueError):
            continue
        if built != this:
            _log("C++ backward marks in %s are for another torch (%r)" % (d, built))
            continue
        found = sorted(glob.glob(os.path.join(d, "_marks*.so")))
        if found:
            return found[0]
    return None


def _cxx_marks(torch):
    """Marks as C++ pre-hooks (_marks.cpp) where a _marks built for this
    very torch is found; otherwise False, and the marks stay Python tensor
    hooks. Whether a mark runs in backward is checked on the program's first
    backward (_confirm_cxx_marks)."""
    global _unconfirmed
    if os.environ.get("MPPROF_TORCH_MARKS", "1") == "0":
        _log("C++ backward marks off (MPPROF_TORCH_MARKS=0): Python tensor hooks")
        return False
    try:
        path = _find_marks(_marks_torch(torch))
    except Exception as e:
        path = None
        _log("C++ backward marks: %r" % (e,))
    if path is None:
        _log("no C++ backward marks for this torch (`python3 -m mpprof_torch.build` makes them): "
             "Python tensor hooks")
        return False
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location(__package__ + "._marks", path)
        marks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(marks)
        _fast.set_marks(marks.api(_fast.api()))
    except Exception as e:
        _log("C++ backward marks unavailable (%r): Python tensor hooks" % (e,))
        return False
    _unconfirmed = (torch, marks)
    _log("C++ backward marks from %s" % path)
    return True


_unconfirmed = None  # (torch, _marks) until the first backward has checked that a mark runs
_confirm_lock = threading.Lock()
_real_grad = None  # torch.autograd.grad, not wrapped
_note_marks = None  # tells libmpprof.so which marks are in use (install)


def _confirm_cxx_marks():
    """The start-up check of the C++ marks: a probe mark runs in backward.
    Run by the first torch.autograd.backward/grad, before it: any autograd
    run starts torch's autograd device threads (Engine::start_device_threads:
    the device count, which initialises CUDA, and the fork check that fails a
    forked child's first backward), so not at import, where a program that
    forks workers has not started them. Where it fails, the marks are Python
    tensor hooks from now on (the C++ marks placed until then are inert)."""
    global _unconfirmed, _cxx
    with _confirm_lock:
        if _unconfirmed is None:
            return
        (torch, marks), _unconfirmed = _unconfirmed, None
        try:
            inference = getattr(torch, "inference_mode", None)
            with torch.enable_grad(), (inference(False) if inference is not None else torch.enable_grad()):
                x = torch.ones(1, device="cpu", requires_grad=True)
                y = x * 2
                before = marks.probes()
                marks.probe(y)
                _real_grad(y.sum(), x)
            ran = marks.probes() == before + 1
        except Exception as e:
            _log("C++ backward mark check failed (%r)" % (e,))
            ran = False
        if ran:
            return
        _fast.set_marks(None)
        _cxx = False
        _log("C++ backward mark did not run in backward: Python tensor hooks")
        if _note_marks is not None:
            _note_marks()


def _module_hooks(compiling):
    """The global forward pre/post hooks: _fast's C functions, or, where
    torch has Dynamo (compiling is its is_compiling), Python hooks that it
    can trace: is_compiling() is True while it traces, so the hook does
    nothing and leaves no call to a C function (one it cannot trace) in the
    graph."""
    fast_pre, fast_post = _fast.pre, _fast.post
    if compiling is None:
        return fast_pre, fast_post

    def pre(module, args):
        if compiling():
            return None
        return fast_pre(module, args)

    def post(module, args, *kwargs_output):  # (kwargs,) output: registered with_kwargs
        if compiling():
            return None
        return fast_post(module, args, *kwargs_output)

    return pre, post


_TAIL_KEY = -1000  # a module's _forward_hooks key of the tail: no handle has a negative id


def _dead():
    return None


class _HookTail:
    """The last of a module's own forward hooks, after the program's: the
    module's call ends there (_fast.tail), so what the program's forward
    hooks run (a LoRA adapter called from a hook, an op) is the module's:
    torch runs them after the global post-hook, where it had ended. One
    object, appended by register_forward_hook (_patch_forward_hooks). A
    copy of a module keeps it; a pickled one gets a no-op that needs no
    mpprof to load (sys.audit, an event nobody listens to)."""

    __slots__ = ("_call",)

    def __init__(self, call):
        self._call = call

    def __call__(self, module, args, output):
        return self._call(module, args, output)

    def __reduce__(self):
        return functools.partial(sys.audit, "mpprof_torch.forward_hooks_end").__reduce__()

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _patch_forward_hooks(torch, compiling):
    """Module.register_forward_hook, then the tail moved after the hook it
    registered (its prepend puts that first: the tail stays last), run when
    forward raises too where torch has always_call (2.1+). Only modules with
    a forward hook of the program's get one: the others' calls cost nothing
    more."""
    fast_tail = _fast.tail
    if compiling is None:
        call = fast_tail
    else:
        def call(module, args, output):  # nothing while Dynamo traces (_module_hooks)
            if compiling():
                return None
            return fast_tail(module, args, output)
    tail = _HookTail(call)
    tailed = {}  # id(module) -> weakref: the modules given the tail (_fast.pre reads it)
    real = torch.nn.Module.register_forward_hook
    if getattr(real, "_mpprof", False):
        return

    @functools.wraps(real)
    def register_forward_hook(self, *args, **kwargs):
        handle = real(self, *args, **kwargs)
        try:
            hooks = self.__dict__.get("_forward_hooks")
            if isinstance(hooks, dict):
                hooks.pop(_TAIL_KEY, None)
                hooks[_TAIL_KEY] = tail
                always = self.__dict__.get("_forward_hooks_always_called")
                if isinstance(always, dict):
                    always[_TAIL_KEY] = True
                key = id(self)
                if tailed.get(key, _dead)() is not self:
                    tailed[key] = weakref.ref(self, lambda ref, key=key: tailed.get(key) is ref and tailed.pop(key))
                _fast.set_tail(tail, _TAIL_KEY, tailed)
        except Exception as e:  # never the program's problem: its hooks' ops stay its parent's
            _log("forward hook's end not marked (%r)" % (e,))
        return handle

    register_forward_hook._mpprof = True
    torch.nn.Module.register_forward_hook = register_forward_hook


def _root_frames(torch):
    """For a torch whose post-hook does not run when forward raises: the
    frame of each thread's root module call (Module._call_impl's), kept
    while it runs, so that _fast can tell frames an exception left (the
    call is over, the loop caught it) from a call inside that root."""
    code = getattr(torch.nn.Module, "_call_impl", None)
    code = getattr(code, "__code__", None)
    if code is None:
        return None
    local = threading.local()

    def begins():
        f = sys._getframe(1)
        for _ in range(4):  # (under the Python hooks of a torch with Dynamo: one frame more)
            if f is None or f.f_code is code:
                break
            f = f.f_back
        local.frame = f if f is not None and f.f_code is code else None

    def ends():
        local.frame = None  # (a finished frame would keep the call's tensors)

    def live():
        root = getattr(local, "frame", None)
        if root is None:
            return True  # unknown: the frames stay
        f = sys._getframe(1)
        while f is not None:
            if f is root:
                return True
            f = f.f_back
        local.frame = None
        return False

    return begins, ends, live


def _call_kwargs(torch):
    """For a torch whose global forward hook is not given the keyword
    arguments (before 2.6): ((code, name of its **kwargs), ...) of
    Module._call_impl, which calls the hooks, and of the closure in it that
    does so (2.2+), for _fast to read a call's keyword arguments there."""
    code = getattr(getattr(torch.nn.Module, "_call_impl", None), "__code__", None)
    if code is None or not code.co_flags & 0x08:  # CO_VARKEYWORDS: a **kwargs
        return None
    name = code.co_varnames[code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)]
    return ((code, name),) + tuple((c, name) for c in code.co_consts
                                   if type(c) is type(code) and name in c.co_freevars)


def _register_module_hooks(torch, pre, post):
    """The global forward hooks, with what this torch gives them: the
    keyword arguments (2.6+; before, _fast reads them from _call_impl's
    frame), and a post-hook run when forward raises (2.1+; before,
    _fast follows the root calls)."""
    mm = torch.nn.modules.module
    handles = [mm.register_module_forward_pre_hook(pre)]
    try:
        handles.append(mm.register_module_forward_hook(post, with_kwargs=True, always_call=True))
        _fast.kwargs_from(None)
        _fast.follow_roots(None)
        return handles
    except TypeError:
        _fast.kwargs_from(_call_kwargs(torch))
    try:
        handles.append(mm.register_module_forward_hook(post, always_call=True))
        _fast.follow_roots(None)
    except TypeError:
        handles.append(mm.register_module_forward_hook(post))
        _fast.follow_roots(_root_frames(torch))
    return handles


def _give_back_handle_ids(torch, next_id, handles):
    """RemovableHandle's id counter (one for all of torch's hook dicts) back
    at next_id, what it was before bind registered anything: the program's
    handles get the ids they get without mpprof (a program may print or
    keep them). handles are mpprof's global module hooks: each is moved to
    a negative key, which no handle has, in every dict of torch's global
    module hooks that holds it (and the dicts of its options, 2.x's
    _global_forward_hooks_always_called, _with_kwargs), so that no id the
    program's handles get again meets it: the program's global hook is
    never put in its place, nor does its handle remove it."""
    try:
        mm = torch.nn.modules.module
        dicts = [d for name, d in vars(mm).items() if name.startswith("_global_") and isinstance(d, dict)]
        for n, h in enumerate(handles):
            key = -1 - n
            for d in dicts:
                if h.id in d:
                    d[key] = d.pop(h.id)
            h.id = key
        torch.utils.hooks.RemovableHandle.next_id = next_id
    except Exception as e:  # the program's handle ids are then 2 or 3 more than without mpprof
        _log("hook handle ids not given back (%r)" % (e,))


def bind(torch, push, pop, set_, layer_id, loss_scale=None, step=None, step_skipped=None, ops=None,
         model_root=None):
    """Install the hooks on top of these scope functions: push, pop, set_
    and ops are ctypes function pointers (libmpprof.so's, or a test's
    stand-ins); without ops, every module's backward is marked."""
    global _push, _pop, _layer_id, _loss_scale, _step, _step_skipped, _model_root
    global _compiling, _Tensor, _Module, _direct, _cxx, _real_grad, _no_torch_function
    _push, _pop, _layer_id, _model_root = push, pop, layer_id, model_root
    _loss_scale, _step, _step_skipped = loss_scale, step, step_skipped
    _Tensor = torch.Tensor
    _Module = torch.nn.Module
    # torch >= 2.0 turns off subclasses' dispatch only (modes stay on); older
    # torch has only the switch of all of it (a TorchFunctionMode too, for
    # these reads)
    _no_torch_function = getattr(torch._C, "DisableTorchFunctionSubclass", None) or \
        torch._C.DisableTorchFunction
    _compiling = _compiling_fn(torch)
    addr = [ctypes.cast(f, ctypes.c_void_p).value if f is not None else None for f in (push, pop, set_, ops)]
    _fast.init(addr[0], addr[1], addr[2], addr[3], torch.Tensor, torch.is_grad_enabled, _resolve, _log,
               _ids, collections.OrderedDict)
    _fast.hide_reads(_no_torch_function)
    next_id = getattr(getattr(torch.utils, "hooks", None), "RemovableHandle", None)
    next_id = getattr(next_id, "next_id", None)
    _direct = _direct_registration_works(torch)
    _fast.set_direct(_direct)
    _fast.set_marks(None)
    _cxx = _cxx_marks(torch)
    _log("backward marks: %s" % ("C++ pre-hooks on grad_fn" if _cxx else "Python tensor hooks"))
    handles = _register_module_hooks(torch, *_module_hooks(_compiling))
    _patch_forward_hooks(torch, _compiling)
    if isinstance(next_id, int):
        _give_back_handle_ids(torch, next_id, handles)
    _fast.step_next(_step_n, step)  # the first training work starts step 0
    _real_grad = torch.autograd.grad
    torch.autograd.backward = _wrap_autograd(torch.autograd.backward, _backward_done)
    torch.autograd.grad = _wrap_autograd(torch.autograd.grad)
    _script_as_builtins(torch)
    _patch_optimizer(torch)
    seen = set()
    for modname in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
        try:
            __import__(modname)
            cls = getattr(sys.modules[modname], "GradScaler")
        except Exception:
            continue
        if cls not in seen:
            seen.add(cls)
            _patch_scaler(cls)


def _checkpoint_before_os_exit(checkpoint):
    """os._exit() ends the process without exit handlers, C or Python: a
    multiprocessing child started by fork (mp.Process, Hogwild workers)
    always ends so, and a program may. The raw file is written first, final
    (mpprof_exit_now; a checkpoint from a libmpprof.so without it); a forked
    child that never used CUDA writes none."""
    real = os._exit
    if getattr(real, "_mpprof", False):
        return

    @functools.wraps(real)
    def _exit(*args, **kwargs):
        try:
            checkpoint()
        finally:
            real(*args, **kwargs)

    _exit._mpprof = True
    os._exit = _exit


def _tell_rank(dist, note_rank):
    """The default process group's rank and size, to libmpprof (mpprof_rank)."""
    try:
        if dist.is_initialized():
            note_rank(dist.get_rank(), dist.get_world_size())
    except Exception as e:  # never break the program
        _log("rank not known: %r" % (e,))


def _patch_distributed(torch, note_rank):
    """torch.distributed.init_process_group tells libmpprof this process's
    rank once it returned: a program started by torch.multiprocessing.spawn
    (or any launcher that sets no RANK) passes its rank there only. Wrapped
    where torch.distributed and distributed_c10d (which its own callers, such
    as init_device_mesh, use) hold it; the process group's own rank
    (get_rank), whatever way it was given (argument, env://, a store)."""
    dist = getattr(torch, "distributed", None)
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    real = getattr(c10d, "init_process_group", None)
    if dist is None or real is None or getattr(real, "_mpprof", False):
        return

    @functools.wraps(real)
    def init_process_group(*args, **kwargs):
        ret = real(*args, **kwargs)
        _tell_rank(dist, note_rank)
        return ret

    init_process_group._mpprof = True
    c10d.init_process_group = init_process_group
    if getattr(dist, "init_process_group", None) is real:
        dist.init_process_group = init_process_group
    _tell_rank(dist, note_rank)  # torch imported earlier, the group made already


def install(torch):
    """Install the hooks once; nothing when libmpprof.so is not in the process."""
    global _installed, _lib, _fast, _note_marks
    if _installed:
        return
    _installed = True
    lib = _find_lib()
    if lib is None:
        _log("libmpprof.so is not loaded: no PyTorch attribution")
        return
    try:
        from . import _fast as fast
    except ImportError as e:
        _log("mpprof_torch._fast is not built (%r): no PyTorch attribution" % (e,))
        return
    _fast = fast
    _lib = lib
    loss_scale = _fn(lib, "mpprof_loss_scale", None, ctypes.c_double)
    if loss_scale is None:
        _log("this libmpprof.so has no loss-scale protocol: GradScaler is not read")
    bind(torch,
         _fn(lib, "mpprof_scope_push", None, ctypes.c_int32, ctypes.c_int32),
         _fn(lib, "mpprof_scope_pop", None),
         _fn(lib, "mpprof_scope_set", None, ctypes.c_int32, ctypes.c_int32),
         _fn(lib, "mpprof_layer_id", ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p),
         loss_scale,
         _fn(lib, "mpprof_step", None, ctypes.c_uint64),
         _fn(lib, "mpprof_step_skipped", None, ctypes.c_uint64),
         _fn(lib, "mpprof_scope_ops", ctypes.c_uint32),
         _fn(lib, "mpprof_model_root", None, ctypes.c_char_p, ctypes.c_char_p))
    checkpoint = _fn(lib, "mpprof_checkpoint", None)
    if checkpoint is not None:
        # Ctrl-C: CPython ends an uncaught KeyboardInterrupt by SIGINT after
        # its finalisation, where no C exit handler runs: the raw file is
        # written at Python's exit (the C exit, when there is one, rewrites it).
        import atexit

        atexit.register(checkpoint)
        _checkpoint_before_os_exit(_fn(lib, "mpprof_exit_now", None) or checkpoint)
    framework = _fn(lib, "mpprof_framework", None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p)
    if framework is not None:  # the raw file's "framework" (values: raw_format.h MP_RAW_MARKS_*)
        version = str(getattr(torch, "__version__", "")).encode("utf-8", "replace")
        _note_marks = lambda: framework(b"torch", version, b"cxx" if _cxx else b"python")  # noqa: E731
        _note_marks()  # (again should the first backward's check turn the C++ marks off)
    note_rank = _fn(lib, "mpprof_rank", None, ctypes.c_int32, ctypes.c_int32)
    if note_rank is not None:
        try:
            _patch_distributed(torch, note_rank)
        except Exception as e:  # never break the program's import
            _log("init_process_group not wrapped: %r" % (e,))
    _log("PyTorch module attribution installed")


_Tensor = None
_Module = None
_no_torch_function = None  # bind(): torch._C's switch that hides our reads from subclasses
