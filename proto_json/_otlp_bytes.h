/* An OTLP/JSON body straight from its bytes to canonical bytes (part of _fastpath.c).
 *
 * The rules of otlp_span above and of otlp.py's envelope, applied to the scanner's
 * nodes (_jsonscan.h) instead of Python objects. Declined (None) whenever another
 * answer could be due: an envelope error, a span that breaks a rule, repeated
 * members, a bytesValue, numbers in strings where a double is expected, strings
 * escaped otherwise than orjson escapes.
 */

/* An unsigned integer as OTLP/JSON writes one (absent or null: 0). */
static int ob_unsigned(const Scan *s, uint32_t i, unsigned long long maximum,
                       unsigned long long *out) {
    *out = 0;
    if (nb_absent(s, i)) return OK;
    const Node *n = NB(s, i);
    if (n->type == J_INT) {
        long long v;
        TRY(nb_int(s, i, &v));
        if (v < 0 || (unsigned long long)v > maximum) return BAIL;
        *out = (unsigned long long)v;
        return OK;
    }
    const char *text;
    Py_ssize_t len;
    TRY(nb_plain(s, i, &text, &len));
    return decimal_digits(text, len, maximum, out);
}

static int ob_count(Buf *b, const Scan *s, uint32_t owner, const char *member,
                    const char *label) {
    uint32_t i;
    unsigned long long v;
    TRY(member_of(s, owner, member, &i));
    TRY(ob_unsigned(s, i, UINT32_MAX_VALUE, &v));
    if (v == 0) return OK;
    TRY(put(b, label, (Py_ssize_t)strlen(label)));
    return put_u64(b, v);
}

/* `label"text"` for a string member written only when non-empty. */
static int ob_optional_string(Buf *b, const Scan *s, uint32_t owner, const char *member,
                              const char *label) {
    uint32_t i;
    TRY(member_of(s, owner, member, &i));
    if (nb_absent(s, i)) return OK;
    if (NB(s, i)->type != J_STRING) return BAIL;
    if (NB(s, i)->len == 0) return OK;
    TRY(put(b, label, (Py_ssize_t)strlen(label)));
    TRY(PUT(b, "\""));
    TRY(put(b, NB_TEXT(s, i), NB(s, i)->len));
    return PUT(b, "\"");
}

static int ob_key_values(Buf *b, const Scan *s, uint32_t list, int depth);

static const char *const VALUE_KINDS[] = {"stringValue", "boolValue",  "intValue",
                                          "doubleValue", "bytesValue", "arrayValue",
                                          "kvlistValue"};

static int ob_value(Buf *b, const Scan *s, uint32_t i, int depth) {
    if (nb_absent(s, i)) return PUT(b, "{}");
    if (NB(s, i)->type != J_OBJECT) return BAIL;
    int kind = -1;
    uint32_t inner = 0;
    for (int k = 0; k < 7; k++) {
        uint32_t v;
        TRY(member_of(s, i, VALUE_KINDS[k], &v));
        if (nb_absent(s, v)) continue;
        if (kind >= 0) return BAIL; /* more than one member of the oneof */
        kind = k;
        inner = v;
    }
    if (kind < 0) return PUT(b, "{}");
    const Node *n = NB(s, inner);
    long long number;
    if (kind == 0) {
        if (n->type != J_STRING) return BAIL;
        TRY(PUT(b, "{\"stringValue\":\""));
        TRY(put(b, NB_TEXT(s, inner), n->len));
        return PUT(b, "\"}");
    }
    if (kind == 1) {
        if (n->type == J_TRUE) return PUT(b, "{\"boolValue\":true}");
        if (n->type == J_FALSE) return PUT(b, "{\"boolValue\":false}");
        return BAIL;
    }
    if (kind == 2) {
        if (n->type == J_INT) {
            TRY(nb_int(s, inner, &number));
        } else {
            const char *text;
            Py_ssize_t len;
            TRY(nb_plain(s, inner, &text, &len));
            TRY(signed_decimal(text, len, &number));
        }
        TRY(PUT(b, "{\"intValue\":\""));
        TRY(put_i64(b, number));
        return PUT(b, "\"}");
    }
    if (kind == 3) {
        TRY(PUT(b, "{\"doubleValue\":"));
        if (n->type == J_FLOAT) {
            TRY(put(b, NB_TEXT(s, inner), n->len)); /* as written: the same double */
        } else if (n->type == J_INT) {
            TRY(nb_int(s, inner, &number));
            TRY(put_double(b, (double)number)); /* float(int), written as a double */
        } else {
            return BAIL; /* "NaN", "Infinity" and numbers in strings: general path */
        }
        return PUT(b, "}");
    }
    if (kind == 4 || depth >= MAX_FAST_DEPTH || n->type != J_OBJECT) return BAIL;
    uint32_t values;
    TRY(member_of(s, inner, "values", &values));
    if (!nb_absent(s, values) && NB(s, values)->type != J_ARRAY) return BAIL;
    int has = !nb_absent(s, values);
    if (kind == 6) {
        TRY(PUT(b, "{\"kvlistValue\":{\"values\":["));
        if (has) TRY(ob_key_values(b, s, values, depth + 1));
        return PUT(b, "]}}");
    }
    TRY(PUT(b, "{\"arrayValue\":{\"values\":["));
    if (has) {
        uint32_t item = values + 1;
        for (uint32_t k = 0; k < NB(s, values)->count; k++, item = NB(s, item)->next) {
            if (k) TRY(PUT(b, ","));
            TRY(ob_value(b, s, item, depth + 1));
        }
    }
    return PUT(b, "]}}");
}

