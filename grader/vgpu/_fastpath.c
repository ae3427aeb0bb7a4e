/* The virtual node's hottest path in C: `VirtualGPUMode._generic` and `Node.label_storage`.
 *
 * Every op of a student's script passes through the torch-function mode; at the sizes the
 * checks use (DIM 64 to 256) the bookkeeping in Python cost as much as the op itself. This
 * module does the same bookkeeping, step for step and to the nanosecond, in C:
 *
 *   - the devices of the op's tensors (one, or PyTorch's own mismatch error) and their bytes;
 *   - the op itself;
 *   - the output's label (a weak reference on its storage tells the node when it is freed);
 *   - the op's cost on the simulated clock and its backward's entry on the tape.
 *
 * It declines (returns the `declined` object it was given, before running the op) anything
 * unusual: a `device=` keyword, a list holding something other than tensors, a tensor without
 * storage. After the op, an output other than one tensor with a storage goes to the mode's
 * Python tail (`VirtualGPUMode._account`). grader/vgpu/mode.py keeps the whole path in Python
 * too: it is used where this module could not be built, and tests check the two agree record
 * for record.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>

/* The node's lock (Node._lock) where this module is built. Every section it guards runs with
 * the GIL held; the C sections below run no Python code and never let the GIL go, so they
 * cannot interleave with one another. What they must not interleave with is a Python section
 * (Node._label, _release, reset_peak) that lost the GIL half-way: the Python side takes this
 * lock, and the C side only waits while another thread holds it, without calling into Python
 * for a lock of its own (two calls per label and two per release, a tenth of the node's cost
 * per op at DIM 64). Reentrant for its owner: a storage freed by a collection that a Python
 * section started is released by the same thread. */
typedef struct {
    PyObject_HEAD
    unsigned long owner;     /* the thread that holds it */
    long depth;              /* 0: free */
} GilLock;

/* Wait (the GIL let go meanwhile) until no other thread holds `lock`. */
static void
gillock_wait(GilLock *lock)
{
    if (lock->depth == 0)
        return;
    unsigned long me = PyThread_get_thread_ident();
    while (lock->depth > 0 && lock->owner != me) {
        Py_BEGIN_ALLOW_THREADS
        sched_yield();
        Py_END_ALLOW_THREADS
    }
}

static PyObject *
gillock_acquire(GilLock *self, PyObject *Py_UNUSED(ignored))
{
    gillock_wait(self);
    self->owner = PyThread_get_thread_ident();
    self->depth++;
    Py_RETURN_TRUE;
}

static PyObject *
gillock_release(GilLock *self, PyObject *Py_UNUSED(ignored))
{
    if (self->depth == 0 || self->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "release of the node's lock it does not hold");
        return NULL;
    }
    self->depth--;
    Py_RETURN_NONE;
}

static PyObject *
gillock_exit(GilLock *self, PyObject *const *Py_UNUSED(argv), Py_ssize_t Py_UNUSED(argc))
{
    PyObject *done = gillock_release(self, NULL);
    if (done == NULL)
        return NULL;
    Py_DECREF(done);
    Py_RETURN_FALSE;
}

static PyObject *
gillock_locked(GilLock *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->depth > 0);
}

static PyMethodDef gillock_methods[] = {
    {"acquire", (PyCFunction)gillock_acquire, METH_NOARGS, "take the lock (waits for others)"},
    {"release", (PyCFunction)gillock_release, METH_NOARGS, "give it back"},
    {"locked", (PyCFunction)gillock_locked, METH_NOARGS, "whether a thread holds it"},
    {"__enter__", (PyCFunction)gillock_acquire, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))gillock_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GilLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grader.vgpu._fastpath.GilLock",
    .tp_basicsize = sizeof(GilLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The node's lock: Python sections take it; the C sections wait while another "
              "thread holds it.",
    .tp_methods = gillock_methods,
    .tp_new = PyType_GenericNew,
};

typedef struct {
    PyObject_HEAD
    PyObject *tensor_type;   /* torch.Tensor */
    PyObject *tensor_to;     /* torch.Tensor.to as the node found it (a script may replace it) */
    PyObject *storage_id;    /* torch._C._storage_id */
    PyObject *node;          /* grader.vgpu.node.Node */
    PyObject *labels;        /* node.labels: storage id -> GPU */
    PyObject *producers;     /* node.producers: storage id -> tape entry */
    PyObject *watched;       /* node._watched: id(weak reference) -> (it, key, GPU, bytes) */
    PyObject *lock;          /* node._lock */
    PyObject *on_release;    /* self.release: the weak references' callback */
    PyObject *clock;         /* node.clock */
    PyObject *state;         /* clock._local: this thread's host time, tape, on/off */
    PyObject *flop_ops;      /* cost_model.FLOP_OPS */
    PyObject *flops;         /* cost_model.flops */
    PyObject *next_entry;    /* backward_schedule.next_entry */
    PyObject *mismatch;      /* mode.mismatch: PyTorch's wording of a device mismatch */
    PyObject *account;       /* mode._account: the Python tail for unusual outputs */
    PyObject *declined;      /* returned when the op is left to the Python path */
    PyObject *op_kind;       /* backward_schedule.OP */
    /* The mode's own entry (`dispatch`), once `bind_mode` gave it what it routes by: */
    PyObject *routes;        /* mode._routes: function -> (kind or handler, name) */
    PyObject *generic_kind;  /* mode._GENERIC */
    PyObject *free_kind;     /* mode._FREE */
    PyObject *pass_kind;     /* mode._PASS */
    PyObject *slow;          /* the mode's __torch_function__ in Python: everything else */
    PyObject *python_generic;/* mode._generic: an op this path declines */
    PyObject *to_handler;    /* mode._to, as the routes hold it */
    PyObject *devices;       /* mode._devices: `.to()` argument -> GPU index */
    PyObject *tracing;       /* () -> whether the run writes a trace */
    PyObject *copy_kind;     /* backward_schedule.COPY */
    PyObject *preserve;      /* torch.preserve_format */
    PyObject *thread_state;  /* clock._local's dict of the thread that last used this path */
    unsigned long thread_id; /* that thread */
    long long granule;       /* node.ALLOCATION_GRANULE */
    Py_ssize_t tape_limit;   /* clock.TAPE_LIMIT */
} FastPath;

static PyObject *s_nbytes, *s_dim, *s_requires_grad, *s_untyped_storage, *s_on, *s_host,
    *s_tape, *s_host_op_ns, *s_s_per_byte, *s_s_per_flop, *s_kernel_s, *s_backward_factor,
    *s_busy_until, *s_allocated, *s_peak, *s_acquire, *s_release, *s_record, *s_shape,
    *s_numel, *s_linear, *s_pop, *s_device, *s_n, *s_memory_bytes_per_s, *s_dict, *s_hot,
    *s_to, *s_copy, *s_dtype, *s_move_kwnames, *s_torch_function;

#define FIELDS(apply) \
    apply(tensor_type) apply(tensor_to) apply(storage_id) apply(node) apply(labels) apply(producers) \
    apply(watched) apply(lock) apply(on_release) apply(clock) apply(state) apply(flop_ops) \
    apply(flops) apply(next_entry) apply(mismatch) apply(account) apply(declined) apply(op_kind) \
    apply(routes) apply(generic_kind) apply(free_kind) \
    apply(pass_kind) apply(slow) apply(python_generic) apply(to_handler) apply(devices) \
    apply(tracing) apply(copy_kind) apply(preserve) \
    apply(thread_state)

static int
fastpath_traverse(FastPath *self, visitproc visit, void *arg)
{
#define VISIT(field) Py_VISIT(self->field);
    FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int
fastpath_clear(FastPath *self)
{
#define CLEAR(field) Py_CLEAR(self->field);
    FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void
fastpath_dealloc(FastPath *self)
{
    PyObject_GC_UnTrack(self);
    fastpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
fastpath_init(FastPath *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tensor_type", "storage_id", "node", "flop_ops", "flops",
                             "next_entry", "mismatch", "account", "declined", "op_kind",
                             "granule", "tape_limit", NULL};
    PyObject *tensor_type, *storage_id, *node, *flop_ops, *flops, *next_entry, *mismatch,
        *account, *declined, *op_kind;
    long long granule;
    Py_ssize_t tape_limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOOOOOLn", kwlist, &tensor_type,
                                     &storage_id, &node, &flop_ops, &flops, &next_entry,
                                     &mismatch, &account, &declined, &op_kind, &granule,
                                     &tape_limit))
        return -1;
    if (!PyType_Check(tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "tensor_type must be a type");
        return -1;
    }
    if (granule <= 0) {
        PyErr_SetString(PyExc_ValueError, "granule must be positive");
        return -1;
    }
#define KEEP(field, value) do { Py_INCREF(value); Py_XSETREF(self->field, value); } while (0)
#define KEEP_ATTR(field, owner, name) do { \
        PyObject *found_ = PyObject_GetAttrString(owner, name); \
        if (found_ == NULL) return -1; \
        Py_XSETREF(self->field, found_); } while (0)
    KEEP(tensor_type, tensor_type);
    KEEP_ATTR(tensor_to, tensor_type, "to");
    KEEP(storage_id, storage_id);
    KEEP(node, node);
    KEEP(flop_ops, flop_ops);
    KEEP(flops, flops);
    KEEP(next_entry, next_entry);
    KEEP(mismatch, mismatch);
    KEEP(account, account);
    KEEP(declined, declined);
    KEEP(op_kind, op_kind);
    KEEP_ATTR(labels, node, "labels");
    KEEP_ATTR(producers, node, "producers");
    KEEP_ATTR(watched, node, "_watched");
    KEEP_ATTR(lock, node, "_lock");
    if (!PyObject_TypeCheck(self->lock, &GilLockType)) {
        PyErr_SetString(PyExc_TypeError, "the node's lock must be this module's GilLock");
        return -1;
    }
    /* Storages labelled here are released here too (the same as Node._release, in C). */
    KEEP_ATTR(on_release, (PyObject *)self, "release");
    KEEP_ATTR(clock, node, "clock");
    KEEP_ATTR(state, self->clock, "_local");
