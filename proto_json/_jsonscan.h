/* A strict JSON scanner into a flat array of nodes, for bytes spangate itself wrote.
 *
 * No Python objects are made: each node records its kind and where its text is.
 * It accepts RFC 8259 JSON whose strings are escaped as orjson escapes them (\" \\ \b
 * \f \n \r \t and \u00xx for other controls; UTF-8 otherwise), so that a string's raw
 * bytes are exactly what orjson would write for its value. Anything else, including
 * valid JSON written another way, is refused (SCAN_OTHER): the caller then parses with
 * orjson, which is the reference. A scan with `any_escape` set (genai/_said.c, which
 * reads JSON that clients wrote) accepts every escape JSON has but a lone surrogate,
 * which orjson refuses; a string's raw bytes are then not its value's.
 *
 * Scanning touches no Python object and takes its memory from PyMem_Raw*, so the row
 * builder runs it with the GIL let go (scan_document_released): the worker's writer
 * thread binds and commits its rows meanwhile instead of waiting for the GIL.
 */
#ifndef SPANGATE_JSONSCAN_H
#define SPANGATE_JSONSCAN_H

#include "_jsonbuf.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>

enum { J_OBJECT, J_ARRAY, J_STRING, J_INT, J_FLOAT, J_TRUE, J_FALSE, J_NULL };
#define J_ESCAPED 1 /* a string with at least one escape */
/* A value whose text is what orjson.dumps(orjson.loads(text), option=OPT_SORT_KEYS)
 * writes: no floats (orjson may write them otherwise), integers of 64 bits other than
 * "-0", every object's keys unescaped and in strictly ascending order (so none is
 * repeated). Its text can then be copied as it is where it would be written anew.
 * Marked where SCAN_MARKS_CANONICAL is defined before this file is included (the row
 * builder); elsewhere (the collector's converters) the marking compiles to nothing. */
#define J_CANONICAL 2
#ifdef SCAN_MARKS_CANONICAL
#define CANONICAL_MARK J_CANONICAL
#else
#define CANONICAL_MARK 0
#endif
/* Deeper than the deepest a request can be whose values are nested as deep as the
 * converters take them (values.py's MAX_DEPTH, 32): an event's attribute (12 levels of
 * OTLP/JSON or canonical envelope) holding 32 maps, each 4 levels deep. */
#define MAX_SCAN_DEPTH 160
#define J_UNSURE 4 /* a float that may overflow: checked once the GIL is held again */

typedef struct {
    uint8_t type;
    uint8_t flags;
    uint32_t start; /* strings: after the opening quote; others: first byte */
    uint32_t len;   /* strings: raw content bytes; containers: their whole text */
    uint32_t count; /* members of an object, items of an array */
    uint32_t next;  /* the index of the node after this one's subtree */
} Node;

typedef struct {
    const unsigned char *text;
    Py_ssize_t size, at;
    Node *nodes;
    uint32_t count, cap;
    uint32_t unsure; /* J_UNSURE floats */
    uint8_t any_escape; /* accept every escape JSON has (\/, \uXXXX), not orjson's alone */
} Scan;

#define SCAN_OTHER BAIL

/* Skip whitespace; whether there was any. */
static inline int skip_space(Scan *s) {
    Py_ssize_t from = s->at;
    while (s->at < s->size) {
        unsigned char c = s->text[s->at];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        s->at++;
    }
    return s->at != from;
}

static int new_node(Scan *s, uint8_t type, uint32_t *index) {
    if (s->count == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 1024;
        Node *nodes = PyMem_RawRealloc(s->nodes, sizeof(Node) * cap);
        if (nodes == NULL) return FAIL; /* out of memory: raised by scan_document */
        s->nodes = nodes;
        s->cap = cap;
    }
    *index = s->count++;
    Node *n = &s->nodes[*index];
    n->type = type;
    n->flags = CANONICAL_MARK; /* strings and literals keep it; numbers and containers see */
    n->start = (uint32_t)s->at;
    n->len = 0;
    n->count = 0;
    return OK;
}

