/* A /v1/spans body straight from its bytes to canonical bytes (part of _fastpath.c).
 *
 * The body is scanned into nodes (_jsonscan.h), not parsed into Python objects, and
 * each span is written from its nodes by the rules of native_span above. Declined
 * (None) whenever the dict-based path could answer otherwise: any string escaped
 * otherwise than orjson escapes, repeated members, numbers orjson would read as
 * something else, and everything native_span declines.
 */
#include "_jsonscan.h"

#define NB(s, i) (&(s)->nodes[(i)])
#define NB_TEXT(s, i) ((const char *)(s)->text + NB(s, i)->start)

/* An unescaped string node's bytes (ids, times, kinds and statuses are never escaped). */
static int nb_plain(const Scan *s, uint32_t i, const char **text, Py_ssize_t *n) {
    if (NB(s, i)->type != J_STRING || NB(s, i)->flags & J_ESCAPED) return BAIL;
    *text = NB_TEXT(s, i);
    *n = NB(s, i)->len;
    return OK;
}

/* The int64 value of an integer node as orjson reads it ("-0" is 0); BAIL past int64
 * (orjson reads an unsigned 64-bit int or a double there: the general path decides). */
static int nb_int(const Scan *s, uint32_t i, long long *out) {
    const Node *n = NB(s, i);
    const char *t = NB_TEXT(s, i);
    int negative = t[0] == '-';
    if (n->len - negative > 19) return BAIL;
    unsigned long long v = 0;
    for (uint32_t k = negative; k < n->len; k++) v = v * 10 + (unsigned long long)(t[k] - '0');
    if (v > 9223372036854775807ULL + negative) return BAIL;
    *out = negative ? (long long)(0 - v) : (long long)v;
    return OK;
}

/* Whether an object repeats a member name (orjson would keep the last of them). */
static int nb_repeats(const Scan *s, uint32_t object) {
    uint32_t count = NB(s, object)->count, keys[64], key = object + 1;
    if (count > 64) return 1;
    for (uint32_t m = 0; m < count; m++) {
        keys[m] = key;
        for (uint32_t o = 0; o < m; o++)
            if (NB(s, keys[o])->len == NB(s, key)->len &&
                memcmp(NB_TEXT(s, keys[o]), NB_TEXT(s, key), NB(s, key)->len) == 0)
                return 1;
        key = NB(s, VALUE_OF(key))->next;
    }
    return 0;
}

static int nb_key_values(Buf *b, const Scan *s, uint32_t object, int depth);

/* The AnyValue of a native attribute value (native_value's rules). */
static int nb_value(Buf *b, const Scan *s, uint32_t i, int depth) {
    const Node *n = NB(s, i);
    long long number;
    switch (n->type) {
        case J_STRING:
            TRY(PUT(b, "{\"stringValue\":\""));
            TRY(put(b, NB_TEXT(s, i), n->len));
            return PUT(b, "\"}");
        case J_TRUE: return PUT(b, "{\"boolValue\":true}");
        case J_FALSE: return PUT(b, "{\"boolValue\":false}");
        case J_NULL: return PUT(b, "{}");
        case J_INT:
            TRY(nb_int(s, i, &number));
            TRY(PUT(b, "{\"intValue\":\""));
            TRY(put_i64(b, number));
            return PUT(b, "\"}");
        case J_FLOAT: /* the number as written: the same double (the scanner checked it) */
            TRY(PUT(b, "{\"doubleValue\":"));
            TRY(put(b, NB_TEXT(s, i), n->len));
            return PUT(b, "}");
        default: break;
    }
    if (depth >= MAX_FAST_DEPTH) return BAIL;
    if (n->type == J_ARRAY) {
        TRY(PUT(b, "{\"arrayValue\":{\"values\":["));
        for (uint32_t k = 0, item = i + 1; k < n->count; k++, item = NB(s, item)->next) {
            if (k) TRY(PUT(b, ","));
            TRY(nb_value(b, s, item, depth + 1));
        }
        return PUT(b, "]}}");
    }
    TRY(PUT(b, "{\"kvlistValue\":{\"values\":["));
    TRY(nb_key_values(b, s, i, depth + 1));
    return PUT(b, "]}}");
}

/* The KeyValues of a native attributes object, in its member order. */
static int nb_key_values(Buf *b, const Scan *s, uint32_t object, int depth) {
    if (nb_repeats(s, object)) return BAIL;
    uint32_t key = object + 1;
    for (uint32_t m = 0; m < NB(s, object)->count; m++) {
        if (m) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"key\":\""));
        TRY(put(b, NB_TEXT(s, key), NB(s, key)->len));
        TRY(PUT(b, "\",\"value\":"));
        TRY(nb_value(b, s, VALUE_OF(key), depth));
        TRY(PUT(b, "}"));
        key = NB(s, VALUE_OF(key))->next;
    }
    return OK;
}