#undef KEEP
#undef KEEP_ATTR
    self->granule = granule;
    self->tape_limit = tape_limit;
    return 0;
}

/* 1 if the pending exception is one the Python path answers differently (a storage-less or
 * otherwise odd tensor): it is cleared, and the op is declined. */
static int
odd_tensor_error(void)
{
    if (PyErr_ExceptionMatches(PyExc_NotImplementedError) ||
        PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

static int
as_long_long(PyObject *value, long long *out)
{
    *out = PyLong_AsLongLong(value);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
get_long_long(PyObject *owner, PyObject *name, long long *out)
{
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL)
        return -1;
    int failed = as_long_long(value, out);
    Py_DECREF(value);
    return failed;
}

static int
get_double(PyObject *owner, PyObject *name, double *out)
{
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL)
        return -1;
    *out = PyFloat_AsDouble(value);
    Py_DECREF(value);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* Python's round() of a float to an int: halves to even, as the default rounding mode does. */
static long long
round_ns(double value)
{
    return (long long)nearbyint(value);
}

/* The node's lock: free of other threads' Python sections from here to the next call into
 * Python (none below, between the wait and the end of each section). */
static void
wait_for_lock(FastPath *self)
{
    gillock_wait((GilLock *)self->lock);
}

static int
list_get(PyObject *list, Py_ssize_t index, long long *value)
{
    if (!PyList_Check(list) || index < 0 || index >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    return as_long_long(PyList_GET_ITEM(list, index), value);
}

/* list[index] += delta; the new value in *now. */
static int
list_add(PyObject *list, Py_ssize_t index, long long delta, long long *now)
{
    long long value;
    if (list_get(list, index, &value) < 0)
        return -1;
    value += delta;
    PyObject *boxed = PyLong_FromLongLong(value);
    if (boxed == NULL)
        return -1;
    PyList_SetItem(list, index, boxed); /* steals boxed */
    *now = value;
    return 0;
}

/* Node.label_storage: mark the storage of `tensor` (`key`) as living on GPU `index`. */
static int
label_storage(FastPath *self, PyObject *tensor, PyObject *key, PyObject *index)
{
    PyObject *storage = NULL, *storage_bytes = NULL, *watch = NULL, *watch_id = NULL,
             *record = NULL, *rounded_bytes = NULL, *allocated = NULL, *peak = NULL;
    long long raw, nbytes, now, highest;
    int status = -1;
    Py_ssize_t gpu = PyLong_AsSsize_t(index);
    if (gpu == -1 && PyErr_Occurred())
        return -1;
    storage = PyObject_CallMethodNoArgs(tensor, s_untyped_storage);
    if (storage == NULL)
        goto done;
    storage_bytes = PyObject_CallMethodNoArgs(storage, s_nbytes);
    if (storage_bytes == NULL || as_long_long(storage_bytes, &raw) < 0)
        goto done;
    nbytes = ((raw + self->granule - 1) / self->granule) * self->granule;
    if (raw < 0)  /* never seen; floor division as Python does it */
        nbytes = -((-raw) / self->granule) * self->granule;
    rounded_bytes = PyLong_FromLongLong(nbytes);
    if (rounded_bytes == NULL)
        goto done;
    watch = PyWeakref_NewRef(storage, self->on_release);
    if (watch == NULL)
        goto done;
    watch_id = PyLong_FromVoidPtr(watch);
    record = PyTuple_Pack(4, watch, key, index, rounded_bytes);
    if (watch_id == NULL || record == NULL)
        goto done;
    allocated = PyObject_GetAttr(self->node, s_allocated);
    peak = PyObject_GetAttr(self->node, s_peak);
    if (allocated == NULL || peak == NULL)
        goto done;
    wait_for_lock(self);
    if (PyDict_SetItem(self->labels, key, index) < 0 ||
        PyDict_SetItem(self->watched, watch_id, record) < 0 ||
        list_add(allocated, gpu, nbytes, &now) < 0)
        goto done;
    if (list_get(peak, gpu, &highest) < 0)
        goto done;
    if (now > highest) {
        PyObject *boxed = PyLong_FromLongLong(now);
        if (boxed == NULL)
            goto done;
        PyList_SetItem(peak, gpu, boxed);
    }
    status = 0;
done:
    Py_XDECREF(storage_bytes);
    Py_XDECREF(rounded_bytes);
    Py_XDECREF(watch_id);
    Py_XDECREF(record);
    Py_XDECREF(watch);
    Py_XDECREF(allocated);
    Py_XDECREF(peak);
    Py_XDECREF(storage);
    return status;
}

/* The first tensor of an op's output (the output itself, or the first in a list or tuple). */
static PyObject *
first_tensor(FastPath *self, PyObject *out)
{
    if (PyObject_TypeCheck(out, (PyTypeObject *)self->tensor_type))
        return out;
    if (PyList_Check(out) || PyTuple_Check(out)) {
        PyObject *items = PySequence_Fast(out, "");
        if (items == NULL)
            return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(items, i);
            if (PyObject_TypeCheck(item, (PyTypeObject *)self->tensor_type)) {
                Py_DECREF(items);
                return item; /* borrowed: `out` holds it */
            }
        }
        Py_DECREF(items);
    }
    return NULL;
}

static int
is_true_attr(PyObject *owner, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* One input tensor: its key and label, checked against the op's device so far. Returns 1 when
 * it was taken, 0 when the op is declined, -1 on an error. */
static int
take_input(FastPath *self, PyObject *tensor, PyObject *inputs, PyObject *keys,
           PyObject **found, int *have_found, long long *nbytes)
{
    PyObject *key = PyObject_CallOneArg(self->storage_id, tensor);
    if (key == NULL)
        return odd_tensor_error() ? 0 : -1;
    if (PyList_Append(inputs, tensor) < 0 || PyList_Append(keys, key) < 0) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *index = PyDict_GetItemWithError(self->labels, key); /* borrowed */
    Py_DECREF(key);
    if (index == NULL && PyErr_Occurred())
        return -1;
    if (index == NULL)
        index = Py_None;
    long long size;
    if (get_long_long(tensor, s_nbytes, &size) < 0)
        return odd_tensor_error() ? 0 : -1;
    *nbytes += size;
    if (index == Py_None) {
        PyObject *dims = PyObject_CallMethodNoArgs(tensor, s_dim);
        if (dims == NULL)
            return odd_tensor_error() ? 0 : -1;
        long long d;
        int failed = as_long_long(dims, &d);
        Py_DECREF(dims);
        if (failed)
            return -1;
        if (d == 0)
            return 1; /* host scalars may meet tensors on any device, as in PyTorch */
    }
    if (!*have_found) {
        Py_INCREF(index);
        *found = index;
        *have_found = 1;
        return 1;
    }
    int differ = PyObject_RichCompareBool(index, *found, Py_NE);
    if (differ < 0)
        return -1;
    if (differ) {
        PyObject *error = PyObject_CallFunctionObjArgs(self->mismatch, *found, index, NULL);
        if (error != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(error), error);
            Py_DECREF(error);
        }
        return -1;
    }
    return 1;
}

/* One argument of the op: a tensor, a list or tuple of tensors (taken one by one), or anything
 * else (skipped). Returns as take_input does. */
static int
take_value(FastPath *self, PyObject *value, PyObject *inputs, PyObject *keys, PyObject **found,
           int *have_found, long long *nbytes)
{
    PyTypeObject *tensor_type = (PyTypeObject *)self->tensor_type;
    if (PyObject_TypeCheck(value, tensor_type))
        return take_input(self, value, inputs, keys, found, have_found, nbytes);
    if (!(PyList_Check(value) || PyTuple_Check(value)))
        return 1;
    Py_ssize_t n = PyList_Check(value) ? PyList_GET_SIZE(value) : PyTuple_GET_SIZE(value);
    if (n == 0)
        return 1;
    PyObject *head = PyList_Check(value) ? PyList_GET_ITEM(value, 0) : PyTuple_GET_ITEM(value, 0);
    if (!PyObject_TypeCheck(head, tensor_type))
        return 1;
    PyObject *items = PySequence_Fast(value, "");
    if (items == NULL)
        return -1;
    int taken = 1;
    n = PySequence_Fast_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n && taken == 1; i++)
        taken = take_input(self, PySequence_Fast_GET_ITEM(items, i), inputs, keys, found,
                           have_found, nbytes);
    Py_DECREF(items);
    return taken;
}

/* This thread's dict of clock._local (a threading.local): its attributes are read from it
 * with plain dict lookups, one lookup of the thread's dict per op instead of one per read. */
static PyObject *
state_dict(FastPath *self)
{
    /* A mode, and so this path, serves the one thread that entered it: its dict is kept (a
     * thread's dict of a threading.local stays the same object while the thread lives). */
    unsigned long me = PyThread_get_thread_ident();
    if (self->thread_state != NULL && self->thread_id == me)
        return Py_NewRef(self->thread_state);
    PyObject *found = PyObject_GetAttr(self->state, s_dict);
    if (found != NULL && !PyDict_Check(found)) {
        Py_DECREF(found);
        PyErr_SetString(PyExc_TypeError, "the clock's thread state has no dict");
        return NULL;
    }
    if (found != NULL) {
        Py_XSETREF(self->thread_state, Py_NewRef(found));
        self->thread_id = me;
    }
    return found;
}

/* state.<name> as Python reads it: the thread's own value, else the class's default. */
static PyObject *
state_get(FastPath *self, PyObject *sdict, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(sdict, name);
    if (value != NULL)
        return Py_NewRef(value);
    if (PyErr_Occurred())
        return NULL;
    return PyObject_GetAttr(self->state, name);
}

/* clock.timed: whether work in this thread goes on the clock (1, 0; -1 on an error). */
static int
thread_is_timed(FastPath *self, PyObject *sdict)
{
    PyObject *on = state_get(self, sdict, s_on);
    int timed = on == NULL ? -1 : PyObject_IsTrue(on);
    Py_XDECREF(on);
    return timed;
}

/* Whether this thread's host time and the GPU's stream time are ints (0: no, -1: error). */
static int
whole_nanoseconds(FastPath *self, PyObject *sdict, PyObject *found)
{
    PyObject *host = state_get(self, sdict, s_host);
    if (host == NULL)
        return -1;
    int whole = PyLong_CheckExact(host);
    Py_DECREF(host);
    if (!whole)
        return 0;
    PyObject *busy = PyObject_GetAttr(self->clock, s_busy_until);
    if (busy == NULL)
        return -1;
    Py_ssize_t gpu = PyLong_AsSsize_t(found);
    whole = gpu == -1 && PyErr_Occurred() ? -1
            : PyList_Check(busy) && gpu >= 0 && gpu < PyList_GET_SIZE(busy)
              && PyLong_CheckExact(PyList_GET_ITEM(busy, gpu));
    Py_DECREF(busy);
    return whole;
}

/* The op's cost on the clock and its backward's entry on the tape (mode._generic's tail). */
static int
charge(FastPath *self, PyObject *sdict, PyObject *name, PyObject *args, PyObject *out,
       PyObject *out_key, PyObject *found, PyObject *inputs, PyObject *keys, long long nbytes)
{
    PyObject *clock = self->clock;
    double s_per_byte, s_per_flop, kernel_s, backward_factor;
    long long host_op_ns, host, busy_now;
    /* Whole nanoseconds only (a cost model with a fractional factor makes times floats, which
     * the Python path follows): 1 tells the caller to leave the charge to it. */
    int whole = whole_nanoseconds(self, sdict, found);
    if (whole <= 0)
        return whole < 0 ? -1 : 1;
    /* The cost model's constants, as clock.hot holds them (one read instead of five). */
    PyObject *hot = PyObject_GetAttr(clock, s_hot);
    if (hot == NULL)
        return -1;
    int unpacked = PyTuple_Check(hot) && PyTuple_GET_SIZE(hot) == 5;
    if (unpacked) {
        s_per_byte = PyFloat_AsDouble(PyTuple_GET_ITEM(hot, 0));
        s_per_flop = PyFloat_AsDouble(PyTuple_GET_ITEM(hot, 1));
        kernel_s = PyFloat_AsDouble(PyTuple_GET_ITEM(hot, 2));
        backward_factor = PyFloat_AsDouble(PyTuple_GET_ITEM(hot, 3));
        unpacked = as_long_long(PyTuple_GET_ITEM(hot, 4), &host_op_ns) == 0 && !PyErr_Occurred();
    } else
        PyErr_SetString(PyExc_TypeError, "clock.hot is (s_per_byte, s_per_flop, kernel_s, "
                        "backward_factor, host_op_ns)");
    Py_DECREF(hot);
    if (!unpacked)
        return -1;
    double work = (double)nbytes * s_per_byte;
    /* `name == "linear" and args[0].dim()`: 2 * out.numel() * in_features; otherwise, an op
     * of FLOP_OPS: cost_model.flops (mode._generic does the same, in the same order). */
    int linear = 0;
    if (PyUnicode_Check(name) && PyUnicode_Compare(name, s_linear) == 0 &&
        PyTuple_GET_SIZE(args) > 0) {
        PyObject *dims = PyObject_CallMethodNoArgs(PyTuple_GET_ITEM(args, 0), s_dim);
        if (dims == NULL)
            return -1;
        linear = PyObject_IsTrue(dims);
        Py_DECREF(dims);
        if (linear < 0)
            return -1;
    }
    if (linear) {
        long long numel, last;
        PyObject *count = PyObject_CallMethodNoArgs(out, s_numel);
        if (count == NULL)
            return -1;
        int failed = as_long_long(count, &numel);
        Py_DECREF(count);
        PyObject *shape = failed ? NULL : PyObject_GetAttr(PyTuple_GET_ITEM(args, 0), s_shape);
        if (shape == NULL)
            return -1;
        Py_ssize_t dims = PySequence_Size(shape);
        PyObject *tail = dims < 0 ? NULL : PySequence_GetItem(shape, dims - 1);
        Py_DECREF(shape);
        if (tail == NULL)
            return -1;
        failed = as_long_long(tail, &last);
        Py_DECREF(tail);
        if (failed)
            return -1;
        double arithmetic = 2.0 * (double)numel * (double)last * s_per_flop;
        if (arithmetic > work)
            work = arithmetic;
    } else {
        int contains = PySet_Contains(self->flop_ops, name);
        if (contains < 0)
            return -1;
        if (contains) {
            PyObject *count = PyObject_CallFunctionObjArgs(self->flops, name, args, out, NULL);
            if (count == NULL)
                return -1;
            double arithmetic = PyFloat_AsDouble(count);
            Py_DECREF(count);
            if (arithmetic == -1.0 && PyErr_Occurred())
                return -1;
            arithmetic *= s_per_flop;
            if (arithmetic > work)
                work = arithmetic;
        }
    }
    double seconds = kernel_s + work;
    PyObject *host_now = state_get(self, sdict, s_host);
    if (host_now == NULL)
        return -1;
    int failed_host = as_long_long(host_now, &host);
    Py_DECREF(host_now);
    if (failed_host)
        return -1;
    host += host_op_ns;
    PyObject *boxed = PyLong_FromLongLong(host);
    if (boxed == NULL || PyDict_SetItem(sdict, s_host, boxed) < 0) {
        Py_XDECREF(boxed);
        return -1;
    }
    Py_DECREF(boxed);
    Py_ssize_t gpu = PyLong_AsSsize_t(found);
    if (gpu == -1 && PyErr_Occurred())
        return -1;
    PyObject *busy = PyObject_GetAttr(clock, s_busy_until);
    if (busy == NULL)
        return -1;
    if (list_get(busy, gpu, &busy_now) < 0) {
        Py_DECREF(busy);
        return -1;
    }
    busy_now = (busy_now > host ? busy_now : host) + round_ns(seconds * 1e9);
    boxed = PyLong_FromLongLong(busy_now);
    if (boxed == NULL) {
        Py_DECREF(busy);
        return -1;
    }
    PyList_SetItem(busy, gpu, boxed);
    Py_DECREF(busy);

    int needs_grad = is_true_attr(out, s_requires_grad);
    if (needs_grad <= 0)
        return needs_grad;
    PyObject *made_by = PyList_New(0), *leaves = PyList_New(0);
    PyObject *entry = NULL, *tape = NULL, *record = NULL, *duration = NULL;
    int status = -1;
    if (made_by == NULL || leaves == NULL)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(inputs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tensor = PyList_GET_ITEM(inputs, i);
        int flows = is_true_attr(tensor, s_requires_grad);
        if (flows < 0)
            goto done;
        if (!flows)
            continue; /* no gradient flows back into it (data, or detached) */
        PyObject *maker = PyDict_GetItemWithError(self->producers, PyList_GET_ITEM(keys, i));
        if (maker == NULL && PyErr_Occurred())
            goto done;
        if (PyList_Append(maker != NULL ? made_by : leaves, maker != NULL ? maker : tensor) < 0)
            goto done;
    }
    entry = PyObject_CallNoArgs(self->next_entry);
    duration = PyLong_FromLongLong(round_ns(backward_factor * seconds * 1e9));
    tape = state_get(self, sdict, s_tape);
    if (entry == NULL || duration == NULL || tape == NULL)
        goto done;
    record = PyTuple_Pack(6, self->op_kind, entry, found, duration,
                          PyList_GET_SIZE(leaves) ? leaves : Py_None, made_by);
    if (record == NULL || PyList_Append(tape, record) < 0)
        goto done;
    if (PyList_Check(tape) && PyList_GET_SIZE(tape) > self->tape_limit) {
        PyObject *oldest = PyObject_CallMethodNoArgs(tape, s_pop);
        if (oldest == NULL)
            goto done;
        PyObject *recorded = PyObject_CallMethodOneArg(clock, s_record, oldest);
        Py_DECREF(oldest);
        if (recorded == NULL)
            goto done;
        Py_DECREF(recorded);
    }
    if (out_key == NULL || PyDict_SetItem(self->producers, out_key, entry) == 0)
        status = 0;
done:
    Py_XDECREF(made_by);
    Py_XDECREF(leaves);
    Py_XDECREF(entry);
    Py_XDECREF(duration);
    Py_XDECREF(tape);
    Py_XDECREF(record);
    return status;
}

/* VirtualGPUMode._generic for `func`: the op, labelled and charged; or `declined`. */
static PyObject *
generic(FastPath *self, PyObject *func, PyObject *name, int free_op, PyObject *args,
        PyObject *kwargs)
{
    if (!PyTuple_Check(args) || (kwargs != Py_None && !PyDict_Check(kwargs)))
        goto declined;
    int has_kwargs = kwargs != Py_None && PyDict_GET_SIZE(kwargs) > 0;
    if (has_kwargs) {
        int has_device = PyDict_Contains(kwargs, s_device);
        if (has_device < 0)
            return NULL;
        if (has_device)
            goto declined; /* a factory: made on the host, labelled (mode._factory) */
    }

    PyObject *found = NULL, *out = NULL, *out_key = NULL, *result = NULL, *sdict = NULL;
    PyObject *inputs = PyList_New(0), *keys = PyList_New(0);
    int have_found = 0, taken = 1;
    long long nbytes = 0;
    if (inputs == NULL || keys == NULL)
        goto finish;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n && taken == 1; i++)
        taken = take_value(self, PyTuple_GET_ITEM(args, i), inputs, keys, &found, &have_found,
                           &nbytes);
    if (has_kwargs && taken == 1) {
        Py_ssize_t position = 0;
        PyObject *k, *v;
        while (taken == 1 && PyDict_Next(kwargs, &position, &k, &v))
            taken = take_value(self, v, inputs, keys, &found, &have_found, &nbytes);
    }
    if (taken < 0)
        goto finish;
    if (taken == 0) {
        Py_INCREF(self->declined);
        result = self->declined;
        goto finish;
    }

    out = has_kwargs ? PyObject_Call(func, args, kwargs) : PyObject_Call(func, args, NULL);
    if (out == NULL)
        goto finish;
    sdict = state_dict(self);
    if (sdict == NULL)
        goto finish;
    int on = thread_is_timed(self, sdict);
    if (on < 0)
        goto finish;
    if (!have_found || found == Py_None) {
        if (!free_op && on && first_tensor(self, out) != NULL) {
            /* clock.host_op(): grad mode, profiler marks and the like launch nothing (in
             * Python's arithmetic: the host's time may be a float, see whole_nanoseconds) */
            PyObject *host = state_get(self, sdict, s_host);
            PyObject *cost = PyObject_GetAttr(self->clock, s_host_op_ns);
            PyObject *later = host && cost ? PyNumber_Add(host, cost) : NULL;
            int failed = later == NULL || PyDict_SetItem(sdict, s_host, later) < 0;
            Py_XDECREF(host);
            Py_XDECREF(cost);
            Py_XDECREF(later);
            if (failed)
                goto finish;
        }
        else if (PyErr_Occurred())
            goto finish;
        result = out;
        out = NULL;
        goto finish;
    }
    if (!PyObject_TypeCheck(out, (PyTypeObject *)self->tensor_type)) {
        PyObject *boxed = PyLong_FromLongLong(nbytes);
        if (boxed != NULL)
            result = PyObject_CallFunctionObjArgs(self->account, out, name,
                                                  free_op ? Py_True : Py_False, args, found,
                                                  inputs, keys, boxed, NULL);
        Py_XDECREF(boxed);
        goto finish;
    }
    out_key = PyObject_CallOneArg(self->storage_id, out);
    if (out_key == NULL) {
        if (!odd_tensor_error())
            goto finish;
    } else {
        int known = PyDict_Contains(self->labels, out_key);
        if (known < 0 || (!known && label_storage(self, out, out_key, found) < 0))
            goto finish;
    }
    long long out_bytes;
    if (get_long_long(out, s_nbytes, &out_bytes) < 0)
        goto finish;
    if (!free_op && on) {
        int charged = charge(self, sdict, name, args, out, out_key, found, inputs, keys,
                             nbytes + out_bytes);
        if (charged < 0)
            goto finish;
        if (charged > 0) { /* the Python tail charges it (the output is labelled already) */
            PyObject *boxed = PyLong_FromLongLong(nbytes);
            if (boxed != NULL)
                result = PyObject_CallFunctionObjArgs(self->account, out, name, Py_False, args,
                                                      found, inputs, keys, boxed, NULL);
            Py_XDECREF(boxed);
            goto finish;
        }
    }
    result = out;
    out = NULL;
finish:
    Py_XDECREF(found);
    Py_XDECREF(out);
    Py_XDECREF(out_key);
    Py_XDECREF(inputs);
    Py_XDECREF(keys);
    Py_XDECREF(sdict);
    return result;
declined:
    Py_INCREF(self->declined);
    return self->declined;
}