/* The length of a valid UTF-8 sequence starting at p (0 when invalid). */
static inline int utf8_length(const unsigned char *p, Py_ssize_t left) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* past U+10FFFF */
        return 4;
    }
    return 0;
}

#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR_STRINGS 1
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* A mark in the high bit of each of the 8 bytes at p that a string cannot pass over
 * as it is: a quote, a backslash, a control or a non-ASCII byte. The lowest mark is
 * exact (the bit tricks may also mark bytes after it, which is harmless). */
static inline uint64_t special_bytes(const unsigned char *p) {
    uint64_t v, quote, slash;
    memcpy(&v, p, 8);
    quote = v ^ (ONES * '"');
    slash = v ^ (ONES * '\\');
    return (((quote - ONES) & ~quote) | ((slash - ONES) & ~slash) | ((v - ONES * 0x20) & ~v) |
            v) &
           HIGHS;
}
#endif

/* The value of 4 hex digits at p (-1 when they are not). */
static inline long hex4(const unsigned char *p) {
    long v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = p[k];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The bytes of a \uXXXX escape at p (12 for a surrogate pair; 0 when it is none, or a
 * lone surrogate, which orjson refuses), and its code point into *code when given. */
static inline int u_escape(const unsigned char *p, Py_ssize_t left, long *code) {
    long high = left >= 6 ? hex4(p + 2) : -1;
    if (high < 0 || (high >= 0xDC00 && high <= 0xDFFF)) return 0;
    if (high < 0xD800 || high > 0xDBFF) {
        if (code) *code = high;
        return 6;
    }
    long low = left >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
    if (low < 0xDC00 || low > 0xDFFF) return 0;
    if (code) *code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
    return 12;
}

static inline int u_escape_width(const unsigned char *p, Py_ssize_t left) {
    return u_escape(p, left, NULL);
}

static int scan_string(Scan *s, uint32_t *index) {
    s->at++; /* the opening quote */
    TRY(new_node(s, J_STRING, index)); /* canonical: escapes are as orjson's, or refused */
    const unsigned char *t = s->text;
    while (s->at < s->size) {
#ifdef SWAR_STRINGS
        if (s->at + 8 <= s->size) { /* 8 plain bytes at a time, to the next special one */
            uint64_t marks = special_bytes(t + s->at);
            if (marks == 0) {
                s->at += 8;
                continue;
            }
            s->at += __builtin_ctzll(marks) >> 3;
        }
#endif
        unsigned char c = t[s->at];
        if (c == '"') {
            Node *n = &s->nodes[*index];
            n->len = (uint32_t)(s->at - n->start);
            n->next = s->count;
            s->at++;
            return OK;
        }
        if (c == '\\') {
            s->nodes[*index].flags |= J_ESCAPED;
            if (s->at + 1 >= s->size) return SCAN_OTHER;
            unsigned char e = t[s->at + 1];
            if (e == '"' || e == '\\' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                e == 't' || (e == '/' && s->any_escape)) {
                s->at += 2;
                continue;
            }
            if (e == 'u' && s->any_escape) {
                int width = u_escape_width(t + s->at, s->size - s->at);
                if (width == 0) return SCAN_OTHER;
                s->at += width;
                continue;
            }
            /* \u00xx for a control that has no short escape, lowercase, as orjson writes */
            if (e != 'u' || s->at + 5 >= s->size || t[s->at + 2] != '0' ||
                t[s->at + 3] != '0' || (t[s->at + 4] != '0' && t[s->at + 4] != '1'))
                return SCAN_OTHER;
            unsigned char low = t[s->at + 5];
            int value = (t[s->at + 4] - '0') * 16 +
                        (low >= '0' && low <= '9' ? low - '0'
                         : low >= 'a' && low <= 'f' ? low - 'a' + 10
                                                    : -100);
            if (value < 0 || value == '\b' || value == '\f' || value == '\n' ||
                value == '\r' || value == '\t')
                return SCAN_OTHER;
            s->at += 6;
            continue;
        }
        if (c < 0x20) return SCAN_OTHER;
        int length = utf8_length(t + s->at, s->size - s->at);
        if (length == 0) return SCAN_OTHER;
        s->at += length;
    }
    return SCAN_OTHER;
}

/* Whether an integer's text (as scanned) is one of 64 bits, and not "-0". */
static inline int int64_text(const unsigned char *t, Py_ssize_t len) {
    int negative = t[0] == '-';
    Py_ssize_t digits = len - negative;
    if (negative && digits == 1 && t[1] == '0') return 0;
    if (digits < 19) return 1;
    return digits == 19 &&
           memcmp(t + negative, negative ? "9223372036854775808" : "9223372036854775807",
                  19) <= 0;
}

/* Floats whose value is surely below this power of ten are finite (DBL_MAX is about
 * 1.8e308); the others are read once the GIL is held again (scan_checked). */
#define MAX_FLOAT_MAGNITUDE 300

/* For a valid JSON number's text, n such that its absolute value is below 10^n: its
 * integer digits plus its exponent (an exponent past 6 digits counts as a huge one). */
static inline long magnitude(const unsigned char *t, Py_ssize_t len) {
    Py_ssize_t at = t[0] == '-', digits = 0;
    while (at < len && t[at] >= '0' && t[at] <= '9') at++, digits++;
    while (at < len && t[at] != 'e' && t[at] != 'E') at++;
    if (at++ == len) return (long)digits;
    int negative = at < len && t[at] == '-';
    if (at < len && (t[at] == '+' || t[at] == '-')) at++;
    long exponent = 0;
    for (int n = 0; at < len; at++, n++) {
        if (n == 6) return negative ? (long)digits : LONG_MAX;
        exponent = exponent * 10 + (t[at] - '0');
    }
    return (long)digits + (negative ? -exponent : exponent);
}

static int scan_number(Scan *s, uint32_t *index) {
    TRY(new_node(s, J_INT, index));
    const unsigned char *t = s->text;
    Py_ssize_t at = s->at;
    if (at < s->size && t[at] == '-') at++;
    if (at >= s->size) return SCAN_OTHER;
    if (t[at] == '0') {
        at++;
    } else if (t[at] >= '1' && t[at] <= '9') {
        while (at < s->size && t[at] >= '0' && t[at] <= '9') at++;
    } else {
        return SCAN_OTHER;
    }
    int is_float = 0;
    if (at < s->size && t[at] == '.') {
        is_float = 1;
        Py_ssize_t digits = ++at;
        while (at < s->size && t[at] >= '0' && t[at] <= '9') at++;
        if (at == digits) return SCAN_OTHER;
    }
    if (at < s->size && (t[at] == 'e' || t[at] == 'E')) {
        is_float = 1;
        at++;
        if (at < s->size && (t[at] == '+' || t[at] == '-')) at++;
        Py_ssize_t digits = at;
        while (at < s->size && t[at] >= '0' && t[at] <= '9') at++;
        if (at == digits) return SCAN_OTHER;
    }
    Py_ssize_t len = at - s->at;
    /* past 64 bits orjson reads a double, or refuses */
    if (!is_float && len > 20) return SCAN_OTHER;
    int unsure = is_float && magnitude(t + s->at, len) > MAX_FLOAT_MAGNITUDE;
    s->unsure += unsure;
    Node *n = &s->nodes[*index];
    if (n->flags && (is_float || !int64_text(t + s->at, len))) n->flags = 0;
    if (unsure) n->flags = J_UNSURE;
    n->type = is_float ? J_FLOAT : J_INT;
    n->len = (uint32_t)len;
    n->next = s->count;
    s->at = at;
    return OK;
}

static int scan_value(Scan *s, int depth, uint32_t *index);

static inline int scan_literal(Scan *s, const char *word, uint8_t type, uint32_t *index) {
    Py_ssize_t n = (Py_ssize_t)strlen(word); /* folded: always a literal */
    if (s->size - s->at < n || memcmp(s->text + s->at, word, (size_t)n) != 0)
        return SCAN_OTHER;
    TRY(new_node(s, type, index));
    s->nodes[*index].len = (uint32_t)n;
    s->nodes[*index].next = s->count;
    s->at += n;
    return OK;
}

/* Whether key string node `a` sorts strictly before `b` (by UTF-8 bytes: code points). */
static inline int keys_ascending(const Scan *s, uint32_t a, uint32_t b) {
    const Node *x = &s->nodes[a], *y = &s->nodes[b];
    if (x->len && y->len && s->text[x->start] != s->text[y->start]) /* most keys differ */
        return s->text[x->start] < s->text[y->start];
    uint32_t n = x->len < y->len ? x->len : y->len;
    int order = memcmp(s->text + x->start, s->text + y->start, n);
    return order < 0 || (order == 0 && x->len < y->len);
}

static int scan_container(Scan *s, int depth, uint32_t *index) {
    int object = s->text[s->at] == '{';
    if (depth >= MAX_SCAN_DEPTH) return SCAN_OTHER;
    TRY(new_node(s, object ? J_OBJECT : J_ARRAY, index));
    s->at++;
    uint32_t count = 0, child, key = 0;
    uint8_t canonical = CANONICAL_MARK; /* and no whitespace inside, to be copied as is */
    if (skip_space(s)) canonical = 0;
    if (s->at < s->size && s->text[s->at] == (object ? '}' : ']')) {
        s->at++;
    } else {
        for (;;) {
            if (object) {
                if (skip_space(s)) canonical = 0;
                if (s->at >= s->size || s->text[s->at] != '"') return SCAN_OTHER;
                TRY(scan_string(s, &child));
                if (canonical && (s->nodes[child].flags & J_ESCAPED ||
                                  (count && !keys_ascending(s, key, child))))
                    canonical = 0;
                key = child;
                if (skip_space(s)) canonical = 0;
                if (s->at >= s->size || s->text[s->at] != ':') return SCAN_OTHER;
                s->at++;
            }
            if (CANONICAL_MARK && skip_space(s)) canonical = 0; /* scan_value would skip it */
            TRY(scan_value(s, depth + 1, &child));
            if (canonical) canonical = s->nodes[child].flags & J_CANONICAL;
            count++;
            if (skip_space(s)) canonical = 0;
            if (s->at >= s->size) return SCAN_OTHER;
            unsigned char c = s->text[s->at++];
            if (c == ',') continue;
            if (c == (object ? '}' : ']')) break;
            return SCAN_OTHER;
        }
    }
    Node *n = &s->nodes[*index];
    n->flags = canonical;
    n->count = count;
    n->len = (uint32_t)(s->at - n->start);
    n->next = s->count;
    return OK;
}

static int scan_value(Scan *s, int depth, uint32_t *index) {
    skip_space(s);
    if (s->at >= s->size) return SCAN_OTHER;
    unsigned char c = s->text[s->at];
    if (c == '{' || c == '[') return scan_container(s, depth, index);
    if (c == '"') return scan_string(s, index);
    if (c == 't') return scan_literal(s, "true", J_TRUE, index);
    if (c == 'f') return scan_literal(s, "false", J_FALSE, index);
    if (c == 'n') return scan_literal(s, "null", J_NULL, index);
    return scan_number(s, index);
}

/* Scan a whole document (node 0 is its value) without the GIL: FAIL when out of memory,
 * with no exception set. The caller frees s->nodes (scan_free). */
static int scan_text(Scan *s, const char *text, Py_ssize_t size) {
    if (size > (Py_ssize_t)UINT32_MAX - 1) return SCAN_OTHER;
    s->text = (const unsigned char *)text;
    s->size = size;
    s->at = 0;
    if (s->cap == 0) { /* spans' JSON takes 9-10 bytes a node: room for all at once */
        uint32_t cap = (uint32_t)(size / 8) + 64;
        s->nodes = PyMem_RawMalloc(sizeof(Node) * cap);
        if (s->nodes == NULL) return FAIL;
        s->cap = cap;
    }
    uint32_t root;
    TRY(scan_value(s, 0, &root));
    skip_space(s);
    return s->at == s->size ? OK : SCAN_OTHER;
}

/* After scan_text, GIL held: out of memory raised, and SCAN_OTHER for a float that
 * overflows (orjson refuses it). */
static int scan_checked(Scan *s, int status) {
    if (status == FAIL) PyErr_NoMemory();
    for (uint32_t i = 0; status == OK && s->unsure && i < s->count; i++) {
        const Node *n = &s->nodes[i];
        if (n->type != J_FLOAT || !(n->flags & J_UNSURE)) continue;
        char copy[64];
        if (n->len >= sizeof(copy)) return SCAN_OTHER;
        memcpy(copy, s->text + n->start, n->len);
        copy[n->len] = '\0';
        double value = PyOS_string_to_double(copy, NULL, NULL);
        if (value == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return SCAN_OTHER;
        }
        if (!isfinite(value)) return SCAN_OTHER;
    }
    return status;
}

/* Scan a whole document (node 0 is its value), GIL held. */
static int scan_document(Scan *s, const char *text, Py_ssize_t size) {
    return scan_checked(s, scan_text(s, text, size));
}

/* Documents of at least this size are scanned with the GIL let go: below it, taking the
 * GIL back (behind a thread that has it) would cost more than the scan. */
#define SCAN_RELEASE_BYTES (64 * 1024)

/* scan_document, letting other threads run Python meanwhile when the text is large. */
static inline int scan_document_released(Scan *s, const char *text, Py_ssize_t size) {
    if (size < SCAN_RELEASE_BYTES) return scan_document(s, text, size);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = scan_text(s, text, size);
    Py_END_ALLOW_THREADS
    return scan_checked(s, status);
}

static void scan_free(Scan *s) {
    PyMem_RawFree(s->nodes);
    s->nodes = NULL;
}

/* The first node of an object member's value given its key node (key + 1). */
#define VALUE_OF(key) ((key) + 1)

/* Whether a string node's raw bytes equal `text` (an unescaped ASCII name). */
static inline int node_is(const Scan *s, uint32_t i, const char *text, size_t n) {
    const Node *node = &s->nodes[i];
    return node->len == n && memcmp(s->text + node->start, text, n) == 0;
}

#define NODE_IS(s, i, literal) node_is((s), (i), (literal), sizeof(literal) - 1)

/* The index in `names` of a string node's raw bytes; `count` when none is equal. */
static inline int name_index(const Scan *s, uint32_t i, const Name *names, int count) {
    return text_index((const char *)s->text + s->nodes[i].start, s->nodes[i].len, names, count);
}

/* The value of member `name` (n bytes) of an object node, 0 when absent; BAIL when
 * repeated. Called through member_of, whose strlen of a literal the compiler folds. */
static inline int member_of_n(const Scan *s, uint32_t object, const char *name, size_t n,
                              uint32_t *value) {
    uint32_t key = object + 1;
    *value = 0;
    for (uint32_t m = 0; m < s->nodes[object].count; m++) {
        if (node_is(s, key, name, n)) {
            if (*value) return BAIL;
            *value = VALUE_OF(key);
        }
        key = s->nodes[VALUE_OF(key)].next;
    }
    return OK;
}

#define member_of(s, object, name, value) \
    member_of_n((s), (object), (name), strlen(name), (value))

#endif