typedef struct {
    uint32_t trace_id, span_id, parent, name, kind, start, end, status, attributes, events;
} NativeNodes;

static const Name NATIVE_MEMBERS[] = {
    NAME("traceId"), NAME("spanId"), NAME("parentSpanId"), NAME("name"),
    NAME("kind"), NAME("startTime"), NAME("endTime"), NAME("status"),
    NAME("attributes"), NAME("events")};

/* The members of a native span; BAIL for an unknown (reported) or repeated one. */
static int nb_members(const Scan *s, uint32_t span, NativeNodes *m) {
    uint32_t *slots[] = {&m->trace_id, &m->span_id, &m->parent,     &m->name,
                         &m->kind,     &m->start,   &m->end,        &m->status,
                         &m->attributes, &m->events};
    memset(m, 0, sizeof(*m));
    uint32_t key = span + 1;
    for (uint32_t k = 0; k < NB(s, span)->count; k++) {
        int c = name_index(s, key, NATIVE_MEMBERS, 10);
        if (c == 10 || *slots[c]) return BAIL;
        *slots[c] = VALUE_OF(key);
        key = NB(s, VALUE_OF(key))->next;
    }
    return OK;
}

static inline int nb_absent(const Scan *s, uint32_t i) {
    return i == 0 || NB(s, i)->type == J_NULL;
}

/* Span and event attribute pairs (attribute_pairs in native_span.py). */
static long long nb_pairs(const Scan *s, const NativeNodes *m) {
    long long count = m->attributes && NB(s, m->attributes)->type == J_OBJECT
                          ? NB(s, m->attributes)->count
                          : 0;
    if (m->events && NB(s, m->events)->type == J_ARRAY) {
        uint32_t event = m->events + 1;
        for (uint32_t k = 0; k < NB(s, m->events)->count; k++, event = NB(s, event)->next) {
            uint32_t attributes;
            if (NB(s, event)->type == J_OBJECT &&
                member_of(s, event, "attributes", &attributes) == OK && attributes &&
                NB(s, attributes)->type == J_OBJECT)
                count += NB(s, attributes)->count;
        }
    }
    return count;
}

static int nb_id(Buf *b, const Scan *s, uint32_t i, const char *label, Py_ssize_t length) {
    const char *text;
    Py_ssize_t n;
    char id[32];
    if (i == 0) return BAIL;
    TRY(nb_plain(s, i, &text, &n));
    TRY(hex_id(text, n, length, id));
    TRY(put(b, label, (Py_ssize_t)strlen(label)));
    TRY(PUT(b, "\""));
    TRY(put(b, id, length));
    return PUT(b, "\"");
}

static int nb_time(const Scan *s, uint32_t i, unsigned long long *nanos) {
    const char *text;
    Py_ssize_t n;
    if (i == 0) return BAIL;
    TRY(nb_plain(s, i, &text, &n));
    return iso8601_text(text, n, nanos);
}

/* What a native trace gives each of its spans (/v1/traces): its id, as 32 lowercase hex
 * characters, and its session id's JSON text (NULL for none). */
typedef struct {
    char trace_id[32];
    const char *session;
    Py_ssize_t session_len;
} NbTrace;

/* The span's traceId: its own, or its trace's (which its own, if any, must equal). */
static int nb_trace_id(Buf *b, const Scan *s, uint32_t own, const NbTrace *trace) {
    if (trace == NULL) return nb_id(b, s, own, "{\"traceId\":", 32);
    if (!nb_absent(s, own)) {
        const char *text;
        Py_ssize_t n;
        char id[32];
        TRY(nb_plain(s, own, &text, &n));
        TRY(hex_id(text, n, 32, id));
        if (memcmp(id, trace->trace_id, 32) != 0) return BAIL;
    }
    TRY(PUT(b, "{\"traceId\":\""));
    TRY(put(b, trace->trace_id, 32));
    return PUT(b, "\"");
}

