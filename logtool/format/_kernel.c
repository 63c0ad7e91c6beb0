/* _kernel: the hot loops of the walker, compiled. An accelerator, never a second opinion.
 *
 * Every function here answers a question the pure-Python code (logtool/format/batch.py, records.py) also
 * answers, for the common case only, and says "ask Python" for everything else:
 *
 *   frames(BatchView, buf, pos, end, window) walks whole, valid v2 batches (framing, size, CRC-32C) from
 *     `pos` and returns ([BatchView, ...], the position it stopped at). It reads up to 1024 headers and
 *     their CRCs with the GIL released once, then makes their views (releasing it per batch cost a walk
 *     of 1 GB of 18 KB batches 12% over a mapping, 27% over bytes in memory); a pass of several MiB has
 *     its CRCs checked on up to threads() cores. It stops before any entry that is
 *     not a plain valid v2 batch (damage, a legacy message, a producer's control batch whose marker the
 *     walker must read, a header whose arithmetic overflows) and after `window` bytes: the walker's
 *     read_entry then takes that entry, so each stop keeps its exact reason and wording.
 *   clean_records(data, count, base_offset, last_offset, base_ts, max_ts, bounds) reads the records of a
 *     v2 batch's (uncompressed) payload as the reader (format/records.py) does, and returns how many there
 *     are when every one decodes and keeps within the bounds the caller declares (RecordRunBounds: the
 *     record lens's, checks/records.py, offsets increasing and within the batch's last, timestamps at most
 *     its max, no more records than its offsets; or none, DECODE_ONLY); -1 otherwise (or where an int64
 *     ends): the pure path then decodes the batch again and words what it finds.
 *   plain_run(views, base, previous last, epoch, bounds) sums up a run of batches that follows the segment
 *     lens's (checks/segment.py) last batch in its leader epoch, where every batch keeps within the bounds
 *     the lens declares (PlainRunBounds: the magics and codecs it knows, how far above the base offsets
 *     reach, whether they must increase); None otherwise, and the lens walks the run itself.
 *   index_run(views, index, j, n, base, previous last, bounds) merges a run of batches with the offset
 *     index from entry j as the offset index lens does, and stops before the first batch where an entry
 *     is not within the bounds the lens declares (IndexRunBounds): the lens takes that batch and the
 *     rest, and words any finding.
 *   clean_segment(log, index, time index, base, bounds) sums up a whole small segment in one call, as the
 *     lenses of a check would see it, where nothing in it is anything a lens reports: every batch a plain
 *     valid v2 batch of no transaction, within the segment and producer lenses' bounds, every entry of its
 *     offset and time indexes met by the batches within the index lenses', and for a deep check every
 *     record of an uncompressed batch within the record lens's (SegmentBounds gathers the declarations, as
 *     checks/segment.py builds it). It returns the aggregate facts the report and the partition's checks
 *     need (no object per batch), or None: the lenses then walk the segment as ever and word any finding.
 *   crc32c(data) the Castagnoli CRC, for the tests that hold this copy to the crc32c package.
 *   threads([n]) how many threads may check a pass's CRCs (the CPUs of the affinity, at most 4; 1: this one);
 *     split_passes() how many passes have had them checked on more than one, for the tests and the bench.
 *
 * Reading a mapping whose file is cut short under us: the SIGBUS guard (store/_mapguard.c) turns the
 * faulting pages into zeros, for C reads as for Python's, so a walk here ends at a CRC mismatch there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define HAVE_X86 1
#endif

/* ---- CRC-32C ------------------------------------------------------------------------------------ */

#define POLY 0x82F63B78u /* Castagnoli, reflected */

static uint32_t sw_table[8][256];  /* slicing-by-8, for CPUs without the crc32 instruction */

/* The hardware path runs three independent CRCs over three adjacent blocks (the instruction's latency
 * is three cycles, its throughput one) and joins them: the CRC state after A||B is the state after A
 * moved past |B| zero bytes, xored with B's state from zero. Moving past n zero bytes is linear in the
 * state, so it is four table lookups, with one table set per block length. Lanes of 16 KiB: with 4 KiB
 * ones the walk of a 1 GB segment of 18 KB batches ran 25% slower, and a whole buffer 20% (measured). */
#define LONG_BLOCK 16384
#define SHORT_BLOCK 256
static uint32_t long_shift[4][256], short_shift[4][256];
static int have_hw;

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (int i = 0; vec; i++, vec >>= 1)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_multiply(uint32_t *out, const uint32_t *a, const uint32_t *b)
{
    uint32_t r[32];
    for (int i = 0; i < 32; i++)
        r[i] = gf2_times(a, b[i]);
    memcpy(out, r, sizeof r);
}

/* The table set that moves a CRC state past `len` zero bytes. */
static void zeros_table(uint32_t table[4][256], size_t len)
{
    uint32_t bit[32], op[32];
    bit[0] = POLY; /* one zero bit: shift right, fold the polynomial in where a one fell off */
    for (int i = 1; i < 32; i++)
        bit[i] = 1u << (i - 1);
    for (int i = 0; i < 32; i++)
        op[i] = 1u << i; /* the identity */
    gf2_multiply(bit, bit, bit); /* 2 bits */
    gf2_multiply(bit, bit, bit); /* 4 */
    gf2_multiply(bit, bit, bit); /* 8: one zero byte */
    for (; len; len >>= 1) {
        if (len & 1)
            gf2_multiply(op, bit, op);
        gf2_multiply(bit, bit, bit);
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            table[k][b] = gf2_times(op, b << (8 * k));
}

static inline uint32_t shift_by(uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        sw_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            sw_table[k][n] = (sw_table[k - 1][n] >> 8) ^ sw_table[0][sw_table[k - 1][n] & 0xff];
    zeros_table(long_shift, LONG_BLOCK);
    zeros_table(short_shift, SHORT_BLOCK);
#ifdef HAVE_X86
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian loads: the CRC is reflected, bytes go in lowest first */
    return v;
}

static uint32_t crc32c_sw(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    while (n >= 8) {
        uint64_t v = load64(p) ^ crc;
        crc = sw_table[7][v & 0xff] ^ sw_table[6][(v >> 8) & 0xff] ^ sw_table[5][(v >> 16) & 0xff] ^
              sw_table[4][(v >> 24) & 0xff] ^ sw_table[3][(v >> 32) & 0xff] ^ sw_table[2][(v >> 40) & 0xff] ^
              sw_table[1][(v >> 48) & 0xff] ^ sw_table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ sw_table[0][(crc ^ *p++) & 0xff];
    return crc ^ 0xffffffffu;
}

#ifdef HAVE_X86
/* The blocks of three lanes of `block` bytes each, while they last: the CRC state after them. */
__attribute__((target("sse4.2"))) static inline uint64_t three_lanes(uint64_t c0, const unsigned char **at, size_t *n,
                                                                     size_t block, uint32_t shift[4][256])
{
    const unsigned char *p = *at;
    while (*n >= 3 * block) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + block;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + block));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
            p += 8;
        } while (p < stop);
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * block;
        *n -= 3 * block;
    }
    *at = p;
    return c0;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const unsigned char *p, size_t n)
{
    uint64_t c0 = 0xffffffffu;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    c0 = three_lanes(c0, &p, &n, LONG_BLOCK, long_shift);
    c0 = three_lanes(c0, &p, &n, SHORT_BLOCK, short_shift);
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0 ^ 0xffffffffu;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n)
{
#ifdef HAVE_X86
    if (have_hw)
        return crc32c_hw(p, n);
#endif
    return crc32c_sw(p, n);
}

/* ---- big-endian reads ----------------------------------------------------------------------------- */

