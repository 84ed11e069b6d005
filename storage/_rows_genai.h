/* A span's GenAI facts, read from its nodes while its row is built (part of _rows.c,
 * included by _rows_json.h).
 *
 * The worker stores with every span that an LLM convention describes the facts of its
 * GenAI view (genai/view.py's view_of without messages: type, name, model, provider,
 * user, token counts; storage/span_genai.py). Parsing a model call's attributes (a few
 * KB of messages) and reading them in Python was most of what such a span cost the
 * worker; here the same reading runs over the nodes the row builder scanned anyway, by
 * genai/view.py's own tables (`genai_plan`, made once from genai/view.py's
 * reading_plan()), and fills the row's fields. What is out of the ordinary (a name
 * given twice, a count that is no plain decimal, a text that may be blank, a cost, GenAI
 * events where the attributes hold no message) is left to Python, which reads those
 * spans as before:
 * tests/storage/test_rows_genai.py checks that both readings give the same rows.
 */

/* The view's fields in genai/view.py's _FIELDS order (genai_plan checks the names). */
enum {
    F_MODEL, F_PROVIDER, F_AGENT, F_TOOL, F_USER, F_SESSION, F_INPUT_VALUE, F_OUTPUT_VALUE,
    F_VERCEL_TEXT, F_INPUT, F_OUTPUT, F_TOTAL, F_CACHE_READ, F_CACHE_WRITE, F_REASONING,
    F_COST, NFIELDS
};
static const char *const FIELD_NAMES[NFIELDS] = {
    "model", "provider", "agentName", "toolName", "userId", "sessionId", "inputValue",
    "outputValue", "vercelText", "inputTokens", "outputTokens", "totalTokens",
    "cacheReadTokens", "cacheWriteTokens", "reasoningTokens", "costUsd"};
/* The row's GenAI fields (SpanRow's, after its first ROW_FIELDS) and its session's. */
enum { R_SESSION = 11, R_TYPE = 20, R_NAME, R_MODEL, R_PROVIDER, R_USER, R_TOKENS };

/* CHECK_PYTHON: the span is Python's; CHECK_VALUE: a text as CHECK_TEXT; a structure there
 * (a tool's arguments sent as an object) gives no fact, and leaves to Python only a span
 * of no type (which OpenInference's input.value or output.value makes a chain) */
enum { CHECK_TEXT, CHECK_COUNT, CHECK_PYTHON, CHECK_VALUE };
/* ROLE_PARAMETERS: a model call's parameters, which name its model when nothing else does */
enum { ROLE_FIELD = 1, ROLE_TYPE = 2, ROLE_SAYING = 4, ROLE_PARAMETERS = 8 };
#define PLAN_SLOTS 4
#define PLAN_KEYS 256
#define PLAN_TYPES 16
#define TEXT_CHARS 1024 /* genai/view.py cuts texts to as many characters */

typedef struct {
    int field, rank, check;
} PlanSlot;

typedef struct {
    const char *text;
    Py_ssize_t len;
    int role, type_at, nslots;
    PlanSlot slots[PLAN_SLOTS];
} PlanKey;

typedef struct Plan {
    PlanKey keys[PLAN_KEYS]; /* by their bytes */
    int nkeys, ntypes, nprefixes, nnames, nnative;
    PyObject *types[PLAN_TYPES];  /* {text: type} of each typing attribute, in order */
    PyObject *native_types[32];   /* the type of each native kind */
    Name prefixes[16], names[16], native[32];
    PyObject *llm, *agent, *tool, *chain; /* "llm", "agent", "tool", "chain" */
    int input_value, output_value; /* the ranks of input.value and output.value */
    PyObject *owner;              /* the plan's tuple: keeps every text above alive */
} Plan;

static int by_bytes(const char *a, Py_ssize_t an, const char *b, Py_ssize_t bn) {
    int c = memcmp(a, b, (size_t)(an < bn ? an : bn));
    return c ? c : (an > bn) - (an < bn);
}

static int plan_key_order(const void *x, const void *y) {
    const PlanKey *a = x, *b = y;
    return by_bytes(a->text, a->len, b->text, b->len);
}

static void plan_free(PyObject *capsule) {
    Plan *p = PyCapsule_GetPointer(capsule, "storage._rows.genai_plan");
    if (p == NULL) return;
    Py_XDECREF(p->llm);
    Py_XDECREF(p->agent);
    Py_XDECREF(p->tool);
    Py_XDECREF(p->chain);
    Py_XDECREF(p->owner);
    PyMem_Free(p);
}

