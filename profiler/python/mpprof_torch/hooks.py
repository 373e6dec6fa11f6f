"""Module attribution for PyTorch, through the scopes of libmpprof.so
(profiler/include/mpprof.h): libmpprof stays the one place that attributes
ops; this file only tells it, per thread, which module and phase run now.

- Forward: global forward pre/post hooks push/pop a scope (module qualified
  name, class, phase forward; recompute while a backward runs on the thread).
- Backward: in a module's forward post-hook, a tensor hook on each output
  ("this module's backward starts": innermost module wins) and on each input
  ("it ends: back to the parent"; outermost wins, and a start wins over an
  end). Tensor hooks run on the autograd thread right before the node that
  consumes the gradient, so they `set` that thread's scope; no
  register_full_backward_hook (it breaks in-place ops in user modules).
- torch.autograd.backward/grad open a "backward, no module" scope on the
  calling thread (and restore the caller's afterwards); Optimizer.step opens
  an optimizer scope and ends a step (mpprof_step); GradScaler's scale and
  skipped steps go through mpprof_loss_scale / mpprof_step_skipped when
  libmpprof has them.
- While Dynamo traces, every hook returns at once.
"""
import ctypes
import functools
import math
import os
import struct
import sys
import threading
import weakref

FORWARD, BACKWARD, OPTIMIZER, RECOMPUTE = 1, 2, 3, 4  # MPPROF_SCOPE_* of mpprof.h
NO_LAYER = -1
# Segments wrappers insert into qualified names: DDP/DataParallel ("module",
# leading only), FSDP, torch.compile, activation-checkpoint wrappers.
_WRAPPER_SEGMENTS = frozenset(("_fsdp_wrapped_module", "_orig_mod", "_checkpoint_wrapped_module"))

_installed = False
_lib = None
_push = _pop = _set = _layer_id = None
_loss_scale = _step = _step_skipped = None
_compiling = None


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


# --- per-thread state ---


class _Thread(threading.local):
    def __init__(self):
        self.stack = []  # (module, layer id) of the forwards running on this thread
        self.marks = {}  # id(tensor) -> (tensor, state) while a root forward runs
        self.bwd = 0  # depth of torch.autograd.backward/grad calls on this thread
        self.worker = False  # a backward hook ran here outside such a call: an autograd thread
        self.opt_stepped = False
        self.in_step = False
        self.in_scaler = 0


_t = _Thread()

# --- names ---

_ids = {}  # id(module) -> (weakref to it, layer id)
_main_root = None  # weakref: the first root with children; its names carry no prefix
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
    if not name:  # the root itself (or a wrapper's inner module)
        return _inner_class(module)
    return prefix + name


def _name_root(root):
    """Name every module under a newly seen root."""
    global _main_root
    children = list(root.named_modules())
    main = _main_root() if _main_root is not None else None
    prefix = ""
    if len(children) > 1:
        if main is None or any(m is main for _, m in children):
            _main_root = weakref.ref(root)
        else:
            prefix = _inner_class(root) + "."
    for qualname, m in children:
        name = _label(m, qualname, prefix)
        lid = _layer_id(name.encode(), type(m).__name__.encode())
        _ids[id(m)] = (weakref.ref(m), lid)
        _lib_names[lid] = name


def _resolve(module, stack):
    """Layer id of a module not named yet."""
    with _lock:
        if stack:  # added to a known model after it was named, or not registered as a child
            root = stack[0][0]
            _name_root(root)
            ent = _ids.get(id(module))
            if ent is not None and ent[0]() is module:
                return ent[1]
            parent = stack[-1][0]
            pent = _ids.get(id(parent))
            pname = _lib_names.get(pent[1]) if pent else None
            name = (pname + "." if pname else "") + type(module).__name__
        else:
            _name_root(module)
            ent = _ids.get(id(module))
            if ent is not None and ent[0]() is module:
                return ent[1]
            name = type(module).__name__
        lid = _layer_id(name.encode(), type(module).__name__.encode())
        _ids[id(module)] = (weakref.ref(module), lid)
        _lib_names[lid] = name
        return lid



