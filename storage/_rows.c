/* storage._rows: span store rows of a canonical request, in C.
 *
 * The same rows as storage/span_rows.py's rows_of, which is the reference: JSON
 * columns byte for byte as orjson writes them, and the content hash of
 * proto_json/content_hash.py (blake2b-16 of the span with its attribute lists sorted
 * by key, written with sorted members). Anything unexpected returns None and the
 * caller builds the rows in Python; tests/storage/test_rows_fastpath.py compares both.
 *
 * What it buys, end to end: the worker drained 89,400 spans/s into SQLite with it and
 * 27,000 without (`python -m benchmarks.bench_worker --rounds 3`, then the same with
 * SPANGATE_PURE_PYTHON=storage._rows; 2026-11-24, one 2-core machine).
 */
#include "../proto_json/_jsonbuf.h"

static PyObject *orjson_dumps, *s_empty_list, *s_empty_object, *kind_names[6];
/* hashlib.blake2b, its call's keyword names and digest size, and "hexdigest" */
static PyObject *blake2b, *blake2b_kwnames, *digest_size, *k_hexdigest;
static PyObject *k_resourceSpans, *k_resource, *k_scopeSpans, *k_scope, *k_spans,
    *k_traceId, *k_spanId, *k_parentSpanId, *k_name, *k_kind, *k_startTimeUnixNano,
    *k_endTimeUnixNano, *k_attributes, *k_events, *k_links, *k_status, *k_code,
    *k_message, *k_key, *k_value, *k_values, *k_stringValue, *k_kvlistValue, *k_arrayValue;
static PyObject *column_set;
static PyObject **columns[] = {&k_traceId,         &k_spanId,          &k_parentSpanId,
                               &k_name,            &k_kind,            &k_startTimeUnixNano,
                               &k_endTimeUnixNano, &k_attributes,      &k_events,
                               &k_links,           &k_status};

#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))
#define ROW_FIELDS 20

/* Equal strings (b is one of the interned names above); lengths differ most often. */
static inline int same(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyUnicode_CheckExact(a) || PyUnicode_GET_LENGTH(a) != PyUnicode_GET_LENGTH(b))
        return 0;
    return PyUnicode_Compare(a, b) == 0;
}

/* -- JSON as orjson writes it (plain, or normalised for the content hash) --------- */

static int put_json(Buf *b, PyObject *o, int for_hash);

typedef struct {
    const char *text;
    Py_ssize_t len;
    Py_ssize_t index;
    PyObject *item;
} Keyed;

static int by_key(const void *x, const void *y) {
    const Keyed *a = x, *c = y;
    Py_ssize_t n = a->len < c->len ? a->len : c->len;
    int order = memcmp(a->text, c->text, n);
    if (order) return order;
    return a->len < c->len ? -1 : (a->len > c->len);
}

/* Sorted by UTF-8 bytes, which is code point order: Python's str order and orjson's.
 * Insertion sort: the lists are short, and it is stable, as sorted() is. */
static int sorted_keyed(Keyed *items, Py_ssize_t n) {
    for (Py_ssize_t i = 1; i < n; i++) {
        Keyed item = items[i];
        Py_ssize_t j = i;
        while (j > 0 && by_key(&items[j - 1], &item) > 0) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = item;
    }
    return OK;
}

typedef int (*MemberWriter)(Buf *, PyObject *key, PyObject *value);

static int put_any_value(Buf *b, PyObject *value);

/* An attributes list as content_hash._pairs leaves it: sorted by key (stable), values
 * normalised; a falsy one as it is. Pairs must be {"key": str, "value": object}. */
