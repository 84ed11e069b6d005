/* A growing byte buffer and the JSON pieces both C modules write with it.
 *
 * Strings are escaped as orjson escapes them (short escapes for \b \t \n \f \r, \u00xx
 * for other controls, UTF-8 left as is), so that bytes written here and bytes orjson
 * writes for the same value are identical: the content hash depends on it.
 */
#ifndef SPANGATE_JSONBUF_H
#define SPANGATE_JSONBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define OK 0
#define BAIL 1  /* not for the fast path: the caller takes the general one */
#define FAIL -1 /* a Python exception is set */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    PyObject *bytes; /* when set, data is this bytes object's buffer (see buf_for_bytes) */
} Buf;

static inline int grow(Buf *b, Py_ssize_t need) {
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < need) cap *= 2;
    if (b->bytes != NULL) {
        if (_PyBytes_Resize(&b->bytes, cap) != 0) { /* freed it, exception set */
            b->data = NULL;
            b->len = b->cap = 0;
            return FAIL;
        }
        b->data = PyBytes_AS_STRING(b->bytes);
        b->cap = cap;
        return OK;
    }
    char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    b->data = data;
    b->cap = cap;
    return OK;
}

/* Start an empty buffer that writes straight into a bytes object of `expected` bytes,
 * so that handing the result to Python copies nothing (see buf_take_bytes). */
static inline int buf_for_bytes(Buf *b, Py_ssize_t expected) {
    b->bytes = PyBytes_FromStringAndSize(NULL, expected > 0 ? expected : 1);
    if (b->bytes == NULL) return FAIL;
    b->data = PyBytes_AS_STRING(b->bytes);
    b->len = 0;
    b->cap = PyBytes_GET_SIZE(b->bytes);
    return OK;
}

/* The bytes written, as the bytes object itself (new reference; NULL with an exception). */
static inline PyObject *buf_take_bytes(Buf *b) {
    PyObject *bytes = b->bytes;
    b->bytes = NULL;
    b->data = NULL;
    if (bytes != NULL && _PyBytes_Resize(&bytes, b->len) != 0) bytes = NULL;
    b->len = b->cap = 0;
    return bytes;
}

static inline void buf_free(Buf *b) {
    if (b->bytes != NULL)
        Py_CLEAR(b->bytes);
    else
        PyMem_Free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static inline int put(Buf *b, const char *s, Py_ssize_t n) {
    if (n == 0) return OK; /* memcpy of nothing may still not be given NULL */
    if (b->cap - b->len < n && grow(b, n) != OK) return FAIL;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return OK;
}

#define PUT(b, literal) put((b), (literal), (Py_ssize_t)sizeof(literal) - 1)
#define TRY(call)                      \
    do {                               \
        int status_ = (call);          \
        if (status_ != OK) return status_; \
    } while (0)

static const char HEX[] = "0123456789abcdef";

/* A name and its length, for tables of names (members, kinds, enum values). */
typedef struct {
    const char *text;
    size_t len;
} Name;

#define NAME(literal) {(literal), sizeof(literal) - 1}

/* The index in `names` of the text s[0:n]; `count` when it is none of them. */
static inline int text_index(const char *s, size_t n, const Name *names, int count) {
    int c = 0;
    while (c < count && !(names[c].len == n && memcmp(s, names[c].text, n) == 0)) c++;
    return c;
}

/* Bytes a JSON string cannot hold as they are: controls, the quote and the backslash. */
static const unsigned char ESCAPED[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 0, 0, 1, ['\\'] = 1,
};

/* A JSON string literal for UTF-8 bytes (escaping quotes, backslashes and controls). */
static inline int put_escaped(Buf *b, const char *s, Py_ssize_t n) {
    if (b->cap - b->len < n + 2 && grow(b, n + 2) != OK) return FAIL;
    b->data[b->len++] = '"';
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!ESCAPED[c]) continue;
        TRY(put(b, s + run, i - run));
        run = i + 1;
        char esc[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]};
        switch (c) {
            case '"': TRY(PUT(b, "\\\"")); break;
            case '\\': TRY(PUT(b, "\\\\")); break;
            case '\n': TRY(PUT(b, "\\n")); break;
            case '\r': TRY(PUT(b, "\\r")); break;
            case '\t': TRY(PUT(b, "\\t")); break;
            case '\b': TRY(PUT(b, "\\b")); break;
            case '\f': TRY(PUT(b, "\\f")); break;
            default: TRY(put(b, esc, 6));
        }
    }
    TRY(put(b, s + run, n - run));
    return PUT(b, "\"");
}

static inline int put_u64(Buf *b, unsigned long long v) {
    char digits[24];
    int i = 24;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return put(b, digits + i, 24 - i);
}

static inline int put_i64(Buf *b, long long v) {
    if (v < 0) {
        TRY(PUT(b, "-"));
        return put_u64(b, (unsigned long long)(-(v + 1)) + 1);
    }
    return put_u64(b, (unsigned long long)v);
}

/* A string of 1 to 19 decimal digits, at most `maximum` (an unsigned OTLP integer, a
 * time in nanoseconds); BAIL for anything else, signs included. */
static inline int decimal_digits(const char *s, Py_ssize_t n, unsigned long long maximum,
                                 unsigned long long *out) {
    if (n == 0 || n > 19) return BAIL;
    unsigned long long v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return BAIL;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    if (v > maximum) return BAIL;
    *out = v;
    return OK;
}

/* An optionally negative decimal string of 1 to 18 digits (an OTLP intValue); longer
 * ones, which may not fit 64 bits, are left to the general path. */
static inline int signed_decimal(const char *s, Py_ssize_t n, long long *out) {
    Py_ssize_t i = n > 0 && s[0] == '-';
    if (n - i < 1 || n - i > 18) return BAIL;
    long long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return BAIL;
        v = v * 10 + (s[i] - '0');
    }
    *out = s[0] == '-' ? -v : v;
    return OK;
}

/* UTF-8 of an exact str; BAIL for anything else (or a lone surrogate). */
static inline int utf8_of(PyObject *o, const char **s, Py_ssize_t *n) {
    if (o == NULL || !PyUnicode_CheckExact(o)) return BAIL;
    *s = PyUnicode_AsUTF8AndSize(o, n);
    if (*s == NULL) {
        PyErr_Clear();
        return BAIL;
    }
    return OK;
}

static inline int put_str(Buf *b, PyObject *o) {
    const char *s;
    Py_ssize_t n;
    TRY(utf8_of(o, &s, &n));
    return put_escaped(b, s, n);
}

#endif