# --- forward ---


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


def _bwd_hook(state, grad):
    t = _t
    if not t.bwd:
        t.worker = True
    _set(state[0] if state[0] is not None else state[1], BACKWARD)
    return None


def _mark(marks, x, start, end):
    if not x.requires_grad or x.grad_fn is None:
        return
    ent = marks.get(id(x))
    if ent is not None and ent[0] is x:
        state = ent[1]
        if start is not None and state[0] is None:
            state[0] = start  # the innermost module's start stays
        if end is not None:
            state[1] = end  # the outermost module's end wins
        return
    state = [start, end]  # the hook holds only this, never the tensor
    marks[id(x)] = (x, state)
    x.register_hook(functools.partial(_bwd_hook, state))


def _pre(module, args):
    if _compiling is not None and _compiling():
        return None
    t = _t
    ent = _ids.get(id(module))
    if ent is None or ent[0]() is not module:
        try:
            lid = _resolve(module, t.stack)
        except Exception as e:  # never the program's problem: the op keeps its NVTX layer
            _log("module %s not named: %r" % (type(module).__name__, e))
            lid = NO_LAYER
    else:
        lid = ent[1]
    t.stack.append((module, lid))
    _push(lid, RECOMPUTE if (t.bwd or t.worker) else FORWARD)
    return None


def _post(module, args, output):
    if _compiling is not None and _compiling():
        return None
    t = _t
    st = t.stack
    # A forward that raised left its frames (no post-hook before torch 2.1's always_call).
    while st and st[-1][0] is not module:
        st.pop()
        _pop()
    if not st:
        return None
    lid = st.pop()[1]
    _pop()
    try:
        if _grad_enabled():
            parent = st[-1][1] if st else NO_LAYER
            marks = t.marks
            # Fast paths for the usual shapes (one output tensor, a tuple of
            # tensors as arguments): no generator per call.
            if isinstance(output, _Tensor):
                _mark(marks, output, lid, None)
            else:
                for x in _tensors(output):
                    _mark(marks, x, lid, None)
            for a in args:
                if isinstance(a, _Tensor):
                    _mark(marks, a, None, parent)
                else:
                    for x in _tensors(a, 1):
                        _mark(marks, x, None, parent)
    except Exception as e:  # e.g. a tensor subclass refusing hooks: that backward stays unnamed
        _log("backward hooks of %s not registered: %r" % (type(module).__name__, e))
    finally:
        if not st:
            t.marks = {}
    return None


# --- backward, optimizer, steps ---

_roots_hooked = weakref.WeakSet()


def _root_hook(grad):
    _set(NO_LAYER, BACKWARD)
    return None


def _wrap_autograd(fn):
    @functools.wraps(fn)
    def run_backward(*args, **kwargs):
        t = _t
        roots = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
        try:  # autograd threads start the graph with "backward, no module"
            for x in _tensors(roots):  # (unless a module's output hook already names it)
                if (x.requires_grad and x.grad_fn is not None and x._backward_hooks is None
                        and x not in _roots_hooked):
                    x.register_hook(_root_hook)
                    _roots_hooked.add(x)
        except Exception:
            pass
        t.bwd += 1
        _push(NO_LAYER, BACKWARD)
        try:
            return fn(*args, **kwargs)
        finally:
            _pop()
            t.bwd -= 1

    run_backward._mpprof = True
    return run_backward


_step_n = 0


def _step_ended(skipped):
    """Optimizer.step() (or a step GradScaler skipped) ends step n; n+1 starts."""
    global _step_n
    with _lock:
        n = _step_n
        _step_n += 1
    if skipped and _step_skipped is not None:
        _step_skipped(n)
    if _step is not None:
        _step(n + 1)


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
        _push(_optimizer_layer(self), OPTIMIZER)
        try:
            return step(self, *args, **kwargs)
        finally:
            _pop()
            t.in_step = False
            _step_ended(False)

    mpprof_step._mpprof = True
    return mpprof_step


