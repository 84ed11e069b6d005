/* storage._llm_text: what a model call's OpenTelemetry GenAI messages give the text
 * index, read from the span's stored attributes (storage/llm_text.py).
 *
 * The worker keeps the words of every model call it stores, and its previews
 * (storage/trace_texts.py). Read through the GenAI view in Python (genai.view's
 * message_view: the attributes parsed, the messages' JSON parsed, a Message each), that
 * was most of what a model call cost the worker beyond a span without GenAI attributes.
 * Here the messages of the OTel GenAI convention (gen_ai.input.messages and
 * gen_ai.output.messages, JSON texts) are read straight from the attributes' JSON text,
 * without a Python object but the two answered.
 *
 * What it buys end to end, its command and figures: docs/benchmarks.md, "What each C
 * extension buys".
 *
 * storage/llm_text.py's Python reading is the reference. A span this does not read as it
 * does is declined (None), and Python reads it: another convention's message attributes
 * beside these, a value that is no JSON text, content that is no text, a tool call in a
 * message that is previewed, member names written with escapes, repeated members, JSON
 * that orjson might read otherwise. tests/storage/test_llm_text.py checks both readings
 * agree.
 */
#include "../proto_json/_jsonscan.h"

#define NODE(s, i) (&(s)->nodes[(i)])
#define MAX_NAMES 16

/* The plan (set_plan): genai/conventions.py's names and genai/messages.py's bounds. */
static PyObject *plan_owner; /* the plan's tuple: keeps every text below alive */
static Name input_key, output_key, others[MAX_NAMES], prefixes[MAX_NAMES];
static int nothers, nprefixes;
/* What storage/llm_text.py's `says` looks for after a `"key":"`: a messages key and its
 * closing quote, an indexed messages prefix (`prefixes`), or a key whose value is a
 * string (then STRING_VALUE). */
static Name said[MAX_NAMES], string_keys[MAX_NAMES];
static int nsaid, nstring_keys;
static const char STRING_VALUE[] = "\",\"value\":{\"stringValue\"";
static Py_ssize_t max_messages, max_content, preview_chars, max_text;

static const char ELLIPSIS[] = "\xe2\x80\xa6"; /* what a text cut at a bound ends with */

/* One message read: its content's bytes in the contents buffer, whether it has content
 * (None in Python when not), whether its role is "user", whether it asks for tool calls. */
typedef struct {
    Py_ssize_t start, len;
    char has_content, user, calls;
} Message;

/* A side's messages (input or output): at most max_messages. */
typedef struct {
    Message *items;
    int count;
} Messages;

/* The number of characters of UTF-8 bytes. */
static Py_ssize_t characters(const char *s, Py_ssize_t n) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) count += ((unsigned char)s[i] & 0xC0) != 0x80;
    return count;
}

/* The bytes of the first `limit` characters of UTF-8 bytes (ASCII 8 bytes at a time). */
static Py_ssize_t first_characters(const char *s, Py_ssize_t n, Py_ssize_t limit) {
    Py_ssize_t i = 0, seen = 0;
    while (i + 8 <= n && seen + 8 <= limit) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        if (word & 0x8080808080808080ULL) break;
        i += 8;
        seen += 8;
    }
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && seen++ == limit) break;
    }
    return i;
}

/* genai/messages.py's `bounded` of the text written to b since `start`. */
static int bound(Buf *b, Py_ssize_t start) {
    const char *text = b->data + start;
    Py_ssize_t n = b->len - start;
    if (n <= max_content || characters(text, n) <= max_content) return OK;
    b->len = start + first_characters(text, n, max_content);
    return PUT(b, ELLIPSIS);
}