/* The KeyValues of an OTLP attributes array. */
static int ob_key_values(Buf *b, const Scan *s, uint32_t list, int depth) {
    uint32_t item = list + 1;
    for (uint32_t k = 0; k < NB(s, list)->count; k++, item = NB(s, item)->next) {
        uint32_t key, value;
        if (NB(s, item)->type != J_OBJECT) return BAIL;
        TRY(member_of(s, item, "key", &key));
        TRY(member_of(s, item, "value", &value));
        if (!key || NB(s, key)->type != J_STRING) return BAIL;
        if (k) TRY(PUT(b, ","));
        TRY(PUT(b, "{\"key\":\""));
        TRY(put(b, NB_TEXT(s, key), NB(s, key)->len));
        TRY(PUT(b, "\",\"value\":"));
        TRY(ob_value(b, s, value, depth));
        TRY(PUT(b, "}"));
    }
    return OK;
}

/* `,"attributes":[...]` when there are any, then `,"droppedAttributesCount":N`.
 * `first`: no comma before the first member written (a resource or a scope). */
static int ob_attributes(Buf *b, const Scan *s, uint32_t owner, int *first) {
    uint32_t attributes;
    TRY(member_of(s, owner, "attributes", &attributes));
    if (!nb_absent(s, attributes)) {
        if (NB(s, attributes)->type != J_ARRAY) return BAIL;
        if (NB(s, attributes)->count) {
            TRY(*first ? PUT(b, "\"attributes\":[") : PUT(b, ",\"attributes\":["));
            *first = 0;
            TRY(ob_key_values(b, s, attributes, 0));
            TRY(PUT(b, "]"));
        }
    }
    uint32_t dropped;
    unsigned long long v;
    TRY(member_of(s, owner, "droppedAttributesCount", &dropped));
    TRY(ob_unsigned(s, dropped, UINT32_MAX_VALUE, &v));
    if (v == 0) return OK;
    TRY(*first ? PUT(b, "\"droppedAttributesCount\":") : PUT(b, ",\"droppedAttributesCount\":"));
    *first = 0;
    return put_u64(b, v);
}

static int ob_enum(const Scan *s, uint32_t i, const Name *names, int count, int *out) {
    *out = 0;
    if (nb_absent(s, i)) return OK;
    if (NB(s, i)->type == J_INT) {
        long long v;
        TRY(nb_int(s, i, &v));
        if (v < 0 || v >= count || NB_TEXT(s, i)[0] == '-') return BAIL;
        *out = (int)v;
        return OK;
    }
    const char *text;
    Py_ssize_t n;
    TRY(nb_plain(s, i, &text, &n));
    *out = text_index(text, (size_t)n, names, count);
    return *out < count ? OK : BAIL;
}

static int ob_objects(const Scan *s, uint32_t i, uint32_t *count) {
    *count = 0;
    if (nb_absent(s, i)) return OK;
    if (NB(s, i)->type != J_ARRAY) return BAIL;
    uint32_t item = i + 1;
    for (uint32_t k = 0; k < NB(s, i)->count; k++, item = NB(s, item)->next)
        if (NB(s, item)->type != J_OBJECT) return BAIL;
    *count = NB(s, i)->count;
    return OK;
}

