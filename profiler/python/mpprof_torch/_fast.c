/* The hot path of mpprof's PyTorch integration (mpprof_torch/hooks.py), in
 * C: the global module forward pre/post hooks, the per-thread module stack,
 * and the backward marks (a tensor hook on each module output, "this
 * module's backward starts", and on each input, "it ends: back to the
 * parent"), and the call of torch.autograd.backward/grad as mpprof wraps
 * them (AutogradCall: no frame of mpprof's in a traceback). hooks.py keeps
 * what is not per module call: naming, the work before a backward, the
 * optimizer/GradScaler wrappers, and install.
 *
 * Built against the stable ABI (Py_LIMITED_API 3.8), so one _fast.abi3.so
 * loads in any CPython >= 3.8; it links nothing (the interpreter provides
 * the Python symbols) and reaches libmpprof.so only through the three scope
 * functions whose addresses hooks.py hands to init() (mpprof.h). Every
 * error inside a hook is cleared and logged: the program never sees one. */
#define Py_LIMITED_API 0x03080000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../include/mpprof.h" /* the scope phases; its functions come through init() */
#include "marks_api.h"            /* the C++ marks (_marks.cpp), when hooks.py loads them */

#define NO_LAYER (-1)
#define UNSET INT32_MIN /* a mark's start or end not given */
#define MAX_STACK 256   /* frames kept per thread; deeper ones are counted */
#define SCAN_DEPTH 2    /* containers looked into for tensors: (x,), [(x,)] */
#define MAX_CTX 32      /* open backward/optimizer scopes kept per thread */
#define CALL_DEPTH 3    /* frames looked at for torch's module call (call_kwargs) */

typedef void (*push_fn)(int32_t, int32_t);
typedef void (*pop_fn)(void);
typedef uint32_t (*ops_fn)(void);

static push_fn c_push, c_set;
static pop_fn c_pop;
static ops_fn c_ops;             /* mpprof_scope_ops; NULL: every module is marked */
static PyObject *tensor_type;    /* torch.Tensor */
static PyObject *odict_type;     /* collections.OrderedDict: _backward_hooks */
static PyObject *grad_enabled;   /* torch.is_grad_enabled */
static PyObject *resolve;        /* hooks._resolve(module, root, parent, gen) -> lid */
static PyObject *log_fn;         /* hooks._log(msg) */
static PyObject *ids;            /* dict id(module) -> (weakref, lid[, base, name]), hooks._ids */
static PyObject *root_fns;       /* (begins, ends, live) of hooks._root_frames, or NULL */
static PyObject *mark_type;      /* MarkHook */
static PyObject *call_codes;     /* torch's module call: ((code, its **kwargs), ...) */
static int direct = 1;           /* register through _backward_hooks (see register_hook) */
static PyObject *no_tf_type;     /* torch._C's switch off of __torch_function__, or NULL */
static const mpp_marks_api *cxx; /* marks as C++ pre-hooks on grad_fn (_marks.cpp), or NULL */
static unsigned long generation; /* root forwards begun, on all threads: each one's number */
static PyObject *s_requires_grad, *s_grad_fn, *s_backward_hooks, *s_dataclass_fields,
    *s_register_hook_dict, *s_register_hook, *s_f_code, *s_f_back, *s_f_locals, *s_forward_hooks;

/* --- per-thread state --- */

typedef struct tstate {
  int n, overflow;          /* frames kept, frames beyond MAX_STACK */
  int bwd;                  /* depth of torch.autograd.backward/grad calls here */
  int worker;               /* a mark ran here outside such a call: an autograd thread */
  unsigned long gen;        /* the number of this thread's root forward (generation) */
  int nctx, ctx_overflow;   /* open backward/optimizer scopes (kept, beyond MAX_CTX) */
  int ctx_base[MAX_CTX];    /* module frames below each */
  PyObject *mod[MAX_STACK]; /* strong references */
  int32_t lid[MAX_STACK];
  int8_t phase[MAX_STACK];
  int8_t deferred[MAX_STACK]; /* 1: has a tail (hooks.py); 2: post ran, it closes in the tail */
  PyObject *kept[3];          /* a KeyboardInterrupt or the like, to raise again (raise_kept) */
} tstate;

static _Thread_local tstate *ts;
static pthread_key_t ts_key;
static pthread_once_t ts_once = PTHREAD_ONCE_INIT;

static void ts_free(void *p) {
  /* Thread exit: no interpreter lock here, so references left in a stack
   * that a raising forward never unwound stay (a leak, never a crash). */
  free(p);
}

static void ts_key_init(void) {
  pthread_key_create(&ts_key, ts_free);
}

static tstate *thread_state(void) {
  if (!ts) {
    pthread_once(&ts_once, ts_key_init);
    ts = calloc(1, sizeof *ts);
    if (ts) pthread_setspecific(ts_key, ts);
  }
  return ts;
}

/* An exception that is not an Exception (KeyboardInterrupt, SystemExit, a
 * test runner's timeout: raised by a signal handler of the program while
 * mpprof's helpers ran) is the program's: kept, the first one, and raised
 * again when the hook returns (raise_kept), never dropped. */
static void keep_pending(void) {
  tstate *t = thread_state();
  if (t && !t->kept[0])
    PyErr_Fetch(&t->kept[0], &t->kept[1], &t->kept[2]);
  else
    PyErr_Clear();
}

/* What a hook returns: None, or NULL with the kept exception raised. */
static PyObject *raise_kept(tstate *t) {
  if (!t || !t->kept[0]) Py_RETURN_NONE;
  PyErr_Restore(t->kept[0], t->kept[1], t->kept[2]);
  t->kept[0] = t->kept[1] = t->kept[2] = NULL;
  return NULL;
}