static int put_attribute_list(Buf *b, PyObject *pairs) {
    int truthy = PyObject_IsTrue(pairs);
    if (truthy <= 0) return truthy < 0 ? FAIL : put_json(b, pairs, 1);
    if (!PyList_CheckExact(pairs)) return BAIL;
    Py_ssize_t n = PyList_GET_SIZE(pairs);
    Keyed stack[32], *items = n <= 32 ? stack : PyMem_Malloc(sizeof(Keyed) * (size_t)n);
    if (items == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    int status = OK;
    for (Py_ssize_t i = 0; status == OK && i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(pairs, i), *key, *value;
        if (!PyDict_CheckExact(pair) || PyDict_GET_SIZE(pair) != 2 ||
            (key = PyDict_GetItemWithError(pair, k_key)) == NULL ||
            (value = PyDict_GetItemWithError(pair, k_value)) == NULL ||
            !PyDict_CheckExact(value)) {
            status = PyErr_Occurred() ? FAIL : BAIL;
            break;
        }
        items[i].index = i;
        items[i].item = pair;
        status = utf8_of(key, &items[i].text, &items[i].len);
    }
    if (status == OK) status = sorted_keyed(items, n);
    if (status == OK) status = PUT(b, "[");
    for (Py_ssize_t i = 0; status == OK && i < n; i++) {
        if (i) status = PUT(b, ",");
        if (status == OK) status = PUT(b, "{\"key\":");
        if (status == OK) status = put_escaped(b, items[i].text, items[i].len);
        if (status == OK) status = PUT(b, ",\"value\":");
        if (status == OK)
            status = put_any_value(b, PyDict_GetItemWithError(items[i].item, k_value));
        if (status == OK) status = PUT(b, "}");
    }
    if (status == OK) status = PUT(b, "]");
    if (items != stack) PyMem_Free(items);
    return status;
}

/* The `values` list of {"values": [...]}, the only member a kvlist or array holds. */
static PyObject *values_of(PyObject *holder) {
    if (!PyDict_CheckExact(holder) || PyDict_GET_SIZE(holder) != 1) return NULL;
    PyObject *values = PyDict_GetItemWithError(holder, k_values);
    return values && PyList_CheckExact(values) ? values : NULL;
}

/* An AnyValue as content_hash._value leaves it: kvlists sorted, arrays normalised. */
static int put_any_value(Buf *b, PyObject *value) {
    PyObject *kvlist = PyDict_GetItemWithError(value, k_kvlistValue), *values;
    PyObject *array = kvlist ? NULL : PyDict_GetItemWithError(value, k_arrayValue);
    if (PyErr_Occurred()) return FAIL;
    if (kvlist == NULL && array == NULL) return put_json(b, value, 1);
    if (PyDict_GET_SIZE(value) != 1 || (values = values_of(kvlist ? kvlist : array)) == NULL)
        return PyErr_Occurred() ? FAIL : BAIL;
    if (kvlist) {
        TRY(PUT(b, "{\"kvlistValue\":{\"values\":"));
        TRY(put_attribute_list(b, values));
        return PUT(b, "}}");
    }
    TRY(PUT(b, "{\"arrayValue\":{\"values\":["));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values); i++) {
        PyObject *item = PyList_GET_ITEM(values, i);
        if (!PyDict_CheckExact(item)) return BAIL;
        if (i) TRY(PUT(b, ","));
        TRY(put_any_value(b, item));
    }
    return PUT(b, "]}}");
}

static int put_object(Buf *b, PyObject *o, int for_hash, MemberWriter member_writer);

/* A member of an event or a link being hashed: its attributes are sorted. */
static int item_member(Buf *b, PyObject *key, PyObject *value) {
    if (same(key, k_attributes)) return put_attribute_list(b, value);
    return put_json(b, value, 1);
}

/* A member of a span being hashed: attributes sorted, and those of events and links. */
static int span_member(Buf *b, PyObject *key, PyObject *value) {
    if (same(key, k_attributes)) return put_attribute_list(b, value);
    if (!same(key, k_events) && !same(key, k_links)) return put_json(b, value, 1);
    int truthy = PyObject_IsTrue(value);
    if (truthy <= 0) return truthy < 0 ? FAIL : put_json(b, value, 1);
    if (!PyList_CheckExact(value)) return BAIL;
    TRY(PUT(b, "["));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
        PyObject *item = PyList_GET_ITEM(value, i);
        if (!PyDict_CheckExact(item)) return BAIL;
        if (i) TRY(PUT(b, ","));
        TRY(put_object(b, item, 1, item_member));
    }
    return PUT(b, "]");
}