static int ob_event(Buf *b, const Scan *s, uint32_t event) {
    uint32_t time_node, name;
    unsigned long long time;
    int first = 0;
    TRY(member_of(s, event, "timeUnixNano", &time_node));
    TRY(ob_unsigned(s, time_node, MAX_UNIX_NANO, &time));
    TRY(PUT(b, "{"));
    if (time) {
        TRY(PUT(b, "\"timeUnixNano\":\""));
        TRY(put_u64(b, time));
        TRY(PUT(b, "\","));
    }
    TRY(member_of(s, event, "name", &name));
    TRY(PUT(b, "\"name\":\""));
    if (!nb_absent(s, name)) {
        if (NB(s, name)->type != J_STRING) return BAIL;
        TRY(put(b, NB_TEXT(s, name), NB(s, name)->len));
    }
    TRY(PUT(b, "\""));
    TRY(ob_attributes(b, s, event, &first));
    return PUT(b, "}");
}

static int ob_member_id(Buf *b, const Scan *s, uint32_t owner, const char *member,
                        const char *label, Py_ssize_t length) {
    uint32_t i;
    TRY(member_of(s, owner, member, &i));
    return nb_id(b, s, i, label, length);
}

static int ob_link(Buf *b, const Scan *s, uint32_t link) {
    int first = 0;
    TRY(ob_member_id(b, s, link, "traceId", "{\"traceId\":", 32));
    TRY(ob_member_id(b, s, link, "spanId", ",\"spanId\":", 16));
    TRY(ob_optional_string(b, s, link, "traceState", ",\"traceState\":"));
    TRY(ob_attributes(b, s, link, &first));
    TRY(ob_count(b, s, link, "flags", ",\"flags\":"));
    return PUT(b, "}");
}

static int ob_list(Buf *b, const Scan *s, uint32_t owner, const char *member,
                   const char *label, int (*item)(Buf *, const Scan *, uint32_t)) {
    uint32_t list, count;
    TRY(member_of(s, owner, member, &list));
    TRY(ob_objects(s, list, &count));
    if (count == 0) return OK;
    TRY(put(b, label, (Py_ssize_t)strlen(label)));
    uint32_t node = list + 1;
    for (uint32_t k = 0; k < count; k++, node = NB(s, node)->next) {
        if (k) TRY(PUT(b, ","));
        TRY(item(b, s, node));
    }
    return PUT(b, "]");
}

static long long ob_pairs(const Scan *s, uint32_t span) {
    uint32_t attributes = 0, events = 0;
    long long count = 0;
    if (member_of(s, span, "attributes", &attributes) == OK && attributes &&
        NB(s, attributes)->type == J_ARRAY)
        count += NB(s, attributes)->count;
    if (member_of(s, span, "events", &events) == OK && events &&
        NB(s, events)->type == J_ARRAY) {
        uint32_t event = events + 1;
        for (uint32_t k = 0; k < NB(s, events)->count; k++, event = NB(s, event)->next) {
            uint32_t event_attributes;
            if (NB(s, event)->type == J_OBJECT &&
                member_of(s, event, "attributes", &event_attributes) == OK &&
                event_attributes && NB(s, event_attributes)->type == J_ARRAY)
                count += NB(s, event_attributes)->count;
        }
    }
    return count;
}

