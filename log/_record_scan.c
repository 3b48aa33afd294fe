/*
 * log._record_scan: walk the records of one magic-2 record batch in place, as Kafka's
 * DefaultRecord.readFrom does for every record LogValidator iterates, without allocating
 * anything per record.  This is the produce hot path; log/record_validation.py holds the
 * pure-Python twin (the reference, used when this module is not built) and the rules.
 *
 * scan(buffer, start, end, count) -> (min_ts_delta, max_ts_delta, index_of_max,
 *                                     keyless, offsets_in_order)
 *
 *   buffer            any contiguous bytes-like object (bytes, bytearray, memoryview)
 *   start, end        the records' bytes: buffer[start:end] (the batch body, or the whole
 *                     decompressed payload)
 *   count             recordCount from the batch header, >= 0
 *   min/max_ts_delta  smallest / largest timestampDelta (0, 0 when count == 0)
 *   index_of_max      index in the batch of the first record with the largest delta (-1 if none)
 *   keyless           number of records with a null (negative-length) key
 *   offsets_in_order  1 if every record's offsetDelta equals its index, else 0
 *
 * Record layout (zigzag varints; Kafka's ByteUtils: a varint is at most 5 bytes, a varlong
 * at most 10, and the bits shifted past 32/64 are dropped as Java's int/long arithmetic does):
 *   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *   keyLength varint | key | valueLength varint | value |
 *   headerCount varint | (headerKeyLength varint | key | headerValueLength varint | value)*
 *
 * A malformed record raises ValueError with Kafka's InvalidRecordException message; the
 * caller turns it into INVALID_RECORD.  The Python twin raises the same messages.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>

enum { OK = 0, UNDERFLOW = -1, TOO_LONG = -2 };

static inline int read_varint(const uint8_t **pp, const uint8_t *end, int32_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && !(*p & 0x80)) { /* one byte: the common case for deltas, counts and short lengths */
        uint32_t v = *p;
        *pp = p + 1;
        *out = (int32_t)((v >> 1) ^ (0u - (v & 1u)));
        return OK;
    }
    uint32_t value = 0;
    int shift = 0;
    for (;;) {
        if (p >= end)
            return UNDERFLOW;
        uint8_t b = *p++;
        if (!(b & 0x80)) {
            value |= (uint32_t)b << shift;
            break;
        }
        value |= (uint32_t)(b & 0x7f) << shift;
        shift += 7;
        if (shift > 28)
            return TOO_LONG;
    }
    *pp = p;
    *out = (int32_t)((value >> 1) ^ (0u - (value & 1u)));
    return OK;
}

static inline int read_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && !(*p & 0x80)) {
        uint64_t v = *p;
        *pp = p + 1;
        *out = (int64_t)((v >> 1) ^ (0ull - (v & 1ull)));
        return OK;
    }
    uint64_t value = 0;
    int shift = 0;
    for (;;) {
        if (p >= end)
            return UNDERFLOW;
        uint8_t b = *p++;
        if (!(b & 0x80)) {
            value |= (uint64_t)b << shift;
            break;
        }
        value |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (shift > 63)
            return TOO_LONG;
    }
    *pp = p;
    *out = (int64_t)((value >> 1) ^ (0ull - (value & 1ull)));
    return OK;
}

#define STRUCTURE "Found invalid record structure"
#define MSG_LEN 200