/* fast.generic(func, name, free, args, kwargs): VirtualGPUMode._generic for `func`. */
static PyObject *
fastpath_generic(FastPath *self, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 5) {
        PyErr_SetString(PyExc_TypeError, "generic(func, name, free, args, kwargs)");
        return NULL;
    }
    int free_op = PyObject_IsTrue(argv[2]);
    if (free_op < 0)
        return NULL;
    return generic(self, argv[0], argv[1], free_op, argv[3], argv[4]);
}

/* fast.bind_mode(routes, generic_kind, free_kind, pass_kind, slow, python_generic, to_handler,
 * devices, tracing, copy_kind, preserve_format): what `dispatch` routes by (VirtualGPUMode's
 * tables and its Python paths). */
static PyObject *
fastpath_bind_mode(FastPath *self, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 11 || !PyDict_Check(argv[0]) || !PyDict_Check(argv[7])) {
        PyErr_SetString(PyExc_TypeError, "bind_mode(routes: dict, generic_kind, free_kind, "
                        "pass_kind, slow, python_generic, to_handler, devices: dict, tracing, "
                        "copy_kind, preserve_format)");
        return NULL;
    }
    PyObject **fields[] = {&self->routes, &self->generic_kind, &self->free_kind,
                           &self->pass_kind, &self->slow, &self->python_generic,
                           &self->to_handler, &self->devices, &self->tracing,
                           &self->copy_kind, &self->preserve};
    for (Py_ssize_t i = 0; i < argc; i++)
        Py_XSETREF(*fields[i], Py_NewRef(argv[i]));
    Py_RETURN_NONE;
}