static int put_code_point(Buf *b, long c) {
    char out[4];
    int n;
    if (c < 0x80) {
        out[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (c >> 18));
        out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    return put(b, out, n);
}

/* A scanned string node's value, as UTF-8 (its escapes were checked by the scan). */
static int put_string(Buf *b, const Scan *s, uint32_t i) {
    const Node *n = NODE(s, i);
    const unsigned char *t = s->text + n->start;
    if (!(n->flags & J_ESCAPED)) return put(b, (const char *)t, n->len);
    Py_ssize_t run = 0, at = 0;
    while (at < n->len) {
        const unsigned char *slash = memchr(t + at, '\\', (size_t)(n->len - at));
        if (slash == NULL) break;
        at = slash - t;
        TRY(put(b, (const char *)t + run, at - run));
        unsigned char e = t[at + 1];
        long code = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                  : e == 't' ? '\t' : e;
        int width = 2;
        if (e == 'u') width = u_escape(t + at, n->len - at, &code);
        TRY(put_code_point(b, code));
        at += width;
        run = at;
    }
    return put(b, (const char *)t + run, n->len - run);
}

/* BAIL when any member name of an object is written with an escape (its raw bytes would
 * not be compared as the name orjson reads). */
static int plain_names(const Scan *s, uint32_t object) {
    uint32_t key = object + 1;
    for (uint32_t m = 0; m < NODE(s, object)->count; m++) {
        if (NODE(s, key)->flags & J_ESCAPED) return BAIL;
        key = NODE(s, VALUE_OF(key))->next;
    }
    return OK;
}

/* genai/messages.py's as_text of a value that is a part's or a message's text: a string
 * is written (after a line when the message has texts already), null gives none, and
 * anything else (written as JSON by Python) is declined. */
static int put_text(Buf *b, const Scan *s, uint32_t value, int *texts) {
    if (value == 0 || NODE(s, value)->type == J_NULL) return OK;
    if (NODE(s, value)->type != J_STRING) return BAIL;
    if ((*texts)++) TRY(PUT(b, "\n"));
    Py_ssize_t start = b->len;
    TRY(put_string(b, s, value));
    return bound(b, start);
}

/* A part of a message (genai/messages.py's _otel_message and _otel_part_text). */
static int read_part(Buf *b, const Scan *s, uint32_t part, Message *m, int *texts) {
    if (NODE(s, part)->type != J_OBJECT) return OK;
    TRY(plain_names(s, part));
    uint32_t type, value = 0;
    TRY(member_of(s, part, "type", &type));
    int kind_none = type == 0 || NODE(s, type)->type == J_NULL;
    if (!kind_none && NODE(s, type)->type == J_STRING) {
        if (NODE(s, type)->flags & J_ESCAPED) return BAIL;
        if (NODE_IS(s, type, "tool_call")) {
            m->calls = 1;
            return OK;
        }
        if (NODE_IS(s, type, "text")) {
            TRY(member_of(s, part, "content", &value));
        } else if (NODE_IS(s, type, "tool_call_response")) {
            TRY(member_of(s, part, "response", &value));
            if (value == 0) TRY(member_of(s, part, "result", &value));
        }
    } else if (kind_none) {
        TRY(member_of(s, part, "content", &value));
    }
    return put_text(b, s, value, texts);
}

/* A message (genai/messages.py's _otel_message), its content written to b. */
static int read_message(Buf *b, const Scan *s, uint32_t item, Message *m) {
    TRY(plain_names(s, item));
    uint32_t role, parts, content;
    TRY(member_of(s, item, "role", &role));
    TRY(member_of(s, item, "parts", &parts));
    TRY(member_of(s, item, "content", &content));
    m->user = 1; /* an input's role when it gives none */
    if (role && NODE(s, role)->type == J_STRING && NODE(s, role)->len > 0) {
        if (NODE(s, role)->flags & J_ESCAPED) return BAIL;
        m->user = NODE_IS(s, role, "user");
    }
    m->calls = 0;
    m->start = b->len;
    int texts = 0;
    if (parts && NODE(s, parts)->type == J_ARRAY) {
        uint32_t part = parts + 1;
        for (uint32_t k = 0; k < NODE(s, parts)->count && k < max_messages; k++) {
            TRY(read_part(b, s, part, m, &texts));
            part = NODE(s, part)->next;
        }
    } else if (content) {
        TRY(put_text(b, s, content, &texts));
    }
    m->has_content = texts > 0;
    if (texts) TRY(bound(b, m->start));
    m->len = b->len - m->start;
    return OK;
}

/* The messages of a JSON text (genai/messages.py's otel_messages): each one's content
 * into `contents`. */
static int read_messages(Buf *contents, const char *json, Py_ssize_t size, Messages *out) {
    Scan s = {0};
    s.any_escape = 1;
    int status = scan_document(&s, json, size);
    if (status == OK && NODE(&s, 0)->type == J_ARRAY) {
        uint32_t item = 1;
        for (uint32_t k = 0; status == OK && k < NODE(&s, 0)->count && k < max_messages; k++) {
            if (NODE(&s, item)->type == J_OBJECT)
                status = read_message(contents, &s, item, &out->items[out->count++]);
            item = NODE(&s, item)->next;
        }
    }
    scan_free(&s);
    return status;
}

/* The string value of an attribute ({"stringValue": text}); BAIL for any other. */
static int string_value(const Scan *s, uint32_t value, uint32_t *text) {
    const Node *n = NODE(s, value);
    if (n->type != J_OBJECT || n->count != 1 || !NODE_IS(s, value + 1, "stringValue") ||
        NODE(s, value + 2)->type != J_STRING)
        return BAIL;
    *text = value + 2;
    return OK;
}

static int starts_with(const Scan *s, uint32_t i, const Name *prefix) {
    const Node *n = NODE(s, i);
    return n->len >= prefix->len && memcmp(s->text + n->start, prefix->text, prefix->len) == 0;
}

/* The attributes' two message texts (0 when absent); BAIL when another convention's
 * message attribute stands beside them, or one is repeated or no text. */
static int message_attributes(const Scan *s, uint32_t *input, uint32_t *output) {
    *input = *output = 0;
    if (NODE(s, 0)->type != J_ARRAY) return BAIL;
    uint32_t item = 1;
    for (uint32_t k = 0; k < NODE(s, 0)->count; k++, item = NODE(s, item)->next) {
        uint32_t key, value;
        if (NODE(s, item)->type != J_OBJECT) return BAIL;
        TRY(member_of(s, item, "key", &key));
        TRY(member_of(s, item, "value", &value));
        if (key == 0 || value == 0 || NODE(s, key)->type != J_STRING) return BAIL;
        const Node *k_node = NODE(s, key);
        const char *name = (const char *)s->text + k_node->start;
        uint32_t *found = node_is(s, key, input_key.text, input_key.len)     ? input
                          : node_is(s, key, output_key.text, output_key.len) ? output
                                                                             : NULL;
        if (found != NULL) {
            if (*found) return BAIL;
            TRY(string_value(s, value, found));
            continue;
        }
        if (text_index(name, k_node->len, others, nothers) < nothers) return BAIL;
        for (int p = 0; p < nprefixes; p++)
            if (starts_with(s, key, &prefixes[p])) return BAIL;
    }
    return *input || *output ? OK : BAIL;
}

/* The messages of one attribute's value (a scanned string node), unescaped and read. */
static int read_attribute(Buf *contents, const Scan *s, uint32_t text, Messages *out) {
    if (text == 0) return OK;
    Buf json = {0};
    int status = put_string(&json, s, text);
    if (status == OK) status = read_messages(contents, json.data, json.len, out);
    buf_free(&json);
    return status;
}

/* A message's preview (genai/view.py's _preview): its content's first characters, or
 * null; BAIL for one whose tool calls would be shown. */
static int put_preview(Buf *b, const Buf *contents, const Message *m) {
    if (m == NULL) return PUT(b, "null");
    if (!m->has_content) return m->calls ? BAIL : PUT(b, "null");
    const char *text = contents->data + m->start;
    return put_escaped(b, text, first_characters(text, m->len, preview_chars));
}

/* The messages' contents, one a line, cut to max_text characters. */
static PyObject *text_of(const Buf *contents, const Messages *sides) {
    Buf text = {0};
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < sides[side].count; k++) {
            const Message *m = &sides[side].items[k];
            if (m->len == 0) continue;
            if ((text.len && put(&text, "\n", 1) != OK) ||
                put(&text, contents->data + m->start, m->len) != OK) {
                buf_free(&text);
                return NULL;
            }
        }
    Py_ssize_t n = text.len <= max_text ? text.len : first_characters(text.data, text.len, max_text);
    PyObject *found = PyUnicode_DecodeUTF8(text.len ? text.data : "", n, NULL);
    buf_free(&text);
    return found;
}