/* An object: members in order, or (for the hash) sorted, each written by member_writer. */
static int put_object(Buf *b, PyObject *o, int for_hash, MemberWriter member_writer) {
    Py_ssize_t n = PyDict_GET_SIZE(o), pos = 0, i = 0;
    PyObject *key, *value;
    TRY(PUT(b, "{"));
    if (!for_hash) {
        while (PyDict_Next(o, &pos, &key, &value)) {
            if (i++) TRY(PUT(b, ","));
            TRY(put_str(b, key));
            TRY(PUT(b, ":"));
            TRY(put_json(b, value, 0));
        }
        return PUT(b, "}");
    }
    Keyed stack[32];
    if (n > 32) return BAIL;
    while (PyDict_Next(o, &pos, &key, &value)) {
        stack[i].index = i;
        stack[i].item = key;
        TRY(utf8_of(key, &stack[i].text, &stack[i].len));
        i++;
    }
    sorted_keyed(stack, n);
    for (i = 0; i < n; i++) {
        if (i) TRY(PUT(b, ","));
        TRY(put_escaped(b, stack[i].text, stack[i].len));
        TRY(PUT(b, ":"));
        value = PyDict_GetItemWithError(o, stack[i].item);
        if (value == NULL) return FAIL;
        if (member_writer == NULL) {
            TRY(put_json(b, value, 1));
        } else {
            TRY(member_writer(b, stack[i].item, value));
        }
    }
    return PUT(b, "}");
}

static int put_json(Buf *b, PyObject *o, int for_hash) {
    if (PyUnicode_CheckExact(o)) return put_str(b, o);
    if (o == Py_True) return PUT(b, "true");
    if (o == Py_False) return PUT(b, "false");
    if (o == Py_None) return PUT(b, "null");
    if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) return FAIL;
        return overflow ? BAIL : put_i64(b, v);
    }
    if (PyFloat_CheckExact(o)) { /* orjson's own float format: the hash depends on it */
        PyObject *text = PyObject_CallOneArg(orjson_dumps, o);
        if (text == NULL) return FAIL;
        int status = put(b, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
        Py_DECREF(text);
        return status;
    }
    if (PyList_CheckExact(o)) {
        TRY(PUT(b, "["));
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++) {
            if (i) TRY(PUT(b, ","));
            TRY(put_json(b, PyList_GET_ITEM(o, i), for_hash));
        }
        return PUT(b, "]");
    }
    if (PyDict_CheckExact(o)) return put_object(b, o, for_hash, NULL);
    return BAIL;
}

/* -- columns ---------------------------------------------------------------------- */

/* A JSON column: orjson.dumps(value).decode() when value is truthy, else `empty`. */
static PyObject *json_column(Buf *b, PyObject *value, PyObject *empty, int *status) {
    int truthy = value == NULL ? 0 : PyObject_IsTrue(value);
    if (truthy < 0) return NULL;
    if (!truthy) return Py_NewRef(empty);
    b->len = 0;
    *status = put_json(b, value, 0);
    if (*status != OK) return NULL;
    return PyUnicode_DecodeUTF8(b->data, b->len, NULL);
}

/* hashlib.blake2b(data[0:len], digest_size=16).hexdigest() (span_content_hash). */
static PyObject *hex_digest(const char *data, Py_ssize_t len) {
    PyObject *view = PyMemoryView_FromMemory((char *)data, len, PyBUF_READ);
    if (view == NULL) return NULL;
    PyObject *args[] = {NULL, view, digest_size};
    PyObject *hash =
        PyObject_Vectorcall(blake2b, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, blake2b_kwnames);
    Py_DECREF(view);
    if (hash == NULL) return NULL;
    PyObject *digest = PyObject_CallMethodNoArgs(hash, k_hexdigest);
    Py_DECREF(hash);
    return digest;
}

static PyObject *content_hash_of(Buf *b, PyObject *span, int *status) {
    b->len = 0;
    if (!PyDict_CheckExact(span)) {
        *status = BAIL;
        return NULL;
    }
    *status = put_object(b, span, 1, span_member);
    return *status == OK ? hex_digest(b->data, b->len) : NULL;
}

