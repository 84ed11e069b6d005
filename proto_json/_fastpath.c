/* proto_json._fastpath: the all-valid case of a span conversion, in C.
 *
 * Takes spans as orjson decoded them and writes their canonical OTLP/JSON straight
 * into bytes, with no intermediate Python objects. It knows no error messages: any
 * span that breaks a rule, or that is merely unusual (an unknown member, a bytesValue,
 * a time offset written without a colon...), makes the whole call return None, and
 * the caller converts the request with the pure-Python modules, which are the
 * reference. Every value this file accepts it must render exactly as they would:
 * tests/proto_json/test_fastpath.py compares the two on generated bodies.
 *
 * The byte paths (_native_bytes.h, _otlp_bytes.h) convert whole bodies from their
 * bytes; the converter from parsed native spans (native_spans) converts what they
 * decline but it does not (a string escaped otherwise than orjson writes it, say).
 * What each buys: docs/benchmarks.md, "What each C extension buys".
 */
#include "_jsonbuf.h"

#include <math.h>
#include <stdint.h>

/* Nesting this deep leaves the fast path, which the general one refuses: values.py's
 * MAX_DEPTH. Below it every value is converted here, however deep: the general path
 * holds a dict a value (a body of 1 MB of arrays 18 deep took it 3.2 s and 226 MB). */
#define MAX_FAST_DEPTH 32
#define MAX_UNIX_NANO 9223372036854775807ULL
#define UINT32_MAX_VALUE 4294967295ULL

static int put_double(Buf *b, double v) {
    if (!isfinite(v)) return BAIL;
    char *text = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL) return FAIL;
    int status = put(b, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return status;
}

/* -- interned member names -------------------------------------------------------- */

static PyObject *k_traceId, *k_spanId, *k_parentSpanId, *k_name, *k_kind, *k_startTime,
    *k_endTime, *k_status, *k_attributes, *k_events, *k_kind_attribute, *k_session_attribute;

/* The member's value (borrowed) or NULL when absent; *found counts the present ones. */
static inline PyObject *member(PyObject *dict, PyObject *key, Py_ssize_t *found) {
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value != NULL) ++*found;
    return value;
}

/* -- ids and times ---------------------------------------------------------------- */

static inline int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* A `length`-hex-character id, not all zeros, written lowercase into out[length]. */
static int hex_id(const char *s, Py_ssize_t n, Py_ssize_t length, char *out) {
    if (n != length) return BAIL;
    int nonzero = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int d = hex_digit((unsigned char)s[i]);
        if (d < 0) return BAIL;
        nonzero |= d;
        out[i] = HEX[d];
    }
    return nonzero ? OK : BAIL;
}

static int read_id(PyObject *o, Py_ssize_t length, char *out) {
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    return hex_id(s, n, length, out);
}

static int put_id(Buf *b, const char *label, Py_ssize_t label_len, PyObject *o,
                  Py_ssize_t length) {
    char id[32];
    TRY(read_id(o, length, id));
    TRY(put(b, label, label_len));
    TRY(PUT(b, "\""));
    TRY(put(b, id, length));
    return PUT(b, "\"");
}

#define PUT_ID(b, label, o, length) put_id((b), (label), sizeof(label) - 1, (o), (length))

/* A parent span id: absent, null, "" and sixteen zeros mean a root (nothing written). */
static int put_parent(Buf *b, PyObject *o) {
    if (o == NULL || o == Py_None) return OK;
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    if (n == 0 || (n == 16 && memcmp(s, "0000000000000000", 16) == 0)) return OK;
    return PUT_ID(b, ",\"parentSpanId\":", o, 16);
}

static inline int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static long long days_from_civil(long long y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return days[m - 1] + (m == 2 && leap);
}

