/* _mapguard: survive a file being truncated under a read-only mmap.
 *
 * When another process truncates a file that we have mapped, touching a page past the new end of file
 * makes the kernel send SIGBUS, whose default action kills the process. This module installs a SIGBUS
 * handler (lazily, on the first register(), so it sits on top of faulthandler/pytest's handler, and
 * again at any later register() that finds it replaced) that knows a table of registered ranges. A fault inside a registered range is repaired: an
 * anonymous, read-only zero page is mapped over the faulting page (MAP_FIXED), the lowest faulting
 * offset is recorded in the range's slot, and the handler returns, so the faulting load is retried
 * and reads zeros. A fault anywhere else is handed to the handler that was installed before ours;
 * when that was SIG_DFL the default is restored and the signal re-raised: the process dies of SIGBUS
 * exactly as it would have without this module. Two loop breakers keep a previous handler that leads
 * back to ours (faulthandler restores what it replaced and re-raises) from recursing or spinning.
 *
 * Concurrency. register/unregister/reset run with the GIL held, so they never race each other. The
 * handler runs in whichever thread faulted (SIGBUS from a fault is thread-directed), possibly while
 * another thread is inside register/unregister, so each slot is published through a sequence counter
 * (a seqlock): the handler never waits, it skips a slot that is being rewritten. The only field the
 * handler writes is the slot's lowest faulting offset, with an atomic compare-and-swap, so two
 * threads faulting at once in the same range both end with the minimum. Two threads mapping the same
 * zero page at once is harmless: both map zeros.
 *
 * Async-signal safety. The handler calls only mmap (as the raw system call where it can: no libc
 * lock, no allocation), sigaction, raise, and the previous handler; it touches no Python object, reads
 * the table with atomic loads and restores errno. POSIX does not list mmap as async-signal-safe; on
 * Linux it is one system call that takes only kernel locks, so it cannot deadlock against the code it
 * interrupted.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef _WIN32

static struct PyModuleDef mapguard_module = {PyModuleDef_HEAD_INIT, "_mapguard", NULL, -1, NULL};

PyMODINIT_FUNC
PyInit__mapguard(void)
{
    /* No SIGBUS on Windows: logtool.store.mapguard sees the ImportError and runs unguarded. */
    PyErr_SetString(PyExc_ImportError, "logtool.store._mapguard: SIGBUS guarding is POSIX-only");
    return NULL;
}

#else

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define MG_SLOTS 4096

typedef struct {
    unsigned long seq;  /* even: stable; odd: being rewritten (by the GIL holder) */
    uintptr_t base;     /* first byte of the range */
    size_t len;         /* 0: the slot matches nothing */
    long long fault;    /* lowest faulting offset seen, page-aligned; -1: none. Written by the handler */
    int used;           /* allocation flag: read and written with the GIL held only */
} mg_slot;

static mg_slot slots[MG_SLOTS];
static size_t high_water;          /* the handler scans slots [0, high_water) */
static size_t first_free_hint;     /* GIL only */
static size_t in_use;              /* GIL only */
static uintptr_t page_size;
/* The disposition ours replaced, to which faults outside our ranges are handed. Double-buffered: a
   reinstall (GIL held) writes the copy not in use, then flips prev_index, so a handler running in
   another thread never reads a half-written struct. */
static struct sigaction prev_store[2];
static int prev_index;
static int installed;              /* ours was installed at least once (GIL only) */
/* Loop breakers for chaining (see mg_handler): set while a previous handler runs for a foreign fault,
   and the address of the last foreign fault a previous handler returned from. */
static int chaining;
static uintptr_t returned_addr;
static PyObject *TableFullError;

/* ------------------------------------------------------------------------------------------------ */
/* The signal handler                                                                                 */

