/* Read many partition directories ahead of their checks: each one's listing and the bytes of its small
 * regular files, with the GIL released for all of the I/O (store/read_ahead.py calls it from a thread, so the
 * system calls of the next directories run on another core while the checks of this one run in Python).
 *
 * It answers only the plain case and leaves every other to the Python reader, which stays the reference
 * and words every error: a directory it cannot open or list is an errno; an entry that is not a regular file
 * by its d_type, that cannot be opened or stat'ed, that is not below the size asked, or whose read comes back
 * short is listed with no bytes, and is read by Python where the checks need it. Nothing follows a symlink
 * inside the directory (O_NOFOLLOW); the directory itself is opened as os.scandir opens it.
 *
 * Asked to spare the page cache (store/pacing.py), it leaves the page cache as it found it, as the Python reader
 * does: a file of which `cachestat` says every page is cached already is read as it is (its read brings no page
 * in); of any other file, residency is probed first (`mincore`), and the pages its read brought in are given
 * back right after it. A file whose residency this process cannot see (Linux shows it only to the file's
 * owner or to a process that may write it) or probe is left to the Python reader, which reads it only where
 * the checks need it and then keeps its pages: when in doubt, pages stay.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

/* cachestat's number: the same on every architecture Linux numbers alike (all since 5.1, but alpha). */
#if defined(__NR_cachestat)
#define CACHESTAT __NR_cachestat
#elif defined(__linux__) && !defined(__alpha__)
#define CACHESTAT 451
#endif

/* Whether every page of the open file (of `size` bytes) is in the page cache: one cachestat call over the
 * whole file, which reads nothing. False where it cannot tell. */
static int cached_whole(int fd, size_t size)
{
    if (size == 0)
        return 1; /* no page to bring in */
#ifdef CACHESTAT
    struct { uint64_t off, len; } range = {0, 0}; /* struct cachestat_range; a length of 0: to the end */
    struct { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } counts;
    if (syscall(CACHESTAT, fd, &range, &counts, 0) != 0)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 && counts.nr_cache >= (size + (size_t)page - 1) / (size_t)page;
#else
    (void)fd;
    return 0;
#endif
}

struct entry {
    char *name;
    unsigned char type; /* d_type */
    char *data;         /* NULL: not read */
    size_t size;
    int64_t mtime_ns;
};

struct listed {
    char *path;
    int error; /* errno of opening or listing the directory; 0: listed */
    int unsure; /* it holds a symlink or an entry of unknown type: the Python listing answers for it */
    struct entry *entries;
    size_t count, cap;
};

/* One byte per page of the open file (of `size` bytes, not 0), bit 0 set where the page cache held the page,
 * asked without reading it: `mincore` on a mapping that faults nothing in. NULL where it cannot be asked, or
 * where the answer would not be the page cache's (the process neither owns the file nor may write it: Linux
 * then reports only the pages the process itself has mapped, none). */
static unsigned char *residency(int dfd, const char *name, const struct stat *st, int fd, size_t size)
{
    if (st->st_uid != geteuid() && faccessat(dfd, name, W_OK, AT_EACCESS) != 0)
        return NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return NULL;
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return NULL;
    unsigned char *pages = malloc((size + (size_t)page - 1) / (size_t)page);
    if (pages != NULL && mincore(map, size, pages) != 0) {
        free(pages);
        pages = NULL;
    }
    munmap(map, size);
    return pages;
}

/* Give back, in runs, the pages of the file (of `size` bytes) that `before` says were not cached. */
static void give_back(int fd, const unsigned char *before, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), count = (size + page - 1) / page;
    for (size_t i = 0; i < count;) {
        if (before[i] & 1) {
            i++;
            continue;
        }
        size_t run = i;
        while (run < count && !(before[run] & 1))
            run++;
        posix_fadvise(fd, (off_t)(i * page), (off_t)((run - i) * page), POSIX_FADV_DONTNEED);
        i = run;
    }
}

/* The file's bytes when it is a regular file of fewer than `below` bytes and `*budget` has room for them: read
 * whole; else e->data stays NULL. With `spare`, a file the page cache does not hold whole is read only where
 * its residency can be probed, and the pages its read brought in are given back. */
static void read_entry(int dfd, struct entry *e, size_t below, size_t *budget, int spare)
{
    int fd = openat(dfd, e->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    struct stat st;
    unsigned char *before = NULL; /* residency before the read, where pages are to be given back */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size < below && (size_t)st.st_size <= *budget
        && (!spare || cached_whole(fd, (size_t)st.st_size)
            || (before = residency(dfd, e->name, &st, fd, (size_t)st.st_size)) != NULL)) {
        size_t size = (size_t)st.st_size;
        char *data = malloc(size ? size : 1);
        if (data != NULL) {
            size_t got = 0;
            while (got < size) {
                ssize_t n = read(fd, data + got, size - got);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0)
                    break;
                got += (size_t)n;
            }
            if (got == size) {
                e->data = data;
                e->size = size;
                e->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                *budget -= size;
            } else {
                free(data);
            }
        }
        if (before != NULL)
            give_back(fd, before, size);
    }
    free(before);
    close(fd);
}