/* Days since the epoch to "YYYY-MM-DD" (H. Hinnant's civil_from_days). The last day
 * made is kept: a batch's spans mostly start on one day. */
static PyObject *utc_day(unsigned long long nanos) {
    static unsigned long long last_day = ~0ULL;
    static PyObject *last_text;
    unsigned long long days = nanos / 86400000000000ULL;
    if (days == last_day) return Py_NewRef(last_text);
    long long z = (long long)days + 719468;
    long long era = z / 146097, doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int day = (int)(doy - (153 * mp + 2) / 5 + 1), month = (int)(mp < 10 ? mp + 3 : mp - 9);
    long long year = yoe + era * 400 + (month <= 2);
    PyObject *text = PyUnicode_FromFormat("%04d-%02d-%02d", (int)year, month, day);
    if (text != NULL) {
        Py_XSETREF(last_text, Py_NewRef(text));
        last_day = days;
    }
    return text;
}

static int nanos_of(PyObject *o, unsigned long long *out) {
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    return decimal_digits(s, n, 9223372036854775807ULL, out);
}

/* The last values of session.id and spangate.span.kind among the attributes. */
static int tagged(PyObject *attributes, PyObject **session, PyObject **agent) {
    static PyObject *session_key, *kind_key;
    if (session_key == NULL) {
        session_key = PyUnicode_InternFromString("session.id");
        kind_key = PyUnicode_InternFromString("spangate.span.kind");
    }
    *session = *agent = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(attributes); i++) {
        PyObject *pair = PyList_GET_ITEM(attributes, i);
        if (!PyDict_CheckExact(pair)) return BAIL;
        PyObject *key = PyDict_GetItemWithError(pair, k_key);
        PyObject *value = PyDict_GetItemWithError(pair, k_value);
        if (key == NULL || value == NULL || !PyDict_CheckExact(value))
            return PyErr_Occurred() ? FAIL : BAIL;
        PyObject *text = PyDict_GetItemWithError(value, k_stringValue);
        if (same(key, session_key)) *session = text;
        else if (same(key, kind_key)) *agent = text;
    }
    return PyErr_Occurred() ? FAIL : OK;
}

#define TEXTS_KEPT 256

typedef struct {
    PyObject *project_id, *received_ms, *resource, *scope;
    PyTypeObject *row_type;
    Py_ssize_t row_size; /* the row type's fields: ROW_FIELDS, then others left None */
    Buf buf;
    /* the last span's trace id, as written and as a str: the spans of a trace mostly
       come together, and then share one str (hashed once, bound once) */
    const char *trace_text;
    uint32_t trace_len;
    PyObject *trace_id;
    /* with a GenAI plan (_rows_genai.h): the positions of the rows it leaves to be
       priced, and of those it leaves to Python; the rows built so far */
    const struct Plan *plan;
    PyObject *priced, *left;
    Py_ssize_t count;
    /* with a plan, also each row's attributes as (key, value's JSON text) pairs, for
       the attribute index (storage/trace_index.py); the texts made so far, by a hash
       of their bytes (keys and short values repeat from span to span) */
    PyObject *pairs;
    PyObject *texts[TEXTS_KEPT];
} Rows;

/* Members of the span without a column of their own, as a JSON object ("{}" if none). */
static PyObject *extras_of(Buf *b, PyObject *span, int *status) {
    Py_ssize_t pos = 0, written = 0;
    PyObject *key, *value;
    b->len = 0;
    if ((*status = PUT(b, "{")) != OK) return NULL;
    while (PyDict_Next(span, &pos, &key, &value)) {
        int column = PySet_Contains(column_set, key);
        if (column < 0) {
            *status = FAIL;
            return NULL;
        }
        if (column) continue;
        if (written++ && (*status = PUT(b, ",")) != OK) return NULL;
        if ((*status = put_str(b, key)) != OK || (*status = PUT(b, ":")) != OK ||
            (*status = put_json(b, value, 0)) != OK)
            return NULL;
    }
    if (!written) return Py_NewRef(s_empty_object);
    if ((*status = PUT(b, "}")) != OK) return NULL;
    return PyUnicode_DecodeUTF8(b->data, b->len, NULL);
}