static void *
mg_map_zero_page(uintptr_t page)
{
#if defined(__linux__) && defined(SYS_mmap) && UINTPTR_MAX > 0xffffffffu
    /* The raw system call: glibc's mmap is a plain wrapper too, but an interposed mmap (a sanitizer,
       an LD_PRELOAD'ed tracer) could take locks. */
    long r = syscall(SYS_mmap, (void *)page, (size_t)page_size, PROT_READ,
                     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
    return r == -1 ? MAP_FAILED : (void *)r;
#else
    return mmap((void *)page, (size_t)page_size, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif
}

static void
mg_set_default(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(sig, &dfl, NULL);
}

/* Hand a fault outside our ranges to whatever was installed before us, as if we were not here. */
static void
mg_chain(int sig, siginfo_t *info, void *ctx)
{
    const struct sigaction *p = &prev_store[__atomic_load_n(&prev_index, __ATOMIC_ACQUIRE)];
    if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction != NULL) {
        if (p->sa_flags & SA_RESETHAND)
            mg_set_default(sig);  /* what the kernel would have done before calling it */
        p->sa_sigaction(sig, info, ctx);
        return;
    }
    if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_IGN) {
        /* A SIGBUS sent with kill() stays ignored. A real fault cannot be ignored: the kernel kills the
           process when the handler is SIG_IGN, and so do we. */
        if (info == NULL || info->si_code <= 0)
            return;
    }
    else if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL) {
        if (p->sa_flags & SA_RESETHAND)
            mg_set_default(sig);
        p->sa_handler(sig);
        return;
    }
    /* SIG_DFL: put the default back and let the signal through. Our handler runs with SA_NODEFER, so
       the raise is delivered at once and kills the process, with the same status as without us. */
    mg_set_default(sig);
    (void)raise(sig);
}

