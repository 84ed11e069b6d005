/* A text's distinct words, joined by spaces: what a span's text is stored and indexed as
 * (storage/text_words.py).
 *
 * What it buys end to end, its command and figures: docs/benchmarks.md, "What each C
 * extension buys". storage/text_words.py is the reference: the same words by a regular
 * expression, which the tests check this against.
 *
 * A word is a longest run of the characters str.isalnum() accepts (Python's `[^\W_]+`);
 * the caller case-folds the text first. Each distinct word of at most `max_bytes` bytes in
 * UTF-8 is given once, in the order of its first occurrence, one space between. Python's
 * regular expressions read a model call's 3 KB of text in about 94 us, this in 3.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A word seen: where it starts in the text and its length, in characters (a text is
 * at most 2**32 characters: the caller's are 100,000). */
typedef struct {
    uint32_t start;
    uint32_t length;
} Seen;

/* Py_UNICODE_ISALNUM asks four tables; the first 256 code points, most of a text, are
 * answered from this one (filled when the module loads). */
static unsigned char latin1_word[256];

static inline int is_word_char(Py_UCS4 ch) {
    return ch < 256 ? latin1_word[ch] : Py_UNICODE_ISALNUM(ch);
}

static inline Py_ssize_t utf8_length(Py_UCS4 ch) {
    return ch < 0x80 ? 1 : ch < 0x800 ? 2 : ch < 0x10000 ? 3 : 4;
}

/* The text's words (start, length) into `table`, each new one copied to `joined` after a
 * space (none before the first); the characters copied. One function a character width:
 * `joined` is of the text's width, and holds the text's length at least (each word but
 * the last is followed by a character that is none). */
#define SCAN(NAME, CHAR)                                                                   \
    static Py_ssize_t NAME(const CHAR *data, Py_ssize_t length, Py_ssize_t max_bytes,      \
                           Seen *table, size_t mask, CHAR *joined) {                       \
        Py_ssize_t at = 0;                                                                 \
        Py_ssize_t out = 0;                                                                \
        while (at < length) {                                                              \
            if (!is_word_char(data[at])) {                                                 \
                at++;                                                                      \
                continue;                                                                  \
            }                                                                              \
            Py_ssize_t start = at;                                                         \
            Py_ssize_t bytes = 0;                                                          \
            uint64_t hash = 1469598103934665603ULL; /* FNV-1a over the code points */      \
            for (; at < length && is_word_char(data[at]); at++) {                          \
                bytes += utf8_length(data[at]);                                            \
                hash = (hash ^ (uint64_t)data[at]) * 1099511628211ULL;                     \
            }                                                                              \
            if (bytes > max_bytes) {                                                       \
                continue;                                                                  \
            }                                                                              \
            uint32_t word = (uint32_t)(at - start);                                        \
            size_t slot = (size_t)(hash ^ (hash >> 29)) & mask;                            \
            int seen = 0;                                                                  \
            while (table[slot].length != 0) {                                              \
                if (table[slot].length == word &&                                          \
                    memcmp(data + table[slot].start, data + start, word * sizeof(CHAR)) == \
                        0) {                                                               \
                    seen = 1;                                                              \
                    break;                                                                 \
                }                                                                          \
                slot = (slot + 1) & mask;                                                  \
            }                                                                              \
            if (seen) {                                                                    \
                continue;                                                                  \
            }                                                                              \
            table[slot].start = (uint32_t)start;                                           \
            table[slot].length = word;                                                     \
            if (out != 0) {                                                                \
                joined[out++] = ' ';                                                       \
            }                                                                              \
            memcpy(joined + out, data + start, word * sizeof(CHAR));                       \
            out += word;                                                                   \
        }                                                                                  \
        return out;                                                                        \
    }

SCAN(scan_ucs1, Py_UCS1)
SCAN(scan_ucs2, Py_UCS2)
SCAN(scan_ucs4, Py_UCS4)

static PyObject *joined_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "joined_words(text: str, max_bytes: int)");
        return NULL;
    }
    Py_ssize_t max_bytes = PyLong_AsSsize_t(args[1]);
    if (max_bytes == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *text = args[0];
    if (PyUnicode_READY(text) < 0) {
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (length > (Py_ssize_t)UINT32_MAX - 2) {
        PyErr_SetString(PyExc_OverflowError, "text too long");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    /* Open addressing: a word is at most every other character, so a table of as many
     * slots as characters (a power of two) is at most half full. */
    size_t slots = 8;
    while (slots < (size_t)length + 2) {
        slots <<= 1;
    }
    Seen *table = PyMem_Calloc(slots, sizeof(Seen));
    void *joined = PyMem_Malloc((size_t)(length + 1) * (size_t)kind);
    if (table == NULL || joined == NULL) {
        PyMem_Free(table);
        PyMem_Free(joined);
        return PyErr_NoMemory();
    }
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t out;
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        out = scan_ucs1(data, length, max_bytes, table, slots - 1, joined);
        break;
    case PyUnicode_2BYTE_KIND:
        out = scan_ucs2(data, length, max_bytes, table, slots - 1, joined);
        break;
    default:
        out = scan_ucs4(data, length, max_bytes, table, slots - 1, joined);
    }
    PyMem_Free(table);
    /* of the narrowest width that holds its characters, as every str */
    PyObject *found = PyUnicode_FromKindAndData(kind, joined, out);
    PyMem_Free(joined);
    return found;
}

static PyMethodDef methods[] = {
    {"joined_words", (PyCFunction)(void (*)(void))joined_words, METH_FASTCALL,
     "A case-folded text's distinct words (runs of alphanumeric characters) of at most "
     "max_bytes bytes in UTF-8, in the order of their first occurrence, one space "
     "between."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "storage._words", NULL, 0, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__words(void) {
    for (Py_UCS4 ch = 0; ch < 256; ch++) {
        latin1_word[ch] = Py_UNICODE_ISALNUM(ch) ? 1 : 0;
    }
    return PyModule_Create(&module);
}