/* An ISO 8601 time as proto_json.timestamps reads it, as Unix nanoseconds. */
static int iso8601_text(const char *s, Py_ssize_t n, unsigned long long *out) {
    int year, month, day, hour, minute, second;
    if (n < 19 || !digits(s, 4, &year) || s[4] != '-' || !digits(s + 5, 2, &month) ||
        s[7] != '-' || !digits(s + 8, 2, &day) ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2, &hour) ||
        s[13] != ':' || !digits(s + 14, 2, &minute) || s[16] != ':' ||
        !digits(s + 17, 2, &second))
        return BAIL;
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
        hour > 23 || minute > 59 || second > 59)
        return BAIL;
    Py_ssize_t i = 19;
    unsigned long long fraction = 0;
    if (i < n && (s[i] == '.' || s[i] == ',')) {
        Py_ssize_t start = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 9)
            fraction = fraction * 10 + (unsigned long long)(s[i++] - '0');
        Py_ssize_t count = i - start;
        if (count == 0) return BAIL;
        for (Py_ssize_t k = count; k < 9; k++) fraction *= 10;
    }
    long long offset = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i] == '+' ? 1 : -1, off_h, off_m;
        i++;
        if (n - i < 4 || !digits(s + i, 2, &off_h)) return BAIL;
        i += 2;
        if (s[i] == ':') i++;
        if (n - i < 2 || !digits(s + i, 2, &off_m)) return BAIL;
        i += 2;
        if (off_h > 23 || off_m > 59) return BAIL;
        offset = sign * (off_h * 3600LL + off_m * 60LL);
    }
    if (i != n) return BAIL;
    long long seconds =
        days_from_civil(year, month, day) * 86400LL + hour * 3600LL + minute * 60LL + second;
    seconds -= offset;
    if (seconds < 0 || seconds > 9223372036LL) return BAIL;
    unsigned long long nanos = (unsigned long long)seconds * 1000000000ULL + fraction;
    if (nanos > MAX_UNIX_NANO) return BAIL;
    *out = nanos;
    return OK;
}

static int iso8601(PyObject *o, unsigned long long *out) {
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    return iso8601_text(s, n, out);
}

#define PUT_COUNT(b, label, o) put_count((b), (label), sizeof(label) - 1, (o))

#define PUT_OPTIONAL_STRING(b, label, o) put_optional_string((b), (label), sizeof(label) - 1, (o))

/* -- native attribute values ------------------------------------------------------ */

static int native_key_values(Buf *b, PyObject *dict, int depth);

static int native_value(Buf *b, PyObject *v, int depth) {
    if (PyUnicode_CheckExact(v)) {
        TRY(PUT(b, "{\"stringValue\":"));
        TRY(put_str(b, v));
        return PUT(b, "}");
    }
    if (v == Py_True) return PUT(b, "{\"boolValue\":true}");
    if (v == Py_False) return PUT(b, "{\"boolValue\":false}");
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (n == -1 && PyErr_Occurred()) return FAIL;
        if (overflow) return BAIL;
        TRY(PUT(b, "{\"intValue\":\""));
        TRY(put_i64(b, n));
        return PUT(b, "\"}");
    }
    if (PyFloat_CheckExact(v)) {
        TRY(PUT(b, "{\"doubleValue\":"));
        TRY(put_double(b, PyFloat_AS_DOUBLE(v)));
        return PUT(b, "}");
    }
    if (v == Py_None) return PUT(b, "{}");
    if (depth >= MAX_FAST_DEPTH) return BAIL;
    if (PyList_CheckExact(v)) {
        TRY(PUT(b, "{\"arrayValue\":{\"values\":["));
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (i) TRY(PUT(b, ","));
            TRY(native_value(b, PyList_GET_ITEM(v, i), depth + 1));
        }
        return PUT(b, "]}}");
    }
    if (PyDict_CheckExact(v)) {
        TRY(PUT(b, "{\"kvlistValue\":{\"values\":["));
        TRY(native_key_values(b, v, depth + 1));
        return PUT(b, "]}}");
    }
    return BAIL;
}

static int put_pair_key(Buf *b, PyObject *key) {
    TRY(PUT(b, "{\"key\":"));
    TRY(put_str(b, key));
    return PUT(b, ",\"value\":");
}

/* The KeyValues of a native attributes object, comma-separated, in its key order. */
static int native_key_values(Buf *b, PyObject *dict, int depth) {
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (i++) TRY(PUT(b, ","));
        TRY(put_pair_key(b, key));
        TRY(native_value(b, value, depth));
        TRY(PUT(b, "}"));
    }
    return OK;
}

/* -- native spans ----------------------------------------------------------------- */