static inline uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64(const unsigned char *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* ---- frames ------------------------------------------------------------------------------------- */

#define LOG_OVERHEAD 12
#define HEADER_SIZE_UP_TO_MAGIC 17
#define V2_HEADER_SIZE 61

/* One BatchView (a NamedTuple: a tuple subclass) with its 15 fields in their order. */
static PyObject *batch_view(PyTypeObject *type, Py_ssize_t pos, int64_t size, int64_t base, int64_t last,
                            int32_t count, int attributes, int64_t base_ts, int64_t max_ts, int64_t pid,
                            int epoch, int32_t seq, int32_t leader_epoch, uint32_t crc)
{
    PyObject *t = type->tp_alloc(type, 15);
    if (t == NULL)
        return NULL;
    PyObject *items[15] = {
        PyLong_FromSsize_t(pos),       PyLong_FromLongLong(size),         PyLong_FromLong(2),
        PyLong_FromLongLong(base),     PyLong_FromLongLong(last),         PyLong_FromLong(count),
        PyLong_FromLong(attributes),   PyLong_FromLongLong(base_ts),      PyLong_FromLongLong(max_ts),
        PyLong_FromLongLong(pid),      PyLong_FromLong(epoch),            PyLong_FromLong(seq),
        PyLong_FromLong(leader_epoch), PyLong_FromUnsignedLong(crc),      PyLong_FromUnsignedLong(crc),
    };
    for (int i = 0; i < 15; i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < 15; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

/* A batch header as frames() read it, before any Python object is made of it. */
struct header {
    Py_ssize_t pos;
    int64_t size, base, last, base_ts, max_ts, pid;
    int32_t count, seq, leader_epoch;
    int attributes, epoch;
    uint32_t crc;
};

#define HEADERS_PER_PASS 1024
/* Fewer bytes than this are read with the GIL held: their CRCs take microseconds, and a thread that takes the
 * GIL when it is let go (store/read_ahead.py's) keeps it far longer than that before it gives it back. */
#define GIL_FREE_FROM (256 << 10)

/* Let go of the GIL for the work on `bytes` bytes where they are many; give it to `gil_back`. */
static PyThreadState *gil_away(Py_ssize_t bytes) { return bytes >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL; }
static void gil_back(PyThreadState *ts)
{
    if (ts != NULL)
        PyEval_RestoreThread(ts);
}

/* Up to `room` v2 batches from *pos whose framing is plain (everything frames() checks but the CRC), without
 * the GIL: their headers, and *pos past them. Stops where frames() stops; returns how many, and sets *more
 * when it stopped only for want of room. */
static int read_headers(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, Py_ssize_t limit,
                        struct header *out, int room, int *more)
{
    int m = 0;
    Py_ssize_t at = *pos;
    *more = 0;
    while (at >= 0 && end - at > HEADER_SIZE_UP_TO_MAGIC && at < limit) {
        if (m == room) {
            *more = 1;
            break;
        }
        const unsigned char *p = buf + at;
        int64_t base = (int64_t)be64(p);
        int32_t length = (int32_t)be32(p + 8);
        if (p[16] != 2)
            break;
        int64_t size = (int64_t)length + LOG_OVERHEAD; /* below the v2 minimum: a negative length too */
        if (size > end - at || size < V2_HEADER_SIZE)
            break;
        int attributes = p[22]; /* the low byte of the int16 attributes, as the walker keeps them */
        int64_t pid = (int64_t)be64(p + 43);
        int64_t last;
        if (__builtin_add_overflow(base, (int64_t)(int32_t)be32(p + 23), &last))
            break;
        if ((attributes & 0x20) && pid >= 0)
            break; /* a producer's control batch: the walker reads its marker */
        out[m++] = (struct header){at, size, base, last, (int64_t)be64(p + 27), (int64_t)be64(p + 35), pid,
                                   (int32_t)be32(p + 57), (int32_t)be32(p + 53), (int32_t)be32(p + 12),
                                   attributes, (int16_t)(p[51] << 8 | p[52]), be32(p + 17)};
        at += size;
    }
    *pos = at;
    return m;
}

/* ---- the CRCs of a pass, on every core that pays ---------------------------------------------------- */

/* A pass's CRCs are split across threads when it holds PART_BYTES per thread: below that, starting a
 * thread costs about what it saves. The parts end on batch boundaries, so one can be smaller, or empty
 * beside a batch of several MiB (it gets no thread). The threads live for one pass (created and joined
 * in it), so no thread outlives a call, holds a buffer, or is lost in a fork (PySpark forks its workers). */
#define PART_BYTES (1 << 20)
#define MAX_PARTS 4
/* set at import from the usable CPUs, and by threads(); read without the GIL, so always atomically */
static int max_parts = 1;
static unsigned long split_passes; /* passes whose CRCs were checked on more than one thread */

struct crc_part {
    const unsigned char *buf;
    const struct header *h;
    int from, to, bad; /* bad: the first batch in [from, to) whose CRC is wrong, or `to` */
};

static void *check_part(void *arg)
{
    struct crc_part *c = arg;
    c->bad = c->to;
    for (int i = c->from; i < c->to; i++) {
        const struct header *x = &c->h[i];
        if (crc32c(c->buf + x->pos + 21, (size_t)(x->size - 21)) != x->crc) {
            c->bad = i;
            break;
        }
    }
    return NULL;
}

/* The first of the m batches whose stored CRC is wrong, or m. A part that a thread cannot be started for
 * is checked here; a wrong CRC in one part does not stop the others (their answers come after it). */
static int first_bad_crc(const unsigned char *buf, const struct header *h, int m)
{
    int64_t bytes = 0;
    for (int i = 0; i < m; i++)
        bytes += h[i].size;
    int parts = (int)(bytes / PART_BYTES);
    int most = __atomic_load_n(&max_parts, __ATOMIC_RELAXED);
    if (parts > most)
        parts = most;
    if (parts > m)
        parts = m;
    struct crc_part part[MAX_PARTS];
    if (parts <= 1) {
        part[0] = (struct crc_part){buf, h, 0, m, m};
        check_part(&part[0]);
        return part[0].bad;
    }
    /* Contiguous parts of about equal bytes. */
    int i = 0;
    int64_t seen = 0;
    for (int k = 0; k < parts; k++) {
        int from = i;
        int64_t goal = bytes * (k + 1) / parts;
        while (i < m && (k == parts - 1 || seen < goal))
            seen += h[i++].size;
        part[k] = (struct crc_part){buf, h, from, i, i};
    }
    pthread_t tid[MAX_PARTS];
    int started[MAX_PARTS] = {0}, helpers = 0;
    for (int k = 1; k < parts; k++)
        if (part[k].from < part[k].to)
            helpers += started[k] = pthread_create(&tid[k], NULL, check_part, &part[k]) == 0;
    if (helpers)
        __atomic_add_fetch(&split_passes, 1, __ATOMIC_RELAXED);
    check_part(&part[0]);
    for (int k = 1; k < parts; k++) {
        if (started[k])
            pthread_join(tid[k], NULL);
        else
            check_part(&part[k]);
    }
    for (int k = 0; k < parts; k++)
        if (part[k].bad < part[k].to)
            return part[k].bad;
    return m;
}

/* Up to HEADERS_PER_PASS whole, valid v2 batches from *pos: read_headers, then their CRCs; *pos ends
 * before the first batch whose CRC is wrong. */
static int valid_batches(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, Py_ssize_t limit,
                         struct header *out, int *more)
{
    int m = read_headers(buf, pos, end, limit, out, HEADERS_PER_PASS, more);
    int good = first_bad_crc(buf, out, m);
    if (good < m) {
        *pos = out[good].pos;
        *more = 0;
    }
    return good;
}

static PyObject *k_frames(PyObject *self, PyObject *args)
{
    PyObject *type, *obj;
    Py_ssize_t pos, end, window;
    if (!PyArg_ParseTuple(args, "O!Onnn", &PyType_Type, &type, &obj, &pos, &end, &window))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (end > b.len)
        end = b.len;
    Py_ssize_t limit = window > PY_SSIZE_T_MAX - pos ? PY_SSIZE_T_MAX : pos + window;
    /* on the heap: a pass's headers would take 80 KiB of a thread's stack */
    struct header *h = PyMem_RawMalloc(HEADERS_PER_PASS * sizeof *h);
    PyObject *out = h == NULL ? PyErr_NoMemory() : PyList_New(0);
    if (out == NULL)
        goto fail;
    int more = 1;
    while (more) {
        int m;
        /* The CRCs of a long pass run without the GIL, once; its views are made with it, from what was read. */
        PyThreadState *ts = gil_away((limit < end ? limit : end) - pos);
        m = valid_batches(b.buf, &pos, end, limit, h, &more);
        gil_back(ts);
        for (int i = 0; i < m; i++) {
            PyObject *view = batch_view((PyTypeObject *)type, h[i].pos, h[i].size, h[i].base, h[i].last,
                                        h[i].count, h[i].attributes, h[i].base_ts, h[i].max_ts, h[i].pid,
                                        h[i].epoch, h[i].seq, h[i].leader_epoch, h[i].crc);
            if (view == NULL || PyList_Append(out, view) < 0) {
                Py_XDECREF(view);
                goto fail;
            }
            Py_DECREF(view);
        }
    }
    PyMem_RawFree(h);
    PyBuffer_Release(&b);
    return Py_BuildValue("(Nn)", out, pos);
fail:
    Py_XDECREF(out);
    PyMem_RawFree(h);
    PyBuffer_Release(&b);
    return NULL;
}

/* ---- runs of batches, as two lenses see them ------------------------------------------------------ */

/* Each lens declares, as data, the bounds a run must keep to for the kernel to take it (PlainRunBounds,
 * IndexRunBounds in format/kernel.py: tuples read here by position). The kernel holds no rule of its own:
 * past a bound is something the lens reports, so the kernel declines and the lens walks the batches. */

/* An int an int64 holds, or -1 where it is not one (None, a bigger int): "ask Python". */
static int int64_of(PyObject *v, int64_t *out)
{
    if (!PyLong_CheckExact(v))
        return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = x;
    return 0;
}

static inline int view_field(PyObject *view, Py_ssize_t i, int64_t *out)
{
    return int64_of(PyTuple_GET_ITEM(view, i), out);
}

enum { F_POSITION = 0, F_MAGIC = 2, F_BASE = 3, F_LAST = 4, F_ATTRIBUTES = 6, F_MAX_TS = 8, F_LEADER_EPOCH = 12,
       VIEW_FIELDS = 15 };

static inline int is_view(PyObject *v) { return PyTuple_Check(v) && PyTuple_GET_SIZE(v) == VIEW_FIELDS; }

/* A declaration's tuple of `n` fields, or a TypeError naming what it should have been. */
static int declared(PyObject *bounds, Py_ssize_t n, const char *what)
{
    if (PyTuple_Check(bounds) && PyTuple_GET_SIZE(bounds) == n)
        return 0;
    PyErr_Format(PyExc_TypeError, "the bounds are a %s", what);
    return -1;
}

/* Each of a declaration's fields as a flag (IndexRunBounds, RecordRunBounds: all of them). */
static int flags_of(PyObject *bounds, int *flags, Py_ssize_t n, const char *what)
{
    if (declared(bounds, n, what) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((flags[i] = PyObject_IsTrue(PyTuple_GET_ITEM(bounds, i))) < 0)
            return -1;
    return 0;
}

/* The magics plain_run's answer can name (a bit each); a declaration of more is refused. */
#define MAX_MAGICS 64

/* PlainRunBounds, read. */
struct plain_bounds {
    unsigned char codecs[MAX_MAGICS]; /* by magic, the bits of the codec ids it may name */
    Py_ssize_t magics;                /* the magics known: 0 .. magics - 1 */
    long long max_relative;
    int increasing;
};

static int plain_bounds_of(PyObject *bounds, struct plain_bounds *b)
{
    if (declared(bounds, 3, "PlainRunBounds") < 0)
        return -1;
    PyObject *codecs = PyTuple_GET_ITEM(bounds, 0);
    if (!PyTuple_Check(codecs) || PyTuple_GET_SIZE(codecs) > MAX_MAGICS) {
        PyErr_SetString(PyExc_ValueError, "PlainRunBounds.codecs: a tuple of at most 64 magics' codec bits");
        return -1;
    }
    b->magics = PyTuple_GET_SIZE(codecs);
    for (Py_ssize_t m = 0; m < b->magics; m++) {
        long bits = PyLong_AsLong(PyTuple_GET_ITEM(codecs, m));
        if (bits == -1 && PyErr_Occurred())
            return -1;
        if (bits < 0 || bits > 0xFF) { /* a codec id is 3 bits of the attributes */
            PyErr_SetString(PyExc_ValueError, "PlainRunBounds.codecs: codec bits of ids 0 to 7");
            return -1;
        }
        b->codecs[m] = (unsigned char)bits;
    }
    b->max_relative = PyLong_AsLongLong(PyTuple_GET_ITEM(bounds, 1));
    if (b->max_relative == -1 && PyErr_Occurred())
        return -1;
    b->increasing = PyObject_IsTrue(PyTuple_GET_ITEM(bounds, 2));
    return b->increasing < 0 ? -1 : 0;
}

static PyObject *k_plain_run(PyObject *self, PyObject *args)
{
    PyObject *views, *prev_obj, *bounds_obj;
    long long base, epoch;
    struct plain_bounds bounds;
    if (!PyArg_ParseTuple(args, "O!LOLO", &PyList_Type, &views, &base, &prev_obj, &epoch, &bounds_obj) ||
        plain_bounds_of(bounds_obj, &bounds) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(views);
    int64_t prev_last, max_ts = 0;
    if (n == 0 || int64_of(prev_obj, &prev_last))
        Py_RETURN_NONE;
    unsigned codecs = 0;
    unsigned long long magics = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(views, i);
        int64_t magic, b, last, attributes, ts, le, rel;
        if (!is_view(v) || view_field(v, F_MAGIC, &magic) || view_field(v, F_BASE, &b) ||
            view_field(v, F_LAST, &last) || view_field(v, F_ATTRIBUTES, &attributes) ||
            view_field(v, F_MAX_TS, &ts) || view_field(v, F_LEADER_EPOCH, &le))
            Py_RETURN_NONE;
        int codec = (int)(attributes & 0x07); /* the codec id: the attributes' low 3 bits (FORMAT.md) */
        if (magic < 0 || magic >= bounds.magics || !(bounds.codecs[magic] >> codec & 1))
            Py_RETURN_NONE;
        if (bounds.increasing && (b <= prev_last || last < b))
            Py_RETURN_NONE;
        if (__builtin_sub_overflow(last, (int64_t)base, &rel) || rel < 0 || rel > bounds.max_relative)
            Py_RETURN_NONE;
        if (le != epoch)
            Py_RETURN_NONE; /* a run of another leader epoch is the lens's to open */
        if (i == 0 || ts > max_ts)
            max_ts = ts;
        codecs |= 1u << codec;
        magics |= 1ull << magic;
        prev_last = last;
    }
    return Py_BuildValue("(LLIK)", (long long)prev_last, (long long)max_ts, codecs, magics);
}

/* An offset index entry j, absolute: (base + relative offset, position), both int32 big-endian; -1 where the
 * sum overflows an int64 (Python's ints do not). */
static inline int index_entry(const unsigned char *d, Py_ssize_t j, int64_t base, int64_t *offset, int64_t *pos)
{
    *pos = (int32_t)be32(d + 8 * j + 4);
    return __builtin_add_overflow(base, (int64_t)(int32_t)be32(d + 8 * j), offset) ? -1 : 0;
}

/* IndexRunBounds, by field. */
enum { AT_BATCH_START, AFTER_PREVIOUS_BATCH, WITHIN_BATCH, ENTRIES_INCREASING, INDEX_BOUNDS };

/* The offset index entries from *j on that name the batch at `pos` whose first offset is `first` (a position
 * up to its start), as the lens's feed takes them, after a batch that ended at `pbl` (where `has_pbl`): 1 where
 * each keeps within `bound` (IndexRunBounds), *j then at the first entry past the batch; 0 where one does not
 * or cannot be read, *j at it. index_run and clean_segment both hold entries to the lens's bounds here. */
static int entries_keep(const unsigned char *d, Py_ssize_t *j, Py_ssize_t n, int64_t base, int64_t pos,
                        int64_t first, int has_pbl, int64_t pbl, const int *bound)
{
    for (; *j < n; (*j)++) {
        int64_t offset, at;
        if (index_entry(d, *j, base, &offset, &at))
            return 0;
        if (at > pos)
            break;
        if ((bound[AT_BATCH_START] && at != pos) || (bound[AFTER_PREVIOUS_BATCH] && has_pbl && offset <= pbl) ||
            (bound[WITHIN_BATCH] && offset < first))
            return 0;
        if (bound[ENTRIES_INCREASING] && *j + 1 < n) { /* the lens holds the next one to it as it reads it */
            int64_t next_offset, next_at;
            if (index_entry(d, *j + 1, base, &next_offset, &next_at) || next_offset <= offset || next_at <= at)
                return 0;
        }
    }
    return 1;
}

static PyObject *k_index_run(PyObject *self, PyObject *args)
{
    PyObject *views, *obj, *pbl_obj, *bounds_obj;
    Py_ssize_t j, n;
    long long base;
    int bound[INDEX_BOUNDS];
    if (!PyArg_ParseTuple(args, "O!OnnLOO", &PyList_Type, &views, &obj, &j, &n, &base, &pbl_obj, &bounds_obj) ||
        flags_of(bounds_obj, bound, INDEX_BOUNDS, "IndexRunBounds") < 0)
        return NULL;
    if (j < 0) {
        PyErr_SetString(PyExc_ValueError, "index_run: entry numbers start at 0");
        return NULL;
    }
    if (pbl_obj != Py_None && !PyLong_Check(pbl_obj)) {
        PyErr_SetString(PyExc_TypeError, "index_run: the previous batch's last offset is an int or None");
        return NULL;
    }
    int64_t pbl = 0;
    int has_pbl = pbl_obj != Py_None;
    if (has_pbl && int64_of(pbl_obj, &pbl))
        return Py_BuildValue("(nnO)", (Py_ssize_t)0, j, pbl_obj);
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (n > b.len / 8)
        n = b.len / 8;
    const unsigned char *d = b.buf;
    Py_ssize_t k = 0, count = PyList_GET_SIZE(views);
    for (; k < count; k++) {
        PyObject *v = PyList_GET_ITEM(views, k);
        int64_t pos, first, last;
        if (!is_view(v) || view_field(v, F_POSITION, &pos) || view_field(v, F_BASE, &first) ||
            view_field(v, F_LAST, &last))
            break;
        if (!entries_keep(d, &j, n, base, pos, first, has_pbl, pbl, bound))
            break;
        pbl = last;
        has_pbl = 1;
    }
    PyBuffer_Release(&b);
    if (!has_pbl)
        return Py_BuildValue("(nnO)", k, j, Py_None);
    return Py_BuildValue("(nnL)", k, j, (long long)pbl);
}

/* ---- records ------------------------------------------------------------------------------------ */

/* A zig-zag varint of at most `bits` bits at *pos, bounded by end: 0 and the value, or -1 where the
 * reference raises (past the end, or one continuation byte more than allowed). */
static inline int varint(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int bits, int64_t *out)
{
    if (*pos < end && d[*pos] < 0x80) { /* one byte: most lengths, deltas and counts of a record */
        uint64_t u = d[(*pos)++];
        *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        return 0;
    }
    uint64_t u = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (;;) {
        if (p >= end)
            return -1;
        unsigned char c = d[p++];
        if (shift < 64)
            u |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            break;
        shift += 7;
        if (shift >= bits + 3)
            return -1;
    }
    if (bits == 32)
        u &= 0xffffffffu;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    *pos = p;
    return 0;
}

/* A length-prefixed byte field (key, value, header key or value): 0 and its length (-1: null); -1 where
 * the reference raises. */
static inline int bytes_field(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, Py_ssize_t *len)
{
    int64_t n;
    if (varint(d, pos, end, 32, &n) < 0)
        return -1;
    if (n < 0) {
        *len = -1;
        return 0;
    }
    if (n > end - *pos)
        return -1;
    *len = (Py_ssize_t)n;
    *pos += n;
    return 0;
}

/* One v2 record's fields, where its bytes are: a length of -1 is a null key or value. */
struct record {
    int64_t ts_delta, offset_delta, n_headers;
    Py_ssize_t key_at, key_len, value_at, value_len, headers_at;
};

/* The record at *pos (FORMAT.md §2.6), its framing held to what the reference's iter_records holds it to:
 * 0, or -1 where the reference raises. *pos ends past the record. */
static int parse_record(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, struct record *r)
{
    int64_t length;
    Py_ssize_t len;
    if (*pos >= end || varint(d, pos, end, 32, &length) < 0 || length < 0 || length > end - *pos)
        return -1;
    Py_ssize_t body_end = *pos + length;
    *pos += 1; /* attributes, unused */
    if (varint(d, pos, body_end, 64, &r->ts_delta) < 0 || varint(d, pos, body_end, 32, &r->offset_delta) < 0)
        return -1;
    r->key_at = *pos;
    if (bytes_field(d, pos, body_end, &r->key_len) < 0)
        return -1;
    r->value_at = *pos;
    if (bytes_field(d, pos, body_end, &r->value_len) < 0)
        return -1;
    if (varint(d, pos, body_end, 32, &r->n_headers) < 0 || r->n_headers < 0 || r->n_headers > body_end - *pos)
        return -1;
    r->headers_at = *pos;
    for (int64_t h = 0; h < r->n_headers; h++)
        if (bytes_field(d, pos, body_end, &len) < 0 || len < 0 || bytes_field(d, pos, body_end, &len) < 0)
            return -1;
    return *pos == body_end ? 0 : -1;
}

/* Where a field's bytes start (past its length varint) and how many: the record parser checked them. */
static inline const unsigned char *field_bytes(const unsigned char *d, Py_ssize_t at, Py_ssize_t *len)
{
    int64_t n = -1; /* (never kept: the parser read this varint whole) */
    Py_ssize_t p = at;
    varint(d, &p, at + 5, 32, &n);
    *len = n < 0 ? -1 : (Py_ssize_t)n;
    return d + p;
}

/* The header at *at (a record the parser checked): its key's and value's bytes and lengths (-1: null);
 * *at moves past it. */
static void next_header(const unsigned char *d, Py_ssize_t *at, const unsigned char **key, Py_ssize_t *key_len,
                        const unsigned char **value, Py_ssize_t *value_len)
{
    *key = field_bytes(d, *at, key_len);
    *value = field_bytes(d, *key + *key_len - d, value_len);
    *at = *value + (*value_len < 0 ? 0 : *value_len) - d;
}

/* RecordRunBounds, by field. */
enum { OFFSETS_INCREASING, OFFSETS_WITHIN_LAST, TIMES_WITHIN_MAX, COUNT_WITHIN_SPAN, RECORD_BOUNDS };

/* How many records the payload holds where every one reads and keeps within the bounds (the flags), or -1.
 * Inlined with the flags as constants for the two declarations every deep walk meets, where a flag tested
 * per record cost a walk of 11.6M records in 23k batches 2-4% (measured). */
static inline __attribute__((always_inline)) long long
count_records(const unsigned char *d, Py_ssize_t end, long long count, int64_t base, int64_t last, int64_t base_ts,
              int64_t max_ts, int increasing, int within_last, int times, int within_span)
{
    if (count < 0) /* a count the reader refuses */
        return -1;
    Py_ssize_t pos = 0;
    int64_t prev = 0;
    for (long long i = 0; i < count; i++) {
        struct record r;
        int64_t offset, ts;
        if (parse_record(d, &pos, end, &r) < 0)
            return -1;
        if (increasing || within_last) {
            if (__builtin_add_overflow(base, r.offset_delta, &offset) || (increasing && i > 0 && offset <= prev) ||
                (within_last && offset > last))
                return -1;
            prev = offset;
        }
        if (times && (__builtin_add_overflow(base_ts, r.ts_delta, &ts) || ts > max_ts))
            return -1;
    }
    int64_t span; /* offsets the header covers, less one */
    if (pos < end || (within_span && (__builtin_sub_overflow(last, base, &span) || count - 1 > span)))
        return -1;
    return count;
}

static PyObject *k_clean_records(PyObject *self, PyObject *args)
{
    PyObject *obj, *bounds_obj;
    long long count, base, last, base_ts, max_ts;
    int b[RECORD_BOUNDS];
    if (!PyArg_ParseTuple(args, "OLLLLLO", &obj, &count, &base, &last, &base_ts, &max_ts, &bounds_obj) ||
        flags_of(bounds_obj, b, RECORD_BOUNDS, "RecordRunBounds") < 0)
        return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(obj, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *d = buf.buf;
    Py_ssize_t end = buf.len;
    long long n;
    int all = b[OFFSETS_INCREASING] && b[OFFSETS_WITHIN_LAST] && b[COUNT_WITHIN_SPAN]; /* the record lens's */
    PyThreadState *ts = gil_away(end);
    if (all && b[TIMES_WITHIN_MAX])
        n = count_records(d, end, count, base, last, base_ts, max_ts, 1, 1, 1, 1);
    else if (all)
        n = count_records(d, end, count, base, last, base_ts, max_ts, 1, 1, 0, 1);
    else
        n = count_records(d, end, count, base, last, base_ts, max_ts, b[OFFSETS_INCREASING], b[OFFSETS_WITHIN_LAST],
                          b[TIMES_WITHIN_MAX], b[COUNT_WITHIN_SPAN]);
    gil_back(ts);
    PyBuffer_Release(&buf);
    return PyLong_FromLongLong(n);
}

/* ---- a whole small segment, as every lens of a check sees it ------------------------------------ */

/* Producer sequence `delta` records after `base_seq`, wrapping at int32 max as Kafka does (format/batch.py). */
static int64_t sequence_at(int64_t base_seq, int64_t delta)
{
    if (base_seq < 0)
        return -1;
    if (base_seq > INT32_MAX - delta)
        return delta - (INT32_MAX - base_seq) - 1;
    return base_seq + delta;
}

/* TimeIndexRunBounds, ProducerRunBounds and SegmentBounds, by field. */
enum { ENTRY_IN_BATCH, TIME_IS_MAX, TIME_ENTRIES_INCREASING, TIME_BOUNDS };
enum { EPOCHS_NOT_BACKWARDS, SEQUENCES_FOLLOW_ON, PRODUCER_BOUNDS };
enum { SEG_BATCHES, SEG_FIRST_AT_BASE, SEG_OFFSET_INDEX, SEG_INDEX_LAST_WITHIN_LOG, SEG_TIME_INDEX, SEG_PRODUCERS,
       SEG_RECORDS, SEGMENT_BOUNDS };

/* The producers a segment summed up may hold: one with more is left to the producer lens. A handful is the
 * rule in a small segment (each producer's batches in it are summed up as one span). */
#define MAX_PRODUCERS 64

/* One producer id's batches in the segment, as the producer lens keeps them (ProducerSpan, checks/producers.py):
 * its first batch (epoch, position, base offset), its last epoch, and its first and last batches with
 * sequences (epoch, base sequence, last sequence, base offset; epoch, last sequence, last offset). */
struct span {
    int64_t pid, first_position, first_offset, first_data[4], last_data[3];
    int first_epoch, last_epoch, has_data;
};

/* A time index entry t, absolute: (timestamp, base + relative offset); -1 where the sum overflows an int64. */
static inline int time_entry(const unsigned char *d, Py_ssize_t t, int64_t base, int64_t *ts, int64_t *offset)
{
    *ts = (int64_t)be64(d + 12 * t);
    return __builtin_add_overflow(base, (int64_t)(int32_t)be32(d + 12 * t + 8), offset) ? -1 : 0;
}

/* Whether the file's last whole entry of `size` bytes is all zeros (a preallocated slot, which the index
 * lenses report) where there are at least two: format/index.py's zero_tail_start. */
static int zero_slot_at_end(const unsigned char *d, Py_ssize_t n, Py_ssize_t size)
{
    if (n < 2)
        return 0;
    for (Py_ssize_t i = (n - 1) * size; i < n * size; i++)
        if (d[i])
            return 0;
    return 1;
}

/* What clean_segment sums up as it folds the batches in, and where it is in each index. */
struct segment_sum {
    int64_t base, first, last, first_ts, max_ts, epoch, run_start, tmax;
    long long records;
    Py_ssize_t batches, j, n, t, tn;
    int producers;
    struct span spans[MAX_PRODUCERS];
    int has_pbl;
    unsigned codecs;
    unsigned long long magics;
    PyObject *runs; /* [(leader epoch, first offset, last offset), ...] */
};

/* The epoch run that ends with the batch before (v0/v1's epoch -1 belongs to no run), as the segment lens
 * closes it. 0, or -1 with a Python error. */
static int close_run(struct segment_sum *s)
{
    if (s->epoch < 0 || s->batches == 0)
        return 0;
    PyObject *run = Py_BuildValue("(LLL)", (long long)s->epoch, (long long)s->run_start, (long long)s->last);
    int failed = run == NULL || PyList_Append(s->runs, run) < 0;
    Py_XDECREF(run);
    return failed ? -1 : 0;
}

/* The bounds clean_segment holds a segment to, read. */
struct segment_bounds {
    struct plain_bounds batches;
    int first_at_base, index[INDEX_BOUNDS], last_within, time[TIME_BOUNDS], producers[PRODUCER_BOUNDS];
    int deep, records[RECORD_BOUNDS]; /* deep: every batch's records are counted, within `records` */
};

/* A producer's batch `h` folded into its span, as the producer lens feeds it: 1, or 0 where the lens would
 * report something of it (its epoch going back, its sequences not following on) or it is one producer more
 * than the sum holds. */
static int fold_producer(struct segment_sum *s, const struct header *h, const int *bounds)
{
    struct span *span = s->spans;
    while (span < s->spans + s->producers && span->pid != h->pid)
        span++;
    int64_t last_seq = sequence_at(h->seq, h->last - h->base);
    int has_data = h->seq >= 0; /* a batch without sequences is compared by its epoch alone */
    if (span == s->spans + s->producers) {
        if (s->producers == MAX_PRODUCERS)
            return 0;
        s->producers++;
        *span = (struct span){.pid = h->pid, .first_position = h->pos, .first_offset = h->base,
                              .first_epoch = h->epoch, .last_epoch = h->epoch};
    } else {
        if (bounds[EPOCHS_NOT_BACKWARDS] && h->epoch < span->last_epoch)
            return 0;
        if (bounds[SEQUENCES_FOLLOW_ON] && h->epoch >= span->last_epoch && has_data && span->has_data &&
            span->last_data[0] == h->epoch) {
            int64_t expected = span->last_data[1] == INT32_MAX ? 0 : span->last_data[1] + 1;
            if (h->seq != expected)
                return 0;
        }
        span->last_epoch = h->epoch;
    }
    if (has_data) {
        if (!span->has_data) {
            span->first_data[0] = h->epoch, span->first_data[1] = h->seq, span->first_data[2] = last_seq;
            span->first_data[3] = h->base;
        }
        span->last_data[0] = h->epoch, span->last_data[1] = last_seq, span->last_data[2] = h->last;
        span->has_data = 1;
    }
    return 1;
}

/* The spans as the report keeps them: [(producer id, first epoch, first position, first offset, last epoch,
 * first data or None, last data or None), ...] in the order the producers first came. */
static PyObject *spans_of(const struct segment_sum *s)
{
    PyObject *out = PyList_New(s->producers);
    for (int i = 0; out != NULL && i < s->producers; i++) {
        const struct span *p = &s->spans[i];
        PyObject *span = p->has_data ?
            Py_BuildValue("(LiLLi(iLLL)(iLL))", (long long)p->pid, p->first_epoch, (long long)p->first_position,
                          (long long)p->first_offset, p->last_epoch, (int)p->first_data[0],
                          (long long)p->first_data[1], (long long)p->first_data[2], (long long)p->first_data[3],
                          (int)p->last_data[0], (long long)p->last_data[1], (long long)p->last_data[2]) :
            Py_BuildValue("(LiLLiOO)", (long long)p->pid, p->first_epoch, (long long)p->first_position,
                          (long long)p->first_offset, p->last_epoch, Py_None, Py_None);
        if (span == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, span);
    }
    return out;
}

/* Batch `h` of `log` folded into the sum: 1 where it keeps within every bound, 0 where a lens would report
 * something of it (or of an index entry it meets), -1 with a Python error. */
static int fold_batch(struct segment_sum *s, const unsigned char *log, const struct header *h,
                      const struct segment_bounds *b, const unsigned char *index, const unsigned char *times)
{
    const struct plain_bounds *pb = &b->batches;
    const int *ib = b->index, *tb = b->time, *rb = b->records;
    int codec = h->attributes & 0x07;
    int64_t rel;
    if (h->attributes & 0x30)
        return 0; /* a transaction's batch or a marker: the transaction lenses keep state of it */
    if (2 >= pb->magics || !(pb->codecs[2] >> codec & 1)) /* (frames' batches are all of magic 2) */
        return 0;
    if (h->pid >= 0 && !fold_producer(s, h, b->producers))
        return 0;
    if (b->deep) {
        /* Every batch's records are held to `records`, even one whose times the record lens holds to no max:
         * where one of them is past it the segment is declined, and where none is the lens finds nothing. */
        long long n = codec != 0 ? -1 : /* records the reader decompresses first */
            count_records(log + h->pos + V2_HEADER_SIZE, (Py_ssize_t)(h->size - V2_HEADER_SIZE), h->count, h->base,
                          h->last, h->base_ts, h->max_ts, rb[OFFSETS_INCREASING], rb[OFFSETS_WITHIN_LAST],
                          rb[TIMES_WITHIN_MAX], rb[COUNT_WITHIN_SPAN]);
        if (n < 0)
            return 0;
        s->records += n;
    }
    if (s->batches == 0) {
        if (b->first_at_base && h->base != s->base)
            return 0;
        s->first = h->base;
        s->first_ts = h->base_ts;
        s->max_ts = h->max_ts;
    } else if (pb->increasing && (h->base <= s->last || h->last < h->base)) {
        return 0;
    }
    if (__builtin_sub_overflow(h->last, s->base, &rel) || rel < 0 || rel > pb->max_relative)
        return 0;
    /* the offset index entries up to this batch's start, as index_run merges them */
    if (!entries_keep(index, &s->j, s->n, s->base, h->pos, h->base, s->has_pbl, s->last, ib))
        return 0;
    /* the time index entries this batch's offsets reach, each the largest max timestamp so far */
    int64_t ts = 0, offset = 0;
    if (s->t < s->tn) {
        if (time_entry(times, s->t, s->base, &ts, &offset))
            return 0;
    }
    if (s->t < s->tn && offset <= h->last) {
        if (h->max_ts > s->tmax)
            s->tmax = h->max_ts;
        while (s->t < s->tn) {
            if (time_entry(times, s->t, s->base, &ts, &offset))
                return 0;
            if (offset > h->last)
                break;
            if ((tb[ENTRY_IN_BATCH] && offset < h->base) || (tb[TIME_IS_MAX] && ts != s->tmax))
                return 0;
            if (tb[TIME_ENTRIES_INCREASING] && s->t + 1 < s->tn) {
                int64_t next_ts, next_offset;
                if (time_entry(times, s->t + 1, s->base, &next_ts, &next_offset) || next_ts <= ts ||
                    next_offset < offset)
                    return 0;
            }
            s->t++;
        }
    } else if (h->max_ts > s->tmax) {
        s->tmax = h->max_ts;
    }
    if (h->leader_epoch != s->epoch || s->batches == 0) {
        if (close_run(s) < 0)
            return -1;
        s->epoch = h->leader_epoch;
        s->run_start = h->base;
    }
    if (s->batches > 0 && h->max_ts > s->max_ts)
        s->max_ts = h->max_ts;
    s->codecs |= 1u << codec;
    s->magics |= 1ull << 2;
    s->last = h->last;
    s->has_pbl = 1;
    s->batches++;
    return 1;
}

/* The format's own refusals of an index file: a partial entry, a relative offset below the base, a
 * preallocated slot at the end (format/index.py: Kafka's sanity checks, zero_tail_start). */
static int index_refused(const unsigned char *d, Py_ssize_t len, Py_ssize_t size, Py_ssize_t rel_at)
{
    Py_ssize_t n = len / size;
    if (len % size || zero_slot_at_end(d, n, size))
        return 1;
    return n > 0 && (int32_t)be32(d + (n - 1) * size + rel_at) < 0;
}

/* SegmentBounds, read (its records None: a shallow check's, which reads no record). */
static int segment_bounds_of(PyObject *bounds, struct segment_bounds *b)
{
    if (declared(bounds, SEGMENT_BOUNDS, "SegmentBounds") < 0 ||
        plain_bounds_of(PyTuple_GET_ITEM(bounds, SEG_BATCHES), &b->batches) < 0 ||
        (b->first_at_base = PyObject_IsTrue(PyTuple_GET_ITEM(bounds, SEG_FIRST_AT_BASE))) < 0 ||
        flags_of(PyTuple_GET_ITEM(bounds, SEG_OFFSET_INDEX), b->index, INDEX_BOUNDS, "IndexRunBounds") < 0 ||
        (b->last_within = PyObject_IsTrue(PyTuple_GET_ITEM(bounds, SEG_INDEX_LAST_WITHIN_LOG))) < 0 ||
        flags_of(PyTuple_GET_ITEM(bounds, SEG_TIME_INDEX), b->time, TIME_BOUNDS, "TimeIndexRunBounds") < 0 ||
        flags_of(PyTuple_GET_ITEM(bounds, SEG_PRODUCERS), b->producers, PRODUCER_BOUNDS, "ProducerRunBounds") < 0)
        return -1;
    PyObject *records = PyTuple_GET_ITEM(bounds, SEG_RECORDS);
    b->deep = records != Py_None;
    return b->deep ? flags_of(records, b->records, RECORD_BOUNDS, "RecordRunBounds") : 0;
}

static PyObject *k_clean_segment(PyObject *self, PyObject *args)
{
    PyObject *log_obj, *index_obj, *time_obj, *bounds, *answer = NULL;
    long long base;
    struct segment_bounds sb;
    if (!PyArg_ParseTuple(args, "OOOLO", &log_obj, &index_obj, &time_obj, &base, &bounds) ||
        segment_bounds_of(bounds, &sb) < 0)
        return NULL;
    Py_buffer lb, ixb, tib;
    if (PyObject_GetBuffer(log_obj, &lb, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(index_obj, &ixb, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&lb);
        return NULL;
    }
    if (PyObject_GetBuffer(time_obj, &tib, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ixb);
        PyBuffer_Release(&lb);
        return NULL;
    }
    const unsigned char *index = ixb.buf, *times = tib.buf;
    struct segment_sum s = {.base = base, .epoch = -1, .tmax = -1, .n = ixb.len / 8, .tn = tib.len / 12};
    struct header *h = NULL;
    int64_t first_ts, last_ts, unused;
    if (lb.len == 0 || index_refused(index, ixb.len, 8, 0) || index_refused(times, tib.len, 12, 8))
        goto decline;
    if (s.tn > 0 && (time_entry(times, 0, base, &first_ts, &unused) ||
                     time_entry(times, s.tn - 1, base, &last_ts, &unused) || last_ts < first_ts))
        goto decline; /* TimeIndex.sanityCheck's */
    /* on the heap: a pass's headers would take 80 KiB of a thread's stack */
    h = PyMem_RawMalloc(HEADERS_PER_PASS * sizeof *h);
    if (h == NULL || (s.runs = PyList_New(0)) == NULL) {
        if (h == NULL)
            PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t pos = 0;
    int more = 1;
    while (more) {
        int m;
        PyThreadState *ts = gil_away(lb.len - pos);
        m = valid_batches(lb.buf, &pos, lb.len, PY_SSIZE_T_MAX, h, &more);
        gil_back(ts);
        for (int i = 0; i < m; i++) {
            int kept = fold_batch(&s, lb.buf, &h[i], &sb, index, times);
            if (kept < 0)
                goto fail;
            if (kept == 0)
                goto decline;
        }
    }
    if (pos != lb.len || s.j < s.n || s.t < s.tn)
        goto decline; /* a stop the walker words, or entries past the log the index lenses report */
    if (sb.last_within && s.n > 0) {
        int64_t offset, at;
        if (index_entry(index, s.n - 1, base, &offset, &at) || offset > s.last)
            goto decline;
    }
    if (close_run(&s) < 0)
        goto fail;
    PyObject *records = sb.deep ? PyLong_FromLongLong(s.records) : Py_NewRef(Py_None);
    PyObject *spans = records == NULL ? NULL : spans_of(&s);
    if (spans == NULL) {
        Py_XDECREF(records);
        goto fail;
    }
    answer = Py_BuildValue("(nLLLLIKONN)", s.batches, (long long)s.first, (long long)s.last, (long long)s.first_ts,
                           (long long)s.max_ts, s.codecs, s.magics, s.runs, records, spans);
    goto done;
decline:
    answer = Py_NewRef(Py_None);
    goto done;
fail:
    answer = NULL;
done:
    Py_XDECREF(s.runs);
    PyMem_RawFree(h);
    PyBuffer_Release(&tib);
    PyBuffer_Release(&ixb);
    PyBuffer_Release(&lb);
    return answer;
}

/* ---- rendering ---------------------------------------------------------------------------------- */

/* How a key or value is shown, by the built-in decoders (logtool/reads/decoders.py) the kernel knows:
 * ABSENT: text without keys and payloads; HIDDEN: `none`; UTF8: bytes that are not UTF-8 as \xNN;
 * JAVA: `string`, whose U+FFFD rules stay in Python (any byte that is not UTF-8 hands the batch back). */
enum mode { ABSENT = -1, HIDDEN = 0, UTF8 = 1, JAVA = 2, HEX = 3 };

struct out {
    char *p;
    size_t n, cap;
    int failed;   /* no memory, or something only the reference renders: the caller gets None */
    int nonascii; /* a character beyond ASCII went out: the str is made by decoding, not by a copy */
};

static void put(struct out *o, const void *s, size_t n)
{
    if (o->failed)
        return;
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->n + n)
            cap *= 2;
        char *p = PyMem_RawRealloc(o->p, cap);
        if (p == NULL) {
            o->failed = 1;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static inline void put_s(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void put_i64(struct out *o, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(o, p, (size_t)(tmp + sizeof tmp - p));
}

static const char HEXDIGITS[] = "0123456789abcdef";

/* The length of the valid UTF-8 sequence at d[i] (Python's strict decoder: no overlongs, no surrogates,
 * nothing past U+10FFFF), 0 where none starts. */
static int utf8_len(const unsigned char *d, Py_ssize_t i, Py_ssize_t n)
{
    unsigned char c = d[i];
    if (c < 0x80)
        return 1;
#define CONT(k) (i + (k) < n && (d[i + (k)] & 0xC0) == 0x80)
    if (c >= 0xC2 && c <= 0xDF)
        return CONT(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!CONT(1) || !CONT(2))
            return 0;
        unsigned char c1 = d[i + 1];
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F))
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!CONT(1) || !CONT(2) || !CONT(3))
            return 0;
        unsigned char c1 = d[i + 1];
        if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
            return 0;
        return 4;
    }
    return 0;
#undef CONT
}

static uint32_t code_point(const unsigned char *p, int len)
{
    if (len == 2)
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    if (len == 3)
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 | (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

static void put_hex(struct out *o, const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        char two[2] = {HEXDIGITS[p[i] >> 4], HEXDIGITS[p[i] & 15]};
        put(o, two, 2);
    }
}

/* Text: the bytes as the decoder's text() gives them. */
static void put_text(struct out *o, const unsigned char *p, Py_ssize_t n, enum mode m)
{
    if (m == HEX) {
        put_hex(o, p, n);
        return;
    }
    Py_ssize_t run = 0; /* valid UTF-8 goes out as it is, in runs */
    for (Py_ssize_t i = 0; i < n;) {
        if (i + 8 <= n && !(load64(p + i) & 0x8080808080808080ull)) { /* eight ASCII bytes */
            i += 8;
            continue;
        }
        int len = p[i] < 0x80 ? 1 : utf8_len(p, i, n);
        if (len) {
            o->nonascii |= len > 1;
            i += len;
            continue;
        }
        if (m == JAVA) {
            o->failed = 1;
            return;
        }
        put(o, p + run, (size_t)(i - run));
        char esc[4] = {'\\', 'x', HEXDIGITS[p[i] >> 4], HEXDIGITS[p[i] & 15]};
        put(o, esc, 4);
        run = ++i;
    }
    put(o, p + run, (size_t)(n - run));
}

static void put_u(struct out *o, uint32_t u)
{
    char esc[6] = {'\\', 'u', HEXDIGITS[u >> 12], HEXDIGITS[(u >> 8) & 15], HEXDIGITS[(u >> 4) & 15], HEXDIGITS[u & 15]};
    put(o, esc, 6);
}

/* The bytes JSON shows as they are: printable ASCII but the quote and the backslash. */
static unsigned char JSON_PLAIN[256];

static void json_init(void)
{
    for (int c = 0x20; c < 0x7F; c++)
        JSON_PLAIN[c] = c != '"' && c != '\\';
}

/* Whether eight bytes are all JSON_PLAIN, a word at a time: none below 0x20 or above 0x7E, none a quote
 * or a backslash (the bit tricks of "Bit Twiddling Hacks": a byte below n, above n, equal to zero). */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
static inline int json_plain8(uint64_t x)
{
    uint64_t below = (x - ONES * 0x20) & ~x & HIGHS;
    uint64_t above = ((x + ONES * (127 - 0x7E)) | x) & HIGHS;
    uint64_t quote = x ^ (ONES * '"'), backslash = x ^ (ONES * '\\');
    uint64_t zero = ((quote - ONES) & ~quote & HIGHS) | ((backslash - ONES) & ~backslash & HIGHS);
    return !(below | above | zero);
}

/* JSON: the string json.encoder's encode_basestring_ascii makes of what the decoder decoded (UTF8 and
 * JAVA), or the quoted hex; `null` for HIDDEN and for a null field (n < 0). */
static void put_json(struct out *o, const unsigned char *p, Py_ssize_t n, enum mode m)
{
    if (m == HIDDEN || n < 0) { /* not shown, or a null field */
        put(o, "null", 4);
        return;
    }
    put(o, "\"", 1);
    if (m == HEX) {
        put_hex(o, p, n);
        put(o, "\"", 1);
        return;
    }
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n;) {
        if (i + 8 <= n && json_plain8(load64(p + i))) {
            i += 8;
            continue;
        }
        unsigned char c = p[i];
        if (JSON_PLAIN[c]) {
            i++;
            continue;
        }
        put(o, p + run, (size_t)(i - run));
        if (c < 0x80) {
            const char *short_form = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                                   : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (short_form)
                put_s(o, short_form);
            else
                put_u(o, c);
            i++;
        } else {
            int len = utf8_len(p, i, n);
            if (len == 0) {
                if (m == JAVA) {
                    o->failed = 1;
                    return;
                }
                char esc[5] = {'\\', '\\', 'x', HEXDIGITS[c >> 4], HEXDIGITS[c & 15]};
                put(o, esc, 5);
                i++;
            } else {
                uint32_t cp = code_point(p + i, len);
                if (cp > 0xFFFF) {
                    cp -= 0x10000;
                    put_u(o, 0xD800 | (cp >> 10));
                    put_u(o, 0xDC00 | (cp & 0x3FF));
                } else {
                    put_u(o, cp);
                }
                i += len;
            }
        }
        run = i;
    }
    put(o, p + run, (size_t)(n - run));
    put(o, "\"", 1);
}

/* What both renderers take: a batch's records and how to stamp them. */
struct batch_args {
    Py_buffer b;
    long long count, base, base_ts, base_seq, large;
    PyObject *append_ts; /* None, or the LogAppendTime every record reports */
    const char *ts_type;
    int key_mode, value_mode;
};

/* Walks the records, calling `each` for every one with its absolute offset and timestamp; 0, or -1 where a
 * record cannot be read, an int64 ends, or a key or value is large (the reference writes those in pieces). */
typedef void (*record_fn)(struct out *, const struct batch_args *, const unsigned char *, const struct record *,
                          int64_t offset, int64_t ts, void *ctx);

static int each_record(struct out *o, const struct batch_args *a, record_fn each, void *ctx)
{
    const unsigned char *d = a->b.buf;
    Py_ssize_t pos = 0, end = a->b.len;
    long long append = 0;
    int stamped = a->append_ts != Py_None;
    if (stamped) {
        append = PyLong_AsLongLong(a->append_ts);
        if (append == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
    }
    for (long long i = 0; i < a->count && !o->failed; i++) {
        struct record r;
        int64_t offset, ts = append;
        if (parse_record(d, &pos, end, &r) < 0 || __builtin_add_overflow((int64_t)a->base, r.offset_delta, &offset) ||
            (!stamped && __builtin_add_overflow((int64_t)a->base_ts, r.ts_delta, &ts)) || r.key_len > a->large ||
            r.value_len > a->large)
            return -1;
        each(o, a, d, &r, offset, ts, ctx);
    }
    return o->failed || pos != end ? -1 : 0;
}

/* ---- text: kafka-dump-log's record lines (render/dump_text.py's record_pieces) ---- */

struct text_ctx {
    int64_t previous; /* the offset of the record before (-1 at a file's start, as Kafka's tool counts) */
    PyObject *gaps;   /* [(offset, the offset after it), ...] wherever one is not the one before plus one */
};

static void text_record(struct out *o, const struct batch_args *a, const unsigned char *d, const struct record *r,
                        int64_t offset, int64_t ts, void *ctx)
{
    struct text_ctx *t = ctx;
    if (t->previous == INT64_MAX || offset != t->previous + 1) {
        PyObject *pair = Py_BuildValue("(LL)", (long long)t->previous, (long long)offset);
        if (pair == NULL || PyList_Append(t->gaps, pair) < 0)
            o->failed = 1;
        Py_XDECREF(pair);
    }
    t->previous = offset;
    put_s(o, "| offset: ");
    put_i64(o, offset);
    put(o, " ", 1);
    put_s(o, a->ts_type);
    put_s(o, ": ");
    put_i64(o, ts);
    put_s(o, " keySize: ");
    put_i64(o, r->key_len);
    put_s(o, " valueSize: ");
    put_i64(o, r->value_len);
    put_s(o, " sequence: ");
    put_i64(o, sequence_at(a->base_seq, r->offset_delta));
    put_s(o, " headerKeys: [");
    Py_ssize_t at = r->headers_at, len, value_len;
    const unsigned char *hk, *hv;
    for (int64_t h = 0; h < r->n_headers; h++) {
        next_header(d, &at, &hk, &len, &hv, &value_len);
        if (h)
            put(o, ",", 1);
        put_text(o, hk, len, JAVA); /* keys are Java Strings: not UTF-8 hands the batch back */
    }
    put(o, "]", 1);
    if (a->key_mode != ABSENT) {
        const unsigned char *key = field_bytes(d, r->key_at, &len);
        if (len >= 0 && a->key_mode != HIDDEN) {
            put_s(o, " key: ");
            put_text(o, key, len, a->key_mode);
        }
        const unsigned char *value = field_bytes(d, r->value_at, &len);
        if (len >= 0 && a->value_mode != HIDDEN) {
            put_s(o, " payload: ");
            put_text(o, value, len, a->value_mode);
        }
    }
    put(o, "\n", 1);
}

/* ---- JSON Lines: render/dump_json.py's record objects ---- */

struct json_ctx {
    const char *tail; /* the batch part and the closing brace, encoded once per batch */
    Py_ssize_t tail_len;
    int unverified, lines;
};

static void json_record(struct out *o, const struct batch_args *a, const unsigned char *d, const struct record *r,
                        int64_t offset, int64_t ts, void *ctx)
{
    struct json_ctx *j = ctx;
    Py_ssize_t len;
    if (j->lines++)
        put(o, "\n", 1);
    put_s(o, "{\"type\":\"record\",\"offset\":");
    put_i64(o, offset);
    put_s(o, ",\"timestamp\":");
    put_i64(o, ts);
    put_s(o, ",\"timestamp_type\":\"");
    put_s(o, a->ts_type);
    put_s(o, j->unverified ? "\",\"unverified\":true,\"key\":" : "\",\"key\":");
    const unsigned char *key = field_bytes(d, r->key_at, &len);
    put_json(o, key, len, a->key_mode);
    put_s(o, ",\"value\":");
    const unsigned char *value = field_bytes(d, r->value_at, &len);
    put_json(o, value, len, a->value_mode);
    put_s(o, ",\"headers\":[");
    Py_ssize_t at = r->headers_at, value_len;
    const unsigned char *hk, *hv;
    for (int64_t h = 0; h < r->n_headers; h++) {
        next_header(d, &at, &hk, &len, &hv, &value_len);
        put_s(o, h ? ",{\"key\":" : "{\"key\":");
        put_json(o, hk, len, UTF8);
        put_s(o, ",\"value\":");
        put_json(o, hv, value_len, a->value_mode);
        put(o, "}", 1);
    }
    put_s(o, "],\"key_size\":");
    put_i64(o, r->key_len);
    put_s(o, ",\"value_size\":");
    put_i64(o, r->value_len);
    put_s(o, ",\"sequence\":");
    put_i64(o, sequence_at(a->base_seq, r->offset_delta));
    put_s(o, ",\"control\":null");
    put(o, j->tail, (size_t)j->tail_len);
}

/* The rendered text as a str (None for the caller when it failed). ASCII text (keys and values that are
 * ASCII) is copied into the str, without a decoder's pass. */
static PyObject *rendered(struct out *o, int status)
{
    PyObject *text = NULL;
    if (status == 0 && !o->failed && !o->nonascii) {
        text = PyUnicode_New((Py_ssize_t)o->n, 127);
        if (text != NULL)
            memcpy(PyUnicode_DATA(text), o->p ? o->p : "", o->n);
    } else if (status == 0 && !o->failed) {
        text = PyUnicode_DecodeUTF8(o->p ? o->p : "", (Py_ssize_t)o->n, "strict");
    }
    PyMem_RawFree(o->p);
    if (text == NULL && PyErr_Occurred())
        return NULL;
    return text; /* NULL without an error: None for the caller */
}

static PyObject *k_render_text(PyObject *self, PyObject *args)
{
    struct batch_args a;
    long long previous;
    if (!PyArg_ParseTuple(args, "y*LLLOLsiiLL", &a.b, &a.count, &a.base, &a.base_ts, &a.append_ts, &a.base_seq,
                          &a.ts_type, &a.key_mode, &a.value_mode, &a.large, &previous))
        return NULL;
    struct out o = {0};
    struct text_ctx t = {previous, PyList_New(0)};
    if (t.gaps == NULL) {
        PyBuffer_Release(&a.b);
        return NULL;
    }
    int status = each_record(&o, &a, text_record, &t);
    PyBuffer_Release(&a.b);
    PyObject *text = rendered(&o, status);
    if (text == NULL) {
        Py_DECREF(t.gaps);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NLN)", text, (long long)t.previous, t.gaps);
}

static PyObject *k_render_json(PyObject *self, PyObject *args)
{
    struct batch_args a;
    struct json_ctx j = {0};
    if (!PyArg_ParseTuple(args, "y*LLLOLsiiLs#p", &a.b, &a.count, &a.base, &a.base_ts, &a.append_ts, &a.base_seq,
                          &a.ts_type, &a.key_mode, &a.value_mode, &a.large, &j.tail, &j.tail_len, &j.unverified))
        return NULL;
    struct out o = {0};
    int status = each_record(&o, &a, json_record, &j);
    PyBuffer_Release(&a.b);
    /* ASCII bytes (every other character is escaped): the writer puts them beneath its text layer */
    PyObject *lines = status == 0 && !o.failed ? PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.n) : NULL;
    PyMem_RawFree(o.p);
    if (lines == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return lines;
}

static PyObject *k_crc32c(PyObject *self, PyObject *obj)
{
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    PyThreadState *ts = gil_away(b.len);
    uint32_t c = crc32c(b.buf, (size_t)b.len);
    gil_back(ts);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *k_hardware_crc(PyObject *self, PyObject *unused) { return PyBool_FromLong(have_hw); }

/* The CPUs this process may run on: its affinity (taskset, a cpuset). A CPU quota (cgroup cpu.max) is not
 * seen; under Spark the task sets threads() from its own CPUs (spark/task.py). */
static int usable_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static PyObject *k_threads(PyObject *self, PyObject *args)
{
    int n = 0;
    if (!PyArg_ParseTuple(args, "|i", &n))
        return NULL;
    int was = __atomic_load_n(&max_parts, __ATOMIC_RELAXED);
    if (n > 0)
        __atomic_store_n(&max_parts, n < MAX_PARTS ? n : MAX_PARTS, __ATOMIC_RELAXED);
    return PyLong_FromLong(was);
}

static PyObject *k_split_passes(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLong(__atomic_load_n(&split_passes, __ATOMIC_RELAXED));
}

static PyMethodDef kernel_methods[] = {
    {"frames", k_frames, METH_VARARGS,
     PyDoc_STR("frames(BatchView, buf, pos, end, window) -> ([BatchView, ...], stop position)")},
    {"clean_records", k_clean_records, METH_VARARGS,
     PyDoc_STR("clean_records(payload, count, base_offset, last_offset, base_ts, max_ts, bounds)"
               " -> n or -1")},
    {"render_text", k_render_text, METH_VARARGS,
     PyDoc_STR("render_text(payload, count, base_offset, base_ts, append_ts, base_seq, ts_type, key_mode, "
               "value_mode, large, previous) -> (lines, last offset, [(offset, next offset), ...]) or None")},
    {"render_json", k_render_json, METH_VARARGS,
     PyDoc_STR("render_json(payload, count, base_offset, base_ts, append_ts, base_seq, ts_type, key_mode, "
               "value_mode, large, tail, unverified) -> ASCII lines (bytes) or None")},
    {"plain_run", k_plain_run, METH_VARARGS,
     PyDoc_STR("plain_run([BatchView, ...], segment base, previous batch's last offset, leader epoch, PlainRunBounds)"
               " -> (last offset, max timestamp, codec bits, magic bits) or None")},
    {"index_run", k_index_run, METH_VARARGS,
     PyDoc_STR("index_run([BatchView, ...], index bytes, next entry, entries, segment base, previous batch's last "
               "offset or None, IndexRunBounds) -> (batches taken, next entry, previous batch's last offset)")},
    {"clean_segment", k_clean_segment, METH_VARARGS,
     PyDoc_STR("clean_segment(log bytes, index bytes, time index bytes, segment base, SegmentBounds) -> (batches, "
               "first offset, last offset, first timestamp, max timestamp, codec bits, magic bits, [(leader epoch, "
               "first offset, last offset), ...], records or None, [producer span, ...]) or None")},
    {"crc32c", k_crc32c, METH_O, PyDoc_STR("crc32c(data) -> int")},
    {"threads", k_threads, METH_VARARGS,
     PyDoc_STR("threads([n]) -> how many threads check a pass's CRCs at most (before n, when n is given)")},
    {"split_passes", k_split_passes, METH_NOARGS,
     PyDoc_STR("split_passes() -> how many passes had their CRCs checked on more than one thread so far")},
    {"hardware_crc", k_hardware_crc, METH_NOARGS, PyDoc_STR("hardware_crc() -> whether SSE4.2's crc32 is used")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, kernel_methods};

PyMODINIT_FUNC PyInit__kernel(void)
{
    crc_init();
    json_init();
    int cpus = usable_cpus();
    __atomic_store_n(&max_parts, cpus < MAX_PARTS ? cpus : MAX_PARTS, __ATOMIC_RELAXED);
    return PyModule_Create(&kernel_module);
}