/* storage_id(tensor) as node.label_of and backward_schedule take it: 1 and the key (a new
 * reference) in *key; 0 for a tensor without a storage (RuntimeError, NotImplementedError,
 * TypeError: none is kept); -1 on any other error. */
static int
storage_key(FastPath *self, PyObject *tensor, PyObject **key)
{
    *key = PyObject_CallOneArg(self->storage_id, tensor);
    if (*key != NULL)
        return 1;
    if (!(PyErr_ExceptionMatches(PyExc_RuntimeError) || odd_tensor_error()))
        return -1;
    PyErr_Clear();
    return 0;
}

/* dict[storage_id(tensor)], borrowed: NULL for none (no error set: no such key, or no
 * storage) or on an error. */
static PyObject *
stored_under(FastPath *self, PyObject *dict, PyObject *tensor)
{
    PyObject *key;
    if (storage_key(self, tensor, &key) <= 0)
        return NULL;
    PyObject *value = PyDict_GetItemWithError(dict, key);
    Py_DECREF(key);
    return value;
}

/* backward_schedule.record_copy between two GPUs: the copy's entry on this thread's tape, with
 * the entry that made `tensor` (if a gradient flows back into it); `out` is now made by it. */
static int
record_copy(FastPath *self, PyObject *source, PyObject *target, PyObject *nbytes,
            PyObject *tensor, PyObject *out)
{
    PyObject *entry = PyObject_CallNoArgs(self->next_entry), *made_by = NULL, *record = NULL;
    PyObject *sdict = NULL, *tape = NULL, *key = NULL;
    int status = -1;
    if (entry == NULL)
        return -1;
    int flows = is_true_attr(tensor, s_requires_grad);
    if (flows < 0)
        goto done;
    PyObject *maker = flows ? stored_under(self, self->producers, tensor) : NULL; /* borrowed */
    if (maker == NULL && PyErr_Occurred())
        goto done;
    made_by = maker != NULL ? PyTuple_Pack(1, maker) : PyTuple_New(0);
    record = made_by == NULL ? NULL : PyTuple_Pack(6, self->copy_kind, entry, source, target,
                                                   nbytes, made_by);
    sdict = record == NULL ? NULL : state_dict(self);
    tape = sdict == NULL ? NULL : state_get(self, sdict, s_tape);
    if (tape == NULL || PyList_Append(tape, record) < 0)
        goto done;
    if (PyList_Check(tape) && PyList_GET_SIZE(tape) > self->tape_limit &&  /* clock.record */
        PyList_SetSlice(tape, 0, PyList_GET_SIZE(tape) / 2, NULL) < 0)
        goto done;
    int keyed = storage_key(self, out, &key); /* backward_schedule._made */
    if (keyed < 0 || (keyed > 0 && PyDict_SetItem(self->producers, key, entry) < 0))
        goto done;
    status = 0;
done:
    Py_XDECREF(entry);
    Py_XDECREF(made_by);
    Py_XDECREF(record);
    Py_XDECREF(sdict);
    Py_XDECREF(tape);
    Py_XDECREF(key);
    return status;
}

