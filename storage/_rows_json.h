/* Span rows straight from a queue entry's canonical OTLP/JSON bytes (part of _rows.c).
 *
 * The bytes are scanned into nodes (proto_json/_jsonscan.h) instead of Python objects,
 * and the rows are built from the nodes: the same rows as storage/span_rows.rows_of(
 * orjson.loads(bytes)), JSON columns byte for byte as orjson writes them and the same
 * content hash (proto_json.span_content_hash). Bytes not written the way spangate
 * writes them, duplicate members, and shapes outside what it writes are declined
 * (None): the caller then parses with orjson and builds the rows in Python.
 */
#define SCAN_MARKS_CANONICAL /* J_CANONICAL nodes: texts copied, not written anew */
#include "../proto_json/_jsonscan.h"

#include <math.h>

#define NODE(s, i) (&(s)->nodes[(i)])

/* An object's members with their keys sorted (unescaped keys only, none repeated). */
static int sorted_members(const Scan *s, uint32_t object, Keyed *members, int sort) {
    uint32_t count = NODE(s, object)->count, key = object + 1;
    if (count > 32) return BAIL;
    for (uint32_t m = 0; m < count; m++) {
        const Node *k = NODE(s, key);
        if (k->flags & J_ESCAPED && sort) return BAIL; /* raw order would not be str order */
        members[m].text = (const char *)s->text + k->start;
        members[m].len = k->len;
        members[m].index = key;
        for (uint32_t o = 0; o < m; o++)
            if (members[o].len == members[m].len &&
                memcmp(members[o].text, members[m].text, (size_t)k->len) == 0)
                return BAIL; /* orjson keeps the last of repeated members */
        key = NODE(s, VALUE_OF(key))->next;
    }
    if (sort) sorted_keyed(members, (Py_ssize_t)count);
    return OK;
}

/* An integer node's value (int64 only, and not "-0", which orjson reads as 0). */
static int node_int(const Scan *s, uint32_t i, long long *out) {
    const Node *n = NODE(s, i);
    const unsigned char *t = s->text + n->start;
    if (n->type != J_INT || n->len > 19 + (t[0] == '-') || (n->len == 2 && t[0] == '-' && t[1] == '0'))
        return BAIL;
    unsigned long long v = 0;
    for (uint32_t k = t[0] == '-'; k < n->len; k++) v = v * 10 + (unsigned long long)(t[k] - '0');
    if (t[0] == '-' ? v > 9223372036854775808ULL : v > 9223372036854775807ULL) return BAIL;
    *out = t[0] == '-' ? (long long)(0 - v) : (long long)v;
    return OK;
}

static int put_node(Buf *b, const Scan *s, uint32_t i);

/* A number with a fraction or exponent, as orjson writes the double it reads. The last
 * few texts read and what was written for them are kept: spans repeat their numbers (a
 * temperature, a sampling rate), and each takes a parse and an orjson call otherwise. */
#define FLOAT_TEXTS 8
static struct {
    unsigned char in_len, out_len;
    char in[48], out[48];
} float_texts[FLOAT_TEXTS];
static unsigned next_float_text;

static int put_float_node(Buf *b, const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    const char *in = (const char *)s->text + n->start;
    char text[64];
    if (n->len >= sizeof(text)) return BAIL;
    for (int k = 0; k < FLOAT_TEXTS; k++)
        if (float_texts[k].in_len == n->len && memcmp(float_texts[k].in, in, n->len) == 0)
            return put(b, float_texts[k].out, float_texts[k].out_len);
    memcpy(text, in, n->len);
    text[n->len] = '\0';
    double value = PyOS_string_to_double(text, NULL, NULL);
    if ((value == -1.0 && PyErr_Occurred()) || !isfinite(value)) {
        PyErr_Clear();
        return BAIL;
    }
    PyObject *number = PyFloat_FromDouble(value);
    if (number == NULL) return FAIL;
    Py_ssize_t start = b->len;
    int status = put_json(b, number, 0);
    Py_DECREF(number);
    Py_ssize_t written = b->len - start;
    if (status == OK && n->len < sizeof(float_texts[0].in) && written > 0 &&
        written < (Py_ssize_t)sizeof(float_texts[0].out)) {
        unsigned k = next_float_text++ % FLOAT_TEXTS;
        float_texts[k].in_len = 0; /* no match on a half-written entry */
        memcpy(float_texts[k].in, in, n->len);
        memcpy(float_texts[k].out, b->data + start, (size_t)written);
        float_texts[k].out_len = (unsigned char)written;
        float_texts[k].in_len = (unsigned char)n->len;
    }
    return status;
}