/* The number of fields of a NamedTuple type (its `_fields`), at least ROW_FIELDS; -1
 * with an exception set otherwise. */
static Py_ssize_t row_size(PyTypeObject *type) {
    PyObject *fields = PyObject_GetAttrString((PyObject *)type, "_fields");
    if (fields == NULL) return -1;
    Py_ssize_t size = PyTuple_Check(fields) ? PyTuple_GET_SIZE(fields) : -1;
    Py_DECREF(fields);
    if (size < ROW_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "row_type must be a NamedTuple of 20 fields or more");
        return -1;
    }
    return size;
}

/* A row of the row type, its fields past ROW_FIELDS None (the caller sets the others). */
static PyObject *new_row(const Rows *r) {
    PyObject *row = r->row_type->tp_alloc(r->row_type, r->row_size);
    if (row == NULL) return NULL;
    for (Py_ssize_t i = ROW_FIELDS; i < r->row_size; i++)
        PyTuple_SET_ITEM(row, i, Py_NewRef(Py_None));
    return row;
}

#define FIELD(i, value)                         \
    do {                                        \
        PyObject *v_ = (value);                 \
        if (v_ == NULL) goto fail;              \
        PyTuple_SET_ITEM(row, (i), v_);         \
    } while (0)

static PyObject *optional(PyObject *o) { return Py_NewRef(o ? o : Py_None); }

static PyObject *row_of(Rows *r, PyObject *span, int *status) {
    *status = BAIL;
    if (!PyDict_CheckExact(span)) return NULL;
    PyObject *trace_id = PyDict_GetItemWithError(span, k_traceId);
    PyObject *span_id = PyDict_GetItemWithError(span, k_spanId);
    PyObject *parent = PyDict_GetItemWithError(span, k_parentSpanId);
    PyObject *name = PyDict_GetItemWithError(span, k_name);
    PyObject *kind = PyDict_GetItemWithError(span, k_kind);
    PyObject *start = PyDict_GetItemWithError(span, k_startTimeUnixNano);
    PyObject *end = PyDict_GetItemWithError(span, k_endTimeUnixNano);
    PyObject *attributes = PyDict_GetItemWithError(span, k_attributes);
    PyObject *status_object = PyDict_GetItemWithError(span, k_status);
    if (PyErr_Occurred()) return NULL;
    if (!trace_id || !PyUnicode_CheckExact(trace_id) || !span_id ||
        !PyUnicode_CheckExact(span_id) || !name || !PyUnicode_CheckExact(name) ||
        (parent && !PyUnicode_CheckExact(parent)) || !kind || !PyLong_CheckExact(kind) ||
        !status_object || !PyDict_CheckExact(status_object) ||
        (attributes && attributes != Py_None && !PyList_CheckExact(attributes)))
        return NULL;
    long kind_number = PyLong_AsLong(kind);
    if (kind_number < 0 || kind_number > 5) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *code = PyDict_GetItemWithError(status_object, k_code);
    PyObject *message = PyDict_GetItemWithError(status_object, k_message);
    if (!code || !PyLong_CheckExact(code)) return NULL;
    unsigned long long start_ns, end_ns = 0;
    if (nanos_of(start, &start_ns) != OK) return NULL;
    if (end && nanos_of(end, &end_ns) != OK) return NULL;
    PyObject *session = NULL, *agent = NULL;
    if (attributes && attributes != Py_None && tagged(attributes, &session, &agent) != OK)
        return NULL;
    PyObject *sdk_kind = kind_number == 1 && agent && PyUnicode_CheckExact(agent)
                             ? agent
                             : kind_names[kind_number];

    PyObject *row = new_row(r);
    if (row == NULL) return NULL;
    *status = OK;
    FIELD(0, Py_NewRef(r->project_id));
    FIELD(1, Py_NewRef(trace_id));
    FIELD(2, Py_NewRef(span_id));
    FIELD(3, utc_day(start_ns));
    FIELD(4, optional(parent));
    FIELD(5, Py_NewRef(name));
    FIELD(6, Py_NewRef(sdk_kind));
    FIELD(7, Py_NewRef(code));
    FIELD(8, optional(message));
    FIELD(9, PyLong_FromUnsignedLongLong(start_ns));
    FIELD(10, end ? PyLong_FromUnsignedLongLong(end_ns) : Py_NewRef(Py_None));
    FIELD(11, optional(session && PyUnicode_CheckExact(session) ? session : NULL));
    FIELD(12, json_column(&r->buf, attributes, s_empty_list, status));
    FIELD(13, json_column(&r->buf, PyDict_GetItemWithError(span, k_events), s_empty_list,
                          status));
    FIELD(14, json_column(&r->buf, PyDict_GetItemWithError(span, k_links), s_empty_list,
                          status));
    FIELD(15, extras_of(&r->buf, span, status));
    FIELD(16, Py_NewRef(r->resource));
    FIELD(17, Py_NewRef(r->scope));
    FIELD(18, content_hash_of(&r->buf, span, status));
    FIELD(19, Py_NewRef(r->received_ms));
    PyObject_GC_UnTrack(row); /* texts, numbers and None only: the GC need not visit it */
    return row;
fail:
    Py_DECREF(row);
    if (*status == OK) *status = FAIL;
    return NULL;
}