static void report(const char *what, PyObject *module) {
  /* The pending Exception, if any, is dropped (mpprof's failure is never
   * the program's); one line to hooks._log. Anything else is kept. */
  if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {
    keep_pending();
    return;
  }
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (log_fn) {
    PyObject *msg = PyUnicode_FromFormat(
        "%s %R: %R", what, module ? (PyObject *)Py_TYPE(module) : Py_None, value ? value : Py_None);
    if (msg) {
      PyObject *r = PyObject_CallFunctionObjArgs(log_fn, msg, NULL);
      Py_XDECREF(r);
      Py_DECREF(msg);
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
}

static int truthy_call(PyObject *fn) {
  PyObject *r = PyObject_CallObject(fn, NULL);
  if (!r) {
    if (PyErr_ExceptionMatches(PyExc_Exception))
      PyErr_Clear();
    else
      keep_pending();
    return 0;
  }
  int v = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (v < 0) PyErr_Clear();
  return v > 0;
}

/* --- MarkHook: the tensor hook; sets the autograd thread's scope --- */

typedef struct {
  PyObject_HEAD mpp_mark_state st;
} MarkHook;

/* The marking rule, for a Python mark and a C++ one alike: within one root
 * forward an innermost module's start stays and the outermost module's end
 * wins; a mark from another root forward starts afresh, but for the start
 * of the module that made the tensor, which only another start replaces (a
 * model's output fed to another root model, D(G(z)): G's backward is G's).
 * "One root forward" is the marking thread's: another thread's root forward
 * in between (DataParallel's replicas) leaves this one's marks as they are. */
static void mark_update(mpp_mark_state *m, int32_t start, int32_t end, int fresh) {
  tstate *t = thread_state();
  unsigned long gen = t ? t->gen : 0;
  if (fresh || m->gen != gen) {
    m->gen = gen;
    if (fresh || start != UNSET) m->start = start;
    m->end = end;
  } else {
    if (start != UNSET && m->start == UNSET) m->start = start;
    if (end != UNSET) m->end = end;
  }
}

/* Backward reached a mark: this thread's scope (no Python object touched,
 * so a C++ mark runs it without the interpreter lock). */
static void mark_fire(const mpp_mark_state *m) {
  tstate *t = thread_state();
  if (t && !t->bwd) t->worker = 1;
  c_set(m->start != UNSET ? m->start : m->end, MPPROF_SCOPE_BACKWARD);
}

static const mpp_fast_api fast_api = {MPP_MARKS_API_VERSION, mark_update, mark_fire};

static PyObject *mark_call(PyObject *self, PyObject *args, PyObject *kw) {
  (void)args;
  (void)kw;
  mark_fire(&((MarkHook *)self)->st);
  Py_RETURN_NONE; /* the gradient unchanged */
}

static PyObject *new_mark(int32_t start, int32_t end) {
  allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)mark_type, Py_tp_alloc);
  MarkHook *m = (MarkHook *)alloc((PyTypeObject *)mark_type, 0);
  if (m) mark_update(&m->st, start, end, 1);
  return (PyObject *)m;
}

static PyType_Slot mark_slots[] = {
    {Py_tp_call, (void *)mark_call},
    {Py_tp_doc, (void *)"mpprof's backward mark (a tensor hook): sets the autograd thread's scope"},
    {0, NULL},
};
static PyType_Spec mark_spec = {"mpprof_torch._fast.MarkHook", sizeof(MarkHook), 0,
                                Py_TPFLAGS_DEFAULT, mark_slots};

/* A tensor's mark lives in its _backward_hooks dict under mark_key (one
 * MarkHook per tensor, found again by the next module that marks it), and is
 * registered as Tensor.register_hook does, without the RemovableHandle (no
 * one removes it): the dict is created and handed to grad_fn once. A tensor
 * of a subclass goes through its own register_hook (its __torch_function__
 * may wrap hooks), and its mark is found among the dict's values. `direct`
 * is cleared by hooks.py when its start-up check finds that this torch does
 * not work this way. */
static PyObject *mark_key;

static PyObject *find_mark(PyObject *d) {
  /* borrowed, or NULL */
  PyObject *h = PyDict_GetItem(d, mark_key);
  if (h || direct) return h;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v))
    if ((PyObject *)Py_TYPE(v) == mark_type) return v;
  return NULL;
}

static int register_hook(PyObject *x, PyObject *grad_fn, PyObject *hook, PyObject *key) {
  if (!direct || (PyObject *)Py_TYPE(x) != tensor_type) {
    PyObject *h = PyObject_CallMethodObjArgs(x, s_register_hook, hook, NULL);
    Py_XDECREF(h);
    return h ? 0 : -1;
  }
  PyObject *d = PyObject_GetAttr(x, s_backward_hooks);
  if (!d) return -1;
  if (d == Py_None) {
    Py_DECREF(d);
    d = PyObject_CallObject(odict_type, NULL);
    if (!d) return -1;
    if (PyObject_SetAttr(x, s_backward_hooks, d) < 0) {
      Py_DECREF(d);
      return -1;
    }
    PyObject *r = PyObject_CallMethodObjArgs(grad_fn, s_register_hook_dict, x, NULL);
    if (!r) {
      Py_DECREF(d);
      return -1;
    }
    Py_DECREF(r);
  }
  int rc = PyObject_SetItem(d, key, hook);
  Py_DECREF(d);
  return rc;
}

static int mark_read(PyObject *x, int32_t start, int32_t end);

/* x gets its mark, or its mark is updated (the rule: mark_update); as a C++
 * pre-hook on grad_fn where _marks is loaded, else as a Python tensor hook. */
static int mark(PyObject *x, int32_t start, int32_t end) {
  /* a torch.Tensor (a subclass may wrap hooks: its own register_hook) */
  if ((PyObject *)Py_TYPE(x) == tensor_type)
    return cxx && cxx->mark(x, start, end) ? 0 : mark_read(x, start, end);
  /* A subclass's __torch_function__ would see each attribute read and
   * register_hook as a call of the program's: they run with it switched off
   * (its own Python methods, a register_hook override, still run). */
  if (!no_tf_type) return mark_read(x, start, end);
  PyObject *ctx = PyObject_CallObject(no_tf_type, NULL);
  if (!ctx) return -1;
  PyObject *r = PyObject_CallMethod(ctx, "__enter__", NULL);
  if (!r) {
    Py_DECREF(ctx);
    return -1;
  }
  Py_DECREF(r);
  int rc = mark_read(x, start, end);
  PyObject *et, *ev, *tb; /* __exit__ runs with no exception pending */
  PyErr_Fetch(&et, &ev, &tb);
  r = PyObject_CallMethod(ctx, "__exit__", "OOO", Py_None, Py_None, Py_None);
  Py_DECREF(ctx);
  if (!r) {
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    return -1;
  }
  Py_DECREF(r);
  PyErr_Restore(et, ev, tb);
  return rc;
}

