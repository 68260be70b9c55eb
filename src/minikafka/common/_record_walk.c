/* The walk over a record batch's records that every append makes (leader and follower), in C: in Python it was
 * the largest single cost of a broker under load.
 *
 * records_max_timestamp_delta(buffer, start, end, declared) -> int | None answers only "certainly valid". An int means the
 * records from `start` to `end` fill that span exactly, number `declared`, carry offset deltas 0, 1, 2, ... in
 * turn, and each record's fields end where its length says; it is the largest timestamp delta among them (the
 * leader sets the batch's max timestamp from it, as Kafka's LogValidator does; no records: INT64_MIN). None means
 * "not shown valid": the caller then walks the batch in Python, which raises the exact INVALID_RECORD error or
 * accepts. So this walk may be stricter than the Python one (it never reads past a record's end, nor a varint past
 * 64 bits), never looser. (It was records_fill_batch -> bool: renamed with its answer, so a stale build of the old
 * one is not imported as this.)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* attributes, then one-byte timestamp delta, offset delta, key length, value length and header count */
#define MIN_RECORD_BODY 6

/* A zigzag varint of at most 10 bytes from [*at, end), as Kafka's ByteUtils writes it; 0 when it runs past
 * `end` or past 64 bits. */
static int read_varint(const uint8_t **at, const uint8_t *end, int64_t *value)
{
    const uint8_t *p = *at;
    uint64_t raw = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return 0;
        uint8_t byte = *p++;
        if (shift == 63 && byte > 1)
            return 0;
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *value = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            *at = p;
            return 1;
        }
    }
    return 0;
}

/* A length-prefixed field (key, value, header value): a negative length is null and has no bytes. */
static int skip_field(const uint8_t **at, const uint8_t *end)
{
    int64_t length;
    if (!read_varint(at, end, &length))
        return 0;
    if (length > 0) {
        if (length > end - *at)
            return 0;
        *at += length;
    }
    return 1;
}

static int skip_headers(const uint8_t **at, const uint8_t *end)
{
    int64_t count, key_length;
    if (!read_varint(at, end, &count) || count < 0)
        return 0;
    for (int64_t header = 0; header < count; header++) {
        if (!read_varint(at, end, &key_length) || key_length < 0 || key_length > end - *at)
            return 0;
        *at += key_length;
        if (!skip_field(at, end))
            return 0;
    }
    return 1;
}

static int records_fill(const uint8_t *p, const uint8_t *end, int64_t declared, int64_t *max_timestamp_delta)
{
    int64_t found = 0, length, timestamp_delta, offset_delta;
    *max_timestamp_delta = INT64_MIN;
    while (p < end) {
        if (found == declared)
            return 0;
        if (!read_varint(&p, end, &length) || length < MIN_RECORD_BODY || length > end - p)
            return 0;
        const uint8_t *record_end = p + length;
        p += 1; /* attributes */
        if (!read_varint(&p, record_end, &timestamp_delta))
            return 0;
        if (timestamp_delta > *max_timestamp_delta)
            *max_timestamp_delta = timestamp_delta;
        if (!read_varint(&p, record_end, &offset_delta) || offset_delta != found)
            return 0;
        if (!skip_field(&p, record_end) || !skip_field(&p, record_end) || !skip_headers(&p, record_end))
            return 0;
        if (p != record_end)
            return 0;
        found++;
    }
    return found == declared;
}

static PyObject *records_max_timestamp_delta(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, end;
    long long declared;
    int64_t max_timestamp_delta = INT64_MIN;
    int valid = 0;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*nnL:records_max_timestamp_delta", &view, &start, &end, &declared))
        return NULL;
    if (0 <= start && start <= end && end <= view.len) {
        const uint8_t *base = (const uint8_t *)view.buf;
        /* The buffer is held (a bytearray cannot be resized meanwhile), so other threads may run. */
        Py_BEGIN_ALLOW_THREADS
        valid = records_fill(base + start, base + end, (int64_t)declared, &max_timestamp_delta);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (!valid)
        Py_RETURN_NONE;
    return PyLong_FromLongLong((long long)max_timestamp_delta);
}

static PyMethodDef methods[] = {
    {"records_max_timestamp_delta", records_max_timestamp_delta, METH_VARARGS,
     "records_max_timestamp_delta(buffer, start, end, declared) -> int | None: the largest record timestamp delta when the "
     "records in buffer[start:end] are certainly well formed (None: not shown, walk them in Python)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_walk", "The record walk of every append, in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__record_walk(void)
{
    return PyModule_Create(&module);
}