/* The text and previews, or BAIL. */
static int read_text(const char *attributes, Py_ssize_t size, int model, PyObject **answer) {
    Scan s = {0};
    Buf contents = {0}, previews = {0};
    Message *items = PyMem_Malloc(sizeof(Message) * 2 * (size_t)max_messages);
    Messages sides[2] = {{items, 0}, {items + max_messages, 0}};
    uint32_t input, output;
    int status = items == NULL ? (PyErr_NoMemory(), FAIL) : scan_document(&s, attributes, size);
    if (status == OK) status = message_attributes(&s, &input, &output);
    if (status == OK) status = read_attribute(&contents, &s, input, &sides[0]);
    if (status == OK) status = read_attribute(&contents, &s, output, &sides[1]);
    if (status == OK && sides[0].count + sides[1].count == 0) status = BAIL; /* Python's */
    if (status == OK) {
        /* genai/view.py's GenAIView.previews: the first user message (a model call's;
         * else the first), the last output message, and a model call's last user
         * message where it is not its first */
        const Message *first = NULL, *last = NULL, *asked = NULL;
        for (int k = 0; k < sides[0].count && first == NULL; k++)
            if (sides[0].items[k].user || !model) first = &sides[0].items[k];
        for (int k = sides[0].count - 1; k >= 0 && model && asked == NULL; k--)
            if (sides[0].items[k].user) asked = &sides[0].items[k];
        if (sides[1].count) last = &sides[1].items[sides[1].count - 1];
        status = PUT(&previews, "[");
        if (status == OK) status = put_preview(&previews, &contents, first);
        if (status == OK) status = PUT(&previews, ",");
        if (status == OK) status = put_preview(&previews, &contents, last);
        if (status == OK && asked != NULL && asked != first) {
            status = PUT(&previews, ",");
            if (status == OK) status = put_preview(&previews, &contents, asked);
        }
        if (status == OK) status = PUT(&previews, "]");
    }
    if (status == OK) {
        PyObject *text = text_of(&contents, sides);
        PyObject *shown = text == NULL ? NULL
                                       : PyUnicode_DecodeUTF8(previews.data, previews.len, NULL);
        *answer = shown == NULL ? NULL : PyTuple_Pack(2, text, shown);
        Py_XDECREF(text);
        Py_XDECREF(shown);
        status = *answer == NULL ? FAIL : OK;
    }
    scan_free(&s);
    buf_free(&contents);
    buf_free(&previews);
    PyMem_Free(items);
    return status;
}