static int plan_error(const char *what) {
    PyErr_Format(PyExc_ValueError, "genai_plan: %s", what);
    return -1;
}

/* The str items of a tuple as Names (at most `cap`); -1 with an exception set. */
static int plan_names(PyObject *texts, Name *out, int cap) {
    if (!PyTuple_Check(texts) || PyTuple_GET_SIZE(texts) > cap) return plan_error("names");
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(texts); i++) {
        Py_ssize_t n;
        const char *t = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(texts, i), &n);
        if (t == NULL) return -1;
        out[i] = (Name){t, (size_t)n};
    }
    return (int)PyTuple_GET_SIZE(texts);
}

/* (name, text) pairs: the names into `names`, the second items into `values`. */
static int plan_pairs(PyObject *pairs, Name *names, PyObject **values, int cap) {
    PyObject *firsts = PyTuple_New(PyTuple_Check(pairs) ? PyTuple_GET_SIZE(pairs) : 0);
    if (firsts == NULL) return -1;
    int n = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(firsts); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) n = -1;
        if (n < 0) break;
        PyTuple_SET_ITEM(firsts, i, Py_NewRef(PyTuple_GET_ITEM(pair, 0)));
        values[i] = PyTuple_GET_ITEM(pair, 1);
    }
    n = n < 0 ? plan_error("pairs") : plan_names(firsts, names, cap);
    Py_DECREF(firsts); /* the pairs keep the texts alive */
    return n;
}

static int plan_key(Plan *p, PlanKey *k, PyObject *entry, const Name *types) {
    PyObject *key, *slots;
    if (!PyArg_ParseTuple(entry, "UiO!", &key, &k->role, &PyTuple_Type, &slots)) return -1;
    if ((k->text = PyUnicode_AsUTF8AndSize(key, &k->len)) == NULL) return -1;
    k->type_at = text_index(k->text, (size_t)k->len, types, p->ntypes);
    if ((k->role & ROLE_TYPE) && k->type_at == p->ntypes) return plan_error("an unknown type");
    if (PyTuple_GET_SIZE(slots) > PLAN_SLOTS) return plan_error("too many slots");
    k->nslots = (int)PyTuple_GET_SIZE(slots);
    for (int j = 0; j < k->nslots; j++) {
        PlanSlot *slot = &k->slots[j];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(slots, j), "iii", &slot->field, &slot->rank,
                              &slot->check))
            return -1;
        if (slot->field < 0 || slot->field >= NFIELDS || slot->rank < 0 ||
            slot->check < CHECK_TEXT || slot->check > CHECK_VALUE)
            return plan_error("a slot out of range");
        if (slot->field == F_INPUT_VALUE && k->len == 11 && !memcmp(k->text, "input.value", 11))
            p->input_value = slot->rank;
        if (slot->field == F_OUTPUT_VALUE && k->len == 12 && !memcmp(k->text, "output.value", 12))
            p->output_value = slot->rank;
    }
    return 0;
}

static int plan_fill(Plan *p, PyObject *plan) {
    PyObject *fields, *keys, *types, *prefixes, *names, *native;
    Name type_names[PLAN_TYPES];
    if (!PyArg_ParseTuple(plan, "O!O!O!O!O!O!", &PyTuple_Type, &fields, &PyTuple_Type, &keys,
                          &PyTuple_Type, &types, &PyTuple_Type, &prefixes, &PyTuple_Type,
                          &names, &PyTuple_Type, &native))
        return -1;
    if (PyTuple_GET_SIZE(fields) != NFIELDS) return plan_error("fields");
    for (int f = 0; f < NFIELDS; f++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields, f));
        if (name == NULL || strcmp(name, FIELD_NAMES[f]) != 0) return plan_error("fields");
    }
    if (PyTuple_GET_SIZE(keys) > PLAN_KEYS) return plan_error("too many keys");
    if ((p->ntypes = plan_pairs(types, type_names, p->types, PLAN_TYPES)) < 0 ||
        (p->nnative = plan_pairs(native, p->native, p->native_types, 32)) < 0 ||
        (p->nprefixes = plan_names(prefixes, p->prefixes, 16)) < 0 ||
        (p->nnames = plan_names(names, p->names, 16)) < 0)
        return -1;
    for (int t = 0; t < p->ntypes; t++)
        if (!PyDict_CheckExact(p->types[t])) return plan_error("types");
    p->nkeys = (int)PyTuple_GET_SIZE(keys);
    p->input_value = p->output_value = -1;
    for (int i = 0; i < p->nkeys; i++)
        if (plan_key(p, &p->keys[i], PyTuple_GET_ITEM(keys, i), type_names) < 0) return -1;
    qsort(p->keys, (size_t)p->nkeys, sizeof(PlanKey), plan_key_order);
    p->llm = PyUnicode_InternFromString("llm");
    p->agent = PyUnicode_InternFromString("agent");
    p->tool = PyUnicode_InternFromString("tool");
    p->chain = PyUnicode_InternFromString("chain");
    return p->llm && p->agent && p->tool && p->chain ? 0 : -1;
}