/* A copy of `tensor` to GPU `target` (None: the host) from `source`: mode._move and
 * _charge_move for a device known in advance, with neither a dtype nor a layout to change. */
static PyObject *
move(FastPath *self, PyObject *tensor, PyObject *source, PyObject *target)
{
    PyObject *dtype = PyObject_GetAttr(tensor, s_dtype);
    if (dtype == NULL)
        return NULL;
    PyObject *call[] = {tensor, dtype, Py_True, self->preserve};
    /* Tensor.to as the node found it: a script's own `torch.Tensor.to` (a counter that calls
     * the original) ran already, around the call that brought the copy here. */
    PyObject *out = PyObject_Vectorcall(self->tensor_to, call, 1, s_move_kwnames);
    Py_DECREF(dtype);
    if (out == NULL || out == tensor)
        return out;
    if (target != Py_None) { /* node.label(out, target) */
        PyObject *key;
        int keyed = storage_key(self, out, &key);
        if (keyed < 0)
            goto failed;
        if (keyed > 0) {
            int known = PyDict_Contains(self->labels, key);
            int labelled = known < 0 ? -1 : known ? 0 : label_storage(self, out, key, target);
            Py_DECREF(key);
            if (labelled < 0)
                goto failed;
        }
    }
    /* _charge_move: on the clock when this thread is timed */
    PyObject *sdict = state_dict(self);
    int on = sdict == NULL ? -1 : thread_is_timed(self, sdict);
    Py_XDECREF(sdict);
    if (on < 0)
        goto failed;
    if (on) {
        PyObject *nbytes = PyObject_GetAttr(out, s_nbytes);
        if (nbytes == NULL)
            goto failed;
        PyObject *done = PyObject_CallMethodObjArgs(self->clock, s_copy, source, target, nbytes,
                                                    NULL);
        int needs_grad = done == NULL ? -1 : is_true_attr(out, s_requires_grad);
        Py_XDECREF(done);
        if (needs_grad > 0 && source != Py_None && target != Py_None)
            needs_grad = record_copy(self, source, target, nbytes, tensor, out);
        Py_DECREF(nbytes);
        if (needs_grad < 0)
            goto failed;
    }
    return out;
failed:
    Py_DECREF(out);
    return NULL;
}

/* `x.to(device)` with a device argument seen before: x itself where it already is, else its
 * copy there, as mode._to answers them. NULL without an error: not this case (or a run that
 * writes a trace, whose record of the call the Python path writes), left to the mode's Python
 * path. */
static PyObject *
to_known_device(FastPath *self, PyObject *args)
{
    PyObject *tensor = PyTuple_GET_ITEM(args, 0), *device = PyTuple_GET_ITEM(args, 1);
    PyObject *target = PyDict_GetItemWithError(self->devices, device); /* borrowed */
    if (target == NULL) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_TypeError))
            PyErr_Clear(); /* an unhashable argument: the Python path parses it */
        return NULL;
    }
    if (!PyObject_TypeCheck(tensor, (PyTypeObject *)self->tensor_type))
        return NULL;
    /* node.label_of: unlabelled, and a storage-less tensor, live on the host */
    PyObject *source = stored_under(self, self->labels, tensor);
    if (source == NULL) {
        if (PyErr_Occurred())
            return NULL;
        source = Py_None;
    }
    /* Both kept: a label may go, a cached device too, while Python code runs below. */
    Py_INCREF(source);
    Py_INCREF(target);
    PyObject *result = NULL;
    int same = PyObject_RichCompareBool(target, source, Py_EQ);
    if (same < 0)
        goto done;
    if (!same && target != Py_None) { /* (the node may have shrunk since: Python says so) */
        PyObject *n_gpus = PyObject_GetAttr(self->node, s_n);
        int inside = n_gpus == NULL ? -1 : PyObject_RichCompareBool(target, n_gpus, Py_LT);
        Py_XDECREF(n_gpus);
        if (inside <= 0)
            goto done;
    }
    PyObject *traced = PyObject_CallNoArgs(self->tracing);
    int tracing = traced == NULL ? -1 : PyObject_IsTrue(traced);
    Py_XDECREF(traced);
    if (tracing != 0)
        goto done;
    result = same ? Py_NewRef(tensor) : move(self, tensor, source, target);
done:
    Py_DECREF(source);
    Py_DECREF(target);
    return result;
}

/* The call by its route: its result, or NULL without an error for a route left to Python. */
static PyObject *
routed(FastPath *self, PyObject *func, PyObject *kind, PyObject *name, PyObject *args,
       PyObject *kwargs)
{
    int has_kwargs = kwargs != Py_None && PyDict_Check(kwargs) && PyDict_GET_SIZE(kwargs) > 0;
    if (kind == self->generic_kind || kind == self->free_kind) {
        PyObject *out = generic(self, func, name, kind == self->free_kind, args, kwargs);
        if (out != self->declined)
            return out;
        Py_DECREF(out);
        return PyObject_CallFunctionObjArgs(self->python_generic, func, name, kind, args,
                                            kwargs, NULL);
    }
    if (kind == self->pass_kind && (kwargs == Py_None || PyDict_Check(kwargs)))
        return PyObject_Call(func, args, has_kwargs ? kwargs : NULL);
    if (kind == self->to_handler && !has_kwargs && PyTuple_GET_SIZE(args) == 2)
        return to_known_device(self, args);
    return NULL;
}

/* mode.__torch_function__(func, types, args=(), kwargs=None), bound to the mode as its own
 * method (torch calls it with the mode as `__self__`): the common routes in C, the rest in
 * the mode's Python __torch_function__. */