static int nb_attributes(Buf *b, const Scan *s, uint32_t raw, const char *agent,
                         Py_ssize_t agent_len, const NbTrace *trace) {
    if (nb_absent(s, raw)) raw = 0;
    if (raw && NB(s, raw)->type != J_OBJECT) return BAIL;
    uint32_t reserved = 0, own_session = 0;
    if (raw) TRY(member_of(s, raw, "spangate.span.kind", &reserved));
    if (reserved) return BAIL; /* reported as ignored: general path */
    if (raw) TRY(member_of(s, raw, "session.id", &own_session));
    Py_ssize_t mark = b->len;
    TRY(PUT(b, ",\"attributes\":["));
    Py_ssize_t start = b->len;
    if (raw) TRY(nb_key_values(b, s, raw, 0));
    if (agent) {
        if (b->len > start) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"key\":\"spangate.span.kind\",\"value\":{\"stringValue\":\""));
        TRY(put(b, agent, agent_len));
        TRY(PUT(b, "\"}}"));
    }
    if (trace && trace->session && !own_session) { /* a span's own session.id wins */
        if (b->len > start) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"key\":\"session.id\",\"value\":{\"stringValue\":\""));
        TRY(put(b, trace->session, trace->session_len));
        TRY(PUT(b, "\"}}"));
    }
    if (b->len == start) {
        b->len = mark;
        return OK;
    }
    return PUT(b, "]");
}

static int nb_events(Buf *b, const Scan *s, uint32_t events) {
    if (nb_absent(s, events)) return OK;
    if (NB(s, events)->type != J_ARRAY) return BAIL;
    if (NB(s, events)->count == 0) return OK;
    TRY(PUT(b, ",\"events\":["));
    uint32_t event = events + 1;
    for (uint32_t k = 0; k < NB(s, events)->count; k++, event = NB(s, event)->next) {
        uint32_t name, attributes, found = 0;
        if (NB(s, event)->type != J_OBJECT || nb_repeats(s, event)) return BAIL;
        TRY(member_of(s, event, "name", &name));
        TRY(member_of(s, event, "attributes", &attributes));
        found = (name != 0) + (attributes != 0);
        if (found != NB(s, event)->count || !name || NB(s, name)->type != J_STRING)
            return BAIL; /* an unknown member is reported: general path */
        if (k) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"name\":\""));
        TRY(put(b, NB_TEXT(s, name), NB(s, name)->len));
        TRY(PUT(b, "\""));
        if (!nb_absent(s, attributes)) {
            if (NB(s, attributes)->type != J_OBJECT) return BAIL;
            if (NB(s, attributes)->count) {
                TRY(PUT(b, ",\"attributes\":["));
                TRY(nb_key_values(b, s, attributes, 0));
                TRY(PUT(b, "]"));
            }
        }
        TRY(PUT(b, "}"));
    }
    return PUT(b, "]");
}

/* One native span (of `trace`, or of none: NULL) to canonical bytes. */
static int nb_span(Buf *b, const Scan *s, uint32_t span, long long *pairs, long long max_pairs,
                   const NbTrace *trace) {
    NativeNodes m;
    const char *text = NULL;
    Py_ssize_t n = 0;
    int kind = 0, agent = 0, code = 0;
    unsigned long long nanos;
    if (NB(s, span)->type != J_OBJECT) return BAIL;
    TRY(nb_members(s, span, &m));
    *pairs += nb_pairs(s, &m);
    if (*pairs > max_pairs) return BAIL;
    TRY(nb_trace_id(b, s, m.trace_id, trace));
    TRY(nb_id(b, s, m.span_id, ",\"spanId\":", 16));
    if (!nb_absent(s, m.parent)) {
        TRY(nb_plain(s, m.parent, &text, &n));
        if (n != 0 && !(n == 16 && memcmp(text, "0000000000000000", 16) == 0))
            TRY(nb_id(b, s, m.parent, ",\"parentSpanId\":", 16));
    }
    if (!m.name || NB(s, m.name)->type != J_STRING || NB(s, m.name)->len == 0) return BAIL;
    TRY(PUT(b, ",\"name\":\""));
    TRY(put(b, NB_TEXT(s, m.name), NB(s, m.name)->len));
    const char *agent_text = NULL;
    Py_ssize_t agent_len = 0;
    if (!nb_absent(s, m.kind)) {
        TRY(nb_plain(s, m.kind, &text, &n));
        TRY(kind_text(text, n, &kind, &agent));
        if (agent) {
            agent_text = text;
            agent_len = n;
        }
    }
    TRY(PUT(b, "\",\"kind\":"));
    TRY(put_u64(b, (unsigned long long)kind));
    TRY(nb_time(s, m.start, &nanos));
    TRY(PUT(b, ",\"startTimeUnixNano\":\""));
    TRY(put_u64(b, nanos));
    if (!nb_absent(s, m.end)) {
        TRY(nb_time(s, m.end, &nanos));
        TRY(PUT(b, "\",\"endTimeUnixNano\":\""));
        TRY(put_u64(b, nanos));
    }
    TRY(PUT(b, "\""));
    if (m.attributes || agent_text || (trace && trace->session))
        TRY(nb_attributes(b, s, m.attributes, agent_text, agent_len, trace));
    TRY(nb_events(b, s, m.events));
    if (!nb_absent(s, m.status)) {
        TRY(nb_plain(s, m.status, &text, &n));
        TRY(status_text(text, n, &code));
    }
    TRY(PUT(b, ",\"status\":{\"code\":"));
    TRY(put_u64(b, (unsigned long long)code));
    return PUT(b, "}}");
}