/* genai_plan((fields, keys, types, prefixes, names, native)) -> a capsule for
 * span_rows_json. fields: the view's field names; keys: (name, roles, ((field, rank,
 * check), ...)) for each attribute the reader looks at; types: (name, {text: type}) of
 * each typing attribute, in order; prefixes/names: what marks a span's attributes as a
 * convention's; native: (kind, type) of each kind that is a type of its own. */
static PyObject *genai_plan(PyObject *Py_UNUSED(self), PyObject *plan) {
    Plan *p = PyMem_Calloc(1, sizeof(Plan));
    if (p == NULL) return PyErr_NoMemory();
    p->owner = Py_NewRef(plan);
    PyObject *capsule = PyCapsule_New(p, "storage._rows.genai_plan", plan_free);
    if (capsule == NULL) {
        Py_DECREF(p->owner);
        PyMem_Free(p);
        return NULL;
    }
    if (plan_fill(p, plan) < 0) Py_CLEAR(capsule);
    return capsule;
}

static const PlanKey *plan_find(const Plan *p, const char *text, Py_ssize_t len) {
    int low = 0, high = p->nkeys - 1;
    while (low <= high) {
        int mid = (low + high) / 2;
        int c = by_bytes(p->keys[mid].text, p->keys[mid].len, text, len);
        if (c == 0) return &p->keys[mid];
        if (c < 0) low = mid + 1;
        else high = mid - 1;
    }
    return NULL;
}

/* Whether an attribute name (its raw bytes) marks the span as a convention's. */
static int plan_marks(const Plan *p, const Node *key, const unsigned char *text) {
    const char *t = (const char *)text + key->start;
    for (int i = 0; i < p->nprefixes; i++)
        if (key->len >= p->prefixes[i].len &&
            memcmp(t, p->prefixes[i].text, p->prefixes[i].len) == 0)
            return 1;
    return text_index(t, key->len, p->names, p->nnames) < p->nnames;
}

/* Whether a pair nested in the attributes (a kvlistValue's) has a name that marks: the
 * Python test reads the attributes' whole text. */
static int plan_marks_nested(const Plan *p, const Scan *s, uint32_t list) {
    for (uint32_t i = list + 1; i < NODE(s, list)->next; i++) {
        uint32_t key;
        if (NODE(s, i)->type == J_OBJECT && member_of(s, i, "key", &key) == OK && key &&
            NODE(s, key)->type == J_STRING && plan_marks(p, NODE(s, key), s->text))
            return 1;
    }
    return 0;
}

typedef struct {
    int rank; /* -1: no usable value (yet) */
    PyObject *value;
} Best;

typedef struct {
    Best best[NFIELDS];
    uint32_t types[PLAN_TYPES]; /* the text node of each typing attribute (0: none) */
    int marked, said, parameters;
    int structured; /* a value a CHECK_VALUE key gave as a structure (Python reads it) */
} Read;

/* Whether a string node's text is blank to str.isspace: 1 (blank or empty), 0, or -1
 * where only Python knows (non-ASCII bytes, and no other character that is no space). */
static int blank(const Scan *s, uint32_t value) {
    const Node *n = NODE(s, value);
    const unsigned char *t = s->text + n->start;
    int wide = 0;
    for (uint32_t k = 0; k < n->len; k++) {
        unsigned char c = t[k];
        if (c >= 0x80) {
            wide = 1;
            continue;
        }
        if (c != '\\') {
            if (c != ' ') return 0;
            continue;
        }
        c = t[++k]; /* the scanner let only orjson's escapes through */
        if (c == 'u') {
            unsigned char high = t[k + 3], low = t[k + 4];
            int code = (high - '0') * 16 + (low <= '9' ? low - '0' : low - 'a' + 10);
            k += 4;
            if (!((code >= 0x09 && code <= 0x0d) || code >= 0x1c)) return 0;
        } else if (c != 'f' && c != 'n' && c != 'r' && c != 't')
            return 0; /* \" \\ \b: no space */
    }
    return wide ? -1 : 1;
}