static PyObject *
fastpath_dispatch(FastPath *self, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc < 3 || argc > 5) {
        PyErr_SetString(PyExc_TypeError,
                        "__torch_function__(func, types, args=(), kwargs=None)");
        return NULL;
    }
    PyObject *func = argv[1], *args = argc > 3 ? argv[3] : NULL;
    PyObject *kwargs = argc > 4 ? argv[4] : Py_None;
    if (self->routes != NULL && args != NULL && PyTuple_Check(args)) {
        PyObject *route = PyDict_GetItemWithError(self->routes, func); /* borrowed */
        if (route == NULL && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                return NULL;
            PyErr_Clear(); /* an unhashable func: the Python path routes it */
        }
        if (route != NULL && PyTuple_CheckExact(route) && PyTuple_GET_SIZE(route) == 2) {
            Py_INCREF(route); /* kept while the op (Python code) runs */
            PyObject *kind = PyTuple_GET_ITEM(route, 0), *name = PyTuple_GET_ITEM(route, 1);
            PyObject *out = routed(self, func, kind, name, args, kwargs);
            Py_DECREF(route);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return PyObject_Vectorcall(self->slow, argv + 1, argc - 1, NULL);
}

/* fast.release(watch): Node._release, the weak references' callback of the storages this path
 * labelled: the storage is gone, so is its label, its memory and its tape entry. */
static PyObject *
fastpath_release(FastPath *self, PyObject *watch)
{
    PyObject *watch_id = PyLong_FromVoidPtr(watch), *allocated = NULL, *n_gpus = NULL;
    PyObject *record = NULL, *result = NULL;
    if (watch_id == NULL)
        return NULL;
    allocated = PyObject_GetAttr(self->node, s_allocated);
    n_gpus = PyObject_GetAttr(self->node, s_n);
    if (allocated == NULL || n_gpus == NULL)
        goto done;
    wait_for_lock(self);
    /* Popped here, its last reference dropped at the end (no Python code runs before). */
    record = PyDict_GetItemWithError(self->watched, watch_id);
    if (record == NULL) {
        if (!PyErr_Occurred())
            result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(record);
    if (PyDict_DelItem(self->watched, watch_id) < 0)
        goto done;
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 4) {
        PyErr_SetString(PyExc_TypeError, "a watched storage's record is (it, key, GPU, bytes)");
        goto done;
    }
    PyObject *key = PyTuple_GET_ITEM(record, 1), *index = PyTuple_GET_ITEM(record, 2);
    PyObject *label = PyDict_GetItemWithError(self->labels, key);
    if (label == NULL && PyErr_Occurred())
        goto done;
    if (label != NULL) {
        if (PyDict_DelItem(self->labels, key) < 0)
            goto done;
        int inside = PyObject_RichCompareBool(index, n_gpus, Py_LT);
        if (inside < 0)
            goto done;
        if (inside) {
            long long bytes, now;
            Py_ssize_t gpu = PyLong_AsSsize_t(index);
            if ((gpu == -1 && PyErr_Occurred()) ||
                as_long_long(PyTuple_GET_ITEM(record, 3), &bytes) < 0 ||
                list_add(allocated, gpu, -bytes, &now) < 0)
                goto done;
        }
    }
    int known = PyDict_Contains(self->producers, key);
    if (known < 0 || (known && PyDict_DelItem(self->producers, key) < 0))
        goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(record);
    Py_XDECREF(watch_id);
    Py_XDECREF(allocated);
    Py_XDECREF(n_gpus);
    return result;
}

/* -- backward on the clock (backward_schedule.schedule_backward's inner loops) ------------ */

enum { ENTRY_OP = 0, ENTRY_COPY = 1, ENTRY_MOVES = 2, ENTRY_PARALLEL = 3 };

static int
entry_kind(PyObject *entry, long long *kind)
{
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 3) {
        PyErr_SetString(PyExc_TypeError, "a tape entry is a tuple (kind, id, ...)");
        return -1;
    }
    return as_long_long(PyTuple_GET_ITEM(entry, 0), kind);
}

static int
index_tape(PyObject *tape, PyObject *by_id)
{
    if (!PyList_Check(tape)) {
        PyErr_SetString(PyExc_TypeError, "a tape is a list");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tape); i++) {
        PyObject *entry = PyList_GET_ITEM(tape, i);
        long long kind;
        if (entry_kind(entry, &kind) < 0)
            return -1;
        if (kind == ENTRY_PARALLEL) {
            PyObject *children = PyTuple_GET_ITEM(entry, 2);
            if (!PyList_Check(children)) {
                PyErr_SetString(PyExc_TypeError, "a parallel entry holds a list of tapes");
                return -1;
            }
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(children); j++)
                if (index_tape(PyList_GET_ITEM(children, j), by_id) < 0)
                    return -1;
        } else if (PyDict_SetItem(by_id, PyTuple_GET_ITEM(entry, 1), entry) < 0)
            return -1;
    }
    return 0;
}

/* needed_entries(tape, roots): the ids of the entries `roots` (ids) depend on, through each
 * entry's last field (the entries that made its inputs). */
static PyObject *
needed_entries(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "needed_entries(tape, roots)");
        return NULL;
    }
    PyObject *by_id = PyDict_New(), *needed = PySet_New(NULL);
    PyObject *pending = PySequence_List(argv[1]);
    if (by_id == NULL || needed == NULL || pending == NULL || index_tape(argv[0], by_id) < 0)
        goto failed;
    while (PyList_GET_SIZE(pending) > 0) {
        Py_ssize_t last = PyList_GET_SIZE(pending) - 1;
        PyObject *entry_id = Py_NewRef(PyList_GET_ITEM(pending, last));
        if (PyList_SetSlice(pending, last, last + 1, NULL) < 0) {
            Py_DECREF(entry_id);
            goto failed;
        }
        int seen = PySet_Contains(needed, entry_id);
        PyObject *entry = seen ? NULL : PyDict_GetItemWithError(by_id, entry_id);
        if (seen < 0 || (entry == NULL && PyErr_Occurred())) {
            Py_DECREF(entry_id);
            goto failed;
        }
        if (entry != NULL) {
            PyObject *made_by = PySequence_Fast(
                PyTuple_GET_ITEM(entry, PyTuple_GET_SIZE(entry) - 1), "made_by is a sequence");
            int failed = made_by == NULL || PySet_Add(needed, entry_id) < 0;
            for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(made_by); i++)
                failed = PyList_Append(pending, PySequence_Fast_GET_ITEM(made_by, i)) < 0;
            Py_XDECREF(made_by);
            if (failed) {
                Py_DECREF(entry_id);
                goto failed;
            }
        }
        Py_DECREF(entry_id);
    }
    Py_DECREF(by_id);
    Py_DECREF(pending);
    return needed;
failed:
    Py_XDECREF(by_id);
    Py_XDECREF(needed);
    Py_XDECREF(pending);
    return NULL;
}

typedef struct {
    PyObject *busy;        /* clock.busy_until */
    PyObject *grad_ready;  /* clock.grad_ready */
    PyObject *needed;      /* ids of the entries to replay */
    PyObject *engine;      /* GPU -> when its engine thread has launched everything so far */
    PyObject *copy_ns;     /* nbytes -> the copy's duration in ns (clock.ns(model.copy(n))) */
    PyObject *grad_of;     /* the C getter of `.grad` */
    long long host_op, launches;
    double kernel_s, bytes_per_s;
} Replay;

static int
busy_at(Replay *r, PyObject *device, long long *value)
{
    Py_ssize_t gpu = PyLong_AsSsize_t(device);
    if (gpu == -1 && PyErr_Occurred())
        return -1;
    return list_get(r->busy, gpu, value);
}

static int
set_busy(Replay *r, PyObject *device, long long value)
{
    Py_ssize_t gpu = PyLong_AsSsize_t(device);
    long long old;
    if ((gpu == -1 && PyErr_Occurred()) || list_get(r->busy, gpu, &old) < 0)
        return -1;
    PyObject *boxed = PyLong_FromLongLong(value);
    if (boxed == NULL)
        return -1;
    PyList_SetItem(r->busy, gpu, boxed);
    return 0;
}

static int
engine_at(Replay *r, PyObject *device, long long *value)
{
    PyObject *found = PyDict_GetItemWithError(r->engine, device);
    if (found == NULL) {
        *value = 0;
        return PyErr_Occurred() ? -1 : 0;
    }
    return as_long_long(found, value);
}

static int
set_engine(Replay *r, PyObject *device, long long value)
{
    PyObject *boxed = PyLong_FromLongLong(value);
    if (boxed == NULL)
        return -1;
    int failed = PyDict_SetItem(r->engine, device, boxed);
    Py_DECREF(boxed);
    return failed;
}

static int
copy_duration(Replay *r, PyObject *nbytes, long long *duration)
{
    PyObject *found = PyObject_CallOneArg(r->copy_ns, nbytes);
    if (found == NULL)
        return -1;
    int failed = as_long_long(found, duration);
    Py_DECREF(found);
    return failed;
}

#define MAX2(a, b) ((a) > (b) ? (a) : (b))