static int add_entry(struct listed *l, const char *name, unsigned char type)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct entry *grown = realloc(l->entries, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        l->entries = grown;
        l->cap = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL)
        return -1;
    l->entries[l->count++] = (struct entry){copy, type, NULL, 0, 0};
    return 0;
}

static void list_dir(struct listed *l, size_t below, size_t *budget, int spare)
{
    int dfd = open(l->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        l->error = errno;
        return;
    }
    DIR *dir = fdopendir(dfd);
    if (dir == NULL) {
        l->error = errno;
        close(dfd);
        return;
    }
    for (;;) {
        errno = 0;
        struct dirent *d = readdir(dir);
        if (d == NULL) {
            l->error = errno; /* 0 at the end of the listing */
            break;
        }
        const char *n = d->d_name;
        if (n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0)))
            continue;
        if (add_entry(l, n, d->d_type) < 0) {
            l->error = ENOMEM;
            break;
        }
        l->unsure |= d->d_type == DT_LNK || d->d_type == DT_UNKNOWN;
    }
    if (l->error == 0 && !l->unsure) /* (an unsure one is listed again, its files read, by Python) */
        for (size_t i = 0; i < l->count; i++)
            if (l->entries[i].type == DT_REG)
                read_entry(dfd, &l->entries[i], below, budget, spare);
    closedir(dir);
}

static void release(struct listed *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free(l->entries[i].name);
        free(l->entries[i].data);
    }
    free(l->entries);
}

/* One directory as Python sees it: the errno that stopped its listing; None where an entry is a symlink or of
 * unknown type (os.scandir would stat it to say what it is: the Python listing answers); else (its names, the
 * names of its subdirectories, {name: (bytes, mtime_ns)} of the files read). */
static PyObject *as_python(const struct listed *l)
{
    if (l->error)
        return PyLong_FromLong(l->error);
    if (l->unsure)
        Py_RETURN_NONE;
    PyObject *names = PyList_New((Py_ssize_t)l->count), *dirs = PyList_New(0), *contents = PyDict_New();
    if (names == NULL || dirs == NULL || contents == NULL)
        goto fail;
    for (size_t i = 0; i < l->count; i++) {
        const struct entry *e = &l->entries[i];
        PyObject *name = PyUnicode_DecodeFSDefault(e->name);
        if (name == NULL)
            goto fail;
        PyList_SET_ITEM(names, (Py_ssize_t)i, name);
        if (e->type == DT_DIR && PyList_Append(dirs, name) < 0)
            goto fail;
        if (e->data != NULL) {
            PyObject *read = Py_BuildValue("(y#L)", e->data, (Py_ssize_t)e->size, (long long)e->mtime_ns);
            if (read == NULL || PyDict_SetItem(contents, name, read) < 0) {
                Py_XDECREF(read);
                goto fail;
            }
            Py_DECREF(read);
        }
    }
    return Py_BuildValue("(NNN)", names, dirs, contents);
fail:
    Py_XDECREF(names);
    Py_XDECREF(dirs);
    Py_XDECREF(contents);
    return NULL;
}

static PyObject *d_read_dirs(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *paths;
    Py_ssize_t below, budget;
    int spare = 0;
    if (!PyArg_ParseTuple(args, "O!nn|p", &PyList_Type, &paths, &below, &budget, &spare))
        return NULL;
    if (below < 0 || budget < 0) {
        PyErr_SetString(PyExc_ValueError, "below and budget are byte counts");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(paths);
    struct listed *dirs = calloc(n ? (size_t)n : 1, sizeof *dirs);
    if (dirs == NULL)
        return PyErr_NoMemory();
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyList_GET_ITEM(paths, i);
        if (!PyBytes_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "paths are bytes");
            goto done;
        }
        dirs[i].path = PyBytes_AS_STRING(p); /* the list holds the bytes for the whole call */
    }
    size_t left = (size_t)budget;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        list_dir(&dirs[i], (size_t)below, &left, spare);
    Py_END_ALLOW_THREADS
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *one = as_python(&dirs[i]);
        if (one == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, one);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++)
        release(&dirs[i]);
    free(dirs);
    return out;
}

static PyMethodDef dirread_methods[] = {
    {"read_dirs", d_read_dirs, METH_VARARGS,
     PyDoc_STR("read_dirs(paths: list[bytes], below: int, budget: int, spare_cache: bool = False) -> for each "
               "directory, the errno that stopped its listing, None where it holds a symlink or an entry of "
               "unknown type, or (names, subdirectory names, {name: (bytes, mtime_ns)}): the bytes of its "
               "regular files of fewer than `below` bytes, `budget` bytes in all (with spare_cache, those the "
               "page cache holds whole, and those whose residency it could probe, the pages their reads "
               "brought in given back)")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef dirread_module = {
    PyModuleDef_HEAD_INIT, "_dirread", "Partition directories listed and read ahead, with the GIL released.", -1,
    dirread_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dirread(void)
{
    return PyModule_Create(&dirread_module);
}