/* A text field's value: a str (new; Py_True for a field whose text no row holds, only
 * whether it is usable); NULL with *status OK when not usable (the reader skips it);
 * NULL with BAIL where Python must judge. */
static PyObject *usable_text(const Scan *s, int field, uint32_t name, uint32_t value,
                             int *status) {
    *status = OK;
    if (!NODE_IS(s, name, "stringValue") || NODE(s, value)->type != J_STRING) return NULL;
    int is_blank = blank(s, value);
    if (is_blank) {
        if (is_blank < 0) *status = BAIL;
        return NULL;
    }
    if (field == F_INPUT_VALUE || field == F_OUTPUT_VALUE || field == F_VERCEL_TEXT)
        return Py_NewRef(Py_True);
    return node_str(s, value);
}

/* genai/view.py's MAX_TOKENS: a count at or over it is not usable */
#define MAX_TOKENS 1000000000000LL

/* A count's value: a plain decimal intValue of up to 18 digits, under MAX_TOKENS; BAIL
 * otherwise (Python reads it then). */
static PyObject *usable_count(const Scan *s, uint32_t name, uint32_t value, int *status) {
    const Node *n = NODE(s, value);
    const unsigned char *t = s->text + n->start;
    *status = BAIL;
    if (!NODE_IS(s, name, "intValue") || n->type != J_STRING || n->len == 0 || n->len > 18 ||
        n->flags & J_ESCAPED)
        return NULL;
    long long v = 0;
    for (uint32_t k = 0; k < n->len; k++) {
        if (t[k] < '0' || t[k] > '9') return NULL;
        v = v * 10 + (t[k] - '0');
    }
    if (v >= MAX_TOKENS) return NULL;
    *status = OK;
    return PyLong_FromLongLong(v);
}

/* One attribute the plan names, into `read`: OK, BAIL or FAIL. */
static int plan_attribute(const Scan *s, const PlanKey *k, uint32_t value, Read *read) {
    if (NODE(s, value)->type != J_OBJECT || NODE(s, value)->count != 1) return BAIL;
    uint32_t name = value + 1, item = VALUE_OF(name);
    int status = OK;
    read->said |= (k->role & ROLE_SAYING) != 0;
    read->parameters |= (k->role & ROLE_PARAMETERS) != 0;
    if (k->role & ROLE_TYPE && NODE_IS(s, name, "stringValue") && NODE(s, item)->type == J_STRING)
        read->types[k->type_at] = item;
    for (int j = 0; j < k->nslots; j++) {
        const PlanSlot *slot = &k->slots[j];
        Best *b = &read->best[slot->field];
        if (b->rank >= 0 && b->rank <= slot->rank) continue;
        if (slot->check == CHECK_PYTHON) return BAIL;
        if (slot->check == CHECK_VALUE &&
            (NODE_IS(s, name, "kvlistValue") || NODE_IS(s, name, "arrayValue"))) {
            read->structured = 1;
            continue;
        }
        PyObject *found = slot->check != CHECK_COUNT
                              ? usable_text(s, slot->field, name, item, &status)
                              : usable_count(s, name, item, &status);
        if (found == NULL) {
            if (status != OK) return PyErr_Occurred() ? FAIL : status;
            continue;
        }
        Py_XSETREF(b->value, found);
        b->rank = slot->rank;
    }
    return OK;
}

/* Read the attributes the plan names: OK, BAIL or FAIL. */
static int plan_read(const Plan *p, const Scan *s, uint32_t list, Read *read) {
    uint64_t seen[PLAN_KEYS / 64] = {0};
    uint32_t item = list + 1;
    for (uint32_t i = 0; i < NODE(s, list)->count; i++, item = NODE(s, item)->next) {
        uint32_t key, value;
        if (member_of(s, item, "key", &key) != OK || member_of(s, item, "value", &value) != OK ||
            !key || !value || NODE(s, key)->type != J_STRING)
            return BAIL;
        if (!read->marked) read->marked = plan_marks(p, NODE(s, key), s->text);
        if (NODE(s, key)->flags & J_ESCAPED) continue; /* no name of the plan has an escape */
        const char *text = (const char *)s->text + NODE(s, key)->start;
        const PlanKey *k = plan_find(p, text, NODE(s, key)->len);
        if (k == NULL) continue;
        int at = (int)(k - p->keys);
        if (seen[at / 64] >> (at % 64) & 1) return BAIL; /* the last of a name counts */
        seen[at / 64] |= 1ULL << (at % 64);
        int status = plan_attribute(s, k, value, read);
        if (status != OK) return status;
    }
    if (!read->marked) read->marked = plan_marks_nested(p, s, list);
    return OK;
}