/* Whether the text of a key (`at`, `left` bytes to the end, its first quote `len` bytes
 * on, or none: `len` is `left`) is one `says` looks for. Names hold no quote: a name
 * followed by a quote is a key of `len` bytes; a prefix is at most `len`. */
static int said_at(const char *at, size_t left, size_t len) {
    for (int k = 0; k < nsaid; k++)
        if (said[k].len == len && len < left && memcmp(at, said[k].text, len) == 0) return 1;
    for (int k = 0; k < nprefixes; k++)
        if (prefixes[k].len <= len && memcmp(at, prefixes[k].text, prefixes[k].len) == 0)
            return 1;
    for (int k = 0; k < nstring_keys; k++)
        if (string_keys[k].len == len && left - len >= sizeof(STRING_VALUE) - 1 &&
            memcmp(at, string_keys[k].text, len) == 0 &&
            memcmp(at + len, STRING_VALUE, sizeof(STRING_VALUE) - 1) == 0)
            return 1;
    return 0;
}

/* What a first look at the attributes' text finds after each `"key":"`: one of the two
 * messages keys (MESSAGES: what is read here), else what storage/llm_text.py's `says`
 * looks for (SAID: Python reads it), else nothing (0). */
#define MESSAGES 2
#define SAID 1
static int first_look(const char *text, size_t size) {
    static const char key[] = "\"key\":\"";
    const char *end = text + size, *at = text;
    int found = 0;
    for (; (at = memmem(at, (size_t)(end - at), key, sizeof(key) - 1)) != NULL; at++) {
        /* the next search from the byte after this match's first: as the pattern's */
        const char *named = at + sizeof(key) - 1;
        size_t left = (size_t)(end - named);
        const char *quote = memchr(named, '"', left);
        size_t len = quote == NULL ? left : (size_t)(quote - named);
        for (int side = 0; side < 2 && quote != NULL; side++) {
            const Name *name = side ? &output_key : &input_key;
            if (name->len == len && memcmp(named, name->text, len) == 0) return MESSAGES;
        }
        if (!found && said_at(named, left, len)) found = SAID;
    }
    return found;
}

