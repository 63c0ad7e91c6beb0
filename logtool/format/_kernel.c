/* _kernel: the hot loops of the walker, compiled. An accelerator, never a second opinion.
 *
 * Every function here answers a question the pure-Python code (logtool/format/batch.py, records.py) also
 * answers, for the common case only, and says "ask Python" for everything else:
 *
 *   frames(BatchView, buf, pos, end, window) walks whole, valid v2 batches (framing, size, CRC-32C) from
 *     `pos` and returns ([BatchView, ...], the position it stopped at). It stops before any entry that is
 *     not a plain valid v2 batch (damage, a legacy message, a producer's control batch whose marker the
 *     walker must read, a header whose arithmetic overflows) and after `window` bytes: the walker's
 *     read_entry then takes that entry, so each stop keeps its exact reason and wording.
 *   clean_records(data, count, base_offset, last_offset, base_ts, max_ts, check_ts) walks the records
 *     of a v2 batch's (uncompressed) payload with every check `check_records` applies, and returns how
 *     many there are when none of them would report anything; -1 when one would (or an arithmetic corner
 *     is reached): the pure path then decodes the batch again and words the finding.
 *   crc32c(data) the Castagnoli CRC, for the tests that hold this copy to the crc32c package.
 *
 * Reading a mapping whose file is cut short under us: the SIGBUS guard (store/_mapguard.c) turns the
 * faulting pages into zeros, for C reads as for Python's, so a walk here ends at a CRC mismatch there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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
 * state, so it is four table lookups, with one table set per block length. */
#define LONG_BLOCK 4096
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
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const unsigned char *p, size_t n)
{
    uint64_t c0 = 0xffffffffu;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * LONG_BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + LONG_BLOCK;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + LONG_BLOCK));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * LONG_BLOCK));
            p += 8;
        } while (p < stop);
        c0 = shift_by(long_shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(long_shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * LONG_BLOCK;
        n -= 3 * LONG_BLOCK;
    }
    while (n >= 3 * SHORT_BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + SHORT_BLOCK;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + SHORT_BLOCK));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * SHORT_BLOCK));
            p += 8;
        } while (p < stop);
        c0 = shift_by(short_shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(short_shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * SHORT_BLOCK;
        n -= 3 * SHORT_BLOCK;
    }
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
    const unsigned char *buf = b.buf;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto fail;
    Py_ssize_t start = pos;
    while (pos >= 0 && end - pos > HEADER_SIZE_UP_TO_MAGIC && pos - start < window) {
        const unsigned char *p = buf + pos;
        int64_t base = (int64_t)be64(p);
        int32_t length = (int32_t)be32(p + 8);
        if (p[16] != 2)
            break;
        int64_t size = (int64_t)length + LOG_OVERHEAD; /* below the v2 minimum: a negative length too */
        if (size > end - pos || size < V2_HEADER_SIZE)
            break;
        uint32_t stored = be32(p + 17);
        int attributes = p[22]; /* the low byte of the int16 attributes, as the walker keeps them */
        int32_t last_delta = (int32_t)be32(p + 23);
        int64_t pid = (int64_t)be64(p + 43);
        int64_t last;
        if (__builtin_add_overflow(base, (int64_t)last_delta, &last))
            break;
        if ((attributes & 0x20) && pid >= 0)
            break; /* a producer's control batch: the walker reads its marker */
        uint32_t computed;
        Py_BEGIN_ALLOW_THREADS
        computed = crc32c(p + 21, (size_t)(size - 21));
        Py_END_ALLOW_THREADS
        if (computed != stored)
            break;
        PyObject *view = batch_view((PyTypeObject *)type, pos, size, base, last, (int32_t)be32(p + 57), attributes,
                                    (int64_t)be64(p + 27), (int64_t)be64(p + 35), pid, (int16_t)(p[51] << 8 | p[52]),
                                    (int32_t)be32(p + 53), (int32_t)be32(p + 12), stored);
        if (view == NULL || PyList_Append(out, view) < 0) {
            Py_XDECREF(view);
            goto fail;
        }
        Py_DECREF(view);
        pos += size;
    }
    PyBuffer_Release(&b);
    return Py_BuildValue("(Nn)", out, pos);
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    return NULL;
}

