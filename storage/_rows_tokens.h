/* The tokens of each trace's spans, for the attribute index (part of _rows.c, included
 * by _rows_json.h): storage/trace_facets.py's documents, made as the rows are built.
 *
 * A trace's document holds each distinct token of its spans once: for each span, its
 * name's token (name_token's of the project and name); for each attribute, its key's
 * token (key_token's of the project and key) and that XOR the value's hash (hash_text's
 * of the value's JSON text, as orjson.dumps writes the AnyValue it reads). The three are
 * Python's (storage/trace_facets.py, storage/attribute_hashes.py), called once a body for
 * each short text (kept by a hash of its bytes), so that the hashing is defined in one
 * place (SPANGATE_PURE_PYTHON=storage._rows_tokens leaves the documents to Python).
 * What it buys end to end: docs/benchmarks.md, "What each C extension buys".
 *
 * The answer is each trace's tokens as bytes, 8 a token, big-endian, in the order the
 * traces were met; Python writes them as its documents are written.
 */

/* A hash of bytes, for the slots of the texts kept (`slots` of them). */
static size_t slot_of(const char *text, Py_ssize_t len, size_t slots) {
    size_t h = (size_t)len * 2654435761u;
    for (Py_ssize_t k = 0; k < len; k++) h = (h ^ (unsigned char)text[k]) * 16777619u;
    return h % slots;
}

/* The value hashes kept from body to body (a key's or a name's token depends on the
 * project, a value's hash does not): token counts, models, flags repeat across a
 * worker's batches. Kept for one hash_text, the last one given (the worker gives one). */
#define VALUES_KEPT 4096
static KeptInt *kept_values;
static PyObject *kept_values_of;