static PyObject *text_and_previews(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const char *attributes;
    Py_ssize_t size;
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "text_and_previews(attributes: str, model: bool)");
        return NULL;
    }
    if (plan_owner == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "text_and_previews: no plan set");
        return NULL;
    }
    int model = PyObject_IsTrue(args[1]);
    if (model < 0) return NULL;
    attributes = PyUnicode_AsUTF8AndSize(args[0], &size);
    if (attributes == NULL) { /* a lone surrogate: Python's */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int look = first_look(attributes, (size_t)size);
    if (look == SAID) Py_RETURN_NONE;
    if (look == 0) Py_RETURN_FALSE; /* no attribute may hold messages */
    PyObject *answer = NULL;
    int status = read_text(attributes, size, model, &answer);
    if (status == FAIL) return NULL;
    if (status != OK) Py_RETURN_NONE;
    return answer;
}

/* A name of the plan, as UTF-8 that the plan's tuple keeps alive. */
static int plan_name(PyObject *text, Name *name) {
    const char *s;
    Py_ssize_t n;
    if (utf8_of(text, &s, &n) != OK) {
        PyErr_SetString(PyExc_ValueError, "set_plan: names are texts");
        return FAIL;
    }
    name->text = s;
    name->len = (size_t)n;
    return OK;
}

static int plan_names(PyObject *texts, Name *names, int *count) {
    if (!PyTuple_Check(texts) || PyTuple_GET_SIZE(texts) > MAX_NAMES) {
        PyErr_SetString(PyExc_ValueError, "set_plan: a tuple of at most 16 names");
        return FAIL;
    }
    *count = (int)PyTuple_GET_SIZE(texts);
    for (int k = 0; k < *count; k++) TRY(plan_name(PyTuple_GET_ITEM(texts, k), &names[k]));
    return OK;
}

static PyObject *py_set_plan(PyObject *self, PyObject *plan) {
    PyObject *in, *out, *other, *prefix, *said_keys, *strings;
    Py_ssize_t messages, content, preview, text;
    if (!PyArg_ParseTuple(plan, "UUO!O!nnnnO!O!", &in, &out, &PyTuple_Type, &other,
                          &PyTuple_Type, &prefix, &messages, &content, &preview, &text,
                          &PyTuple_Type, &said_keys, &PyTuple_Type, &strings))
        return NULL;
    if (messages < 1 || messages > 100000 || content < 1 || preview < 0 || text < 0) {
        PyErr_SetString(PyExc_ValueError, "set_plan: bounds out of range");
        return NULL;
    }
    Py_INCREF(plan);
    Py_XSETREF(plan_owner, plan);
    if (plan_name(in, &input_key) != OK || plan_name(out, &output_key) != OK ||
        plan_names(other, others, &nothers) != OK || plan_names(prefix, prefixes, &nprefixes) != OK ||
        plan_names(said_keys, said, &nsaid) != OK ||
        plan_names(strings, string_keys, &nstring_keys) != OK) {
        Py_CLEAR(plan_owner);
        return NULL;
    }
    max_messages = messages;
    max_content = content;
    preview_chars = preview;
    max_text = text;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"text_and_previews", (PyCFunction)(void (*)(void))text_and_previews, METH_FASTCALL,
     "text_and_previews(attributes, model): (text, previews) of a span's OTel GenAI "
     "messages, False when no attribute may hold messages, or None"},
    {"set_plan", py_set_plan, METH_O,
     "set_plan((input key, output key, other keys, prefixes, max messages, max content, "
     "preview characters, max text, messages keys, string keys)): the names and bounds "
     "text_and_previews reads by"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "storage._llm_text", NULL, 0, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__llm_text(void) { return PyModule_Create(&module); }
