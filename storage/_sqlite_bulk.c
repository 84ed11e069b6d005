/* executemany for SQLite without the sqlite3 module's per-row cost.
 *
 * What it buys end to end, its command and figures: docs/benchmarks.md, "What each C
 * extension buys". The worker's writes go through the sqlite3 module without it. What
 * the worker gains is that the rows are bound and stepped in chunks without the GIL, so
 * the thread decoding the next batch and this one's writes run together.
 *
 * Measured on this project's machines, the sqlite3 module spends about half of a
 * span upsert's time outside SQLite: each row's parameters are type-checked one by one,
 * every text is copied by SQLite (SQLITE_TRANSIENT), and the statement is looked up in
 * the statement cache and reset through several layers. Here the statement is prepared
 * once per call and each value is bound where it lies (SQLITE_STATIC: the rows, which
 * the caller holds, keep the texts alive until the call returns). Values are read in
 * chunks of rows with the GIL held, then bound and stepped without it: another thread
 * runs Python meanwhile (the worker decodes its next batch while this one is written).
 *
 * It works on the caller's sqlite3.Connection, inside the transaction the caller
 * opened, through the same SQLite library that connection uses: the functions are
 * looked up in the library the sqlite3 module loaded (no SQLite headers or library
 * needed at build time), and the handle is the first member of CPython's connection
 * object. That layout is private to CPython: the module refuses to load on a version
 * it was not tested on (TESTED_FROM to TESTED_BEFORE; storage/database.py says so at
 * start-up). `handle_file` lets Python check the handle against the connection's own
 * file name before trusting it; any doubt at import or at that check and the caller
 * keeps the sqlite3 module's executemany.
 *
 * Errors are raised as the sqlite3 module raises them: IntegrityError for a
 * constraint, OperationalError for busy, locked, I/O and full, DatabaseError for the
 * rest, ProgrammingError for a wrong number of parameters, OverflowError for an integer
 * past 64 bits, ProgrammingError for a value of no SQLite type.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

#define SQLITE_OK 0
#define SQLITE_BUSY 5
#define SQLITE_LOCKED 6
#define SQLITE_IOERR 10
#define SQLITE_FULL 13
#define SQLITE_CANTOPEN 14
#define SQLITE_CONSTRAINT 19
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_STATIC ((void (*)(void *))0)

static int (*p_prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
static int (*p_bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
static int (*p_bind_blob)(sqlite3_stmt *, int, const void *, int, void (*)(void *));
static int (*p_bind_int64)(sqlite3_stmt *, int, long long);
static int (*p_bind_double)(sqlite3_stmt *, int, double);
static int (*p_bind_null)(sqlite3_stmt *, int);
static int (*p_bind_parameter_count)(sqlite3_stmt *);
static const char *(*p_bind_parameter_name)(sqlite3_stmt *, int);
static int (*p_step)(sqlite3_stmt *);
static int (*p_reset)(sqlite3_stmt *);
static int (*p_finalize)(sqlite3_stmt *);
static const char *(*p_errmsg)(sqlite3 *);
static const char *(*p_db_filename)(sqlite3 *, const char *);

/* What CPython's sqlite3.Connection starts with (Modules/_sqlite/connection.h). */
typedef struct {
    PyObject_HEAD sqlite3 *db;
} ConnectionHead;

static PyObject *connection_type, *integrity_error, *operational_error, *database_error,
    *programming_error;

static sqlite3 *db_of(PyObject *connection) {
    int is_connection = PyObject_IsInstance(connection, connection_type);
    if (is_connection <= 0) {
        if (is_connection == 0)
            PyErr_SetString(PyExc_TypeError, "expected a sqlite3.Connection");
        return NULL;
    }
    sqlite3 *db = ((ConnectionHead *)connection)->db;
    if (db == NULL)
        PyErr_SetString(programming_error, "Cannot operate on a closed database.");
    return db;
}

static void raise_sqlite(sqlite3 *db, int rc) {
    int primary = rc & 0xff;
    PyObject *type = database_error;
    if (primary == SQLITE_CONSTRAINT)
        type = integrity_error;
    else if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_IOERR ||
             primary == SQLITE_FULL || primary == SQLITE_CANTOPEN)
        type = operational_error;
    PyErr_SetString(type, p_errmsg(db));
}

