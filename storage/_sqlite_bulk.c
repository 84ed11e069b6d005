/* executemany for SQLite without the sqlite3 module's per-row cost.
 *
 * Measured on this project's machines, the sqlite3 module spends about half of a
 * span upsert's time outside SQLite: each row's parameters are type-checked one by one,
 * every text is copied by SQLite (SQLITE_TRANSIENT), and the statement is looked up in
 * the statement cache and reset through several layers. Here the statement is prepared
 * once per call and each value is bound where it lies (SQLITE_STATIC: the rows, which
 * the caller holds, keep the texts alive until the call returns).
 *
 * It works on the caller's sqlite3.Connection, inside the transaction the caller
 * opened, through the same SQLite library that connection uses: the functions are
 * looked up in the library the sqlite3 module loaded (no SQLite headers or library
 * needed at build time), and the handle is the first member of CPython's connection
 * object (the same from 3.8 to 3.13). `handle_file` lets Python check that handle against
 * the connection's own file name before trusting it; any doubt at import or at that
 * check and the caller keeps the sqlite3 module's executemany.
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
#define SQLITE_DONE 101
#define SQLITE_STATIC ((void (*)(void *))0)

static int (*p_prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
static int (*p_bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
static int (*p_bind_blob)(sqlite3_stmt *, int, const void *, int, void (*)(void *));
static int (*p_bind_int64)(sqlite3_stmt *, int, long long);
static int (*p_bind_double)(sqlite3_stmt *, int, double);
static int (*p_bind_null)(sqlite3_stmt *, int);
static int (*p_bind_parameter_count)(sqlite3_stmt *);
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

/* Bind one value; 0, or -1 with an exception set. */
static int bind(sqlite3 *db, sqlite3_stmt *stmt, int at, PyObject *value) {
    int rc;
    if (value == Py_None) {
        rc = p_bind_null(stmt, at);
    } else if (PyUnicode_Check(value)) {
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(value, &size);
        if (text == NULL)
            return -1;
        if (size > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "string longer than INT_MAX bytes");
            return -1;
        }
        rc = p_bind_text(stmt, at, text, (int)size, SQLITE_STATIC);
    } else if (PyLong_Check(value)) { /* bool too, as 0 and 1, as the sqlite3 module */
        long long number = PyLong_AsLongLong(value);
        if (number == -1 && PyErr_Occurred())
            return -1;
        rc = p_bind_int64(stmt, at, number);
    } else if (PyFloat_Check(value)) {
        rc = p_bind_double(stmt, at, PyFloat_AS_DOUBLE(value));
    } else if (PyBytes_Check(value)) {
        if (PyBytes_GET_SIZE(value) > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "BLOB longer than INT_MAX bytes");
            return -1;
        }
        rc = p_bind_blob(stmt, at, PyBytes_AS_STRING(value), (int)PyBytes_GET_SIZE(value),
                         SQLITE_STATIC);
    } else {
        PyErr_Format(programming_error, "Error binding parameter %d: type '%.100s' is not "
                     "supported", at, Py_TYPE(value)->tp_name);
        return -1;
    }
    if (rc != SQLITE_OK) {
        raise_sqlite(db, rc);
        return -1;
    }
    return 0;
}

/* Run the prepared statement once per row; 0, or -1 with an exception set. */
static int run_rows(sqlite3 *db, sqlite3_stmt *stmt, PyObject *rows) {
    int wanted = p_bind_parameter_count(stmt);
    Py_ssize_t count = PyList_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < count; i++) {
        /* a tuple as it is (it keeps its texts alive); a list as a tuple,
           held until the row is stepped and reset */
        PyObject *item = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(item) && !PyList_Check(item)) {
            PyErr_SetString(programming_error, "parameters are of unsupported type");
            return -1;
        }
        PyObject *row = PySequence_Tuple(item);
        if (row == NULL)
            return -1;
        if (PyTuple_GET_SIZE(row) != wanted) {
            PyErr_Format(programming_error,
                         "Incorrect number of bindings supplied. The current statement uses "
                         "%d, and there are %zd supplied.",
                         wanted, PyTuple_GET_SIZE(row));
            Py_DECREF(row);
            return -1;
        }
        for (int at = 0; at < wanted; at++) {
            if (bind(db, stmt, at + 1, PyTuple_GET_ITEM(row, at)) < 0) {
                Py_DECREF(row);
                return -1;
            }
        }
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = p_step(stmt);
        Py_END_ALLOW_THREADS
        if (rc != SQLITE_DONE) {
            p_reset(stmt); /* makes the step's own error code the one errmsg tells */
            Py_DECREF(row);
            raise_sqlite(db, rc);
            return -1;
        }
        p_reset(stmt);
        Py_DECREF(row);
    }
    return 0;
}

static PyObject *executemany(PyObject *self, PyObject *args) {
    PyObject *connection, *rows;
    const char *sql;
    if (!PyArg_ParseTuple(args, "OsO!", &connection, &sql, &PyList_Type, &rows))
        return NULL;
    sqlite3 *db = db_of(connection);
    if (db == NULL)
        return NULL;
    sqlite3_stmt *stmt = NULL;
    int rc = p_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc != SQLITE_OK) {
        raise_sqlite(db, rc);
        return NULL;
    }
    int failed = run_rows(db, stmt, rows);
    p_finalize(stmt);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
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
     "executemany(connection, sql, rows): run `sql` once per row tuple, in the "
     "connection's open transaction."},
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
    FIND(p_step, "sqlite3_step")
    FIND(p_reset, "sqlite3_reset")
    FIND(p_finalize, "sqlite3_finalize")
    FIND(p_errmsg, "sqlite3_errmsg")
    FIND(p_db_filename, "sqlite3_db_filename")
#undef FIND
    return 0;
}

PyMODINIT_FUNC PyInit__sqlite_bulk(void) {
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