static void
mg_handler(int sig, siginfo_t *info, void *ctx)
{
    int saved_errno = errno;
    int repaired = 0;
    int from_kernel = info != NULL && info->si_code > 0;
    uintptr_t addr = from_kernel ? (uintptr_t)info->si_addr : 0;

    /* si_code <= 0: sent by kill()/raise()/sigqueue(), si_addr is meaningless (it overlaps si_pid). */
    if (from_kernel) {
        uintptr_t page = addr & ~(page_size - 1);
        size_t n = __atomic_load_n(&high_water, __ATOMIC_ACQUIRE);
        int mapped = 0;
        for (size_t i = 0; i < n; i++) {
            mg_slot *s = &slots[i];
            unsigned long q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
            if (q & 1)
                continue;  /* being rewritten: not a range anyone may be reading */
            uintptr_t base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
            size_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != q)
                continue;
            if (len == 0 || addr < base || addr - base >= len)
                continue;
            if (!mapped) {
                if (mg_map_zero_page(page) == MAP_FAILED)
                    break;  /* cannot repair (ENOMEM: vm.max_map_count?): die as we would have */
                mapped = 1;
            }
            /* Every slot covering the address learns of it (a mapping may be registered twice). */
            long long off = page >= base ? (long long)(page - base) : 0;
            long long cur = __atomic_load_n(&s->fault, __ATOMIC_RELAXED);
            while ((cur < 0 || off < cur) &&
                   !__atomic_compare_exchange_n(&s->fault, &cur, off, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                ;
            repaired = 1;
        }
    }
    if (repaired) {
        errno = saved_errno;
        return;  /* the faulting load is retried and reads the zero page */
    }
    /* Not ours. Two loop breakers, for when the previous handler leads back here instead of ending
       the process: (1) we are re-entered while a previous handler runs (faulthandler, installed after
       us and then covered by our reinstall, restores us and re-raises); (2) a previous handler returned
       from a fault and the same address faults again (a disabled faulthandler returns at once). Either
       way the fault is fatal: die of SIGBUS as the default would. */
    if (__atomic_exchange_n(&chaining, 1, __ATOMIC_ACQ_REL)
        || (from_kernel && addr == __atomic_load_n(&returned_addr, __ATOMIC_RELAXED))) {
        mg_set_default(sig);
        (void)raise(sig);
        errno = saved_errno;
        return;
    }
    mg_chain(sig, info, ctx);
    if (from_kernel)
        __atomic_store_n(&returned_addr, addr, __ATOMIC_RELAXED);
    __atomic_store_n(&chaining, 0, __ATOMIC_RELEASE);
    errno = saved_errno;
}

/* Put our handler on top unless it is there already: on first use (lazily, so that it goes over
   faulthandler's and pytest's), and again at each register() if something replaced it since (an
   SIG_DFL restored by faulthandler.disable(), or faulthandler.enable() called after us, which would
   otherwise re-raise our faults without their address and kill us). What we replace becomes the
   previous handler that foreign faults are handed to. */
static int
mg_install(void)
{
    struct sigaction cur, ours;
    if (sigaction(SIGBUS, NULL, &cur) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == mg_handler)
        return 0;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = mg_handler;
    sigemptyset(&ours.sa_mask);
    /* SA_NODEFER: faulthandler and our own default path re-raise from inside the handler and need the
       signal delivered at once. SA_ONSTACK: use the thread's alternate stack when it has one
       (faulthandler sets one up), as faulthandler does. */
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    int spare = installed ? 1 - prev_index : 0;
    prev_store[spare] = cur;  /* before ours can run */
    __atomic_store_n(&prev_index, spare, __ATOMIC_RELEASE);
    if (sigaction(SIGBUS, &ours, NULL) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    installed = 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* Slot table, GIL held                                                                               */

static void
mg_slot_write(mg_slot *s, uintptr_t base, size_t len, long long fault)
{
    unsigned long q = s->seq;
    __atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->base, base, __ATOMIC_RELAXED);
    __atomic_store_n(&s->len, len, __ATOMIC_RELAXED);
    __atomic_store_n(&s->fault, fault, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

static mg_slot *
mg_used_slot(PyObject *arg, Py_ssize_t *index)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || i >= MG_SLOTS || !slots[i].used) {
        PyErr_Format(PyExc_ValueError, "mapguard slot %zd is not registered", i);
        return NULL;
    }
    if (index != NULL)
        *index = i;
    return &slots[i];
}

PyDoc_STRVAR(register_doc,
"register(buffer) -> int\n\n"
"Guard the memory of a read-only buffer (a mmap.mmap opened with ACCESS_READ): a SIGBUS inside it maps\n"
"zeros over the faulting page instead of killing the process. Returns the slot for unregister() and\n"
"faulted(). The caller keeps the buffer alive and unregisters before unmapping it. Raises\n"
"TableFullError when all slots are taken, ValueError for a writable buffer.");

static PyObject *
mg_register(PyObject *module, PyObject *obj)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) != 0)
        return NULL;
    uintptr_t base = (uintptr_t)view.buf;
    size_t len = (size_t)view.len;
    int readonly = view.readonly;
    PyBuffer_Release(&view);
    if (!readonly) {
        /* A write past the end would meet our read-only zero page and die of SIGSEGV instead. */
        PyErr_SetString(PyExc_ValueError, "mapguard guards read-only buffers only (mmap with ACCESS_READ)");
        return NULL;
    }
    if (mg_install() != 0)
        return NULL;
    for (size_t k = 0; k < MG_SLOTS; k++) {
        size_t i = (first_free_hint + k) % MG_SLOTS;
        mg_slot *s = &slots[i];
        if (s->used)
            continue;
        s->used = 1;
        mg_slot_write(s, base, len, -1);
        if (i + 1 > high_water)
            __atomic_store_n(&high_water, i + 1, __ATOMIC_RELEASE);
        first_free_hint = (i + 1) % MG_SLOTS;
        in_use++;
        return PyLong_FromSsize_t((Py_ssize_t)i);
    }
    PyErr_Format(TableFullError,
                 "all %d mapguard slots are in use: a mapping left registered (a Guard never closed?); "
                 "refusing to map it unguarded", MG_SLOTS);
    return NULL;
}

PyDoc_STRVAR(unregister_doc, "unregister(slot)\n\nStop guarding the slot's range; the slot may be reused.");