static int
replay_tape(Replay *r, PyObject *tape, long long *launched)
{
    if (!PyList_Check(tape)) {
        PyErr_SetString(PyExc_TypeError, "a tape is a list");
        return -1;
    }
    for (Py_ssize_t i = PyList_GET_SIZE(tape) - 1; i >= 0; i--) {
        PyObject *entry = PyList_GET_ITEM(tape, i);
        long long kind;
        if (entry_kind(entry, &kind) < 0)
            return -1;
        if (kind == ENTRY_PARALLEL) { /* the replicas' backward, side by side */
            PyObject *children = PyTuple_GET_ITEM(entry, 2);
            long long latest = 0;
            Py_ssize_t n = PyList_Check(children) ? PyList_GET_SIZE(children) : 0;
            if (n == 0) {
                PyErr_SetString(PyExc_ValueError, "max() arg is an empty sequence");
                return -1;
            }
            for (Py_ssize_t j = 0; j < n; j++) {
                long long child = *launched;
                if (replay_tape(r, PyList_GET_ITEM(children, j), &child) < 0)
                    return -1;
                if (j == 0 || child > latest)
                    latest = child;
            }
            *launched = latest;
            continue;
        }
        int wanted = PySet_Contains(r->needed, PyTuple_GET_ITEM(entry, 1));
        if (wanted <= 0) {
            if (wanted < 0)
                return -1;
            continue;
        }
        if (kind == ENTRY_OP) {
            if (PyTuple_GET_SIZE(entry) != 6) {
                PyErr_SetString(PyExc_TypeError, "an operation's entry has six fields");
                return -1;
            }
            PyObject *device = PyTuple_GET_ITEM(entry, 2), *leaves = PyTuple_GET_ITEM(entry, 4);
            long long ready, duration, busy, done;
            if (engine_at(r, device, &ready) < 0 ||
                as_long_long(PyTuple_GET_ITEM(entry, 3), &duration) < 0 ||
                busy_at(r, device, &busy) < 0)
                return -1;
            *launched = MAX2(ready, *launched) + r->launches;
            if (set_engine(r, device, *launched) < 0)
                return -1;
            done = MAX2(busy, *launched) + duration;
            if (leaves != Py_None) {
                PyObject *items = PySequence_Fast(leaves, "an operation's leaves are a list");
                if (items == NULL)
                    return -1;
                for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(items); j++) {
                    PyObject *leaf = PySequence_Fast_GET_ITEM(items, j);
                    PyObject *grad = PyObject_CallOneArg(r->grad_of, leaf);
                    if (grad == NULL) {
                        Py_DECREF(items);
                        return -1;
                    }
                    int accumulated = grad != Py_None;
                    Py_DECREF(grad);
                    if (accumulated) { /* added to an existing gradient: one more kernel */
                        long long nbytes;
                        if (get_long_long(leaf, s_nbytes, &nbytes) < 0) {
                            Py_DECREF(items);
                            return -1;
                        }
                        *launched += r->host_op;
                        done = MAX2(done, *launched) + round_ns(
                            (r->kernel_s + (double)(3 * nbytes) / r->bytes_per_s) * 1e9);
                    }
                    PyObject *leaf_id = PyLong_FromVoidPtr(leaf);
                    PyObject *boxed = PyLong_FromLongLong(done);
                    int failed = leaf_id == NULL || boxed == NULL ||
                                 PyDict_SetItem(r->grad_ready, leaf_id, boxed) < 0;
                    Py_XDECREF(leaf_id);
                    Py_XDECREF(boxed);
                    if (failed) {
                        Py_DECREF(items);
                        return -1;
                    }
                }
                Py_DECREF(items);
            }
            if (set_busy(r, device, done) < 0)
                return -1;
        } else if (kind == ENTRY_COPY) { /* the gradient goes from target back to source */
            if (PyTuple_GET_SIZE(entry) != 6) {
                PyErr_SetString(PyExc_TypeError, "a copy's entry has six fields");
                return -1;
            }
            PyObject *source = PyTuple_GET_ITEM(entry, 2), *target = PyTuple_GET_ITEM(entry, 3);
            long long ready, busy_source, busy_target, duration;
            if (engine_at(r, target, &ready) < 0)
                return -1;
            *launched = MAX2(ready, *launched) + r->host_op;
            if (set_engine(r, target, *launched) < 0 || busy_at(r, source, &busy_source) < 0 ||
                busy_at(r, target, &busy_target) < 0 ||
                copy_duration(r, PyTuple_GET_ITEM(entry, 4), &duration) < 0)
                return -1;
            long long start = MAX2(MAX2(busy_source, busy_target), *launched);
            if (set_busy(r, source, start + duration) < 0)
                return -1;
        } else { /* MOVES: DataParallel's Functions move the gradients back */
            PyObject *moves = PySequence_Fast(PyTuple_GET_ITEM(entry, 2), "moves are a list");
            if (moves == NULL)
                return -1;
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(moves); j++) {
                PyObject *move = PySequence_Fast_GET_ITEM(moves, j);
                if (!PyTuple_Check(move) || PyTuple_GET_SIZE(move) != 4) {
                    PyErr_SetString(PyExc_TypeError, "a move is (source, target, bytes, lane)");
                    Py_DECREF(moves);
                    return -1;
                }
                PyObject *source = PyTuple_GET_ITEM(move, 0), *target = PyTuple_GET_ITEM(move, 1);
                PyObject *lane = PyTuple_GET_ITEM(move, 3);
                long long ready, b_source, b_target, b_lane, duration;
                if (engine_at(r, lane, &ready) < 0) {
                    Py_DECREF(moves);
                    return -1;
                }
                *launched = MAX2(ready, *launched) + r->host_op;
                if (set_engine(r, lane, *launched) < 0 || busy_at(r, source, &b_source) < 0 ||
                    busy_at(r, target, &b_target) < 0 || busy_at(r, lane, &b_lane) < 0 ||
                    copy_duration(r, PyTuple_GET_ITEM(move, 2), &duration) < 0) {
                    Py_DECREF(moves);
                    return -1;
                }
                long long start = MAX2(MAX2(b_source, b_target), MAX2(b_lane, *launched));
                if (set_busy(r, target, start + duration) < 0 ||
                    set_busy(r, lane, start + duration) < 0) {
                    Py_DECREF(moves);
                    return -1;
                }
            }
            Py_DECREF(moves);
        }
    }
    return 0;
}

/* replay(clock, tape, needed, launched, engine, copy_ns, grad_of): backward_schedule._replay;
 * returns when its last part was launched. The clock must count in whole nanoseconds (every
 * time an int): the caller checks that and uses the Python loop otherwise. */
static PyObject *
replay(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "replay(clock, tape, needed, launched, engine, copy_ns, grad_of)");
        return NULL;
    }
    PyObject *clock = argv[0];
    Replay r = {.needed = argv[2], .engine = argv[4], .copy_ns = argv[5], .grad_of = argv[6]};
    long long launched, factor;
    PyObject *model = PyObject_GetAttrString(clock, "model");
    if (model == NULL)
        return NULL;
    int failed = get_long_long(clock, s_host_op_ns, &r.host_op) < 0 ||
                 get_long_long(model, s_backward_factor, &factor) < 0 ||
                 get_double(model, s_kernel_s, &r.kernel_s) < 0 ||
                 get_double(model, s_memory_bytes_per_s, &r.bytes_per_s) < 0 ||
                 as_long_long(argv[3], &launched) < 0;
    Py_DECREF(model);
    if (failed || !PySet_Check(r.needed) || !PyDict_Check(r.engine)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "needed is a set and engine a dict");
        return NULL;
    }
    r.launches = factor * r.host_op;
    r.busy = PyObject_GetAttr(clock, s_busy_until);
    r.grad_ready = PyObject_GetAttrString(clock, "grad_ready");
    if (r.busy == NULL || r.grad_ready == NULL || !PyDict_Check(r.grad_ready)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "clock.grad_ready is a dict");
        Py_XDECREF(r.busy);
        Py_XDECREF(r.grad_ready);
        return NULL;
    }
    failed = replay_tape(&r, argv[1], &launched);
    Py_DECREF(r.busy);
    Py_DECREF(r.grad_ready);
    return failed ? NULL : PyLong_FromLongLong(launched);
}

/* -- torch's handle_torch_function, shortened (grader/vgpu/python_dispatch.py) ------------ */

/* python_dispatch.shortcut's function in C: while the node's mode is the lone mode on the
 * thread's stack, a torch function written in Python goes to it straight away (popped and
 * pushed back around the call, as PyTorch does); anything else takes torch's own path. */
typedef struct {
    PyObject_HEAD
    PyObject *torch_handle;  /* torch.overrides.handle_torch_function */
    PyObject *mode_type;     /* the node's mode class */
    PyObject *depth;         /* torch._C._len_torch_function_stack */
    PyObject *enabled;       /* torch._C._is_torch_function_mode_enabled */
    PyObject *pop;           /* torch._C._pop_torch_function_stack */
    PyObject *push;          /* torch._C._push_on_torch_function_stack */
    PyObject *dict;          /* __wrapped__, __doc__ and the like */
    vectorcallfunc vectorcall;
} Shortcut;

static PyObject *
shortcut_to_torch(Shortcut *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->torch_handle, args, nargsf, kwnames);
}

/* 1 when the node's mode is the one mode on the stack and modes are on; -1 on an error. */
static int
lone_mode(Shortcut *self)
{
    PyObject *depth = PyObject_CallNoArgs(self->depth);
    if (depth == NULL)
        return -1;
    long long n;
    int failed = as_long_long(depth, &n);
    Py_DECREF(depth);
    if (failed)
        return -1;
    if (n != 1)
        return 0;
    PyObject *on = PyObject_CallNoArgs(self->enabled);
    if (on == NULL)
        return -1;
    int truth = PyObject_IsTrue(on);
    Py_DECREF(on);
    return truth;
}