static int ob_span(Buf *b, const Scan *s, uint32_t span) {
    uint32_t i;
    const char *text;
    Py_ssize_t n;
    int kind, code, first = 0;
    unsigned long long start, end;
    if (NB(s, span)->type != J_OBJECT) return BAIL;
    TRY(ob_member_id(b, s, span, "traceId", "{\"traceId\":", 32));
    TRY(ob_member_id(b, s, span, "spanId", ",\"spanId\":", 16));
    TRY(ob_optional_string(b, s, span, "traceState", ",\"traceState\":"));
    TRY(member_of(s, span, "parentSpanId", &i));
    if (!nb_absent(s, i)) {
        TRY(nb_plain(s, i, &text, &n));
        if (n != 0 && !(n == 16 && memcmp(text, "0000000000000000", 16) == 0))
            TRY(nb_id(b, s, i, ",\"parentSpanId\":", 16));
    }
    TRY(ob_count(b, s, span, "flags", ",\"flags\":"));
    TRY(member_of(s, span, "name", &i));
    if (!i || NB(s, i)->type != J_STRING || NB(s, i)->len == 0) return BAIL;
    TRY(PUT(b, ",\"name\":\""));
    TRY(put(b, NB_TEXT(s, i), NB(s, i)->len));
    TRY(member_of(s, span, "kind", &i));
    TRY(ob_enum(s, i, SPAN_KIND_NAMES, 6, &kind));
    TRY(PUT(b, "\",\"kind\":"));
    TRY(put_u64(b, (unsigned long long)kind));
    TRY(member_of(s, span, "startTimeUnixNano", &i));
    TRY(ob_unsigned(s, i, MAX_UNIX_NANO, &start));
    if (start == 0) return BAIL;
    TRY(member_of(s, span, "endTimeUnixNano", &i));
    TRY(ob_unsigned(s, i, MAX_UNIX_NANO, &end));
    TRY(PUT(b, ",\"startTimeUnixNano\":\""));
    TRY(put_u64(b, start));
    if (end) {
        TRY(PUT(b, "\",\"endTimeUnixNano\":\""));
        TRY(put_u64(b, end));
    }
    TRY(PUT(b, "\""));
    TRY(ob_attributes(b, s, span, &first));
    TRY(ob_list(b, s, span, "events", ",\"events\":[", ob_event));
    TRY(ob_count(b, s, span, "droppedEventsCount", ",\"droppedEventsCount\":"));
    TRY(ob_list(b, s, span, "links", ",\"links\":[", ob_link));
    TRY(ob_count(b, s, span, "droppedLinksCount", ",\"droppedLinksCount\":"));
    TRY(member_of(s, span, "status", &i));
    if (nb_absent(s, i)) return PUT(b, ",\"status\":{\"code\":0}}");
    if (NB(s, i)->type != J_OBJECT) return BAIL;
    uint32_t code_node;
    TRY(member_of(s, i, "code", &code_node));
    TRY(ob_enum(s, code_node, STATUS_NAMES, 3, &code));
    TRY(PUT(b, ",\"status\":{\"code\":"));
    TRY(put_u64(b, (unsigned long long)code));
    TRY(ob_optional_string(b, s, i, "message", ",\"message\":"));
    return PUT(b, "}}");
}

/* The object member `member` of `owner` (absent or null: 0); BAIL for another kind. */
static int ob_object(const Scan *s, uint32_t owner, const char *member, uint32_t *out) {
    TRY(member_of(s, owner, member, out));
    if (nb_absent(s, *out)) *out = 0;
    return *out == 0 || NB(s, *out)->type == J_OBJECT ? OK : BAIL;
}

/* `{"resource"|"scope": {...}` plus its schemaUrl, without the closing brace. */
static int ob_head(Buf *b, const Scan *s, uint32_t owner, const char *member, int strings) {
    uint32_t described, schema;
    int first = 1;
    TRY(ob_object(s, owner, member, &described));
    TRY(PUT(b, "{\""));
    TRY(put(b, member, (Py_ssize_t)strlen(member)));
    TRY(PUT(b, "\":{"));
    if (described && strings) {
        static const char *const names[] = {"name", "version"};
        for (int k = 0; k < 2; k++) {
            uint32_t v;
            TRY(member_of(s, described, names[k], &v));
            if (nb_absent(s, v)) continue;
            if (NB(s, v)->type != J_STRING) return BAIL;
            if (NB(s, v)->len == 0) continue;
            if (!first) TRY(PUT(b, ","));
            first = 0;
            TRY(PUT(b, "\""));
            TRY(put(b, names[k], (Py_ssize_t)strlen(names[k])));
            TRY(PUT(b, "\":\""));
            TRY(put(b, NB_TEXT(s, v), NB(s, v)->len));
            TRY(PUT(b, "\""));
        }
    }
    if (described) TRY(ob_attributes(b, s, described, &first));
    TRY(PUT(b, "}"));
    TRY(member_of(s, owner, "schemaUrl", &schema));
    if (nb_absent(s, schema)) return OK;
    if (NB(s, schema)->type != J_STRING) return BAIL;
    if (NB(s, schema)->len == 0) return OK;
    TRY(PUT(b, ",\"schemaUrl\":\""));
    TRY(put(b, NB_TEXT(s, schema), NB(s, schema)->len));
    return PUT(b, "\"");
}

/* An array member (absent or null: 0 items); BAIL for another kind. */
static int ob_array(const Scan *s, uint32_t owner, const char *member, uint32_t *out) {
    TRY(member_of(s, owner, member, out));
    if (nb_absent(s, *out)) *out = 0;
    return *out == 0 || NB(s, *out)->type == J_ARRAY ? OK : BAIL;
}