typedef struct {
    PyObject *trace_id;   /* the trace's canonical id inside a native trace, or NULL */
    PyObject *session_id; /* the trace's sessionId, or NULL */
    long long pairs;      /* attribute pairs counted so far */
    long long max_pairs;
} Native;

static const Name OTEL_KINDS[] = {NAME("internal"), NAME("server"), NAME("client"),
                                  NAME("producer"), NAME("consumer")};
static const Name AGENT_KINDS[] = {
    NAME("agent"),        NAME("llm_call"), NAME("tool_call"), NAME("retrieval"),
    NAME("decision"),     NAME("delegation"), NAME("coordination"), NAME("message"),
    NAME("think"),        NAME("decide"),   NAME("observe"),   NAME("reflect")};

/* The OTel kind number of an SDK kind; *agent set when it is one of the agent kinds. */
static int kind_text(const char *s, Py_ssize_t n, int *number, int *agent) {
    int otel = text_index(s, (size_t)n, OTEL_KINDS, 5);
    *agent = otel == 5 && text_index(s, (size_t)n, AGENT_KINDS, 12) < 12;
    if (otel == 5 && !*agent) return BAIL;
    *number = *agent ? 1 : otel + 1;
    return OK;
}

/* The OTel kind number; *agent is set to the agent kind's str when it is one. */
static int native_kind(PyObject *o, int *number, PyObject **agent) {
    *number = 0;
    *agent = NULL;
    if (o == NULL || o == Py_None) return OK;
    const char *s;
    Py_ssize_t n;
    int is_agent;
    TRY(utf8_of(o, &s, &n));
    TRY(kind_text(s, n, number, &is_agent));
    if (is_agent) *agent = o;
    return OK;
}

static int status_text(const char *s, Py_ssize_t n, int *code) {
    *code = 0;
    if (n == 5 && memcmp(s, "unset", 5) == 0) return OK;
    if (n == 2 && memcmp(s, "ok", 2) == 0) {
        *code = 1;
        return OK;
    }
    if (n == 5 && memcmp(s, "error", 5) == 0) {
        *code = 2;
        return OK;
    }
    return BAIL;
}

static int native_status(PyObject *o, int *code) {
    *code = 0;
    if (o == NULL || o == Py_None) return OK;
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    return status_text(s, n, code);
}

static int count_native_pairs(Native *state, PyObject *attributes, PyObject *events) {
    long long count = attributes && PyDict_CheckExact(attributes) ? PyDict_GET_SIZE(attributes)
                                                                  : 0;
    if (events && PyList_CheckExact(events)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
            PyObject *event = PyList_GET_ITEM(events, i);
            if (!PyDict_CheckExact(event)) continue;
            PyObject *event_attributes = PyDict_GetItemWithError(event, k_attributes);
            if (event_attributes && PyDict_CheckExact(event_attributes))
                count += PyDict_GET_SIZE(event_attributes);
        }
    }
    if (PyErr_Occurred()) return FAIL;
    state->pairs += count;
    return state->pairs > state->max_pairs ? BAIL : OK;
}

static int put_string_pair(Buf *b, PyObject *key, PyObject *value) {
    TRY(put_pair_key(b, key));
    TRY(PUT(b, "{\"stringValue\":"));
    TRY(put_str(b, value));
    return PUT(b, "}}");
}

static int native_attributes(Buf *b, Native *state, PyObject *raw, PyObject *agent) {
    if (raw == Py_None) raw = NULL;
    if (raw != NULL && !PyDict_CheckExact(raw)) return BAIL;
    int has_session = 0;
    if (raw != NULL) {
        int reserved = PyDict_Contains(raw, k_kind_attribute);
        if (reserved) return reserved < 0 ? FAIL : BAIL; /* reported as ignored: general path */
        has_session = PyDict_Contains(raw, k_session_attribute);
        if (has_session < 0) return FAIL;
    }
    Py_ssize_t mark = b->len;
    TRY(PUT(b, ",\"attributes\":["));
    Py_ssize_t start = b->len;
    if (raw != NULL) TRY(native_key_values(b, raw, 0));
    if (agent != NULL) {
        if (b->len > start) TRY(PUT(b, ","));
        TRY(put_string_pair(b, k_kind_attribute, agent));
    }
    if (state->session_id != NULL && !has_session) {
        if (b->len > start) TRY(PUT(b, ","));
        TRY(put_string_pair(b, k_session_attribute, state->session_id));
    }
    if (b->len == start) {
        b->len = mark; /* no attributes at all: the member is left out */
        return OK;
    }
    return PUT(b, "]");
}

