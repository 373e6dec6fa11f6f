// mpprof's backward marks as C++ pre-hooks on a tensor's grad_fn
// (marks_api.h says why and what each side does). Built against one torch
// (its C++ ABI): hooks.py loads it only into the torch _marks.torch.json
// names (its file, version and C++ ABI), and keeps it only where a probe
// shows a mark running in the first backward; otherwise the marks are
// Python tensor hooks (_fast.c).
//
// A mark is a torch::autograd::FunctionPreHook: the same list of grad_fn
// that Tensor.register_hook's Python hook joins, so it runs at the same
// moment, on the autograd thread, before grad_fn computes. It holds the
// mark's state and calls _fast's fire() (no Python object, no lock). Every
// C++ exception stays here: a mark that cannot be placed is left to the
// Python hook, one that fails in backward does nothing.
#include <Python.h>

#include <atomic>
#include <memory>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/python_variable.h>

extern "C" {
#include "marks_api.h"
}

namespace {

using torch::autograd::FunctionPreHook;
using torch::autograd::variable_list;

const mpp_fast_api *fast;          // _fast.c's update and fire
std::atomic<unsigned long> probes; // probe marks run (the start-up check)

struct Mark : FunctionPreHook {
  mpp_mark_state st{};
  bool probe = false;
  variable_list operator()(const variable_list &grads) override {
    if (probe)
      probes.fetch_add(1, std::memory_order_relaxed);
    else
      fast->fire(&st);
    return grads; // unchanged
  }
};

// The mark already on fn, or nullptr.
Mark *mark_on(torch::autograd::Node &fn) {
  for (auto &h : fn.pre_hooks())
    if (auto *m = dynamic_cast<Mark *>(h.get())) return m;
  return nullptr;
}

// marks_api.h's mark(): x is exactly a torch.Tensor (checked by _fast.c).
int mark(void *x, int32_t start, int32_t end) {
  try {
    const at::Tensor &t = THPVariable_Unpack(static_cast<PyObject *>(x));
    if (!t.requires_grad()) return 1;
    const auto &fn = t.grad_fn();
    if (!fn) return 1; // a leaf: its gradient ends the graph
    if (Mark *m = mark_on(*fn)) {
      fast->update(&m->st, start, end, 0);
      return 1;
    }
    auto m = std::make_unique<Mark>();
    fast->update(&m->st, start, end, 1);
    fn->add_pre_hook(std::move(m));
    return 1;
  } catch (...) {
    return 0;
  }
}

// marks_api.h's count().
int count(void *x) {
  try {
    const auto &fn = THPVariable_Unpack(static_cast<PyObject *>(x)).grad_fn();
    int n = 0;
    if (fn)
      for (auto &h : fn->pre_hooks())
        n += dynamic_cast<Mark *>(h.get()) != nullptr;
    return n;
  } catch (...) {
    return 0;
  }
}

const mpp_marks_api marks_api = {MPP_MARKS_API_VERSION, mark, count};

PyObject *api(PyObject *, PyObject *capsule) {
  auto *f = static_cast<const mpp_fast_api *>(PyCapsule_GetPointer(capsule, MPP_FAST_CAPSULE));
  if (!f) return nullptr;
  if (f->version != MPP_MARKS_API_VERSION) {
    PyErr_Format(PyExc_ValueError, "_fast API version %d, _marks has %d", f->version,
                 MPP_MARKS_API_VERSION);
    return nullptr;
  }
  fast = f;
  return PyCapsule_New(const_cast<mpp_marks_api *>(&marks_api), MPP_MARKS_CAPSULE, nullptr);
}

// The start-up check: a probe mark on x (a non-leaf torch.Tensor) that
// counts its runs instead of firing; probes() reads the count.
PyObject *probe(PyObject *, PyObject *x) {
  try {
    const at::Tensor &t = THPVariable_Unpack(x);
    const auto &fn = t.grad_fn();
    if (!fn) {
      PyErr_SetString(PyExc_ValueError, "probe: a tensor with a grad_fn");
      return nullptr;
    }
    auto m = std::make_unique<Mark>();
    m->probe = true;
    fn->add_pre_hook(std::move(m));
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject *probes_run(PyObject *, PyObject *) {
  return PyLong_FromUnsignedLong(probes.load());
}

PyMethodDef methods[] = {
    {"api", api, METH_O, "api(_fast.api()): the marks' capsule for _fast.set_marks"},
    {"probe", probe, METH_O, "start-up check: a counting mark on x's grad_fn"},
    {"probes", probes_run, METH_NOARGS, "probe marks run so far"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_marks", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit__marks(void) {
  return PyModule_Create(&module_def);
}