def _patch_optimizer(torch):
    Optimizer = torch.optim.Optimizer
    init = Optimizer.__init__

    @functools.wraps(init)
    def mpprof_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        cls = type(self)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_mpprof", False):
            cls.step = _wrap_step(step)

    Optimizer.__init__ = mpprof_init


# --- GradScaler: the scale in force, replayed on the host (no device sync) ---
#
# The scale only changes in update(): backoff when some optimizer's step was
# skipped (found inf: the scaler did not call optimizer.step), growth after
# growth_interval clean steps, as torch._amp_update_scale_ does, in float32.
# A skip happening inside a fused optimizer (_step_supports_amp_scaling), or
# update(new_scale=<tensor>), cannot be seen without a sync: that scaler is
# then no longer fed.


def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class _ScaleState:
    __slots__ = ("scale", "tracker", "reliable", "found_inf")

    def __init__(self, scaler):
        self.scale = _f32(float(scaler._init_scale))
        self.tracker = int(scaler._init_growth_tracker)
        self.reliable = True
        self.found_inf = False


_scalers = weakref.WeakKeyDictionary()


def _scaler_state(scaler, create):
    st = _scalers.get(scaler)
    if st is None and create:
        st = _scalers[scaler] = _ScaleState(scaler)
        if _loss_scale is not None:
            _loss_scale(st.scale)
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
            try:
                r = step(self, optimizer, *args, **kwargs)
            finally:
                t.in_scaler -= 1
            if getattr(optimizer, "_step_supports_amp_scaling", False):
                st.reliable = False
            if not t.opt_stepped:
                st.found_inf = True
                _step_ended(True)
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
            t.in_scaler += 1
            try:
                r = update(self, new_scale)
            finally:
                t.in_scaler -= 1
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
            st.found_inf = False
            if st.reliable and _loss_scale is not None:
                _loss_scale(st.scale)
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


def install(torch):
    """Install the hooks once; nothing when libmpprof.so is not in the process."""
    global _installed, _lib, _push, _pop, _set, _layer_id, _loss_scale, _step, _step_skipped
    global _compiling, _Tensor, _grad_enabled
    if _installed:
        return
    _installed = True
    lib = _find_lib()
    if lib is None:
        _log("libmpprof.so is not loaded: no PyTorch attribution")
        return
    _lib = lib
    _layer_id = _fn(lib, "mpprof_layer_id", ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p)
    _push = _fn(lib, "mpprof_scope_push", None, ctypes.c_int32, ctypes.c_int32)
    _pop = _fn(lib, "mpprof_scope_pop", None)
    _set = _fn(lib, "mpprof_scope_set", None, ctypes.c_int32, ctypes.c_int32)
    _loss_scale = _fn(lib, "mpprof_loss_scale", None, ctypes.c_double)
    _step = _fn(lib, "mpprof_step", None, ctypes.c_uint64)
    _step_skipped = _fn(lib, "mpprof_step_skipped", None, ctypes.c_uint64)
    if _loss_scale is None:
        _log("this libmpprof.so has no loss-scale protocol: GradScaler is not read")
    _Tensor = torch.Tensor
    _grad_enabled = torch.is_grad_enabled
    _compiling = _compiling_fn(torch)

    mm = torch.nn.modules.module
    mm.register_module_forward_pre_hook(_pre)
    try:  # 2.1+: the post hook also runs when forward raises
        mm.register_module_forward_hook(_post, always_call=True)
    except TypeError:
        mm.register_module_forward_hook(_post)
    torch.autograd.backward = _wrap_autograd(torch.autograd.backward)
    torch.autograd.grad = _wrap_autograd(torch.autograd.grad)
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
    _log("PyTorch module attribution installed")


_Tensor = None
_grad_enabled = None