static int put_scalar_node(Buf *b, const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    long long unused;
    switch (n->type) {
        case J_STRING:
            TRY(PUT(b, "\""));
            TRY(put(b, (const char *)s->text + n->start, n->len));
            return PUT(b, "\"");
        case J_INT:
            TRY(node_int(s, i, &unused));
            return put(b, (const char *)s->text + n->start, n->len);
        case J_FLOAT:
            return put_float_node(b, s, i);
        default: /* true, false, null */
            return put(b, (const char *)s->text + n->start, n->len);
    }
}

/* Whether a node is an object or array whose text is already what put_node and the
 * generic put_node_sorted write (J_CANONICAL): copied as it is, not walked. */
static inline int canonical_container(const Node *n) {
    return n->flags & J_CANONICAL && (n->type == J_OBJECT || n->type == J_ARRAY);
}

/* A node as orjson.dumps(orjson.loads(its text)) writes it. */
static int put_node(Buf *b, const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    if (canonical_container(n)) return put(b, (const char *)s->text + n->start, n->len);
    if (n->type == J_ARRAY) {
        TRY(PUT(b, "["));
        for (uint32_t k = 0, item = i + 1; k < n->count; k++, item = NODE(s, item)->next) {
            if (k) TRY(PUT(b, ","));
            TRY(put_node(b, s, item));
        }
        return PUT(b, "]");
    }
    if (n->type != J_OBJECT) return put_scalar_node(b, s, i);
    Keyed members[32];
    TRY(sorted_members(s, i, members, 0));
    TRY(PUT(b, "{"));
    for (uint32_t k = 0; k < n->count; k++) {
        if (k) TRY(PUT(b, ","));
        TRY(put_scalar_node(b, s, (uint32_t)members[k].index));
        TRY(PUT(b, ":"));
        TRY(put_node(b, s, VALUE_OF((uint32_t)members[k].index)));
    }
    return PUT(b, "}");
}

/* -- the content hash over nodes (proto_json.span_content_hash's sorted form) ------- */

typedef int (*NodeMember)(Buf *, const Scan *, uint32_t key, uint32_t value);

static int put_node_sorted(Buf *b, const Scan *s, uint32_t i, NodeMember member);

static int generic_member(Buf *b, const Scan *s, uint32_t key, uint32_t value) {
    (void)key;
    return put_node_sorted(b, s, value, NULL);
}

/* Sorted members (NULL: generic all the way down), arrays in order, scalars as is. */
static int put_node_sorted(Buf *b, const Scan *s, uint32_t i, NodeMember member) {
    const Node *n = NODE(s, i);
    if (member == NULL && canonical_container(n))
        return put(b, (const char *)s->text + n->start, n->len);
    if (n->type == J_ARRAY) {
        TRY(PUT(b, "["));
        for (uint32_t k = 0, item = i + 1; k < n->count; k++, item = NODE(s, item)->next) {
            if (k) TRY(PUT(b, ","));
            TRY(put_node_sorted(b, s, item, NULL));
        }
        return PUT(b, "]");
    }
    if (n->type != J_OBJECT) return put_scalar_node(b, s, i);
    Keyed members[32];
    TRY(sorted_members(s, i, members, 1));
    TRY(PUT(b, "{"));
    for (uint32_t k = 0; k < n->count; k++) {
        uint32_t key = (uint32_t)members[k].index;
        if (k) TRY(PUT(b, ","));
        TRY(put_scalar_node(b, s, key));
        TRY(PUT(b, ":"));
        TRY((member ? member : generic_member)(b, s, key, VALUE_OF(key)));
    }
    return PUT(b, "}");
}

static int node_truthy(const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    const unsigned char *t = s->text + n->start;
    switch (n->type) {
        case J_OBJECT:
        case J_ARRAY: return n->count > 0;
        case J_STRING: return n->len > 0;
        case J_INT: return !(n->len == 1 && t[0] == '0');
        case J_TRUE: return 1;
        default: return -1; /* false, null, floats: the caller declines what it needs */
    }
}

static int put_node_any_value(Buf *b, const Scan *s, uint32_t value);