/* One parameter as read from its Python value, to be bound without the GIL. */
typedef struct {
    enum { V_NULL, V_TEXT, V_BLOB, V_INT, V_FLOAT } kind;
    int size;
    union {
        const char *data;
        long long number;
        double real;
    } as;
} Value;

/* Read one value; 0, or -1 with an exception set. */
static int read_value(Value *v, int at, PyObject *value) {
    if (value == Py_None) {
        v->kind = V_NULL;
    } else if (PyUnicode_Check(value)) {
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(value, &size);
        if (text == NULL)
            return -1;
        if (size > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "string longer than INT_MAX bytes");
            return -1;
        }
        v->kind = V_TEXT;
        v->as.data = text;
        v->size = (int)size;
    } else if (PyLong_Check(value)) { /* bool too, as 0 and 1, as the sqlite3 module */
        long long number = PyLong_AsLongLong(value);
        if (number == -1 && PyErr_Occurred())
            return -1;
        v->kind = V_INT;
        v->as.number = number;
    } else if (PyFloat_Check(value)) {
        v->kind = V_FLOAT;
        v->as.real = PyFloat_AS_DOUBLE(value);
    } else if (PyBytes_Check(value)) {
        if (PyBytes_GET_SIZE(value) > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "BLOB longer than INT_MAX bytes");
            return -1;
        }
        v->kind = V_BLOB;
        v->as.data = PyBytes_AS_STRING(value);
        v->size = (int)PyBytes_GET_SIZE(value);
    } else {
        PyErr_Format(programming_error, "Error binding parameter %d: type '%.100s' is not "
                     "supported", at, Py_TYPE(value)->tp_name);
        return -1;
    }
    return 0;
}

static int bind(sqlite3_stmt *stmt, int at, const Value *v) {
    switch (v->kind) {
        case V_NULL:
            return p_bind_null(stmt, at);
        case V_TEXT:
            return p_bind_text(stmt, at, v->as.data, v->size, SQLITE_STATIC);
        case V_BLOB:
            return p_bind_blob(stmt, at, v->as.data, v->size, SQLITE_STATIC);
        case V_INT:
            return p_bind_int64(stmt, at, v->as.number);
        default:
            return p_bind_double(stmt, at, v->as.real);
    }
}

/* Rows read per pass: their values are read with the GIL held, then bound and stepped
 * without it, so another thread runs Python (decodes the next batch) meanwhile. */
#define CHUNK_ROWS 16384

/* Read rows [first, first + n) into `values` (`wanted` a row), holding each row as a
 * tuple in `held` (a tuple keeps its texts alive; a list is copied to one). 0; on error
 * -1 with an exception set, the rows read so far still held (`count_held` of them). */
static int read_rows(PyObject *rows, Py_ssize_t first, Py_ssize_t n, int wanted,
                            Value *values, PyObject **held, Py_ssize_t *count_held) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(rows, first + i);
        if (!PyTuple_Check(item) && !PyList_Check(item)) {
            PyErr_SetString(programming_error, "parameters are of unsupported type");
            return -1;
        }
        /* a tuple (a NamedTuple too) is held as it is; a list is copied to a tuple */
        PyObject *row = PyTuple_Check(item) ? Py_NewRef(item) : PySequence_Tuple(item);
        if (row == NULL)
            return -1;
        held[(*count_held)++] = row;
        if (PyTuple_GET_SIZE(row) != wanted) {
            PyErr_Format(programming_error,
                         "Incorrect number of bindings supplied. The current statement uses "
                         "%d, and there are %zd supplied.",
                         wanted, PyTuple_GET_SIZE(row));
            return -1;
        }
        for (int at = 0; at < wanted; at++) {
            if (read_value(&values[i * wanted + at], at + 1, PyTuple_GET_ITEM(row, at)) < 0)
                return -1;
        }
    }
    return 0;
}

/* The statements of one call: `unless` (or NULL) is a query run first for each row
 * `checked` names (every row when NULL), bound to the row's values it names (`?N` is the
 * row's Nth); a row it answers any row for is skipped. */
typedef struct {
    sqlite3_stmt *stmt, *unless;
    int wanted, unless_wanted;
    int *unless_params, unless_count; /* the parameters `unless` names (1-based) */
    const char *checked;              /* per row of the call: nonzero when `unless` runs */
    char *skipped;                    /* per row of the chunk: 1 when `unless` skipped it */
} Statements;