static int mark_read(PyObject *x, int32_t start, int32_t end) {
  PyObject *rg = PyObject_GetAttr(x, s_requires_grad);
  if (!rg) return -1;
  int req = PyObject_IsTrue(rg);
  Py_DECREF(rg);
  if (req <= 0) return req;
  PyObject *gf = PyObject_GetAttr(x, s_grad_fn);
  if (!gf) return -1;
  int rc = 0;
  if (gf == Py_None) goto out; /* a leaf: its gradient ends the graph */
  PyObject *d = PyObject_GetAttr(x, s_backward_hooks);
  if (!d) goto fail;
  MarkHook *m = d != Py_None && PyDict_Check(d) ? (MarkHook *)find_mark(d) : NULL;
  Py_DECREF(d);
  if (m) {
    mark_update(&m->st, start, end, 0);
    goto out;
  }
  PyObject *hook = new_mark(start, end);
  if (!hook) goto fail;
  rc = register_hook(x, gf, hook, mark_key);
  Py_DECREF(hook);
  goto out;
fail:
  rc = -1;
out:
  Py_DECREF(gf);
  return rc;
}

/* Every tensor in obj (itself, or in tuples, lists and dict values down to
 * SCAN_DEPTH levels, and in a dataclass's fields as in a dict's values) gets
 * the mark. */
static int mark_all(PyObject *obj, int depth, int32_t start, int32_t end) {
  int is_tensor = PyObject_IsInstance(obj, tensor_type);
  if (is_tensor) return is_tensor < 0 ? -1 : mark(obj, start, end);
  if (depth >= SCAN_DEPTH) return 0;
  if (PyTuple_Check(obj)) {
    Py_ssize_t n = PyTuple_Size(obj);
    for (Py_ssize_t i = 0; i < n; i++)
      if (mark_all(PyTuple_GetItem(obj, i), depth + 1, start, end) < 0) return -1;
  } else if (PyList_Check(obj)) {
    for (Py_ssize_t i = 0; i < PyList_Size(obj); i++) {
      PyObject *item = PyList_GetItem(obj, i);
      Py_INCREF(item);
      int rc = mark_all(item, depth + 1, start, end);
      Py_DECREF(item);
      if (rc < 0) return -1;
    }
  } else if (PyDict_Check(obj)) {
    PyObject *vals = PyDict_Values(obj);
    if (!vals) return -1;
    int rc = mark_all(vals, depth, start, end); /* a list: one level, as the dict */
    Py_DECREF(vals);
    return rc;
  } else if (obj != Py_None && !PyLong_Check(obj) && !PyFloat_Check(obj) && !PyUnicode_Check(obj)) {
    /* a dataclass instance (a model's output class): its fields, one level,
     * as a dict's values; anything else holds no tensors mpprof looks for */
    PyObject *fields = PyObject_GetAttr((PyObject *)Py_TYPE(obj), s_dataclass_fields);
    if (!fields) {
      PyErr_Clear();
      return 0;
    }
    PyObject *names = PyDict_Check(fields) ? PyDict_Keys(fields) : NULL;
    Py_DECREF(fields);
    if (!names) {
      PyErr_Clear();
      return 0;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc >= 0 && i < PyList_Size(names); i++) {
      PyObject *v = PyObject_GetAttr(obj, PyList_GetItem(names, i));
      if (!v) {
        PyErr_Clear(); /* a field deleted or a property raising: not the program's concern */
        continue;
      }
      rc = mark_all(v, depth + 1, start, end);
      Py_DECREF(v);
    }
    Py_DECREF(names);
    return rc;
  }
  return 0;
}

/* --- the global module hooks --- */

/* --- the calls of root models, by the name each holds ---
 * hooks.py numbers a new root model's name (a prefix, a bare layer's name)
 * by the roots of each name called in this training step (and, for one
 * called inside another's forward, in that root forward): by the calls
 * alone, never by which modules the garbage collector has freed yet. A
 * root's _ids entry carries its name's slot; pre() notes each call here. */
typedef struct {
  long long top, any; /* the last step of a call at the top of a thread; of any call */
  unsigned long gen;  /* the root forward of the last call */
} slot_calls;
static slot_calls *roots;
static Py_ssize_t nroots;
static long long step_current = -1; /* the step the last training work started; -1: none yet */

static void slot_note(Py_ssize_t s, int nested, unsigned long gen) {
  if (s >= nroots) {
    Py_ssize_t n = s + 16;
    slot_calls *p = realloc(roots, (size_t)n * sizeof *p);
    if (!p) return; /* the name may then be given again in this step: never the program's problem */
    for (Py_ssize_t i = nroots; i < n; i++)
      p[i] = (slot_calls){LLONG_MIN, LLONG_MIN, 0};
    roots = p;
    nroots = n;
  }
  if (!nested) roots[s].top = step_current;
  roots[s].any = step_current;
  roots[s].gen = gen;
}

/* the tail after a module's own forward hooks (see tail_of) */
static PyObject *tail_obj, *tail_key; /* NULL: no module has one */
static PyObject *tailed;              /* id(module) -> weakref: the modules given one, or NULL */

static int named_layer(PyObject *module, int32_t *ret_lid, Py_ssize_t *ret_slot,
                       int8_t *ret_tailed) {
  /* 1 and its layer id (and its name's slot, -1 but for a root model) when
   * module is named already: an entry (weakref, lid) or (weakref, lid,
   * slot); one of 4 items (a module called in a model but not one of its
   * modules) is a miss: hooks._resolve names it by its place among the
   * calls of each forward */
  PyObject *key = PyLong_FromVoidPtr(module);
  if (!key) {
    PyErr_Clear();
    return 0;
  }
  PyObject *ent = PyDict_GetItem(ids, key); /* borrowed */
  /* has a tail after its forward hooks (or had one, and its id is reused:
   * post asks the module itself) */
  *ret_tailed = tailed && PyDict_GetItem(tailed, key) != NULL;
  Py_DECREF(key);
  Py_ssize_t size = ent && PyTuple_Check(ent) ? PyTuple_Size(ent) : 0;
  if ((size != 2 && size != 3) || PyWeakref_GetObject(PyTuple_GetItem(ent, 0)) != module) return 0;
  *ret_lid = (int32_t)PyLong_AsLong(PyTuple_GetItem(ent, 1));
  if (size == 3 && (*ret_slot = PyLong_AsSsize_t(PyTuple_GetItem(ent, 2))) == -1 &&
      PyErr_Occurred())
    PyErr_Clear();
  return 1;
}

static int32_t name_layer(tstate *t, PyObject *module) {
  PyObject *root = t->n ? t->mod[0] : Py_None, *parent = t->n ? t->mod[t->n - 1] : Py_None;
  PyObject *gen = PyLong_FromUnsignedLong(t->gen); /* the root forward: names follow its calls */
  PyObject *r = gen ? PyObject_CallFunctionObjArgs(resolve, module, root, parent, gen, NULL) : NULL;
  Py_XDECREF(gen);
  long lid = r ? PyLong_AsLong(r) : -1;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    /* never the program's problem: the op keeps its NVTX layer */
    report("module not named:", module);
    return NO_LAYER;
  }
  return (int32_t)lid;
}

