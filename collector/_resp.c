/* RESP for the collector's Redis commands, packed in one pass over their arguments.
 *
 * Every ingest request packs one EVALSHA of about 24 arguments (the admission checks'
 * keys and numbers, the entry's fields and its body). Measured on this project's
 * machines, packing it in Python took 15 us and hiredis's pack_command 5-7 us (it
 * formats each argument through sds strings and Python's str()); here the sizes are
 * summed first, then every argument is copied once into the result.
 *
 * The bytes are those of collector/redis_link.py's `_packed` (the tests compare them):
 * bytes as they are, str as UTF-8, int (bool too) in decimal, float as repr(), any
 * other object through float(); an object float() refuses raises its TypeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One argument's bytes: where they lie, or the number text formatted into `digits`. */
typedef struct {
    const char *data;
    Py_ssize_t size;
    char *owned;      /* PyOS_double_to_string's text, freed after the copy */
    PyObject *text;   /* str() of an int past 64 bits, released after the copy */
    char digits[24];
} Arg;

static Py_ssize_t decimal_size(Py_ssize_t n) {
    Py_ssize_t size = 1;
    while (n >= 10) {
        n /= 10;
        size++;
    }
    return size;
}

static char *put_decimal(char *out, Py_ssize_t n) {
    Py_ssize_t size = decimal_size(n);
    for (Py_ssize_t i = size - 1; i >= 0; i--) {
        out[i] = (char)('0' + n % 10);
        n /= 10;
    }
    return out + size;
}

/* `prefix` (a '*' or '$'), the count, then CR LF. */
static char *put_header(char *out, char prefix, Py_ssize_t n) {
    *out++ = prefix;
    out = put_decimal(out, n);
    *out++ = '\r';
    *out++ = '\n';
    return out;
}

static int format_float(Arg *arg, double value) {
    arg->owned = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (arg->owned == NULL)
        return -1;
    arg->data = arg->owned;
    arg->size = (Py_ssize_t)strlen(arg->owned);
    return 0;
}

/* Fill `arg` with the bytes of `value`; -1 with an exception set when it has none. */
static int read_arg(Arg *arg, PyObject *value) {
    if (PyBytes_Check(value)) {
        arg->data = PyBytes_AS_STRING(value);
        arg->size = PyBytes_GET_SIZE(value);
        return 0;
    }
    if (PyUnicode_Check(value)) {
        arg->data = PyUnicode_AsUTF8AndSize(value, &arg->size);
        return arg->data == NULL ? -1 : 0;
    }
    if (PyLong_Check(value)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (n == -1 && PyErr_Occurred())
            return -1;
        if (overflow) { /* past 64 bits: Python's own decimal text */
            arg->text = PyObject_Str(value);
            if (arg->text == NULL)
                return -1;
            arg->data = PyUnicode_AsUTF8AndSize(arg->text, &arg->size);
            return arg->data == NULL ? -1 : 0;
        }
        unsigned long long magnitude = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
        char *end = arg->digits + sizeof(arg->digits), *at = end;
        do {
            *--at = (char)('0' + magnitude % 10);
            magnitude /= 10;
        } while (magnitude);
        if (n < 0)
            *--at = '-';
        arg->data = at;
        arg->size = end - at;
        return 0;
    }
    if (PyFloat_Check(value))
        return format_float(arg, PyFloat_AS_DOUBLE(value));
    PyObject *number = PyNumber_Float(value);
    if (number == NULL)
        return -1;
    int result = format_float(arg, PyFloat_AS_DOUBLE(number));
    Py_DECREF(number);
    return result;
}

/* pack(commands): the RESP bytes of every command (a sequence of arguments) in turn.
 * Sequences are taken as tuples (a tuple as it is), so that nothing float() runs can
 * change what is being packed. */
static PyObject *pack(PyObject *module, PyObject *commands) {
    PyObject *outer = PySequence_Tuple(commands);
    if (outer == NULL)
        return NULL;
    Py_ssize_t n_commands = PyTuple_GET_SIZE(outer), n_args = 0, total = 0;
    PyObject *inner = PyTuple_New(n_commands), *result = NULL;
    Arg *args = NULL;
    if (inner == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < n_commands; c++) {
        PyObject *command = PySequence_Tuple(PyTuple_GET_ITEM(outer, c));
        if (command == NULL)
            goto done;
        PyTuple_SET_ITEM(inner, c, command);
        n_args += PyTuple_GET_SIZE(command);
    }
    args = PyMem_Calloc(n_args ? n_args : 1, sizeof(Arg)); /* owned, text: NULL */
    if (args == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Arg *arg = args;
    for (Py_ssize_t c = 0; c < n_commands; c++) {
        PyObject *command = PyTuple_GET_ITEM(inner, c);
        Py_ssize_t size = PyTuple_GET_SIZE(command);
        total += 3 + decimal_size(size);
        for (Py_ssize_t i = 0; i < size; i++, arg++) {
            if (read_arg(arg, PyTuple_GET_ITEM(command, i)) < 0)
                goto done;
            total += 5 + decimal_size(arg->size) + arg->size;
        }
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(result);
    arg = args;
    for (Py_ssize_t c = 0; c < n_commands; c++) {
        Py_ssize_t size = PyTuple_GET_SIZE(PyTuple_GET_ITEM(inner, c));
        out = put_header(out, '*', size);
        for (Py_ssize_t i = 0; i < size; i++, arg++) {
            out = put_header(out, '$', arg->size);
            memcpy(out, arg->data, arg->size);
            out += arg->size;
            *out++ = '\r';
            *out++ = '\n';
        }
    }
done:
    if (args != NULL) {
        for (Py_ssize_t i = 0; i < n_args; i++) {
            PyMem_Free(args[i].owned);
            Py_XDECREF(args[i].text);
        }
        PyMem_Free(args);
    }
    Py_XDECREF(inner);
    Py_DECREF(outer);
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_O, "The RESP bytes of a sequence of commands."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resp", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resp(void) { return PyModule_Create(&module); }