/* Whether two values read are the same (a text by where it lies: the same object). */
static int same_value(const Value *a, const Value *b) {
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
        case V_NULL:
            return 1;
        case V_TEXT:
        case V_BLOB:
            return a->as.data == b->as.data && a->size == b->size;
        case V_INT:
            return a->as.number == b->as.number;
        default:
            return memcmp(&a->as.real, &b->as.real, sizeof(double)) == 0;
    }
}

/* Bind parameter `at` to `v`, unless the row bound before (`last`, or NULL) bound it to
 * the same value: SQLite keeps a statement's bindings across resets, and rows repeat
 * many of theirs (the project, the receive time, a scope's resource and scope texts,
 * the empty lists). A text left bound is the same object, held by this row too. */
static int bind_changed(sqlite3_stmt *stmt, int at, const Value *row, const Value *last) {
    if (last != NULL && same_value(&row[at - 1], &last[at - 1]))
        return SQLITE_OK;
    return bind(stmt, at, &row[at - 1]);
}

/* Whether `unless` answers a row for these values: SQLITE_ROW, SQLITE_DONE or an error.
 * Only the values it names are bound: the window's query uses 5 of a span row's 20. */
static int step_unless(const Statements *s, const Value *row, const Value *last) {
    for (int k = 0; k < s->unless_count; k++) {
        int rc = bind_changed(s->unless, s->unless_params[k], row, last);
        if (rc != SQLITE_OK)
            return rc;
    }
    int rc = p_step(s->unless);
    p_reset(s->unless);
    return rc;
}

/* Bind and step the `n` rows of values from row `first` of the call; SQLITE_DONE, or
 * the first failing code. No GIL. The first row binds every value (the rows of the
 * chunk before are no longer held). */
static int step_rows(const Statements *s, const Value *values, Py_ssize_t first,
                     Py_ssize_t n) {
    const Value *last_checked = NULL, *last_written = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Value *row = &values[i * s->wanted];
        s->skipped[i] = 0;
        if (s->unless != NULL && (s->checked == NULL || s->checked[first + i])) {
            int rc = step_unless(s, row, last_checked);
            if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return rc;
            last_checked = row;
            s->skipped[i] = rc == SQLITE_ROW;
            if (s->skipped[i])
                continue;
        }
        for (int at = 1; at <= s->wanted; at++) {
            int rc = bind_changed(s->stmt, at, row, last_written);
            if (rc != SQLITE_OK)
                return rc;
        }
        last_written = row;
        int rc = p_step(s->stmt);
        p_reset(s->stmt); /* after a failure: makes the step's own code the one errmsg tells */
        if (rc != SQLITE_DONE)
            return rc;
    }
    return SQLITE_DONE;
}

/* Run the prepared statement once per row; 0, or -1 with an exception set. The positions
 * of the rows `unless` skipped are appended to `skipped`. */
static int run_rows(sqlite3 *db, Statements *s, PyObject *rows, PyObject *skipped) {
    int wanted = s->wanted;
    Py_ssize_t count = PyList_GET_SIZE(rows), chunk = count < CHUNK_ROWS ? count : CHUNK_ROWS;
    Value *values = PyMem_Malloc(sizeof(Value) * (size_t)(chunk * (wanted ? wanted : 1)) + 1);
    PyObject **held = PyMem_Malloc(sizeof(PyObject *) * (size_t)chunk + 1);
    s->skipped = PyMem_Calloc((size_t)chunk + 1, 1);
    int failed = values == NULL || held == NULL || s->skipped == NULL;
    if (failed)
        PyErr_NoMemory();
    for (Py_ssize_t first = 0; !failed && first < count; first += chunk) {
        /* the list is the caller's: the rows it had at the call, as far as it still has
           them (another thread may have shortened it while the GIL was let go) */
        Py_ssize_t end = count < PyList_GET_SIZE(rows) ? count : PyList_GET_SIZE(rows);
        if (first >= end)
            break;
        Py_ssize_t n = end - first < chunk ? end - first : chunk, n_held = 0;
        failed = read_rows(rows, first, n, wanted, values, held, &n_held) < 0;
        if (!failed) {
            int rc;
            Py_BEGIN_ALLOW_THREADS
            rc = step_rows(s, values, first, n);
            Py_END_ALLOW_THREADS
            if (rc != SQLITE_DONE) {
                raise_sqlite(db, rc);
                failed = 1;
            }
        }
        for (Py_ssize_t i = 0; !failed && s->unless != NULL && i < n; i++) {
            if (!s->skipped[i])
                continue;
            PyObject *position = PyLong_FromSsize_t(first + i);
            failed = position == NULL || PyList_Append(skipped, position) < 0;
            Py_XDECREF(position);
        }
        for (Py_ssize_t i = 0; i < n_held; i++)
            Py_DECREF(held[i]);
    }
    PyMem_Free(values);
    PyMem_Free(held);
    PyMem_Free(s->skipped);
    s->skipped = NULL;
    return failed ? -1 : 0;
}