static PyObject *
shortcut_call(Shortcut *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2)
        return shortcut_to_torch(self, args, nargsf, kwnames);
    int lone = lone_mode(self);
    if (lone < 0)
        return NULL;
    if (!lone)
        return shortcut_to_torch(self, args, nargsf, kwnames);
    PyObject *mode = PyObject_CallNoArgs(self->pop);
    if (mode == NULL)
        return NULL;
    PyObject *result = NULL;
    if ((PyObject *)Py_TYPE(mode) == self->mode_type) {
        /* mode.__torch_function__(public_api, (), args, kwargs) */
        PyObject *call_args = PyTuple_New(nargs - 2), *kwargs = NULL, *handler = NULL;
        PyObject *types = PyTuple_New(0);
        Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
        if (call_args != NULL && types != NULL) {
            for (Py_ssize_t i = 2; i < nargs; i++)
                PyTuple_SET_ITEM(call_args, i - 2, Py_NewRef(args[i]));
            kwargs = PyDict_New();
            for (Py_ssize_t i = 0; kwargs != NULL && i < nkw; i++)
                if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
                    Py_CLEAR(kwargs);
        }
        handler = kwargs == NULL ? NULL : PyObject_GetAttr(mode, s_torch_function);
        if (handler != NULL) {
            PyObject *call[] = {args[0], types, call_args, kwargs};
            result = PyObject_Vectorcall(handler, call, 4, NULL);
            if (result == Py_NotImplemented) {
                /* What torch does next: ask the arguments' own __torch_function__ (with the
                 * mode off the stack, torch's path goes straight there). */
                Py_DECREF(result);
                result = shortcut_to_torch(self, args, nargsf, kwnames);
            }
        }
        Py_XDECREF(handler);
        Py_XDECREF(kwargs);
        Py_XDECREF(call_args);
        Py_XDECREF(types);
    } else
        result = shortcut_to_torch(self, args, nargsf, kwnames);
    /* pushed back whatever happened, the error of the call kept */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *pushed = PyObject_CallOneArg(self->push, mode);
    Py_DECREF(mode);
    if (pushed == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return NULL;
    }
    Py_DECREF(pushed);
    PyErr_Restore(type, value, traceback);
    return result;
}

static int
shortcut_traverse(Shortcut *self, visitproc visit, void *arg)
{
    Py_VISIT(self->torch_handle);
    Py_VISIT(self->mode_type);
    Py_VISIT(self->depth);
    Py_VISIT(self->enabled);
    Py_VISIT(self->pop);
    Py_VISIT(self->push);
    Py_VISIT(self->dict);
    return 0;
}

static int
shortcut_clear(Shortcut *self)
{
    Py_CLEAR(self->torch_handle);
    Py_CLEAR(self->mode_type);
    Py_CLEAR(self->depth);
    Py_CLEAR(self->enabled);
    Py_CLEAR(self->pop);
    Py_CLEAR(self->push);
    Py_CLEAR(self->dict);
    return 0;
}

static void
shortcut_dealloc(Shortcut *self)
{
    PyObject_GC_UnTrack(self);
    shortcut_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
shortcut_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"torch_handle", "mode_type", "depth", "enabled", "pop", "push",
                             NULL};
    PyObject *fields[6];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOO", kwlist, &fields[0], &fields[1],
                                     &fields[2], &fields[3], &fields[4], &fields[5]))
        return NULL;
    for (int i = 0; i < 6; i++)
        if (!PyCallable_Check(fields[i])) {
            PyErr_Format(PyExc_TypeError, "Shortcut's %s must be callable", kwlist[i]);
            return NULL;
        }
    Shortcut *self = (Shortcut *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->torch_handle = Py_NewRef(fields[0]);
    self->mode_type = Py_NewRef(fields[1]);
    self->depth = Py_NewRef(fields[2]);
    self->enabled = Py_NewRef(fields[3]);
    self->pop = Py_NewRef(fields[4]);
    self->push = Py_NewRef(fields[5]);
    self->dict = PyDict_New();
    if (self->dict == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)shortcut_call;
    return (PyObject *)self;
}

static PyTypeObject ShortcutType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grader.vgpu._fastpath.Shortcut",
    .tp_basicsize = sizeof(Shortcut),
    .tp_dealloc = (destructor)shortcut_dealloc,
    .tp_vectorcall_offset = offsetof(Shortcut, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)shortcut_traverse,
    .tp_clear = (inquiry)shortcut_clear,
    .tp_dictoffset = offsetof(Shortcut, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_doc = "torch's handle_torch_function, straight to the node's mode while it is the "
              "only one",
    .tp_new = shortcut_new,
};

static PyMethodDef module_functions[] = {
    {"needed_entries", (PyCFunction)(void (*)(void))needed_entries, METH_FASTCALL,
     "needed_entries(tape, roots): the ids of the tape's entries the roots depend on"},
    {"replay", (PyCFunction)(void (*)(void))replay, METH_FASTCALL,
     "replay(clock, tape, needed, launched, engine, copy_ns, grad_of): backward on the clock"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef fastpath_methods[] = {
    {"generic", (PyCFunction)(void (*)(void))fastpath_generic, METH_FASTCALL,
     "generic(func, name, free, args, kwargs): the op, labelled and charged; or `declined`"},
    {"release", (PyCFunction)fastpath_release, METH_O,
     "release(watch): the weak references' callback: a labelled storage was freed"},
    {"bind_mode", (PyCFunction)(void (*)(void))fastpath_bind_mode, METH_FASTCALL,
     "bind_mode(routes, generic_kind, free_kind, pass_kind, slow, python_generic, "
     "to_handler, devices, tracing): what dispatch routes by"},
    {"dispatch", (PyCFunction)(void (*)(void))fastpath_dispatch, METH_FASTCALL,
     "dispatch(mode, func, types, args=(), kwargs=None): the mode's __torch_function__"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FastPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grader.vgpu._fastpath.FastPath",
    .tp_basicsize = sizeof(FastPath),
    .tp_dealloc = (destructor)fastpath_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)fastpath_traverse,
    .tp_clear = (inquiry)fastpath_clear,
    .tp_doc = "The virtual node's generic-op path, bound to one node and its mode.",
    .tp_methods = fastpath_methods,
    .tp_init = (initproc)fastpath_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef fastpath_module = {
    PyModuleDef_HEAD_INIT, "_fastpath", "The virtual node's hottest path in C.", -1,
    module_functions, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fastpath(void)
{
#define INTERN(var, text) do { var = PyUnicode_InternFromString(text); \
        if (var == NULL) return NULL; } while (0)
    INTERN(s_nbytes, "nbytes");
    INTERN(s_dim, "dim");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_untyped_storage, "untyped_storage");
    INTERN(s_on, "on");
    INTERN(s_host, "host");
    INTERN(s_tape, "tape");
    INTERN(s_host_op_ns, "host_op_ns");
    INTERN(s_s_per_byte, "s_per_byte");
    INTERN(s_s_per_flop, "s_per_flop");
    INTERN(s_kernel_s, "kernel_s");
    INTERN(s_backward_factor, "backward_factor");
    INTERN(s_busy_until, "busy_until");
    INTERN(s_allocated, "allocated");
    INTERN(s_peak, "peak");
    INTERN(s_acquire, "acquire");
    INTERN(s_release, "release");
    INTERN(s_record, "record");
    INTERN(s_shape, "shape");
    INTERN(s_numel, "numel");
    INTERN(s_linear, "linear");
    INTERN(s_pop, "pop");
    INTERN(s_device, "device");
    INTERN(s_n, "n");
    INTERN(s_memory_bytes_per_s, "memory_bytes_per_s");
    INTERN(s_dict, "__dict__");
    INTERN(s_hot, "hot");
    INTERN(s_to, "to");
    INTERN(s_copy, "copy");
    INTERN(s_dtype, "dtype");
    INTERN(s_torch_function, "__torch_function__");
    s_move_kwnames = Py_BuildValue("(sss)", "dtype", "copy", "memory_format");
    if (s_move_kwnames == NULL)
        return NULL;
#undef INTERN
    if (PyType_Ready(&FastPathType) < 0 || PyType_Ready(&GilLockType) < 0 ||
        PyType_Ready(&ShortcutType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&fastpath_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&FastPathType);
    if (PyModule_AddObject(module, "FastPath", (PyObject *)&FastPathType) < 0) {
        Py_DECREF(&FastPathType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&GilLockType);
    if (PyModule_AddObject(module, "GilLock", (PyObject *)&GilLockType) < 0) {
        Py_DECREF(&GilLockType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ShortcutType);
    if (PyModule_AddObject(module, "Shortcut", (PyObject *)&ShortcutType) < 0) {
        Py_DECREF(&ShortcutType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