static int put_node_attribute_list(Buf *b, const Scan *s, uint32_t list) {
    const Node *n = NODE(s, list);
    if (n->type == J_NULL || (n->type == J_ARRAY && n->count == 0))
        return put_node_sorted(b, s, list, NULL);
    if (n->type != J_ARRAY || n->count > 4096) return BAIL;
    Keyed stack[32], *pairs = n->count <= 32 ? stack : PyMem_Malloc(sizeof(Keyed) * n->count);
    if (pairs == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    int status = OK;
    uint32_t item = list + 1;
    for (uint32_t k = 0; status == OK && k < n->count; k++, item = NODE(s, item)->next) {
        uint32_t key, value;
        if (NODE(s, item)->type != J_OBJECT || NODE(s, item)->count != 2 ||
            member_of(s, item, "key", &key) != OK || member_of(s, item, "value", &value) != OK ||
            !key || !value || NODE(s, key)->type != J_STRING ||
            NODE(s, key)->flags & J_ESCAPED || NODE(s, value)->type != J_OBJECT) {
            status = BAIL;
            break;
        }
        pairs[k].text = (const char *)s->text + NODE(s, key)->start;
        pairs[k].len = NODE(s, key)->len;
        pairs[k].index = value;
    }
    if (status == OK) status = sorted_keyed(pairs, n->count);
    if (status == OK) status = PUT(b, "[");
    for (uint32_t k = 0; status == OK && k < n->count; k++) {
        if (k) status = PUT(b, ",");
        if (status == OK) status = PUT(b, "{\"key\":\"");
        if (status == OK) status = put(b, pairs[k].text, pairs[k].len);
        if (status == OK) status = PUT(b, "\",\"value\":");
        if (status == OK) status = put_node_any_value(b, s, (uint32_t)pairs[k].index);
        if (status == OK) status = PUT(b, "}");
    }
    if (status == OK) status = PUT(b, "]");
    if (pairs != stack) PyMem_Free(pairs);
    return status;
}

/* The `values` array of {"values": [...]} holding nothing else (0 otherwise). */
static uint32_t node_values(const Scan *s, uint32_t holder) {
    uint32_t values;
    if (NODE(s, holder)->type != J_OBJECT || NODE(s, holder)->count != 1 ||
        member_of(s, holder, "values", &values) != OK || !values ||
        NODE(s, values)->type != J_ARRAY)
        return 0;
    return values;
}

static int put_node_any_value(Buf *b, const Scan *s, uint32_t value) {
    uint32_t kvlist, array, values;
    TRY(member_of(s, value, "kvlistValue", &kvlist));
    TRY(member_of(s, value, "arrayValue", &array));
    if (!kvlist && !array) return put_node_sorted(b, s, value, NULL);
    if (NODE(s, value)->count != 1 || (values = node_values(s, kvlist ? kvlist : array)) == 0)
        return BAIL;
    if (kvlist) {
        TRY(PUT(b, "{\"kvlistValue\":{\"values\":"));
        TRY(put_node_attribute_list(b, s, values));
        return PUT(b, "}}");
    }
    TRY(PUT(b, "{\"arrayValue\":{\"values\":["));
    uint32_t item = values + 1;
    for (uint32_t k = 0; k < NODE(s, values)->count; k++, item = NODE(s, item)->next) {
        if (NODE(s, item)->type != J_OBJECT) return BAIL;
        if (k) TRY(PUT(b, ","));
        TRY(put_node_any_value(b, s, item));
    }
    return PUT(b, "]}}");
}

static int item_node_member(Buf *b, const Scan *s, uint32_t key, uint32_t value) {
    if (NODE_IS(s, key, "attributes") && node_truthy(s, value) != 0)
        return put_node_attribute_list(b, s, value);
    return put_node_sorted(b, s, value, NULL);
}

static int span_node_member(Buf *b, const Scan *s, uint32_t key, uint32_t value) {
    if (NODE_IS(s, key, "attributes") && node_truthy(s, value) != 0)
        return put_node_attribute_list(b, s, value);
    if ((NODE_IS(s, key, "events") || NODE_IS(s, key, "links")) && node_truthy(s, value) > 0) {
        const Node *n = NODE(s, value);
        if (n->type != J_ARRAY) return BAIL;
        TRY(PUT(b, "["));
        for (uint32_t k = 0, item = value + 1; k < n->count; k++, item = NODE(s, item)->next) {
            if (NODE(s, item)->type != J_OBJECT) return BAIL;
            if (k) TRY(PUT(b, ","));
            TRY(put_node_sorted(b, s, item, item_node_member));
        }
        return PUT(b, "]");
    }
    return put_node_sorted(b, s, value, NULL);
}

/* -- rows ------------------------------------------------------------------------- */

/* A string node as a str (canonical escapes undone). */
static PyObject *node_str(const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    const char *raw = (const char *)s->text + n->start;
    if (!(n->flags & J_ESCAPED)) return PyUnicode_DecodeUTF8(raw, n->len, NULL);
    char *out = PyMem_Malloc(n->len ? n->len : 1);
    if (out == NULL) return PyErr_NoMemory();
    uint32_t o = 0;
    for (uint32_t k = 0; k < n->len; k++) {
        char c = raw[k];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        char e = raw[++k];
        switch (e) {
            case 'b': out[o++] = '\b'; break;
            case 'f': out[o++] = '\f'; break;
            case 'n': out[o++] = '\n'; break;
            case 'r': out[o++] = '\r'; break;
            case 't': out[o++] = '\t'; break;
            case 'u': {
                char low = raw[k + 4];
                out[o++] = (char)((raw[k + 3] - '0') * 16 +
                                  (low <= '9' ? low - '0' : low - 'a' + 10));
                k += 4;
                break;
            }
            default: out[o++] = e; /* \" and \\ */
        }
    }
    PyObject *text = PyUnicode_DecodeUTF8(out, o, NULL);
    PyMem_Free(out);
    return text;
}

static PyObject *node_text(Buf *b, const Scan *s, uint32_t i, PyObject *empty, int *status) {
    if (i == 0) return Py_NewRef(empty);
    b->len = 0;
    if ((*status = put_node(b, s, i)) != OK) return NULL;
    return PyUnicode_DecodeUTF8(b->data, b->len, NULL);
}

/* A JSON list column: "[]" for an absent, null or empty list. */
static PyObject *node_list_text(Buf *b, const Scan *s, uint32_t i, int *status) {
    if (i == 0 || NODE(s, i)->type == J_NULL ||
        (NODE(s, i)->type == J_ARRAY && NODE(s, i)->count == 0))
        return Py_NewRef(s_empty_list);
    if (NODE(s, i)->type != J_ARRAY) {
        *status = BAIL;
        return NULL;
    }
    return node_text(b, s, i, s_empty_list, status);
}

static int node_nanos(const Scan *s, uint32_t i, unsigned long long *out) {
    const Node *n = NODE(s, i);
    if (n->type != J_STRING) return BAIL;
    return decimal_digits((const char *)s->text + n->start, n->len, 9223372036854775807ULL, out);
}

typedef struct {
    uint32_t trace_id, span_id, parent, name, kind, start, end, attributes, events, links,
        status;
    int extras;
} SpanNodes;

static const Name SPAN_MEMBERS[] = {
    NAME("traceId"),    NAME("spanId"), NAME("parentSpanId"), NAME("name"),
    NAME("kind"),       NAME("startTimeUnixNano"), NAME("endTimeUnixNano"),
    NAME("attributes"), NAME("events"), NAME("links"), NAME("status")};

static int span_nodes(const Scan *s, uint32_t span, SpanNodes *m) {
    uint32_t *slots[] = {&m->trace_id, &m->span_id,    &m->parent, &m->name,
                         &m->kind,     &m->start,      &m->end,    &m->attributes,
                         &m->events,   &m->links,      &m->status};
    memset(m, 0, sizeof(*m));
    uint32_t key = span + 1;
    for (uint32_t k = 0; k < NODE(s, span)->count; k++) {
        int c = name_index(s, key, SPAN_MEMBERS, 11);
        if (c < 11) {
            if (*slots[c]) return BAIL; /* repeated */
            *slots[c] = VALUE_OF(key);
        } else {
            m->extras = 1;
        }
        key = NODE(s, VALUE_OF(key))->next;
    }
    return OK;
}

static PyObject *node_extras(Buf *b, const Scan *s, uint32_t span, int *status) {
    Keyed members[32];
    if ((*status = sorted_members(s, span, members, 0)) != OK) return NULL;
    b->len = 0;
    int written = 0;
    if ((*status = PUT(b, "{")) != OK) return NULL;
    for (uint32_t k = 0; k < NODE(s, span)->count; k++) {
        uint32_t key = (uint32_t)members[k].index;
        int c = name_index(s, key, SPAN_MEMBERS, 11);
        if (c < 11) continue;
        if ((written++ && (*status = PUT(b, ",")) != OK) ||
            (*status = put_scalar_node(b, s, key)) != OK || (*status = PUT(b, ":")) != OK ||
            (*status = put_node(b, s, VALUE_OF(key))) != OK)
            return NULL;
    }
    if ((*status = PUT(b, "}")) != OK) return NULL;
    return PyUnicode_DecodeUTF8(b->data, b->len, NULL);
}

/* session.id and spangate.span.kind string values (NULL when not strings). */
static int node_tagged(const Scan *s, uint32_t list, uint32_t *session, uint32_t *agent) {
    *session = *agent = 0;
    if (list == 0 || NODE(s, list)->type == J_NULL) return OK;
    if (NODE(s, list)->type != J_ARRAY) return BAIL;
    uint32_t item = list + 1;
    for (uint32_t k = 0; k < NODE(s, list)->count; k++, item = NODE(s, item)->next) {
        uint32_t key, value, text;
        if (NODE(s, item)->type != J_OBJECT) return BAIL;
        TRY(member_of(s, item, "key", &key));
        TRY(member_of(s, item, "value", &value));
        if (!key || !value || NODE(s, value)->type != J_OBJECT) return BAIL;
        int is_session = NODE_IS(s, key, "session.id");
        if (!is_session && !NODE_IS(s, key, "spangate.span.kind")) continue;
        TRY(member_of(s, value, "stringValue", &text));
        if (text && NODE(s, text)->type != J_STRING) text = 0;
        *(is_session ? session : agent) = text;
    }
    return OK;
}

/* The span's content hash. */
static PyObject *node_hash(Rows *r, const Scan *s, uint32_t span, int *status) {
    r->buf.len = 0;
    if ((*status = put_node_sorted(&r->buf, s, span, span_node_member)) != OK) return NULL;
    return hex_digest(r->buf.data, r->buf.len);
}

/* The span's trace id: the str of the span before when written the same. */
static PyObject *node_trace_id(Rows *r, const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    const char *raw = (const char *)s->text + n->start;
    int plain = !(n->flags & J_ESCAPED);
    if (plain && r->trace_text && n->len == r->trace_len &&
        memcmp(raw, r->trace_text, n->len) == 0)
        return Py_NewRef(r->trace_id);
    Py_CLEAR(r->trace_id);
    r->trace_text = NULL;
    if ((r->trace_id = node_str(s, i)) == NULL) return NULL;
    if (plain) { /* an escaped one is not kept as written: it is never matched */
        r->trace_text = raw;
        r->trace_len = n->len;
    }
    return Py_NewRef(r->trace_id);
}

static PyObject *node_optional_str(const Scan *s, uint32_t i, int *status) {
    if (i == 0 || NODE(s, i)->type == J_NULL) return Py_NewRef(Py_None);
    if (NODE(s, i)->type != J_STRING) {
        *status = BAIL;
        return NULL;
    }
    return node_str(s, i);
}

#include "_rows_genai.h"

#include "_rows_tokens.h"

static PyObject *row_of_node(Rows *r, const Scan *s, uint32_t span, int *status) {
    SpanNodes m;
    long long kind, code;
    uint32_t code_node, message, session, agent;
    unsigned long long start_ns, end_ns = 0;
    *status = BAIL;
    if (NODE(s, span)->type != J_OBJECT || span_nodes(s, span, &m) != OK || !m.trace_id ||
        !m.span_id || !m.name || !m.kind || !m.start || !m.status ||
        NODE(s, m.trace_id)->type != J_STRING || NODE(s, m.span_id)->type != J_STRING ||
        NODE(s, m.name)->type != J_STRING || node_int(s, m.kind, &kind) != OK || kind < 0 ||
        kind > 5 || NODE(s, m.status)->type != J_OBJECT ||
        member_of(s, m.status, "code", &code_node) != OK || !code_node ||
        node_int(s, code_node, &code) != OK ||
        member_of(s, m.status, "message", &message) != OK ||
        node_nanos(s, m.start, &start_ns) != OK ||
        (m.end && NODE(s, m.end)->type != J_NULL && node_nanos(s, m.end, &end_ns) != OK) ||
        node_tagged(s, m.attributes, &session, &agent) != OK)
        return NULL;
    int has_end = m.end && NODE(s, m.end)->type != J_NULL;
    PyObject *row = new_row(r);
    if (row == NULL) return NULL;
    *status = OK;
    FIELD(0, Py_NewRef(r->project_id));
    FIELD(1, node_trace_id(r, s, m.trace_id));
    FIELD(2, node_str(s, m.span_id));
    FIELD(3, utc_day(start_ns));
    FIELD(4, node_optional_str(s, m.parent, status));
    FIELD(5, node_str(s, m.name));
    FIELD(6, kind == 1 && agent ? node_str(s, agent) : Py_NewRef(kind_names[kind]));
    FIELD(7, PyLong_FromLongLong(code));
    FIELD(8, node_optional_str(s, message, status));
    FIELD(9, PyLong_FromUnsignedLongLong(start_ns));
    FIELD(10, has_end ? PyLong_FromUnsignedLongLong(end_ns) : Py_NewRef(Py_None));
    FIELD(11, session ? node_str(s, session) : Py_NewRef(Py_None));
    FIELD(12, node_list_text(&r->buf, s, m.attributes, status));
    FIELD(13, node_list_text(&r->buf, s, m.events, status));
    FIELD(14, node_list_text(&r->buf, s, m.links, status));
    FIELD(15, m.extras ? node_extras(&r->buf, s, span, status) : Py_NewRef(s_empty_object));
    FIELD(16, Py_NewRef(r->resource));
    FIELD(17, Py_NewRef(r->scope));
    FIELD(18, node_hash(r, s, span, status));
    FIELD(19, Py_NewRef(r->received_ms));
    PyObject_GC_UnTrack(row); /* texts, numbers and None only: the GC need not visit it */
    if (r->set_at != NULL && row_tokens(r, s, row, m.name, m.attributes) != OK) goto fail;
    if (r->plan != NULL) {
        int facts = genai_facts(r->plan, s, m.attributes, kind == 1 ? agent : 0, row);
        PyObject *at = facts == GENAI_PRICED || facts == GENAI_PYTHON
                           ? PyLong_FromSsize_t(r->count) : NULL;
        PyObject *to = facts == GENAI_PRICED ? r->priced : r->left;
        if (facts < 0 || (facts >= GENAI_PRICED && (at == NULL || PyList_Append(to, at) < 0))) {
            Py_XDECREF(at);
            goto fail;
        }
        Py_XDECREF(at);
    }
    r->count++;
    return row;
fail:
    Py_DECREF(row);
    if (*status == OK) *status = FAIL;
    return NULL;
}

/* What a row holds of a resource's or a scope's text (storage/shared_texts.py's held),
 * once each: the text, or its key carrying it. Takes the reference to text. */
static PyObject *held_text(PyObject *text) {
    PyObject *kept = PyObject_CallOneArg(held, text);
    Py_DECREF(text);
    return kept;
}

static int rows_of_scope_node(Rows *r, const Scan *s, uint32_t scope_spans, PyObject *out) {
    uint32_t scope, spans;
    int status = OK;
    if (NODE(s, scope_spans)->type != J_OBJECT) return BAIL;
    TRY(member_of(s, scope_spans, "scope", &scope));
    TRY(member_of(s, scope_spans, "spans", &spans));
    r->scope = node_text(&r->buf, s, scope, s_empty_object, &status);
    if (r->scope == NULL) return PyErr_Occurred() ? FAIL : status;
    if ((r->scope = held_text(r->scope)) == NULL) return FAIL;
    if (spans && NODE(s, spans)->type != J_ARRAY) status = BAIL;
    uint32_t span = spans + 1;
    for (uint32_t k = 0; status == OK && spans && k < NODE(s, spans)->count;
         k++, span = NODE(s, span)->next) {
        PyObject *row = row_of_node(r, s, span, &status);
        if (row == NULL) {
            status = PyErr_Occurred() ? FAIL : (status == OK ? FAIL : status);
            break;
        }
        status = PyList_Append(out, row) < 0 ? FAIL : OK;
        Py_DECREF(row);
    }
    Py_CLEAR(r->scope);
    return status;
}

static int rows_of_resource_node(Rows *r, const Scan *s, uint32_t resource_spans,
                                 PyObject *out) {
    uint32_t resource, scopes;
    int status = OK;
    if (NODE(s, resource_spans)->type != J_OBJECT) return BAIL;
    TRY(member_of(s, resource_spans, "resource", &resource));
    TRY(member_of(s, resource_spans, "scopeSpans", &scopes));
    if (!scopes) return OK;
    if (NODE(s, scopes)->type != J_ARRAY) return BAIL;
    r->resource = node_text(&r->buf, s, resource, s_empty_object, &status);
    if (r->resource == NULL) return PyErr_Occurred() ? FAIL : status;
    if ((r->resource = held_text(r->resource)) == NULL) return FAIL;
    r->resource_attributes = 0; /* its tokens go to its spans' traces' documents */
    if (resource && NODE(s, resource)->type == J_OBJECT)
        status = member_of(s, resource, "attributes", &r->resource_attributes);
    uint32_t scope = scopes + 1;
    for (uint32_t k = 0; status == OK && k < NODE(s, scopes)->count;
         k++, scope = NODE(s, scope)->next)
        status = rows_of_scope_node(r, s, scope, out);
    Py_CLEAR(r->resource);
    return status;
}

static PyObject *span_rows_json(PyObject *Py_UNUSED(self), PyObject *args) {
    const char *text;
    Py_ssize_t size;
    Rows r = {0};
    PyObject *plan = Py_None, *makers = Py_None;
    r.last_set = -1;
    if (!PyArg_ParseTuple(args, "y#UOO!|OO", &text, &size, &r.project_id, &r.received_ms,
                          &PyType_Type, &r.row_type, &plan, &makers))
        return NULL;
    if (makers != Py_None &&
        (!PyTuple_Check(makers) ||
         !PyArg_ParseTuple(makers, "OOO", &r.hash_text, &r.key_token, &r.name_token))) {
        PyErr_SetString(PyExc_TypeError, "makers: (hash_text, key_token, name_token) or None");
        return NULL;
    }
    if ((r.row_size = row_size(r.row_type)) < 0) return NULL;
    if (plan != Py_None) {
        if ((r.plan = PyCapsule_GetPointer(plan, "storage._rows.genai_plan")) == NULL) return NULL;
        if ((r.priced = PyList_New(0)) == NULL || (r.left = PyList_New(0)) == NULL ||
            (makers != Py_None && (r.set_at = PyDict_New()) == NULL) ||
            (makers != Py_None &&
             ((r.keys = PyMem_Calloc(2 * TEXTS_KEPT, sizeof(KeptInt))) == NULL ||
              (r.hashes = values_kept(r.hash_text)) == NULL))) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
            free_sets(&r);
            Py_XDECREF(r.priced);
            Py_XDECREF(r.left);
            return NULL;
        }
        if (r.keys != NULL) r.names = r.keys + TEXTS_KEPT;
    }
    Scan s = {0};
    int status = scan_document_released(&s, text, size);
    uint32_t resources = 0;
    if (status == OK && NODE(&s, 0)->type != J_OBJECT) status = BAIL;
    if (status == OK) status = member_of(&s, 0, "resourceSpans", &resources);
    if (status == OK && resources && NODE(&s, resources)->type != J_ARRAY) status = BAIL;
    PyObject *out = status == OK ? PyList_New(0) : NULL;
    if (status == OK && out == NULL) status = FAIL;
    uint32_t resource = resources + 1;
    for (uint32_t k = 0; status == OK && resources && k < NODE(&s, resources)->count;
         k++, resource = NODE(&s, resource)->next)
        status = rows_of_resource_node(&r, &s, resource, out);
    scan_free(&s);
    PyMem_Free(r.buf.data);
    Py_XDECREF(r.trace_id);
    PyObject *documents = status == OK && !PyErr_Occurred() && r.set_at != NULL
                              ? token_documents(&r)
                              : Py_NewRef(Py_None);
    free_sets(&r);
    if (status != OK || PyErr_Occurred()) {
        Py_XDECREF(out);
        Py_XDECREF(r.priced);
        Py_XDECREF(r.left);
        Py_XDECREF(documents);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (r.plan == NULL) {
        Py_DECREF(documents);
        return out;
    }
    PyObject *all = PyTuple_Pack(4, out, r.priced, r.left, documents);
    Py_DECREF(out);
    Py_DECREF(r.priced);
    Py_DECREF(r.left);
    Py_DECREF(documents);
    return all;
}