/* The parameters `unless` names, as `?N` (the numbers it skips have no name); all of
 * them when it names none (bare `?`s). 0, or -1 with an exception set. */
static int unless_parameters(Statements *s) {
    s->unless_params = PyMem_Malloc(sizeof(int) * (size_t)s->unless_wanted + 1);
    if (s->unless_params == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int at = 1; at <= s->unless_wanted; at++)
        if (p_bind_parameter_name(s->unless, at) != NULL)
            s->unless_params[s->unless_count++] = at;
    if (s->unless_count == 0)
        for (int at = 1; at <= s->unless_wanted; at++)
            s->unless_params[s->unless_count++] = at;
    return 0;
}

static PyObject *executemany(PyObject *self, PyObject *args) {
    PyObject *connection, *rows, *unless_sql = Py_None, *checked = Py_None;
    const char *sql;
    if (!PyArg_ParseTuple(args, "OsO!|OO", &connection, &sql, &PyList_Type, &rows, &unless_sql,
                          &checked))
        return NULL;
    if (unless_sql != Py_None && !PyUnicode_Check(unless_sql)) {
        PyErr_SetString(PyExc_TypeError, "unless must be a str or None");
        return NULL;
    }
    if (checked != Py_None && (unless_sql == Py_None || !PyBytes_Check(checked) ||
                               PyBytes_GET_SIZE(checked) != PyList_GET_SIZE(rows))) {
        PyErr_SetString(PyExc_ValueError, "checked must be None, or bytes of one byte a row "
                        "with unless");
        return NULL;
    }
    sqlite3 *db = db_of(connection);
    if (db == NULL)
        return NULL;
    Statements s = {NULL, NULL, 0, 0, NULL, 0, NULL, NULL};
    if (checked != Py_None)
        s.checked = PyBytes_AS_STRING(checked); /* the call's argument: alive until it returns */
    PyObject *skipped = PyList_New(0);
    if (skipped == NULL)
        return NULL;
    int rc = p_prepare_v2(db, sql, -1, &s.stmt, NULL);
    if (rc == SQLITE_OK && unless_sql != Py_None) {
        const char *text = PyUnicode_AsUTF8(unless_sql);
        rc = text == NULL ? -1 : p_prepare_v2(db, text, -1, &s.unless, NULL);
    }
    int failed = rc != SQLITE_OK;
    if (failed) {
        if (rc != -1)
            raise_sqlite(db, rc);
    } else {
        s.wanted = p_bind_parameter_count(s.stmt);
        s.unless_wanted = s.unless == NULL ? 0 : p_bind_parameter_count(s.unless);
        if (s.unless_wanted > s.wanted) {
            PyErr_Format(programming_error, "unless uses %d parameters, more than the %d of "
                         "the statement", s.unless_wanted, s.wanted);
            failed = 1;
        } else if (s.unless != NULL) {
            failed = unless_parameters(&s) < 0;
        }
    }
    if (!failed)
        failed = run_rows(db, &s, rows, skipped) < 0;
    p_finalize(s.stmt); /* NULL is a no-op */
    p_finalize(s.unless);
    PyMem_Free(s.unless_params);
    if (failed) {
        Py_DECREF(skipped);
        return NULL;
    }
    return skipped;
}