static PyObject *
mg_unregister(PyObject *module, PyObject *arg)
{
    Py_ssize_t i;
    mg_slot *s = mg_used_slot(arg, &i);
    if (s == NULL)
        return NULL;
    mg_slot_write(s, 0, 0, -1);
    s->used = 0;
    in_use--;
    if ((size_t)i < first_free_hint)
        first_free_hint = (size_t)i;  /* reuse low slots first: keeps the handler's scan short */
    size_t hw = high_water;
    while (hw > 0 && !slots[hw - 1].used)
        hw--;
    __atomic_store_n(&high_water, hw, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(faulted_doc,
"faulted(slot) -> int\n\n"
"-1 when no page of the range has faulted since register()/reset(); else the offset, from the start of\n"
"the buffer, of the lowest page that faulted and now reads as zeros (page-aligned).");

static PyObject *
mg_faulted(PyObject *module, PyObject *arg)
{
    mg_slot *s = mg_used_slot(arg, NULL);
    if (s == NULL)
        return NULL;
    return PyLong_FromLongLong(__atomic_load_n(&s->fault, __ATOMIC_RELAXED));
}

PyDoc_STRVAR(reset_doc, "reset(slot)\n\nForget the faults recorded for the slot (faulted() is -1 again).");

static PyObject *
mg_reset(PyObject *module, PyObject *arg)
{
    mg_slot *s = mg_used_slot(arg, NULL);
    if (s == NULL)
        return NULL;
    __atomic_store_n(&s->fault, -1LL, __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(handler_state_doc,
"handler_state() -> str\n\n"
"'installed': our handler is SIGBUS's disposition; 'not installed': nothing registered yet; 'overridden':\n"
"another handler replaced ours since the last register() (the next register() puts ours back on top).");

static PyObject *
mg_handler_state(PyObject *module, PyObject *unused)
{
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == mg_handler)
        return PyUnicode_FromString("installed");
    return PyUnicode_FromString(installed ? "overridden" : "not installed");
}

static PyObject *
mg_in_use(PyObject *module, PyObject *unused)
{
    return PyLong_FromSize_t(in_use);
}

static PyMethodDef mapguard_methods[] = {
    {"register", mg_register, METH_O, register_doc},
    {"unregister", mg_unregister, METH_O, unregister_doc},
    {"faulted", mg_faulted, METH_O, faulted_doc},
    {"reset", mg_reset, METH_O, reset_doc},
    {"handler_state", mg_handler_state, METH_NOARGS, handler_state_doc},
    {"in_use", mg_in_use, METH_NOARGS, PyDoc_STR("in_use() -> int\n\nHow many slots are registered.")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef mapguard_module = {
    PyModuleDef_HEAD_INIT,
    "_mapguard",
    "Survive SIGBUS from files truncated under a read-only mmap: see logtool.store.mapguard.",
    -1,  /* process-global state: the signal disposition and the slot table */
    mapguard_methods,
};

PyMODINIT_FUNC
PyInit__mapguard(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0 || (ps & (ps - 1)) != 0) {
        PyErr_SetString(PyExc_ImportError, "logtool.store._mapguard: cannot learn the page size");
        return NULL;
    }
    page_size = (uintptr_t)ps;
    PyObject *m = PyModule_Create(&mapguard_module);
    if (m == NULL)
        return NULL;
    if (TableFullError == NULL) {
        TableFullError = PyErr_NewExceptionWithDoc(
            "logtool.store._mapguard.TableFullError",
            "Every mapguard slot is taken: the mapping would go unguarded, so it is refused.",
            PyExc_RuntimeError, NULL);
        if (TableFullError == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    Py_INCREF(TableFullError);
    if (PyModule_AddObject(m, "TableFullError", TableFullError) != 0
        || PyModule_AddIntConstant(m, "SLOTS", MG_SLOTS) != 0
        || PyModule_AddIntConstant(m, "PAGE_SIZE", (long)page_size) != 0) {
        Py_DECREF(TableFullError);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

#endif /* !_WIN32 */
