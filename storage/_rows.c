/* storage._rows: span store rows straight from a queue entry's canonical OTLP/JSON bytes.
 *
 * span_rows_json (_rows_json.h) gives the same rows as storage/span_rows.py's rows_of
 * of the parsed bytes, which is the reference: JSON columns byte for byte as orjson
 * writes them, and the content hash of proto_json/content_hash.py (blake2b-16 of the
 * span with its attribute lists sorted by key, written with sorted members). Anything
 * unexpected returns None and the caller parses the bytes and builds the rows in
 * Python; tests/storage/test_rows_fastpath.py compares both.
 *
 * What it buys end to end: docs/benchmarks.md, "What each C extension buys".
 */
#include "../proto_json/_jsonbuf.h"

static PyObject *orjson_dumps, *s_empty_list, *s_empty_object, *kind_names[6];
/* hashlib.blake2b, its call's keyword names and digest size, and "hexdigest" */
static PyObject *blake2b, *blake2b_kwnames, *digest_size, *k_hexdigest;
/* storage.shared_texts.held */
static PyObject *held;

#define ROW_FIELDS 20

typedef struct {
    const char *text;
    Py_ssize_t len;
    Py_ssize_t index;
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

/* A float as orjson writes it (the content hash depends on the format): the byte
 * builder writes each number with a fraction or exponent through it. for_hash: the
 * same text either way. */
static int put_json(Buf *b, PyObject *o, int for_hash) {
    (void)for_hash;
    if (!PyFloat_CheckExact(o)) return BAIL;
    PyObject *text = PyObject_CallOneArg(orjson_dumps, o);
    if (text == NULL) return FAIL;
    int status = put(b, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
    Py_DECREF(text);
    return status;
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

#define TEXTS_KEPT 256
#define HASHED_KEPT 256 /* the longest text whose hash or token is kept */

typedef struct {
    char text[HASHED_KEPT];
    Py_ssize_t len;
    long long value;
    int kept; /* 0: the slot is empty */
} KeptInt;

/* A trace's distinct tokens: open addressing, 0 the empty slot (the token 0 noted
 * apart); a power of two of slots, at most half full. */
typedef struct {
    PyObject *trace_id;
    long long *slots;
    size_t size, count;
    int zero;
    uint32_t resource; /* the resource attributes' node whose tokens it holds (0: none) */
} TokenSet;

typedef struct {
    PyObject *project_id, *received_ms, *resource, *scope;
    uint32_t resource_attributes; /* the resource's attributes node (0: none) */
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
    /* with a plan and when asked (`makers`: hash_text, key_token and name_token), also
       the tokens of each trace's spans, for the attribute index (storage/trace_facets.py,
       _rows_tokens.h): the traces' sets, in the order met, and their positions by trace
       id; the hashes of the short value texts, the tokens of the short keys and of the
       short span names, made so far, by a hash of their bytes (they repeat from span to
       span) */
    PyObject *hash_text, *key_token, *name_token, *set_at;
    TokenSet *sets;
    Py_ssize_t nsets, sets_size, last_set;
    KeptInt *keys, *names; /* TEXTS_KEPT of each: one allocation */
    KeptInt *hashes;       /* VALUES_KEPT, kept from call to call (_rows_tokens.h) */
} Rows;

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

#include "_rows_json.h"

static PyMethodDef methods[] = {
    {"span_rows_json", span_rows_json, METH_VARARGS,
     "span_rows_json(body, project_id, received_ms, row_type, plan=None, makers=None) -> "
     "list[row_type] | (list[row_type], priced, left, [(trace_id, tokens)] | None) | None"},
    {"genai_plan", genai_plan, METH_O,
     "genai_plan((fields, keys, types, prefixes, names, native)) -> a plan for span_rows_json"},
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
    PyObject *shared_texts = PyImport_ImportModule("storage.shared_texts");
    if (shared_texts == NULL) return NULL;
    held = PyObject_GetAttrString(shared_texts, "held");
    Py_DECREF(shared_texts);
    if (held == NULL) return NULL;
    return PyModule_Create(&module);
}