static PyObject *handle_file(PyObject *self, PyObject *connection) {
    sqlite3 *db = db_of(connection);
    if (db == NULL)
        return NULL;
    const char *name = p_db_filename(db, "main");
    return PyUnicode_FromString(name != NULL ? name : "");
}

static PyMethodDef methods[] = {
    {"executemany", executemany, METH_VARARGS,
     "executemany(connection, sql, rows, unless=None, checked=None) -> skipped: run `sql` "
     "once per row tuple, in the connection's open transaction; with `unless`, a query "
     "bound to the row's values, skip the rows it answers a row for (their positions "
     "returned). `checked` (bytes, a byte a row) limits `unless` to the rows of a "
     "nonzero byte."},
    {"handle_file", handle_file, METH_O,
     "The file name SQLite gives for the handle read from `connection` (its main "
     "database): a check that the handle is the connection's."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sqlite_bulk", NULL, -1, methods};

/* The SQLite functions of the library the sqlite3 module uses; -1 when not found. */
static int find_functions(PyObject *sqlite3_module) {
    PyObject *path = PyObject_GetAttrString(sqlite3_module, "__file__");
    if (path == NULL)
        return -1;
    const char *file = PyUnicode_AsUTF8(path);
    void *library = file != NULL ? dlopen(file, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    Py_DECREF(path);
    if (library == NULL) {
        PyErr_SetString(PyExc_ImportError, "the sqlite3 module's library cannot be found");
        return -1;
    }
#define FIND(pointer, name)                                                                    \
    if ((*(void **)&pointer = dlsym(library, name)) == NULL) {                                 \
        PyErr_SetString(PyExc_ImportError, "SQLite function not found: " name);                \
        return -1;                                                                             \
    }
    FIND(p_prepare_v2, "sqlite3_prepare_v2")
    FIND(p_bind_text, "sqlite3_bind_text")
    FIND(p_bind_blob, "sqlite3_bind_blob")
    FIND(p_bind_int64, "sqlite3_bind_int64")
    FIND(p_bind_double, "sqlite3_bind_double")
    FIND(p_bind_null, "sqlite3_bind_null")
    FIND(p_bind_parameter_count, "sqlite3_bind_parameter_count")
    FIND(p_bind_parameter_name, "sqlite3_bind_parameter_name")
    FIND(p_step, "sqlite3_step")
    FIND(p_reset, "sqlite3_reset")
    FIND(p_finalize, "sqlite3_finalize")
    FIND(p_errmsg, "sqlite3_errmsg")
    FIND(p_db_filename, "sqlite3_db_filename")
#undef FIND
    return 0;
}

/* The CPython versions tests/storage/test_sqlite_bulk.py passed on: 3.11 to 3.13. */
#define TESTED_FROM 0x030B0000
#define TESTED_BEFORE 0x030E0000

PyMODINIT_FUNC PyInit__sqlite_bulk(void) {
    if (Py_Version < TESTED_FROM || Py_Version >= TESTED_BEFORE) {
        PyErr_Format(PyExc_ImportError,
                     "storage._sqlite_bulk reads CPython's private sqlite3.Connection "
                     "layout and was tested on CPython 3.11 to 3.13 only, not %d.%d",
                     (int)(Py_Version >> 24), (int)((Py_Version >> 16) & 0xff));
        return NULL;
    }
    PyObject *sqlite3_module = PyImport_ImportModule("sqlite3");
    PyObject *c_module = sqlite3_module ? PyImport_ImportModule("_sqlite3") : NULL;
    if (c_module == NULL || find_functions(c_module) < 0)
        goto fail;
    connection_type = PyObject_GetAttrString(sqlite3_module, "Connection");
    integrity_error = PyObject_GetAttrString(sqlite3_module, "IntegrityError");
    operational_error = PyObject_GetAttrString(sqlite3_module, "OperationalError");
    database_error = PyObject_GetAttrString(sqlite3_module, "DatabaseError");
    programming_error = PyObject_GetAttrString(sqlite3_module, "ProgrammingError");
    if (!connection_type || !integrity_error || !operational_error || !database_error ||
        !programming_error)
        goto fail;
    Py_DECREF(c_module);
    Py_DECREF(sqlite3_module);
    return PyModule_Create(&module);
fail:
    Py_XDECREF(c_module);
    Py_XDECREF(sqlite3_module);
    return NULL;
}