typedef struct {
    long long spans, pairs, max_spans, max_pairs;
} OtlpCounts;

/* One scopeSpans: its head and spans; nothing at all when it has no spans. */
static int ob_scope(Buf *b, const Scan *s, uint32_t scope, OtlpCounts *c, int *written) {
    uint32_t spans;
    *written = 0;
    if (nb_absent(s, scope)) return OK; /* null is an empty scopeSpans */
    if (NB(s, scope)->type != J_OBJECT) return BAIL;
    TRY(ob_array(s, scope, "spans", &spans));
    Py_ssize_t mark = b->len;
    TRY(ob_head(b, s, scope, "scope", 1)); /* checked even when it holds no spans */
    if (!spans || NB(s, spans)->count == 0) {
        b->len = mark;
        return OK;
    }
    c->spans += NB(s, spans)->count;
    if (c->spans > c->max_spans) return BAIL;
    TRY(PUT(b, ",\"spans\":["));
    uint32_t span = spans + 1;
    for (uint32_t k = 0; k < NB(s, spans)->count; k++, span = NB(s, span)->next) {
        if (NB(s, span)->type == J_OBJECT) c->pairs += ob_pairs(s, span);
        if (c->pairs > c->max_pairs) return BAIL;
        if (k) TRY(PUT(b, ","));
        TRY(ob_span(b, s, span));
    }
    *written = 1;
    return PUT(b, "]}");
}

static int ob_resource(Buf *b, const Scan *s, uint32_t resource, OtlpCounts *c, int *written) {
    uint32_t scopes;
    *written = 0;
    if (nb_absent(s, resource)) return OK;
    if (NB(s, resource)->type != J_OBJECT) return BAIL;
    TRY(ob_array(s, resource, "scopeSpans", &scopes));
    Py_ssize_t mark = b->len;
    TRY(ob_head(b, s, resource, "resource", 0));
    TRY(PUT(b, ",\"scopeSpans\":["));
    Py_ssize_t start = b->len;
    uint32_t scope = scopes + 1;
    for (uint32_t k = 0; scopes && k < NB(s, scopes)->count; k++, scope = NB(s, scope)->next) {
        Py_ssize_t before = b->len;
        int scope_written;
        if (b->len > start) TRY(PUT(b, ","));
        TRY(ob_scope(b, s, scope, c, &scope_written));
        if (!scope_written) b->len = before;
    }
    if (b->len == start) {
        b->len = mark;
        return OK;
    }
    *written = 1;
    return PUT(b, "]}");
}

/* otlp_body(data, max_spans, max_pairs) -> (canonical request bytes, spans, pairs) for
 * an OTLP/JSON body whose spans are all valid; None otherwise. */
static PyObject *otlp_body(PyObject *Py_UNUSED(self), PyObject *args) {
    const char *data;
    Py_ssize_t size;
    OtlpCounts c = {0, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "y#LL", &data, &size, &c.max_spans, &c.max_pairs))
        return NULL;
    Scan s = {0};
    Buf b = {NULL, 0, 0, NULL};
    uint32_t resources = 0;
    int status = scan_document(&s, data, size);
    if (status == OK && NB(&s, 0)->type != J_OBJECT) status = BAIL;
    if (status == OK) status = ob_array(&s, 0, "resourceSpans", &resources);
    if (status == OK && !resources) status = BAIL; /* not told apart from a native body */
    if (status == OK) status = buf_for_bytes(&b, size + size / 4 + 64);
    if (status == OK) status = PUT(&b, "{\"resourceSpans\":[");
    Py_ssize_t start = b.len;
    uint32_t resource = resources + 1;
    for (uint32_t k = 0; status == OK && resources && k < NB(&s, resources)->count;
         k++, resource = NB(&s, resource)->next) {
        Py_ssize_t before = b.len;
        int written = 0;
        if (b.len > start) status = PUT(&b, ",");
        if (status == OK) status = ob_resource(&b, &s, resource, &c, &written);
        if (status == OK && !written) b.len = before;
    }
    if (status == OK) status = PUT(&b, "]}");
    PyObject *result = NULL;
    if (PyErr_Occurred())
        result = NULL;
    else if (status == OK)
        {
        PyObject *bytes = buf_take_bytes(&b);
        result = bytes == NULL ? NULL : Py_BuildValue("(NLL)", bytes, c.spans, c.pairs);
    }
    else
        result = Py_NewRef(Py_None);
    scan_free(&s);
    buf_free(&b);
    return result;
}