/* A JSON text column of a resource or scope object (absent: "{}"). */
static PyObject *object_text(Buf *b, PyObject *o, int *status) {
    if (o == NULL) return Py_NewRef(s_empty_object);
    b->len = 0;
    if ((*status = put_json(b, o, 0)) != OK) return NULL;
    return PyUnicode_DecodeUTF8(b->data, b->len, NULL);
}

static int rows_of_spans(Rows *r, PyObject *spans, PyObject *out) {
    if (spans == NULL) return OK;
    if (!PyList_CheckExact(spans)) return BAIL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); i++) {
        int status;
        PyObject *row = row_of(r, PyList_GET_ITEM(spans, i), &status);
        if (row == NULL) return PyErr_Occurred() ? FAIL : (status == OK ? FAIL : status);
        int appended = PyList_Append(out, row);
        Py_DECREF(row);
        if (appended < 0) return FAIL;
    }
    return OK;
}

static int rows_of_resource(Rows *r, PyObject *resource_spans, PyObject *out) {
    int status = OK;
    if (!PyDict_CheckExact(resource_spans)) return BAIL;
    PyObject *scopes = PyDict_GetItemWithError(resource_spans, k_scopeSpans);
    if (scopes == NULL) return PyErr_Occurred() ? FAIL : OK;
    if (!PyList_CheckExact(scopes)) return BAIL;
    r->resource = object_text(&r->buf, PyDict_GetItemWithError(resource_spans, k_resource),
                              &status);
    if (r->resource == NULL) return PyErr_Occurred() ? FAIL : status;
    for (Py_ssize_t i = 0; status == OK && i < PyList_GET_SIZE(scopes); i++) {
        PyObject *scope_spans = PyList_GET_ITEM(scopes, i);
        if (!PyDict_CheckExact(scope_spans)) {
            status = BAIL;
            break;
        }
        r->scope = object_text(&r->buf, PyDict_GetItemWithError(scope_spans, k_scope), &status);
        if (r->scope == NULL) {
            status = PyErr_Occurred() ? FAIL : status;
            break;
        }
        status = rows_of_spans(r, PyDict_GetItemWithError(scope_spans, k_spans), out);
        Py_CLEAR(r->scope);
    }
    Py_CLEAR(r->resource);
    return status;
}