static int native_events(Buf *b, PyObject *events) {
    if (events == NULL || events == Py_None) return OK;
    if (!PyList_CheckExact(events)) return BAIL;
    Py_ssize_t count = PyList_GET_SIZE(events);
    if (count == 0) return OK;
    TRY(PUT(b, ",\"events\":["));
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(event)) return BAIL;
        Py_ssize_t found = 0;
        PyObject *name = member(event, k_name, &found);
        PyObject *attributes = member(event, k_attributes, &found);
        if (PyErr_Occurred()) return FAIL;
        if (found != PyDict_GET_SIZE(event) || name == NULL) return BAIL; /* unknown member */
        if (i) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"name\":"));
        TRY(put_str(b, name));
        if (attributes != NULL && attributes != Py_None) {
            if (!PyDict_CheckExact(attributes)) return BAIL;
            if (PyDict_GET_SIZE(attributes)) {
                TRY(PUT(b, ",\"attributes\":["));
                TRY(native_key_values(b, attributes, 0));
                TRY(PUT(b, "]"));
            }
        }
        TRY(PUT(b, "}"));
    }
    return PUT(b, "]");
}

static int native_trace_id(Buf *b, Native *state, PyObject *own) {
    if (state->trace_id == NULL) return PUT_ID(b, "{\"traceId\":", own, 32);
    if (own != NULL && own != Py_None) {
        char id[32];
        const char *given;
        Py_ssize_t n;
        TRY(read_id(own, 32, id));
        TRY(utf8_of(state->trace_id, &given, &n));
        if (n != 32 || memcmp(id, given, 32) != 0) return BAIL;
    }
    return PUT_ID(b, "{\"traceId\":", state->trace_id, 32);
}

static int native_span(Buf *b, Native *state, PyObject *raw) {
    if (!PyDict_CheckExact(raw)) return BAIL;
    Py_ssize_t found = 0;
    PyObject *trace_id = member(raw, k_traceId, &found);
    PyObject *span_id = member(raw, k_spanId, &found);
    PyObject *parent = member(raw, k_parentSpanId, &found);
    PyObject *name = member(raw, k_name, &found);
    PyObject *kind = member(raw, k_kind, &found);
    PyObject *start = member(raw, k_startTime, &found);
    PyObject *end = member(raw, k_endTime, &found);
    PyObject *status = member(raw, k_status, &found);
    PyObject *attributes = member(raw, k_attributes, &found);
    PyObject *events = member(raw, k_events, &found);
    if (PyErr_Occurred()) return FAIL;
    if (found != PyDict_GET_SIZE(raw)) return BAIL; /* unknown members are reported */
    TRY(count_native_pairs(state, attributes, events));
    if (span_id == NULL || name == NULL || start == NULL) return BAIL;
    TRY(native_trace_id(b, state, trace_id));
    TRY(PUT_ID(b, ",\"spanId\":", span_id, 16));
    TRY(put_parent(b, parent));
    if (!PyUnicode_CheckExact(name) || PyUnicode_GET_LENGTH(name) == 0) return BAIL;
    TRY(PUT(b, ",\"name\":"));
    TRY(put_str(b, name));
    int kind_number, status_code;
    PyObject *agent;
    TRY(native_kind(kind, &kind_number, &agent));
    TRY(PUT(b, ",\"kind\":"));
    TRY(put_u64(b, (unsigned long long)kind_number));
    unsigned long long nanos;
    TRY(iso8601(start, &nanos));
    TRY(PUT(b, ",\"startTimeUnixNano\":\""));
    TRY(put_u64(b, nanos));
    if (end != NULL && end != Py_None) {
        TRY(iso8601(end, &nanos));
        TRY(PUT(b, "\",\"endTimeUnixNano\":\""));
        TRY(put_u64(b, nanos));
    }
    TRY(PUT(b, "\""));
    if (attributes != NULL || agent != NULL || state->session_id != NULL)
        TRY(native_attributes(b, state, attributes, agent));
    TRY(native_events(b, events));
    TRY(native_status(status, &status_code));
    TRY(PUT(b, ",\"status\":{\"code\":"));
    TRY(put_u64(b, (unsigned long long)status_code));
    return PUT(b, "}}");
}