/* --- steps ---
 * Step n starts with the first training work after step n-1 ended (step 0:
 * the first of the run): a module forward with grad, a backward, an
 * optimizer step. hooks.py ends steps and says which one is next
 * (step_next); an evaluation under no_grad starts none, so it stays in the
 * step it follows, and nothing is marked after the last step ends. */
static PyObject *step_fn;           /* hooks._step (mpprof_step), or NULL */
static long long step_pending = -1; /* the step the next training work starts; -1: none */

static void step_begin(void) {
  if (step_pending < 0) return;
  step_current = step_pending;
  step_pending = -1;
  if (!step_fn) return;
  PyObject *r = PyObject_CallFunction(step_fn, "K", (unsigned long long)step_current);
  if (r)
    Py_DECREF(r);
  else
    report("step mark", NULL);
}

static void settle(tstate *t);
static int root_call(int which);

/* --- the program's own forward hooks ---
 * torch runs a module's own forward hooks after the global ones: the
 * post-hook has closed the module's call by then, so what they run (a
 * LoRA adapter called from a hook, an op) ran in its parent. hooks.py
 * appends a tail (tail_obj, under tail_key) after the program's forward
 * hooks of a module; a module whose hooks end with it is closed there.
 * pre() reads whether the module was given one (tailed, by id: no
 * attribute lookup for the others), post asks the module only then. */

static int tail_of(PyObject *module) {
  if (!tail_obj) return 0;
  PyObject *d = PyObject_GetAttr(module, s_forward_hooks);
  int r = d && PyDict_Check(d) && PyDict_GetItem(d, tail_key) == tail_obj; /* borrowed */
  Py_XDECREF(d);
  PyErr_Clear();
  return r;
}

static PyObject *pre(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *module, *margs;
  if (!PyArg_UnpackTuple(args, "pre", 2, 2, &module, &margs)) return NULL;
  tstate *t = thread_state();
  if (!t) Py_RETURN_NONE;
  int32_t lid = NO_LAYER;
  Py_ssize_t slot = -1;
  int8_t tailed_now = 0;
  int named = named_layer(module, &lid, &slot, &tailed_now);
  /* the root again (a new call, or one inside it), or a module named by its
   * parent here: are the frames kept still running? */
  if (t->n && (!named || module == t->mod[0])) settle(t);
  int top = !t->n && !t->overflow;
  if (top) {
    t->gen = ++generation; /* under the interpreter lock */
    if (!t->nctx && root_fns) root_call(0);
  }
  /* inside a backward: recomputation; else a root called without grad is
   * evaluation, and so is all it calls; the rest (a checkpoint's first
   * forward, a frozen part under no_grad inside a training forward) forward */
  int32_t phase = MPPROF_SCOPE_FORWARD;
  if (t->bwd || t->worker)
    phase = MPPROF_SCOPE_RECOMPUTE;
  else if (t->n ? t->phase[t->n - 1] == MPPROF_SCOPE_EVAL
                : !t->overflow && !truthy_call(grad_enabled))
    phase = MPPROF_SCOPE_EVAL;
  /* the step this call starts, before its name is chosen in it */
  if (phase == MPPROF_SCOPE_FORWARD) step_begin();
  if (!named)
    lid = name_layer(t, module);
  else if (slot >= 0)
    slot_note(slot, !top, t->gen);
  if (t->n < MAX_STACK) {
    Py_INCREF(module);
    t->mod[t->n] = module;
    t->lid[t->n] = lid;
    t->phase[t->n] = (int8_t)phase;
    t->deferred[t->n] = tailed_now; /* 1: post asks whether it closes in its tail */
    t->n++;
  } else {
    t->overflow++;
  }
  c_push(lid, phase);
  return raise_kept(t);
}

static void frame_pop(tstate *t) {
  t->n--;
  Py_DECREF(t->mod[t->n]);
  c_pop();
}

/* --- forwards that raised ---
 * Before torch 2.1 no post-hook runs when a forward raises, so its frames
 * stay. The post-hook of a parent that caught the exception takes them
 * (post); a backward or optimizer scope takes those opened inside it when it
 * closes (ctx_exit); and frames of a root call that an exception left (the
 * training loop caught it) go once that call is seen to be over (settle),
 * so they are never the scope of later ops nor the parent of later roots. */

static void drop_frames(tstate *t, int keep) {
  while (t->overflow && t->n + t->overflow > keep) {
    t->overflow--;
    c_pop();
  }
  while (t->n > keep)
    frame_pop(t);
}

static int root_call(int which) {
  /* hooks._root_frames' begins (0), ends (1) or live (2); live: 1 when unsure */
  PyObject *r = PyObject_CallObject(PyTuple_GetItem(root_fns, which), NULL);
  int v = r ? PyObject_IsTrue(r) : -1;
  Py_XDECREF(r);
  if (v < 0) {
    report("root call not followed:", NULL);
    return 1;
  }
  return v;
}

static void settle(tstate *t) {
  /* at the top of the thread (no backward or optimizer scope open): is the
   * root call of the frames kept still running? */
  if (!root_fns || !t->n || t->nctx || t->ctx_overflow || t->worker) return;
  if (!root_call(2)) drop_frames(t, 0);
}

static void ctx_enter(tstate *t) {
  settle(t);
  if (t->nctx < MAX_CTX)
    t->ctx_base[t->nctx++] = t->n + t->overflow;
  else
    t->ctx_overflow++;
}

static void ctx_exit(tstate *t) {
  if (t->ctx_overflow)
    t->ctx_overflow--;
  else if (t->nctx)
    drop_frames(t, t->ctx_base[--t->nctx]);
}

/* The keyword arguments of the module call whose post-hook runs now, for a
 * torch that does not give them to a global hook (before 2.6): the dict in
 * the frame of torch's call (call_codes) that calls the hook, directly or
 * through hooks.py's Python hook. A new reference, or NULL (not found). */