static PyObject *span_rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *request;
    Rows r = {0};
    if (!PyArg_ParseTuple(args, "OUOO!", &request, &r.project_id, &r.received_ms,
                          &PyType_Type, &r.row_type))
        return NULL;
    if ((r.row_size = row_size(r.row_type)) < 0) return NULL;
    if (!PyDict_CheckExact(request)) Py_RETURN_NONE;
    PyObject *resources = PyDict_GetItemWithError(request, k_resourceSpans);
    if (resources == NULL && PyErr_Occurred()) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    int status = resources == NULL ? OK : PyList_CheckExact(resources) ? OK : BAIL;
    for (Py_ssize_t i = 0; status == OK && resources && i < PyList_GET_SIZE(resources); i++)
        status = rows_of_resource(&r, PyList_GET_ITEM(resources, i), out);
    PyMem_Free(r.buf.data);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    if (status != OK) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

static PyObject *content_hash(PyObject *Py_UNUSED(self), PyObject *span) {
    Buf b = {NULL, 0, 0, NULL};
    int status = OK;
    PyObject *digest = content_hash_of(&b, span, &status);
    PyMem_Free(b.data);
    if (digest == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return digest;
}

#include "_rows_json.h"

static PyMethodDef methods[] = {
    {"span_rows", span_rows, METH_VARARGS,
     "span_rows(request, project_id, received_ms, row_type) -> list[row_type] | None"},
    {"span_rows_json", span_rows_json, METH_VARARGS,
     "span_rows_json(body, project_id, received_ms, row_type, plan=None) -> "
     "list[row_type] | (list[row_type], priced, left, pairs) | None"},
    {"genai_plan", genai_plan, METH_O,
     "genai_plan((fields, keys, types, prefixes, names, native)) -> a plan for span_rows_json"},
    {"content_hash", content_hash, METH_O, "content_hash(span) -> str | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "storage._rows", "Span store rows in C (see _rows.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

#define INTERN(var, text)                                                  \
    do {                                                                   \
        if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL; \
    } while (0)

PyMODINIT_FUNC PyInit__rows(void) {
    static const char *const names[] = {"unspecified", "internal", "server",
                                        "client",      "producer", "consumer"};
    for (int i = 0; i < 6; i++) INTERN(kind_names[i], names[i]);
    INTERN(k_resourceSpans, "resourceSpans");
    INTERN(k_resource, "resource");
    INTERN(k_scopeSpans, "scopeSpans");
    INTERN(k_scope, "scope");
    INTERN(k_spans, "spans");
    INTERN(k_traceId, "traceId");
    INTERN(k_spanId, "spanId");
    INTERN(k_parentSpanId, "parentSpanId");
    INTERN(k_name, "name");
    INTERN(k_kind, "kind");
    INTERN(k_startTimeUnixNano, "startTimeUnixNano");
    INTERN(k_endTimeUnixNano, "endTimeUnixNano");
    INTERN(k_attributes, "attributes");
    INTERN(k_events, "events");
    INTERN(k_links, "links");
    INTERN(k_status, "status");
    INTERN(k_code, "code");
    INTERN(k_message, "message");
    INTERN(k_key, "key");
    INTERN(k_value, "value");
    INTERN(k_values, "values");
    INTERN(k_stringValue, "stringValue");
    INTERN(k_kvlistValue, "kvlistValue");
    INTERN(k_arrayValue, "arrayValue");
    if ((column_set = PyFrozenSet_New(NULL)) == NULL) return NULL;
    for (size_t c = 0; c < NCOLUMNS; c++)
        if (PySet_Add(column_set, *columns[c]) < 0) return NULL;
    INTERN(s_empty_list, "[]");
    INTERN(s_empty_object, "{}");
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL) return NULL;
    orjson_dumps = PyObject_GetAttrString(orjson, "dumps");
    Py_DECREF(orjson);
    if (orjson_dumps == NULL) return NULL;
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    if (hashlib == NULL) return NULL;
    blake2b = PyObject_GetAttrString(hashlib, "blake2b");
    Py_DECREF(hashlib);
    if (blake2b == NULL || (digest_size = PyLong_FromLong(16)) == NULL ||
        (blake2b_kwnames = Py_BuildValue("(s)", "digest_size")) == NULL)
        return NULL;
    INTERN(k_hexdigest, "hexdigest");
    return PyModule_Create(&module);
}