/* Skip a length-prefixed field of ``len`` bytes (negative = null).  0 or -1 (out of bounds). */
static inline int skip_bytes(const uint8_t **pp, const uint8_t *end, int32_t len)
{
    if (len < 0)
        return 0;
    if ((Py_ssize_t)len > end - *pp)
        return -1;
    *pp += len;
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, end_pos, count;
    if (!PyArg_ParseTuple(args, "y*nnn", &view, &start, &end_pos, &count))
        return NULL;
    char msg[MSG_LEN];
    msg[0] = '\0';
    if (start < 0 || end_pos > view.len || start > end_pos || count < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_IndexError, "scan: bounds outside the buffer");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    const uint8_t *p = base + start;
    const uint8_t *end = base + end_pos;
    int64_t min_ts = 0, max_ts = 0;
    Py_ssize_t index_of_max = -1, keyless = 0;
    int in_order = 1;

    /* The GIL is kept: dropping it for a sub-millisecond walk would hand it to the
     * background threads and make the event loop wait for it back (convoy). */
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t length, offset_delta, key_len, value_len, headers;
        int64_t ts_delta;
        int rc;
        if (p >= end) {
            snprintf(msg, MSG_LEN, "Incorrect declared batch size, premature EOF reached");
            break;
        }
        rc = read_varint(&p, end, &length);
        if (rc == UNDERFLOW) {
            snprintf(msg, MSG_LEN, "Incorrect declared batch size, premature EOF reached");
            break;
        }
        if (rc != OK) {
            snprintf(msg, MSG_LEN, STRUCTURE);
            break;
        }
        if ((Py_ssize_t)length > end - p) {
            snprintf(msg, MSG_LEN,
                     "Invalid record size: expected %d bytes in record payload, but instead the "
                     "buffer has only %zd remaining bytes.", (int)length, (Py_ssize_t)(end - p));
            break;
        }
        const uint8_t *record_start = p;
        if (p >= end) { snprintf(msg, MSG_LEN, STRUCTURE); break; }
        p++; /* attributes: no bit is defined for magic-2 records, Kafka reads and ignores it */
        if (read_varlong(&p, end, &ts_delta) != OK
            || read_varint(&p, end, &offset_delta) != OK
            || read_varint(&p, end, &key_len) != OK
            || skip_bytes(&p, end, key_len) != 0
            || read_varint(&p, end, &value_len) != OK
            || skip_bytes(&p, end, value_len) != 0
            || read_varint(&p, end, &headers) != OK) {
            snprintf(msg, MSG_LEN, STRUCTURE);
            break;
        }
        if (headers < 0) {
            snprintf(msg, MSG_LEN, "Found invalid number of record headers %d", (int)headers);
            break;
        }
        if ((Py_ssize_t)headers > end - p) {
            snprintf(msg, MSG_LEN,
                     "Found invalid number of record headers. %d is larger than the remaining "
                     "size of the buffer", (int)headers);
            break;
        }
        for (int32_t h = 0; h < headers && !msg[0]; h++) {
            int32_t hk, hv;
            if (read_varint(&p, end, &hk) != OK) { snprintf(msg, MSG_LEN, STRUCTURE); break; }
            if (hk < 0) {
                snprintf(msg, MSG_LEN, "Invalid negative header key size %d", (int)hk);
                break;
            }
            if (skip_bytes(&p, end, hk) != 0 || read_varint(&p, end, &hv) != OK
                || skip_bytes(&p, end, hv) != 0) {
                snprintf(msg, MSG_LEN, STRUCTURE);
                break;
            }
        }
        if (msg[0])
            break;
        if (p - record_start != (Py_ssize_t)length) {
            snprintf(msg, MSG_LEN,
                     "Invalid record size: expected to read %d bytes in record payload, but "
                     "instead read %zd", (int)length, (Py_ssize_t)(p - record_start));
            break;
        }
        if (key_len < 0)
            keyless++;
        if (offset_delta != (int64_t)i)
            in_order = 0;
        if (i == 0 || ts_delta < min_ts)
            min_ts = ts_delta;
        if (i == 0 || ts_delta > max_ts) {
            max_ts = ts_delta;
            index_of_max = i;
        }
    }
    if (!msg[0] && count > 0 && p != end)
        snprintf(msg, MSG_LEN, "Incorrect declared batch size, records still remaining in file");

    PyBuffer_Release(&view);
    if (msg[0]) {
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    }
    return Py_BuildValue("(LLnni)", (long long)min_ts, (long long)max_ts, index_of_max, keyless,
                         in_order);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, start, end, count) -> (min_ts_delta, max_ts_delta, index_of_max, keyless, "
     "offsets_in_order); ValueError with Kafka's message for a malformed record."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_scan",
    "Walk a magic-2 batch's records in place (see log/record_validation.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__record_scan(void)
{
    return PyModule_Create(&module);
}