/* The type a typing attribute's text gives (borrowed; NULL: none, or an error). */
static PyObject *typed_as(PyObject *types, PyObject *text) {
    PyObject *found = PyDict_GetItemWithError(types, text);
    static const char *const cases[] = {"upper", "lower"};
    for (int c = 0; found == NULL && !PyErr_Occurred() && c < 2; c++) {
        PyObject *other = PyObject_CallMethod(text, cases[c], NULL);
        if (other == NULL) return NULL;
        found = PyDict_GetItemWithError(types, other);
        Py_DECREF(other);
    }
    return found;
}

/* The span's type from its typing attributes (borrowed; NULL: none, or an error). */
static PyObject *attribute_type(const Plan *p, const Scan *s, const Read *read) {
    for (int t = 0; t < p->ntypes; t++) {
        if (!read->types[t]) continue;
        PyObject *text = node_str(s, read->types[t]);
        if (text == NULL) return NULL;
        PyObject *found = typed_as(p->types[t], text);
        Py_DECREF(text);
        if (found != NULL || PyErr_Occurred()) return found;
    }
    return NULL;
}

/* A text field as the view gives it: cut to TEXT_CHARS characters (new; None when
 * absent). */
static PyObject *view_text(PyObject *text) {
    if (text == NULL) return Py_NewRef(Py_None);
    if (PyUnicode_GET_LENGTH(text) <= TEXT_CHARS) return Py_NewRef(text);
    return PyUnicode_Substring(text, 0, TEXT_CHARS);
}

/* Put a field of the row (which holds None there). */
static int put_field(PyObject *row, Py_ssize_t at, PyObject *value) {
    if (value == NULL) return -1;
    Py_SETREF(((PyTupleObject *)row)->ob_item[at], value);
    return 0;
}

/* The view's name: an agent's or tool's name attribute, else the span's name. */
static PyObject *view_name(PyObject *type, const Read *read, PyObject *span_name,
                           const Plan *p) {
    int field = type == p->agent ? F_AGENT : type == p->tool ? F_TOOL : -1;
    if (field < 0 && type != NULL && PyUnicode_Check(type)) /* a type not interned */
        field = PyUnicode_CompareWithASCIIString(type, "agent") == 0   ? F_AGENT
                : PyUnicode_CompareWithASCIIString(type, "tool") == 0 ? F_TOOL
                                                                       : -1;
    if (field < 0) return Py_NewRef(Py_None);
    if (read->best[field].rank >= 0) return view_text(read->best[field].value);
    return PyUnicode_GET_LENGTH(span_name) ? view_text(span_name) : Py_NewRef(Py_None);
}

/* Fill the row's GenAI fields from what was read, the type being `type` (borrowed). */
static int fill_row(const Plan *p, const Read *read, PyObject *type, PyObject *row) {
    const Best *b = read->best;
    if (put_field(row, R_TYPE, Py_NewRef(type)) < 0 ||
        put_field(row, R_NAME, view_name(type, read, PyTuple_GET_ITEM(row, 5), p)) < 0 ||
        put_field(row, R_MODEL, view_text(b[F_MODEL].value)) < 0 ||
        put_field(row, R_PROVIDER, view_text(b[F_PROVIDER].value)) < 0 ||
        put_field(row, R_USER, view_text(b[F_USER].value)) < 0)
        return -1;
    static const int tokens[] = {F_INPUT, F_OUTPUT, F_TOTAL, F_CACHE_READ, F_CACHE_WRITE,
                                 F_REASONING};
    for (int t = 0; t < 6; t++) {
        PyObject *count = b[tokens[t]].value;
        if (tokens[t] == F_TOTAL && count == NULL && (b[F_INPUT].value || b[F_OUTPUT].value)) {
            PyObject *zero = PyLong_FromLong(0);
            PyObject *in = b[F_INPUT].value ? b[F_INPUT].value : zero;
            PyObject *out = b[F_OUTPUT].value ? b[F_OUTPUT].value : zero;
            count = zero == NULL ? NULL : PyNumber_Add(in, out);
            Py_XDECREF(zero);
            if (count == NULL) return -1;
        } else
            count = Py_NewRef(count ? count : Py_None);
        if (put_field(row, R_TOKENS + t, count) < 0) return -1;
    }
    if (PyTuple_GET_ITEM(row, R_SESSION) == Py_None && b[F_SESSION].value != NULL)
        return put_field(row, R_SESSION, view_text(b[F_SESSION].value));
    return 0;
}