static PyObject *call_kwargs(void) {
  if (!call_codes) return NULL;
  PyObject *f = (PyObject *)PyEval_GetFrame(), *kw = NULL;
  Py_XINCREF(f);
  for (int depth = 0; f && f != Py_None && depth < CALL_DEPTH; depth++) {
    PyObject *code = PyObject_GetAttr(f, s_f_code), *name = NULL;
    for (Py_ssize_t i = 0; code && i < PyTuple_Size(call_codes); i++) {
      PyObject *pair = PyTuple_GetItem(call_codes, i);
      if (PyTuple_GetItem(pair, 0) == code) name = PyTuple_GetItem(pair, 1);
    }
    Py_XDECREF(code);
    if (name) {
      PyObject *locals = PyObject_GetAttr(f, s_f_locals);
      kw = locals ? PyObject_GetItem(locals, name) : NULL;
      Py_XDECREF(locals);
      break;
    }
    PyObject *back = code ? PyObject_GetAttr(f, s_f_back) : NULL;
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  if (PyErr_Occurred()) report("keyword arguments not read:", NULL);
  return kw;
}

static PyObject *post(PyObject *self, PyObject *args) {
  (void)self;
  /* (module, args, output), or (module, args, kwargs, output): a torch
   * that gives a global hook the keyword arguments (with_kwargs, 2.6+) */
  PyObject *module, *margs, *kwargs = NULL, *output;
  if (!PyArg_UnpackTuple(args, "post", 3, 4, &module, &margs, &output, &kwargs)) return NULL;
  if (kwargs) {
    PyObject *o = kwargs;
    kwargs = output;
    output = o;
  }
  tstate *t = thread_state();
  if (!t) Py_RETURN_NONE;
  if (t->overflow) { /* frames past MAX_STACK are innermost: this is one */
    t->overflow--;
    c_pop();
    Py_RETURN_NONE;
  }
  int i = t->n - 1;
  while (i >= 0 && t->mod[i] != module)
    i--;
  if (i < 0) Py_RETURN_NONE; /* its pre-hook never ran (installed during its forward) */
  /* A forward that raised left its frames (no post-hook before torch 2.1's always_call). */
  while (t->n > i + 1)
    frame_pop(t);
  int32_t lid = t->lid[i];
  int8_t phase = t->phase[i];
  int defer = t->deferred[i] == 1 && tail_of(module);
  /* Only what needs naming in backward is marked (each mark costs a tensor
   * hook): the outputs of a module whose forward issued ops of its own, and
   * the inputs of a module whose parent did (after the child's backward,
   * the parent's earlier ops run: back to the parent) or that is a root
   * (back to "backward, no module", where ops outside modules run). */
  int own = !c_ops || c_ops() > 0;
  frame_pop(t);
  if (!defer && !t->n && !t->overflow && !t->nctx && root_fns)
    root_call(1); /* the root call is over */
  int back = !c_ops || !t->n || c_ops() > 0;
  if ((own || back) && truthy_call(grad_enabled)) {
    int32_t parent = t->n ? t->lid[t->n - 1] : NO_LAYER;
    /* the inputs passed by keyword too (HuggingFace's self.proj(hidden_states=h)) */
    PyObject *kw = !back ? NULL : kwargs ? (Py_INCREF(kwargs), kwargs) : call_kwargs();
    if ((own && mark_all(output, 0, lid, UNSET) < 0) ||
        (back && PyTuple_Check(margs) && mark_all(margs, 0, UNSET, parent) < 0) ||
        (kw && PyDict_Check(kw) && mark_all(kw, 0, UNSET, parent) < 0))
      /* e.g. a tensor subclass refusing hooks: that backward stays unnamed */
      report("backward hooks not registered:", module);
    Py_XDECREF(kw);
  }
  if (defer) { /* open again until its forward hooks' tail (tail): their ops are its own */
    Py_INCREF(module);
    t->mod[t->n] = module;
    t->lid[t->n] = lid;
    t->phase[t->n] = phase;
    t->deferred[t->n] = 2;
    t->n++;
    c_push(lid, phase);
  }
  return raise_kept(t);
}

static PyObject *tail(PyObject *self, PyObject *args) {
  /* the last of a module's own forward hooks (hooks.py appends it after
   * the program's): the module's call, reopened by its post-hook, ends;
   * the output the program's hooks made is marked as its own when they
   * issued ops, so that their backward is the module's too */
  (void)self;
  PyObject *module, *margs, *output;
  if (!PyArg_UnpackTuple(args, "tail", 3, 3, &module, &margs, &output)) return NULL;
  tstate *t = thread_state();
  if (!t || !t->n || t->mod[t->n - 1] != module || t->deferred[t->n - 1] != 2) Py_RETURN_NONE;
  int32_t lid = t->lid[t->n - 1];
  int own = !c_ops || c_ops() > 0;
  frame_pop(t);
  if (!t->n && !t->overflow && !t->nctx && root_fns) root_call(1); /* the root call is over */
  if (own && truthy_call(grad_enabled) && mark_all(output, 0, lid, UNSET) < 0)
    report("backward hooks not registered:", module);
  return raise_kept(t);
}

/* --- for hooks.py --- */

static PyObject *backward_enter(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  tstate *t = thread_state();
  if (t) {
    ctx_enter(t);
    t->bwd++;
  }
  step_begin();
  c_push(NO_LAYER, MPPROF_SCOPE_BACKWARD);
  Py_RETURN_NONE; /* what ctx_enter kept is raised by backward_exit: its frames */
}

static PyObject *backward_exit(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  tstate *t = thread_state();
  if (t) ctx_exit(t);
  c_pop();
  if (t && t->bwd) t->bwd--;
  return raise_kept(t); /* also what backward_enter's ctx_enter kept */
}

static PyObject *scope_enter(PyObject *self, PyObject *args) {
  /* hooks.py's optimizer scope: mpprof_scope_push, as a context; starts 0:
   * its work is no training work that starts the next step (an update that
   * belongs to the step in progress, or to the one that just ended) */
  (void)self;
  int lid, phase, starts = 1;
  if (!PyArg_ParseTuple(args, "ii|p", &lid, &phase, &starts)) return NULL;
  tstate *t = thread_state();
  if (t) ctx_enter(t);
  if (starts) step_begin();
  c_push(lid, phase);
  Py_RETURN_NONE; /* what ctx_enter kept is raised by scope_exit: its frames */
}

static PyObject *step_next(PyObject *self, PyObject *args) {
  (void)self;
  long long n;
  PyObject *fn;
  if (!PyArg_ParseTuple(args, "LO", &n, &fn)) return NULL;
  PyObject *old = step_fn;
  step_fn = fn == Py_None ? NULL : fn;
  Py_XINCREF(step_fn);
  Py_XDECREF(old);
  step_pending = n;
  Py_RETURN_NONE;
}

static PyObject *set_tail(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *obj, *key, *modules;
  if (!PyArg_UnpackTuple(args, "set_tail", 3, 3, &obj, &key, &modules)) return NULL;
  if (!PyDict_Check(modules)) {
    PyErr_SetString(PyExc_TypeError, "modules must be a dict");
    return NULL;
  }
  PyObject *old[] = {tail_obj, tail_key, tailed};
  Py_INCREF(obj);
  Py_INCREF(key);
  Py_INCREF(modules);
  tail_obj = obj;
  tail_key = key;
  tailed = modules;
  for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
    Py_XDECREF(old[i]);
  Py_RETURN_NONE;
}

static PyObject *root_called(PyObject *self, PyObject *args) {
  (void)self;
  Py_ssize_t s;
  int nested;
  unsigned long gen;
  if (!PyArg_ParseTuple(args, "npk", &s, &nested, &gen)) return NULL;
  if (s >= 0) slot_note(s, nested, gen);
  Py_RETURN_NONE;
}

static PyObject *root_calls(PyObject *self, PyObject *arg) {
  (void)self;
  Py_ssize_t s = PyLong_AsSsize_t(arg);
  if (s == -1 && PyErr_Occurred()) return NULL;
  if (s < 0 || s >= nroots || roots[s].any == LLONG_MIN) Py_RETURN_NONE;
  return Py_BuildValue("(LLLk)", step_current, roots[s].top, roots[s].any, roots[s].gen);
}

static PyObject *scope_exit(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  tstate *t = thread_state();
  if (t) ctx_exit(t);
  c_pop();
  return raise_kept(t);
}

/* --- AutogradCall: torch.autograd.backward/grad as mpprof wraps them --- */

/* A C callable, so that an exception the real call raises (torch's
 * in-place-modification error) passes through no frame of mpprof's: a
 * Python wrapper's frame showed in the program's traceback. It runs
 * hooks.py's work before the call (pre(args, kwargs|None), which has
 * returned by then), the call in a "backward, no module" scope, and
 * returns its result or lets its exception through untouched. With post,
 * post() runs once the call returned when no other call of torch.autograd's
 * (backward or grad, on any thread) runs: the end of a backward pass, not of
 * the one a reentrant checkpoint runs inside it. Its
 * attributes (functools.update_wrapper's, _mpprof) live in a dict of its
 * own: the stable ABI of 3.8 has no __dict__ slot for a type made from a
 * spec. */
typedef struct {
  PyObject_HEAD PyObject *fn; /* the real torch.autograd.backward or grad */
  PyObject *pre;              /* hooks._backward_roots */
  PyObject *post;             /* hooks._backward_done, or NULL */
  PyObject *dict; /* __wrapped__, __name__, __qualname__, __doc__, __module__, _mpprof */
} AutogradCall;

static PyObject *autograd_type;
static long autograd_running; /* AutogradCalls running, on all threads (the interpreter lock) */

/* The exception a finally block raised while `was` (fetched) propagated, as
 * Python raises it: `was` its __context__. */
static void chain_after(PyObject *et, PyObject *ev, PyObject *etb) {
  PyObject *nt, *nv, *ntb;
  PyErr_Fetch(&nt, &nv, &ntb);
  PyErr_NormalizeException(&nt, &nv, &ntb);
  PyErr_NormalizeException(&et, &ev, &etb);
  if (nv && ev && nv != ev) {
    if (etb) PyException_SetTraceback(ev, etb);
    PyException_SetContext(nv, ev); /* steals ev */
    ev = NULL;
  }
  Py_XDECREF(et);
  Py_XDECREF(ev);
  Py_XDECREF(etb);
  PyErr_Restore(nt, nv, ntb);
}

static PyObject *autograd_call(PyObject *self, PyObject *args, PyObject *kw) {
  AutogradCall *a = (AutogradCall *)self;
  if (!a->fn) {
    PyErr_SetString(PyExc_TypeError, "AutogradCall: made by _fast.wrap_autograd only");
    return NULL;
  }
  PyObject *r = PyObject_CallFunctionObjArgs(a->pre, args, kw ? kw : Py_None, NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_DECREF(backward_enter(NULL, NULL)); /* None */
  autograd_running++;
  r = PyObject_Call(a->fn, args, kw);
  autograd_running--;
  PyObject *et = NULL, *ev = NULL, *etb = NULL;
  if (!r) PyErr_Fetch(&et, &ev, &etb); /* the frames dropped below may run code */
  PyObject *done = backward_exit(NULL, NULL);
  if (done && r && a->post && !autograd_running) {
    PyObject *p = PyObject_CallObject(a->post, NULL);
    if (p)
      Py_DECREF(p);
    else
      report("backward end", NULL); /* (a KeyboardInterrupt is kept: raised below) */
    Py_DECREF(done);
    done = raise_kept(thread_state());
  }
  if (done) {
    Py_DECREF(done);
    if (!r) PyErr_Restore(et, ev, etb);
    return r;
  }
  /* a KeyboardInterrupt or the like kept meanwhile: raised, as from a finally */
  if (r)
    Py_DECREF(r);
  else
    chain_after(et, ev, etb);
  return NULL;
}

static PyObject *autograd_getattro(PyObject *self, PyObject *name) {
  AutogradCall *a = (AutogradCall *)self;
  PyObject *v = a->dict ? PyDict_GetItemWithError(a->dict, name) : NULL;
  if (v) {
    Py_INCREF(v);
    return v;
  }
  return PyErr_Occurred() ? NULL : PyObject_GenericGetAttr(self, name);
}

static int autograd_setattro(PyObject *self, PyObject *name, PyObject *v) {
  AutogradCall *a = (AutogradCall *)self;
  if (!a->dict && !(a->dict = PyDict_New())) return -1;
  if (v) return PyDict_SetItem(a->dict, name, v);
  if (PyDict_DelItem(a->dict, name) == 0) return 0;
  if (PyErr_ExceptionMatches(PyExc_KeyError)) {
    PyErr_Clear();
    PyErr_SetObject(PyExc_AttributeError, name);
  }
  return -1;
}

static PyObject *autograd_get_dict(PyObject *self, void *unused) {
  (void)unused;
  AutogradCall *a = (AutogradCall *)self;
  if (!a->dict && !(a->dict = PyDict_New())) return NULL;
  Py_INCREF(a->dict);
  return a->dict;
}

static PyObject *autograd_reduce(PyObject *self, PyObject *unused) {
  /* pickled by name, as the function it stands for: module.qualname is it */
  (void)unused;
  return PyObject_GetAttrString(self, "__qualname__");
}

static int autograd_traverse(PyObject *self, visitproc visit, void *arg) {
  AutogradCall *a = (AutogradCall *)self;
  Py_VISIT(a->fn);
  Py_VISIT(a->pre);
  Py_VISIT(a->post);
  Py_VISIT(a->dict);
  return 0;
}

static int autograd_clear(PyObject *self) {
  AutogradCall *a = (AutogradCall *)self;
  Py_CLEAR(a->fn);
  Py_CLEAR(a->pre);
  Py_CLEAR(a->post);
  Py_CLEAR(a->dict);
  return 0;
}

static void autograd_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  autograd_clear(self);
  ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
  Py_DECREF(tp);
}

static PyGetSetDef autograd_getset[] = {
    {"__dict__", autograd_get_dict, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyMethodDef autograd_methods[] = {
    {"__reduce__", autograd_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyType_Slot autograd_slots[] = {
    {Py_tp_call, (void *)autograd_call},
    {Py_tp_getattro, (void *)autograd_getattro},
    {Py_tp_setattro, (void *)autograd_setattro},
    {Py_tp_getset, (void *)autograd_getset},
    {Py_tp_methods, (void *)autograd_methods},
    {Py_tp_traverse, (void *)autograd_traverse},
    {Py_tp_clear, (void *)autograd_clear},
    {Py_tp_dealloc, (void *)autograd_dealloc},
    {0, NULL},
};
static PyType_Spec autograd_spec = {"mpprof_torch._fast.AutogradCall", sizeof(AutogradCall), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, autograd_slots};

static PyObject *wrap_autograd(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *fn, *pre, *post = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O", &fn, &pre, &post)) return NULL;
  allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)autograd_type, Py_tp_alloc);
  AutogradCall *a = (AutogradCall *)alloc((PyTypeObject *)autograd_type, 0);
  if (!a) return NULL;
  Py_INCREF(fn);
  Py_INCREF(pre);
  a->fn = fn;
  a->pre = pre;
  a->post = post == Py_None ? NULL : (Py_INCREF(post), post);
  if (!(a->dict = PyDict_New())) {
    Py_DECREF(a);
    return NULL;
  }
  return (PyObject *)a;
}

static PyObject *swap(PyObject **slot, PyObject *v) {
  /* *slot takes v (None: NULL); the one before is returned (NULL: None) */
  PyObject *old = *slot ? *slot : (Py_INCREF(Py_None), Py_None);
  *slot = v == Py_None ? NULL : v;
  Py_XINCREF(*slot);
  return old;
}

static PyObject *follow_roots(PyObject *self, PyObject *fns) {
  /* (begins, ends, live) of hooks._root_frames, or None: torch's post-hook
   * runs when forward raises. Returns the one before. */
  (void)self;
  if (fns != Py_None && (!PyTuple_Check(fns) || PyTuple_Size(fns) != 3)) {
    PyErr_SetString(PyExc_TypeError, "follow_roots takes (begins, ends, live) or None");
    return NULL;
  }
  return swap(&root_fns, fns);
}

static PyObject *kwargs_from(PyObject *self, PyObject *codes) {
  /* ((code, name), ...): where post finds a module call's keyword
   * arguments (call_kwargs); None: post is given them, or never. Returns
   * the one before. */
  (void)self;
  if (codes != Py_None) {
    if (!PyTuple_Check(codes)) goto bad;
    for (Py_ssize_t i = 0; i < PyTuple_Size(codes); i++) {
      PyObject *pair = PyTuple_GetItem(codes, i);
      if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2) goto bad;
    }
  }
  return swap(&call_codes, codes);
bad:
  PyErr_SetString(PyExc_TypeError, "kwargs_from takes ((code, name), ...) or None");
  return NULL;
}

static PyObject *mark_root(PyObject *self, PyObject *x) {
  /* A backward root: its autograd thread starts at "backward, no module". */
  (void)self;
  PyObject *gf = PyObject_GetAttr(x, s_grad_fn);
  if (!gf) return NULL;
  int rc = 0;
  /* A C++ pre-hook where _marks is loaded: a Python hook dict on the root
   * (a loss) would run, before torch 2.0, ahead of a retain_grad() the
   * program calls on it later, and show in its _backward_hooks. */
  if (gf != Py_None &&
      !(cxx && (PyObject *)Py_TYPE(x) == tensor_type && cxx->mark(x, NO_LAYER, UNSET))) {
    PyObject *hook = new_mark(NO_LAYER, UNSET);
    rc = hook ? register_hook(x, gf, hook, hook) : -1;
    Py_XDECREF(hook);
  }
  Py_DECREF(gf);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *register_probe(PyObject *self, PyObject *args) {
  /* Start-up check of register_hook's direct path: register a plain
   * callable on x the way marks are registered. */
  (void)self;
  PyObject *x, *probe;
  if (!PyArg_UnpackTuple(args, "register_probe", 2, 2, &x, &probe)) return NULL;
  PyObject *gf = PyObject_GetAttr(x, s_grad_fn);
  if (!gf) return NULL;
  int rc = register_hook(x, gf, probe, probe);
  Py_DECREF(gf);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *hide_reads(PyObject *self, PyObject *v) {
  (void)self;
  return swap(&no_tf_type, v);
}

static PyObject *set_direct(PyObject *self, PyObject *v) {
  (void)self;
  direct = PyObject_IsTrue(v) > 0;
  Py_RETURN_NONE;
}

static PyObject *api(PyObject *self, PyObject *unused) {
  /* _fast's side of the C++ marks (marks_api.h), for _marks.api() */
  (void)self;
  (void)unused;
  return PyCapsule_New((void *)&fast_api, MPP_FAST_CAPSULE, NULL);
}

static PyObject *set_marks(PyObject *self, PyObject *capsule) {
  /* marks as C++ pre-hooks from now on (a capsule of _marks.api()), or, with
   * None, as Python tensor hooks */
  (void)self;
  const mpp_marks_api *m = NULL;
  if (capsule != Py_None) {
    m = (const mpp_marks_api *)PyCapsule_GetPointer(capsule, MPP_MARKS_CAPSULE);
    if (!m) return NULL;
    if (m->version != MPP_MARKS_API_VERSION) {
      PyErr_Format(PyExc_ValueError, "marks API version %d, _fast has %d", m->version,
                   MPP_MARKS_API_VERSION);
      return NULL;
    }
    Py_INCREF(capsule); /* kept: the module behind it stays loaded */
  }
  cxx = m;
  Py_RETURN_NONE;
}

static PyObject *cxx_marks(PyObject *self, PyObject *x) {
  /* the C++ marks on x's grad_fn: 0 when marks are Python hooks or x is
   * not exactly a torch.Tensor */
  (void)self;
  return PyLong_FromLong(cxx && (PyObject *)Py_TYPE(x) == tensor_type ? cxx->count(x) : 0);
}

static PyObject *depth(PyObject *self, PyObject *unused) {
  /* (frames, backward calls, autograd-thread flag) of the calling thread: tests */
  (void)self;
  (void)unused;
  tstate *t = thread_state();
  return Py_BuildValue("(iii)", t ? t->n + t->overflow : 0, t ? t->bwd : 0, t ? t->worker : 0);
}

static void *address(PyObject *o) {
  void *p = PyLong_AsVoidPtr(o);
  if (!p && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "null function address");
  return p;
}

static PyObject *init(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *push, *pop, *set, *ops, *tensor, *genabled, *res, *log, *idmap, *odict;
  if (!PyArg_UnpackTuple(args, "init", 10, 10, &push, &pop, &set, &ops, &tensor, &genabled, &res,
                         &log, &idmap, &odict))
    return NULL;
  if (!PyDict_Check(idmap)) {
    PyErr_SetString(PyExc_TypeError, "ids must be a dict");
    return NULL;
  }
  push_fn p1 = (push_fn)address(push);
  pop_fn p2 = (pop_fn)address(pop);
  push_fn p3 = (push_fn)address(set);
  if (PyErr_Occurred()) return NULL;
  c_push = p1, c_pop = p2, c_set = p3;
  c_ops = ops == Py_None ? NULL : (ops_fn)PyLong_AsVoidPtr(ops);
  if (PyErr_Occurred()) return NULL;
  PyObject **slots[] = {&tensor_type, &grad_enabled, &resolve, &log_fn, &ids, &odict_type};
  PyObject *vals[] = {tensor, genabled, res, log, idmap, odict};
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
    PyObject *old = *slots[i];
    Py_XINCREF(vals[i]);
    *slots[i] = vals[i];
    Py_XDECREF(old);
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", init, METH_VARARGS,
     "init(push, pop, set, ops|None, Tensor, is_grad_enabled, resolve, log, ids, OrderedDict): "
     "function addresses (ints) of mpprof.h's scope calls, then Python objects"},
    {"pre", pre, METH_VARARGS, "global module forward pre-hook"},
    {"post", post, METH_VARARGS, "global module forward hook (with or without kwargs)"},
    {"tail", tail, METH_VARARGS, "the last of a module's own forward hooks: its call ends"},
    {"set_tail", set_tail, METH_VARARGS,
     "set_tail(obj, key, modules): modules whose _forward_hooks end with key: obj close in it; "
     "modules: id(module) -> weakref of those given it"},
    {"backward_enter", backward_enter, METH_NOARGS, "torch.autograd.backward/grad starts here"},
    {"backward_exit", backward_exit, METH_NOARGS, "... and returns"},
    {"wrap_autograd", wrap_autograd, METH_VARARGS,
     "wrap_autograd(fn, pre, post=None): fn (torch.autograd.backward or grad) run by a C callable, "
     "after pre(args, kwargs|None), in a backward scope; then post() when no other such call runs"},
    {"scope_enter", scope_enter, METH_VARARGS,
     "scope_enter(lid, phase, starts=True): open a (layer, phase) scope (frames left inside go "
     "with it); starts: it is training work that starts the next step"},
    {"scope_exit", scope_exit, METH_NOARGS, "close it"},
    {"root_called", root_called, METH_VARARGS,
     "root_called(slot, nested, gen): a root model of that name's slot is called now (inside "
     "another's forward: nested; gen its root forward)"},
    {"root_calls", root_calls, METH_O,
     "root_calls(slot): (this step, the step of the last call of a root of that slot at the top of "
     "a thread, of any call, the root forward of the last call), or None: never called"},
    {"step_next", step_next, METH_VARARGS,
     "step_next(n, mark|None): the next training work starts step n (mark(n)); n -1: none"},
    {"follow_roots", follow_roots, METH_O,
     "(begins, ends, live) of root calls, or None; returns the previous"},
    {"kwargs_from", kwargs_from, METH_O,
     "((code, name of its **kwargs), ...) of torch's module call, or None; returns the previous"},
    {"mark_root", mark_root, METH_O, "mark a backward root: backward, no module"},
    {"register_probe", register_probe, METH_VARARGS, "start-up check of the direct registration"},
    {"set_direct", set_direct, METH_O, "use the direct registration (True) or register_hook"},
    {"hide_reads", hide_reads, METH_O,
     "the context manager type that switches __torch_function__ off around a subclass's "
     "marks, or None; returns the previous"},
    {"depth", depth, METH_NOARGS, "(frames, backward depth, worker) of this thread"},
    {"api", api, METH_NOARGS, "_fast's side of the C++ marks (a capsule)"},
    {"set_marks", set_marks, METH_O, "marks through _marks.api()'s capsule, or None: Python hooks"},
    {"cxx_marks", cxx_marks, METH_O, "the C++ marks on x's grad_fn (0 or 1)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  mark_type = PyType_FromSpec(&mark_spec);
  if (!mark_type) goto fail;
  /* torch.utils.hooks.warn_if_has_hooks: a hook whose key has this is not
   * meant to be serialised, so saving a marked tensor warns of nothing */
  if (PyObject_SetAttrString(mark_type, "__torch_unserializable__", Py_True) < 0) goto fail;
  if (!(mark_key = new_mark(UNSET, UNSET))) goto fail; /* the marks' key: has that too */
  Py_INCREF(mark_type);
  if (PyModule_AddObject(m, "MarkHook", mark_type) < 0) goto fail;
  if (!(autograd_type = PyType_FromSpec(&autograd_spec))) goto fail;
  Py_INCREF(autograd_type);
  if (PyModule_AddObject(m, "AutogradCall", autograd_type) < 0) goto fail;
  if (!(s_requires_grad = PyUnicode_InternFromString("requires_grad")) ||
      !(s_grad_fn = PyUnicode_InternFromString("grad_fn")) ||
      !(s_backward_hooks = PyUnicode_InternFromString("_backward_hooks")) ||
      !(s_dataclass_fields = PyUnicode_InternFromString("__dataclass_fields__")) ||
      !(s_register_hook_dict = PyUnicode_InternFromString("_register_hook_dict")) ||
      !(s_register_hook = PyUnicode_InternFromString("register_hook")) ||
      !(s_f_code = PyUnicode_InternFromString("f_code")) ||
      !(s_f_back = PyUnicode_InternFromString("f_back")) ||
      !(s_f_locals = PyUnicode_InternFromString("f_locals")) ||
      !(s_forward_hooks = PyUnicode_InternFromString("_forward_hooks")))
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