/* ---- records ------------------------------------------------------------------------------------ */

/* A zig-zag varint of at most `bits` bits at *pos, bounded by end: 0 and the value, or -1 where the
 * reference raises (past the end, or one continuation byte more than allowed). */
static inline int varint(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int bits, int64_t *out)
{
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

/* A length-prefixed byte field (key, value, header key or value): 0 and whether it was null; -1 where
 * the reference raises. */
static inline int bytes_field(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int *is_null)
{
    int64_t n;
    if (varint(d, pos, end, 32, &n) < 0)
        return -1;
    if (n < 0) {
        *is_null = 1;
        return 0;
    }
    *is_null = 0;
    if (n > end - *pos)
        return -1;
    *pos += n;
    return 0;
}

static PyObject *k_clean_records(PyObject *self, PyObject *args)
{
    PyObject *obj;
    long long count, base, last, base_ts, max_ts;
    int check_ts;
    if (!PyArg_ParseTuple(args, "OLLLLLp", &obj, &count, &base, &last, &base_ts, &max_ts, &check_ts))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *d = b.buf;
    Py_ssize_t end = b.len, pos = 0;
    long long n = -1;
    int64_t prev = 0;
    Py_BEGIN_ALLOW_THREADS
    long long i;
    for (i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, n_headers, offset, ts;
        int is_null;
        if (pos >= end || varint(d, &pos, end, 32, &length) < 0 || length < 0 || length > end - pos)
            break;
        Py_ssize_t body_end = pos + length;
        pos += 1; /* attributes, unused */
        if (varint(d, &pos, body_end, 64, &ts_delta) < 0 || varint(d, &pos, body_end, 32, &offset_delta) < 0 ||
            bytes_field(d, &pos, body_end, &is_null) < 0 || bytes_field(d, &pos, body_end, &is_null) < 0 ||
            varint(d, &pos, body_end, 32, &n_headers) < 0 || n_headers < 0 || n_headers > body_end - pos)
            break;
        int64_t h;
        for (h = 0; h < n_headers; h++) {
            if (bytes_field(d, &pos, body_end, &is_null) < 0 || is_null || bytes_field(d, &pos, body_end, &is_null) < 0)
                break;
        }
        if (h < n_headers || pos != body_end)
            break;
        if (__builtin_add_overflow((int64_t)base, offset_delta, &offset) || (i > 0 && offset <= prev) ||
            offset > last)
            break;
        prev = offset;
        if (check_ts && (__builtin_add_overflow((int64_t)base_ts, ts_delta, &ts) || ts > max_ts))
            break;
    }
    long long span; /* offsets the header covers, less one */
    if (i == count && pos >= end && !__builtin_sub_overflow(last, base, &span) && count - 1 <= span)
        n = count;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromLongLong(n);
}

static PyObject *k_crc32c(PyObject *self, PyObject *obj)
{
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = crc32c(b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *k_hardware_crc(PyObject *self, PyObject *unused) { return PyBool_FromLong(have_hw); }

static PyMethodDef kernel_methods[] = {
    {"frames", k_frames, METH_VARARGS,
     PyDoc_STR("frames(BatchView, buf, pos, end, window) -> ([BatchView, ...], stop position)")},
    {"clean_records", k_clean_records, METH_VARARGS,
     PyDoc_STR("clean_records(payload, count, base_offset, last_offset, base_ts, max_ts, check_ts) -> n or -1")},
    {"crc32c", k_crc32c, METH_O, PyDoc_STR("crc32c(data) -> int")},
    {"hardware_crc", k_hardware_crc, METH_NOARGS, PyDoc_STR("hardware_crc() -> whether SSE4.2's crc32 is used")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, kernel_methods};

PyMODINIT_FUNC PyInit__kernel(void)
{
    crc_init();
    return PyModule_Create(&kernel_module);
}