enum { GENAI_NONE, GENAI_FILLED, GENAI_PRICED, GENAI_PYTHON };

/* Whether a field's value read was given by the key of that rank. */
static int given_at(const Best *b, int field, int rank) {
    return b[field].value != NULL && b[field].rank == rank;
}

/* A span's GenAI facts into its row: GENAI_NONE (no convention describes it),
 * GENAI_FILLED, GENAI_PRICED (filled, and it has what a price needs: a model and
 * tokens), GENAI_PYTHON (Python reads it), or -1 with an exception set. `agent`: its
 * spangate.span.kind text node, for a span of the SDK's internal kind (else 0). */
static int genai_facts(const Plan *p, const Scan *s, uint32_t list, uint32_t agent,
                       PyObject *row) {
    Py_ssize_t size;
    const char *events = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 13), &size);
    if (events == NULL) return -1;
    static const char marker[] = "\"name\":\"gen_ai."; /* span_genai._EVENT_MARKER */
    int marked_events = size >= (Py_ssize_t)sizeof(marker) - 1 &&
                        memmem(events, (size_t)size, marker, sizeof(marker) - 1) != NULL;
    int native_at = agent && !(NODE(s, agent)->flags & J_ESCAPED)
                        ? name_index(s, agent, p->native, p->nnative)
                        : p->nnative;
    Read read = {.marked = 0, .said = 0, .parameters = 0, .structured = 0};
    for (int f = 0; f < NFIELDS; f++) read.best[f] = (Best){-1, NULL};
    memset(read.types, 0, sizeof(read.types));
    int status = OK;
    if (list && NODE(s, list)->type == J_ARRAY) status = plan_read(p, s, list, &read);
    const Best *b = read.best;
    int said = read.said || b[F_VERCEL_TEXT].value, result = GENAI_NONE;
    if (status == BAIL || (status == OK && marked_events && !said))
        result = GENAI_PYTHON; /* what the events say is read in Python */
    else if (status != OK)
        result = -1;
    else if (read.marked || marked_events || native_at < p->nnative) {
        PyObject *type = native_at < p->nnative ? p->native_types[native_at]
                                                : attribute_type(p, s, &read);
        int tokens = 0;
        for (int f = F_INPUT; f <= F_REASONING; f++) tokens |= b[f].rank >= 0;
        if (type == NULL && PyErr_Occurred())
            result = -1;
        else if (type == NULL && (b[F_MODEL].value || tokens || said))
            type = p->llm;
        else if (type == NULL && (given_at(b, F_INPUT_VALUE, p->input_value) ||
                                  given_at(b, F_OUTPUT_VALUE, p->output_value)))
            type = p->chain; /* OpenInference's span of no kind (genai/view.py) */
        if (result == GENAI_NONE && read.structured && type == NULL)
            result = GENAI_PYTHON; /* whether a structure makes it a chain: Python's */
        else if (result == GENAI_NONE && type != NULL && read.parameters && !b[F_MODEL].value)
            result = GENAI_PYTHON; /* the model its parameters' JSON names: Python's */
        else if (type != NULL && result == GENAI_NONE)
            result = fill_row(p, &read, type, row) < 0 ? -1
                     : b[F_MODEL].value && (b[F_INPUT].value || b[F_OUTPUT].value) ? GENAI_PRICED
                                                                                 : GENAI_FILLED;
    }
    /* a span no convention describes keeps the user its attributes name (the view's
     * reading of user.id and enduser.id), and the session (gen_ai.conversation.id)
     * when it has none: span_genai.with_user */
    if (result == GENAI_NONE && b[F_USER].value != NULL &&
        put_field(row, R_USER, view_text(b[F_USER].value)) < 0)
        result = -1;
    if (result == GENAI_NONE && PyTuple_GET_ITEM(row, R_SESSION) == Py_None &&
        b[F_SESSION].value != NULL && put_field(row, R_SESSION, view_text(b[F_SESSION].value)) < 0)
        result = -1;
    for (int f = 0; f < NFIELDS; f++) Py_XDECREF(read.best[f].value);
    return result;
}