/* The canonical request's head, before its spans. */
#define NB_HEAD "{\"resourceSpans\":[{\"resource\":{},\"scopeSpans\":[{\"scope\":{},\"spans\":["

/* The request's end after NB_HEAD and `count` spans; the empty request for none. */
static int nb_close(Buf *b, long long count) {
    b->len = count ? b->len : 0;
    return count ? PUT(b, "]}]}]}") : PUT(b, "{\"resourceSpans\":[]}");
}

/* (bytes, spans, pairs), and the traces with a span when `traces` >= 0; None when
 * `status` is not OK; NULL with the error raised. The buffer is given up either way. */
static PyObject *nb_result(Buf *b, int status, long long count, long long pairs,
                           long long traces) {
    PyObject *result = NULL;
    if (PyErr_Occurred())
        result = NULL;
    else if (status != OK)
        result = Py_NewRef(Py_None);
    else {
        PyObject *bytes = buf_take_bytes(b);
        if (bytes != NULL)
            result = traces < 0 ? Py_BuildValue("(NLL)", bytes, count, pairs)
                                : Py_BuildValue("(NLLL)", bytes, count, pairs, traces);
    }
    buf_free(b);
    return result;
}

/* native_body(data, max_spans, max_pairs) -> (canonical request bytes, spans, pairs)
 * for a /v1/spans body whose spans are all valid; None otherwise. */
static PyObject *native_body(PyObject *Py_UNUSED(self), PyObject *args) {
    const char *data;
    Py_ssize_t size;
    long long max_spans, max_pairs, pairs = 0;
    if (!PyArg_ParseTuple(args, "y#LL", &data, &size, &max_spans, &max_pairs)) return NULL;
    Scan s = {0};
    Buf b = {NULL, 0, 0, NULL};
    uint32_t spans = 0;
    int status = scan_document(&s, data, size);
    if (status == OK && (NB(&s, 0)->type != J_OBJECT || NB(&s, 0)->count != 1))
        status = BAIL; /* other members are reported as ignored: general path */
    if (status == OK) status = member_of(&s, 0, "spans", &spans);
    if (status == OK && (!spans || NB(&s, spans)->type != J_ARRAY ||
                         (long long)NB(&s, spans)->count > max_spans))
        status = BAIL;
    uint32_t count = status == OK ? NB(&s, spans)->count : 0;
    if (status == OK) status = buf_for_bytes(&b, size * 2); /* the canonical form: ~1.7x */
    if (status == OK) status = PUT(&b, NB_HEAD);
    uint32_t span = spans + 1;
    for (uint32_t k = 0; status == OK && k < count; k++, span = NB(&s, span)->next) {
        if (k) status = PUT(&b, ",");
        if (status == OK) status = nb_span(&b, &s, span, &pairs, max_pairs, NULL);
    }
    if (status == OK) status = nb_close(&b, count);
    scan_free(&s);
    return nb_result(&b, status, count, pairs, -1);
}

/* Whether text[0:n] holds only what bytes.strip() removes (a line NDJSON skips). */
static int nb_blank(const char *text, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!memchr(" \t\n\r\x0b\x0c", text[i], 6)) return 0;
    return 1;
}

/* One NDJSON line's span, scanned on its own, comma-separated from the one before. */
static int nb_line(Buf *b, const char *text, Py_ssize_t n, uint32_t count, long long *pairs,
                   long long max_pairs) {
    Scan s = {0};
    int status = scan_document(&s, text, n);
    if (status == OK && NB(&s, 0)->type != J_OBJECT) status = BAIL;
    if (status == OK && count > 1) status = PUT(b, ",");
    if (status == OK) status = nb_span(b, &s, 0, pairs, max_pairs, NULL);
    scan_free(&s);
    return status;
}