/* -- OTLP/JSON enum names (for _otlp_bytes.h) ------------------------------------ */

static const Name SPAN_KIND_NAMES[] = {
    NAME("SPAN_KIND_UNSPECIFIED"), NAME("SPAN_KIND_INTERNAL"), NAME("SPAN_KIND_SERVER"),
    NAME("SPAN_KIND_CLIENT"),      NAME("SPAN_KIND_PRODUCER"), NAME("SPAN_KIND_CONSUMER")};
static const Name STATUS_NAMES[] = {NAME("STATUS_CODE_UNSET"), NAME("STATUS_CODE_OK"),
                                    NAME("STATUS_CODE_ERROR")};

#define OTLP_LIST(b, label, raw, item) otlp_list((b), (label), sizeof(label) - 1, (raw), (item))

#include "_native_bytes.h"
#include "_otlp_bytes.h"

/* -- module functions ------------------------------------------------------------- */

/* (comma-joined span bytes, pairs) or None; frees the buffer either way. */
static PyObject *finish(Buf *b, int status, long long pairs) {
    PyObject *result = NULL;
    if (PyErr_Occurred()) /* out of memory, or a failed lookup: an error, not a bail */
        result = NULL;
    else if (status == OK)
        result = Py_BuildValue("(y#L)", b->data ? b->data : "", b->len, pairs);
    else
        result = Py_NewRef(Py_None);
    PyMem_Free(b->data);
    return result;
}

static PyObject *native_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *spans, *trace_id, *session_id;
    Native state = {NULL, NULL, 0, 0};
    if (!PyArg_ParseTuple(args, "O!OOLL", &PyList_Type, &spans, &trace_id, &session_id,
                          &state.pairs, &state.max_pairs))
        return NULL;
    state.trace_id = trace_id == Py_None ? NULL : trace_id;
    if (session_id != Py_None && !PyUnicode_CheckExact(session_id)) Py_RETURN_NONE;
    state.session_id = session_id == Py_None ? NULL : session_id;
    Buf b = {NULL, 0, 0, NULL};
    int status = OK;
    for (Py_ssize_t i = 0; status == OK && i < PyList_GET_SIZE(spans); i++) {
        if (i) status = PUT(&b, ",");
        if (status == OK) status = native_span(&b, &state, PyList_GET_ITEM(spans, i));
    }
    return finish(&b, status, state.pairs);
}

static PyMethodDef methods[] = {
    {"native_spans", native_spans, METH_VARARGS,
     "native_spans(spans, trace_id, session_id, pairs, max_pairs) -> (bytes, pairs) | None"},
    {"native_body", native_body, METH_VARARGS,
     "native_body(data, max_spans, max_pairs) -> (bytes, spans, pairs) | None"},
    {"traces_body", traces_body, METH_VARARGS,
     "traces_body(data, max_spans, max_pairs) -> (bytes, spans, pairs, traces) | None"},
    {"ndjson_body", ndjson_body, METH_VARARGS,
     "ndjson_body(data, max_spans, max_pairs) -> (bytes, spans, pairs) | None"},
    {"otlp_body", otlp_body, METH_VARARGS,
     "otlp_body(data, max_spans, max_pairs) -> (bytes, spans, pairs) | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "proto_json._fastpath",
    "The all-valid case of span conversion, in C (see _fastpath.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

#define INTERN(var, text)                                   \
    do {                                                    \
        if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL; \
    } while (0)

PyMODINIT_FUNC PyInit__fastpath(void) {
    INTERN(k_traceId, "traceId");
    INTERN(k_spanId, "spanId");
    INTERN(k_parentSpanId, "parentSpanId");
    INTERN(k_name, "name");
    INTERN(k_kind, "kind");
    INTERN(k_startTime, "startTime");
    INTERN(k_endTime, "endTime");
    INTERN(k_status, "status");
    INTERN(k_attributes, "attributes");
    INTERN(k_events, "events");
    INTERN(k_kind_attribute, "spangate.span.kind");
    INTERN(k_session_attribute, "session.id");
    return PyModule_Create(&module);
}