static KeptInt *values_kept(PyObject *hash_text) {
    if (kept_values == NULL && (kept_values = PyMem_Calloc(VALUES_KEPT, sizeof(KeptInt))) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (kept_values_of != hash_text) {
        memset(kept_values, 0, VALUES_KEPT * sizeof(KeptInt));
        Py_XSETREF(kept_values_of, Py_NewRef(hash_text));
    }
    return kept_values;
}

/* `made(first, str)` (`made(str)` when `first` is NULL) of the text of these UTF-8 bytes
 * (`str` when given, else decoded from them), an int of 64 bits; kept for a short text:
 * keys, names and short values repeat from span to span, and each is made once a body. */
static int kept_int(KeptInt *kept, size_t slots, const char *text, Py_ssize_t len,
                    PyObject *made, PyObject *first, PyObject *str, long long *out) {
    KeptInt *slot = kept != NULL && len <= HASHED_KEPT ? &kept[slot_of(text, len, slots)] : NULL;
    if (slot != NULL && slot->kept && slot->len == len &&
        memcmp(slot->text, text, (size_t)len) == 0) {
        *out = slot->value;
        return OK;
    }
    PyObject *decoded = str == NULL ? PyUnicode_DecodeUTF8(text, len, NULL) : Py_NewRef(str);
    if (decoded == NULL) return FAIL;
    PyObject *args[] = {NULL, first, decoded};
    PyObject *answer =
        first == NULL
            ? PyObject_Vectorcall(made, args + 2, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL)
            : PyObject_Vectorcall(made, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(decoded);
    if (answer == NULL) return FAIL;
    if (!PyLong_Check(answer)) {
        Py_DECREF(answer);
        PyErr_SetString(PyExc_TypeError, "the token makers must return an int");
        return FAIL;
    }
    long long value = PyLong_AsLongLong(answer);
    Py_DECREF(answer);
    if (value == -1 && PyErr_Occurred()) return FAIL;
    /* the values kept may have been taken over by another hash_text while `made` ran
       (another thread's call, or one `made` made): its table then keeps none of this */
    if (slot != NULL && (kept != kept_values || kept_values_of == made)) {
        memcpy(slot->text, text, (size_t)len);
        slot->len = len;
        slot->value = value;
        slot->kept = 1;
    }
    *out = value;
    return OK;
}

static size_t token_slot(long long token, size_t size) {
    return (size_t)(((unsigned long long)token * 0x9E3779B97F4A7C15ULL) >> 32) & (size - 1);
}

static int set_add(TokenSet *set, long long token) {
    if (token == 0) {
        set->zero = 1;
        return OK;
    }
    if (2 * (set->count + 1) > set->size) {
        size_t size = set->size ? 2 * set->size : 64;
        long long *slots = PyMem_Calloc(size, sizeof(long long));
        if (slots == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        for (size_t k = 0; k < set->size; k++) {
            long long kept = set->slots[k];
            if (kept == 0) continue;
            size_t at = token_slot(kept, size);
            while (slots[at] != 0) at = (at + 1) & (size - 1);
            slots[at] = kept;
        }
        PyMem_Free(set->slots);
        set->slots = slots;
        set->size = size;
    }
    size_t at = token_slot(token, set->size);
    while (set->slots[at] != 0) {
        if (set->slots[at] == token) return OK;
        at = (at + 1) & (set->size - 1);
    }
    set->slots[at] = token;
    set->count++;
    return OK;
}

/* The set of a trace's tokens (the last one's again while its spans come together). */
static TokenSet *set_of(Rows *r, PyObject *trace_id) {
    if (r->last_set >= 0 && r->sets[r->last_set].trace_id == trace_id) return &r->sets[r->last_set];
    PyObject *at = PyDict_GetItemWithError(r->set_at, trace_id);
    if (at != NULL) {
        r->last_set = PyLong_AsSsize_t(at);
        return &r->sets[r->last_set];
    }
    if (PyErr_Occurred()) return NULL;
    if (r->nsets == r->sets_size) {
        Py_ssize_t size = r->sets_size ? 2 * r->sets_size : 16;
        TokenSet *sets = PyMem_Realloc(r->sets, (size_t)size * sizeof(TokenSet));
        if (sets == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        r->sets = sets;
        r->sets_size = size;
    }
    PyObject *position = PyLong_FromSsize_t(r->nsets);
    int put = position == NULL ? -1 : PyDict_SetItem(r->set_at, trace_id, position);
    Py_XDECREF(position);
    if (put < 0) return NULL;
    r->sets[r->nsets] = (TokenSet){Py_NewRef(trace_id), NULL, 0, 0, 0, 0};
    r->last_set = r->nsets++;
    return &r->sets[r->last_set];
}

/* Add the tokens of an attribute list to a trace's set: a key's and the key's XOR its
 * value's hash for each. `checked`: the list was checked by the content hash's walk
 * (objects of an unescaped string key and an object value), as a span's is; a
 * resource's was not, and one of another shape is Python's (BAIL). */
static int list_tokens(Rows *r, const Scan *s, TokenSet *set, uint32_t list, int checked) {
    long long token, hash;
    if (list == 0 || NODE(s, list)->type != J_ARRAY) return OK;
    uint32_t item = list + 1;
    for (uint32_t k = 0; k < NODE(s, list)->count; k++, item = NODE(s, item)->next) {
        uint32_t key, value;
        if (!checked && (NODE(s, item)->type != J_OBJECT || NODE(s, item)->count != 2))
            return BAIL;
        if (member_of(s, item, "key", &key) != OK || member_of(s, item, "value", &value) != OK ||
            !key || !value) {
            if (!checked) return BAIL;
            PyErr_SetString(PyExc_ValueError, "an attribute the content hash accepted");
            return FAIL;
        }
        if (!checked && (NODE(s, key)->type != J_STRING || NODE(s, key)->flags & J_ESCAPED ||
                         NODE(s, value)->type != J_OBJECT))
            return BAIL;
        r->buf.len = 0;
        TRY(put_node(&r->buf, s, value));
        TRY(kept_int(r->keys, TEXTS_KEPT, (const char *)s->text + NODE(s, key)->start,
                     NODE(s, key)->len, r->key_token, r->project_id, NULL, &token));
        /* kept for this hash_text only: another thread's call may have given another */
        KeptInt *values = kept_values_of == r->hash_text ? r->hashes : NULL;
        TRY(kept_int(values, VALUES_KEPT, r->buf.data, (Py_ssize_t)r->buf.len, r->hash_text, NULL,
                     NULL, &hash));
        TRY(set_add(set, token));
        TRY(set_add(set, token ^ hash));
    }
    return OK;
}

/* Add a row's tokens (its name's, its attributes', and its resource's attributes' once a
 * trace and resource) to its trace's set. */
static int row_tokens(Rows *r, const Scan *s, PyObject *row, uint32_t name, uint32_t list) {
    TokenSet *set = set_of(r, PyTuple_GET_ITEM(row, 1));
    if (set == NULL) return FAIL;
    long long token;
    const Node *n = NODE(s, name);
    TRY(kept_int(r->names, TEXTS_KEPT, (const char *)s->text + n->start, n->len, r->name_token,
                 r->project_id, PyTuple_GET_ITEM(row, 5), &token));
    TRY(set_add(set, token));
    TRY(list_tokens(r, s, set, list, 1));
    if (r->resource_attributes && set->resource != r->resource_attributes) {
        TRY(list_tokens(r, s, set, r->resource_attributes, 0));
        set->resource = r->resource_attributes;
    }
    return OK;
}

/* Each trace's tokens: [(trace_id, bytes)], 8 bytes a token, big-endian. */
static PyObject *token_documents(Rows *r) {
    PyObject *documents = PyList_New(r->nsets);
    if (documents == NULL) return NULL;
    for (Py_ssize_t k = 0; k < r->nsets; k++) {
        TokenSet *set = &r->sets[k];
        PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(set->count + set->zero) * 8);
        if (bytes == NULL) {
            Py_DECREF(documents);
            return NULL;
        }
        unsigned char *out = (unsigned char *)PyBytes_AS_STRING(bytes);
        if (set->zero) {
            memset(out, 0, 8);
            out += 8;
        }
        for (size_t at = 0; at < set->size; at++) {
            unsigned long long token = (unsigned long long)set->slots[at];
            if (token == 0) continue;
            for (int b = 7; b >= 0; b--, token >>= 8) out[b] = (unsigned char)token;
            out += 8;
        }
        PyObject *document = PyTuple_Pack(2, set->trace_id, bytes);
        Py_DECREF(bytes);
        if (document == NULL) {
            Py_DECREF(documents);
            return NULL;
        }
        PyList_SET_ITEM(documents, k, document);
    }
    return documents;
}

static void free_sets(Rows *r) {
    for (Py_ssize_t k = 0; k < r->nsets; k++) {
        Py_DECREF(r->sets[k].trace_id);
        PyMem_Free(r->sets[k].slots);
    }
    PyMem_Free(r->sets);
    PyMem_Free(r->keys);
    Py_XDECREF(r->set_at);
}