/* ndjson_body(data, max_spans, max_pairs) -> (canonical request bytes, spans, pairs)
 * for a /v1/spans/batch body whose non-blank lines are each one valid span; None
 * otherwise (a line that does not parse included: the general path names it). */
static PyObject *ndjson_body(PyObject *Py_UNUSED(self), PyObject *args) {
    const char *data;
    Py_ssize_t size;
    long long max_spans, max_pairs, pairs = 0;
    if (!PyArg_ParseTuple(args, "y#LL", &data, &size, &max_spans, &max_pairs)) return NULL;
    Buf b = {NULL, 0, 0, NULL};
    uint32_t count = 0;
    int status = buf_for_bytes(&b, size * 2);
    if (status == OK) status = PUT(&b, NB_HEAD);
    for (const char *line = data, *end = data + size; status == OK && line < end;) {
        const char *newline = memchr(line, '\n', (size_t)(end - line));
        const char *stop = newline ? newline : end;
        if (!nb_blank(line, stop - line))
            status = (long long)++count > max_spans
                         ? BAIL
                         : nb_line(&b, line, stop - line, count, &pairs, max_pairs);
        line = stop + 1;
    }
    if (status == OK) status = nb_close(&b, count);
    return nb_result(&b, status, count, pairs, -1);
}

/* A native trace's header (_trace_header's rules): its members only traceId, spans and
 * sessionId, none repeated; the id valid; the session id a string or absent. */
static int nb_trace(const Scan *s, uint32_t trace, NbTrace *out, uint32_t *spans) {
    uint32_t id, session;
    const char *text;
    Py_ssize_t n;
    if (NB(s, trace)->type != J_OBJECT || nb_repeats(s, trace)) return BAIL;
    TRY(member_of(s, trace, "traceId", &id));
    TRY(member_of(s, trace, "spans", spans));
    TRY(member_of(s, trace, "sessionId", &session));
    if ((uint32_t)((id != 0) + (*spans != 0) + (session != 0)) != NB(s, trace)->count) return BAIL;
    if (!*spans || NB(s, *spans)->type != J_ARRAY || !id) return BAIL;
    TRY(nb_plain(s, id, &text, &n));
    TRY(hex_id(text, n, 32, out->trace_id));
    out->session = NULL;
    if (!nb_absent(s, session)) {
        if (NB(s, session)->type != J_STRING) return BAIL;
        out->session = NB_TEXT(s, session);
        out->session_len = NB(s, session)->len;
    }
    return OK;
}

/* traces_body(data, max_spans, max_pairs) -> (canonical request bytes, spans, pairs,
 * traces with a span) for a native /v1/traces body whose spans are all valid; None
 * otherwise. */
static PyObject *traces_body(PyObject *Py_UNUSED(self), PyObject *args) {
    const char *data;
    Py_ssize_t size;
    long long max_spans, max_pairs, pairs = 0, count = 0, accepted_traces = 0;
    if (!PyArg_ParseTuple(args, "y#LL", &data, &size, &max_spans, &max_pairs)) return NULL;
    Scan s = {0};
    Buf b = {NULL, 0, 0, NULL};
    uint32_t traces = 0;
    int status = scan_document(&s, data, size);
    if (status == OK && (NB(&s, 0)->type != J_OBJECT || NB(&s, 0)->count != 1))
        status = BAIL; /* other members are reported as ignored: general path */
    if (status == OK) status = member_of(&s, 0, "traces", &traces);
    if (status == OK && (!traces || NB(&s, traces)->type != J_ARRAY)) status = BAIL;
    if (status == OK) status = buf_for_bytes(&b, size * 2);
    if (status == OK) status = PUT(&b, NB_HEAD);
    uint32_t trace = traces + 1;
    for (uint32_t t = 0; status == OK && t < NB(&s, traces)->count;
         t++, trace = NB(&s, trace)->next) {
        NbTrace header;
        uint32_t spans = 0;
        status = nb_trace(&s, trace, &header, &spans);
        if (status != OK) break;
        uint32_t in_trace = NB(&s, spans)->count, span = spans + 1;
        if ((count += in_trace) > max_spans) status = BAIL;
        accepted_traces += in_trace > 0;
        for (uint32_t k = 0; status == OK && k < in_trace; k++, span = NB(&s, span)->next) {
            if (count - in_trace + k > 0) status = PUT(&b, ",");
            if (status == OK) status = nb_span(&b, &s, span, &pairs, max_pairs, &header);
        }
    }
    if (status == OK) status = nb_close(&b, count);
    scan_free(&s);
    return nb_result(&b, status, count, pairs, accepted_traces);
}
