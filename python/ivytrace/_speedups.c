/* ivytrace._speedups: the recorder's per-call hot path in C (CPython C API only, no libtorch).
 *
 * Optional: every caller has a pure-Python fallback (torch_recorder.py, writer.py), which defines
 * what this code must do; tests/python/test_speedups.py checks that both write the same records.
 *
 *   Sink      the trace file as a growing shared memory mapping. A record is a memcpy into the
 *             mapping, not a write() system call; the kernel owns the pages at once, so a killed
 *             process still leaves every record it made (as write() did). The file is extended
 *             with posix_fallocate ahead of the data (a full disk is an OSError, not a SIGBUS) and
 *             cut to its length on close; a process killed before close leaves zero bytes after
 *             its last record, which readers take as the end (a record is never 0 bytes long).
 *   RecorderBase
 *             a base class of torch_recorder.TorchRecorder whose __torch_function__ records the
 *             common call (tensor/number arguments, one tensor result, no write, not random, not
 *             foldable) without running Python code, and hands every other case to the Python
 *             methods (_classify, handle, _in.encode, _finish, _raised, _file_line) at the point
 *             where it stops. Its members are the recorder's tables, shared with the Python code.
 *   TensorIds, IdEntry
 *             the torch recorder's id table (id(tensor) -> entry) as a C hash table, and its
 *             entries: weak references carrying the tensor's ids, read from Python as the
 *             pure-Python recorder's 5-tuples.
 *   np_ufunc  NumPy's common call (a ufunc on known TracedArrays and Python numbers, one new array),
 *             what numpy_recorder.NumpyRecorder.record_ufunc does, with the same encoder pieces.
 *   jax_finish  JAX's common primitive (one array result): the OpEvent's result and tail, written
 *             as jax_recorder.JaxRecorder._finish_array writes them.
 *   Locator   the caller's (file, line): array_recorder.caller_location's frame walk, for NumPy and JAX.
 *   set_tags  the protobuf field tags, from the generated descriptors (recorder/tags.py): no field
 *             number is written in this file.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <frameobject.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------------------------------ */
/* growable byte buffer */

typedef struct {
  char *p;
  size_t n, cap;
  char local[512];
} Buf;

static void buf_init(Buf *b) { b->p = b->local; b->n = 0; b->cap = sizeof b->local; }
static void buf_free(Buf *b) { if (b->p != b->local) PyMem_Free(b->p); }

static int buf_grow(Buf *b, size_t extra) {
  size_t cap = b->cap * 2;
  while (cap < b->n + extra) cap *= 2;
  char *p = PyMem_Malloc(cap);
  if (!p) { PyErr_NoMemory(); return -1; }
  memcpy(p, b->p, b->n);
  if (b->p != b->local) PyMem_Free(b->p);
  b->p = p;
  b->cap = cap;
  return 0;
}

/* The buffer's common case (room left) inline: these run a few dozen times per recorded op. */
static inline __attribute__((always_inline)) int buf_reserve(Buf *b, size_t extra) {
  return b->n + extra <= b->cap ? 0 : buf_grow(b, extra);
}

static inline __attribute__((always_inline)) int buf_put(Buf *b, const void *d, size_t n) {
  if (buf_reserve(b, n)) return -1;
  memcpy(b->p + b->n, d, n);
  b->n += n;
  return 0;
}

static inline size_t varint_to(uint8_t *out, uint64_t v) {
  size_t i = 0;
  while (v >= 0x80) { out[i++] = (uint8_t)(v | 0x80); v >>= 7; }
  out[i++] = (uint8_t)v;
  return i;
}

static inline size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; ++n; }
  return n;
}

static inline __attribute__((always_inline)) int buf_varint(Buf *b, uint64_t v) {
  if (buf_reserve(b, 10)) return -1;
  b->n += varint_to((uint8_t *)b->p + b->n, v);
  return 0;
}

static inline __attribute__((always_inline)) int buf_byte(Buf *b, uint8_t c) {
  if (buf_reserve(b, 1)) return -1;
  b->p[b->n++] = (char)c;
  return 0;
}

static inline int buf_bytes_obj(Buf *b, PyObject *o) {  /* o: bytes */
  return buf_put(b, PyBytes_AS_STRING(o), (size_t)PyBytes_GET_SIZE(o));
}

/* ------------------------------------------------------------------------------------------ */
/* Sink */

typedef struct {
  PyObject_HEAD
  int fd;
  int closed;
  char *map;
  size_t cap;       /* bytes mapped (= bytes allocated in the file) */
  size_t pos;       /* bytes of data (the next write goes here) */
  unsigned long long records, op_events, tensor_bytes;
  /* An I/O error (disk full...) stops the trace instead of reaching the program: io_error keeps
   * its errno, the file keeps its data up to `pos` (the end of the last whole record), and later
   * records are made in `scratch` and dropped. */
  int io_error;
  char *scratch;
  size_t scratch_cap;
} Sink;

static PyTypeObject SinkType;

#define SINK_FIRST (1u << 20)
#define SINK_STEP_MAX (64u << 20)

static int sink_grow(Sink *s, size_t need) {
  size_t cap = s->cap;
  while (cap < need) cap += cap < SINK_STEP_MAX ? cap : SINK_STEP_MAX;
  int err = posix_fallocate(s->fd, (off_t)s->cap, (off_t)(cap - s->cap));
  if (err == EOPNOTSUPP || err == EINVAL) err = ftruncate(s->fd, (off_t)cap) ? errno : 0;
  if (err) { errno = err; PyErr_SetFromErrno(PyExc_OSError); return -1; }
  void *m = mremap(s->map, s->cap, cap, MREMAP_MAYMOVE);
  if (m == MAP_FAILED) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
  s->map = m;
  s->cap = cap;
  return 0;
}

/* After an I/O error: room for a record that is dropped. */
static char *sink_discard(Sink *s, size_t n) {
  if (n > s->scratch_cap) {
    char *p = PyMem_Realloc(s->scratch, n);
    if (!p) { PyErr_NoMemory(); return NULL; }
    s->scratch = p;
    s->scratch_cap = n;
  }
  return s->scratch;
}

static char *sink_fail(Sink *s, size_t n) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  int err = errno ? errno : EIO;
  if (value && PyObject_TypeCheck(value, (PyTypeObject *)PyExc_OSError) && ((PyOSErrorObject *)value)->myerrno &&
      PyLong_Check(((PyOSErrorObject *)value)->myerrno))
    err = (int)PyLong_AsLong(((PyOSErrorObject *)value)->myerrno);
  Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
  s->io_error = err;
  return sink_discard(s, n);
}

static inline char *sink_reserve(Sink *s, size_t n) {
  if (s->io_error) return sink_discard(s, n);
  if (s->closed) { PyErr_SetString(PyExc_ValueError, "ivytrace: write to a closed trace"); return NULL; }
  if (s->pos + n > s->cap && sink_grow(s, s->pos + n)) return sink_fail(s, n);
  char *p = s->map + s->pos;
  s->pos += n;
  return p;
}

#define SINK_PWRITE_MIN (64u << 10)

static int pwrite_all(int fd, const void *data, size_t n, off_t at) {
  const char *p = data;
  while (n) {
    ssize_t w = pwrite(fd, p, n, at);   /* with the GIL: nothing else moves the sink meanwhile */
    if (w < 0) {
      if (errno == EINTR) continue;
      PyErr_SetFromErrno(PyExc_OSError);
      return -1;
    }
    p += w;
    n -= (size_t)w;
    at += w;
  }
  return 0;
}

static PyObject *Sink_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  int fd;
  Py_buffer head;
  if (!PyArg_ParseTuple(args, "iy*", &fd, &head)) return NULL;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    PyBuffer_Release(&head);
    PyErr_SetString(PyExc_OSError, "ivytrace: a trace sink needs a regular file");
    return NULL;
  }
  Sink *s = (Sink *)type->tp_alloc(type, 0);
  if (!s) { PyBuffer_Release(&head); return NULL; }
  s->fd = fd;
  s->cap = SINK_FIRST;
  int err = posix_fallocate(fd, 0, (off_t)s->cap);
  if (err == EOPNOTSUPP || err == EINVAL) err = ftruncate(fd, (off_t)s->cap) ? errno : 0;
  if (err) { errno = err; PyErr_SetFromErrno(PyExc_OSError); s->closed = 1; Py_DECREF(s); PyBuffer_Release(&head); return NULL; }
  s->map = mmap(NULL, s->cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (s->map == MAP_FAILED) {
    s->map = NULL;
    PyErr_SetFromErrno(PyExc_OSError);
    s->closed = 1;
    Py_DECREF(s);
    PyBuffer_Release(&head);
    return NULL;
  }
  memcpy(s->map, head.buf, (size_t)head.len);
  s->pos = (size_t)head.len;
  PyBuffer_Release(&head);
  return (PyObject *)s;
}

static void Sink_dealloc(Sink *s) {
  if (s->map) munmap(s->map, s->cap);
  PyMem_Free(s->scratch);
  Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Sink_write(Sink *s, PyObject *arg) {
  Py_buffer b;
  if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE)) return NULL;
  char *p = sink_reserve(s, (size_t)b.len);
  if (p) memcpy(p, b.buf, (size_t)b.len);
  PyBuffer_Release(&b);
  if (!p) return NULL;
  Py_RETURN_NONE;
}

/* record(tag: bytes of 1, parts: sequence of bytes-like, op=False, tensor_bytes=0) */
static PyObject *Sink_record(Sink *s, PyObject *args, PyObject *kw) {
  static char *names[] = {"tag", "parts", "op", "tensor_bytes", NULL};
  Py_buffer tag;
  PyObject *parts;
  int op = 0;
  unsigned long long tb = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*O|pK", names, &tag, &parts, &op, &tb)) return NULL;
  PyObject *seq = PySequence_Fast(parts, "parts must be a sequence");
  if (!seq || tag.len != 1) {
    if (seq) PyErr_SetString(PyExc_ValueError, "tag must be one byte");
    PyBuffer_Release(&tag);
    Py_XDECREF(seq);
    return NULL;
  }
  Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
  Py_buffer *bufs = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Py_buffer));
  Py_ssize_t got = 0;
  size_t n = 0;
  PyObject *ret = NULL;
  if (!bufs) { PyErr_NoMemory(); goto done; }
  for (; got < k; ++got) {
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &bufs[got], PyBUF_SIMPLE)) goto done;
    n += (size_t)bufs[got].len;
  }
  if (n >= SINK_PWRITE_MIN) {
    /* A large value: pwrite() into the same (allocated) range rather than a memcpy through the
     * mapping, whose page faults cost ~4x more per byte (measured: 393 KB in 68 us vs 264 us).
     * Both go to the one page cache, so the mapping and the CRC on close see these bytes. */
    size_t inner = 1 + varint_len(n) + n;
    uint8_t head[21];
    size_t hn = varint_to(head, inner);
    head[hn++] = ((uint8_t *)tag.buf)[0];
    hn += varint_to(head + hn, n);
    size_t start = s->pos, at = start;
    if (!sink_reserve(s, hn + n)) goto done;
    /* on failure the next record starts where this one did (nothing else ran meanwhile), and the
     * trace stops there (io_error) */
    if (!s->io_error) {
      if (pwrite_all(s->fd, head, hn, (off_t)at)) { s->pos = start; sink_fail(s, 0); }
      at += hn;
      for (Py_ssize_t i = 0; i < k && !s->io_error; ++i) {
        if (pwrite_all(s->fd, bufs[i].buf, (size_t)bufs[i].len, (off_t)at)) { s->pos = start; sink_fail(s, 0); }
        at += (size_t)bufs[i].len;
      }
    }
  } else {
    size_t inner = 1 + varint_len(n) + n;
    char *p = sink_reserve(s, varint_len(inner) + inner);
    if (!p) goto done;
    p += varint_to((uint8_t *)p, inner);
    *p++ = ((char *)tag.buf)[0];
    p += varint_to((uint8_t *)p, n);
    for (Py_ssize_t i = 0; i < k; ++i) {
      memcpy(p, bufs[i].buf, (size_t)bufs[i].len);
      p += bufs[i].len;
    }
  }
  s->records++;
  if (op) s->op_events++;
  s->tensor_bytes += tb;
  ret = Py_None;
  Py_INCREF(ret);
done:
  for (Py_ssize_t i = 0; i < got; ++i) PyBuffer_Release(&bufs[i]);
  PyMem_Free(bufs);
  Py_DECREF(seq);
  PyBuffer_Release(&tag);
  return ret;
}

/* crc32(start): zlib CRC-32 of the data from byte `start` to the end. */
static PyObject *Sink_crc32(Sink *s, PyObject *arg) {
  Py_ssize_t start = PyLong_AsSsize_t(arg);
  if (start < 0 && PyErr_Occurred()) return NULL;
  if (!s->map || (size_t)start > s->pos) { PyErr_SetString(PyExc_ValueError, "bad start"); return NULL; }
  uLong c = crc32(0L, Z_NULL, 0);
  const Bytef *p = (const Bytef *)s->map + start;
  size_t left = s->pos - (size_t)start;
  while (left) {   /* with the GIL: a record written meanwhile could move the mapping */
    uInt step = left > (1u << 30) ? (1u << 30) : (uInt)left;
    c = crc32(c, p, step);
    p += step;
    left -= step;
  }
  return PyLong_FromUnsignedLong(c);
}

/* close(truncate=True): unmap; cut the file to its data (not when abandoning a forked copy). */
static PyObject *Sink_close(Sink *s, PyObject *args) {
  int truncate = 1;
  if (!PyArg_ParseTuple(args, "|p", &truncate)) return NULL;
  if (s->closed) Py_RETURN_NONE;
  s->closed = 1;
  int err = 0;
  if (s->map) {
    munmap(s->map, s->cap);
    s->map = NULL;
  }
  if (truncate && ftruncate(s->fd, (off_t)s->pos)) err = errno;
  if (err) { errno = err; return PyErr_SetFromErrno(PyExc_OSError); }
  Py_RETURN_NONE;
}

static PyMethodDef Sink_methods[] = {
    {"write", (PyCFunction)Sink_write, METH_O, "Append raw bytes."},
    {"record", (PyCFunction)(void (*)(void))Sink_record, METH_VARARGS | METH_KEYWORDS,
     "Append one framed record made of parts."},
    {"crc32", (PyCFunction)Sink_crc32, METH_O, "CRC-32 of the data from byte `start`."},
    {"close", (PyCFunction)Sink_close, METH_VARARGS, "Unmap and cut the file to its data."},
    {NULL}};

static PyMemberDef Sink_members[] = {
    {"records", T_ULONGLONG, offsetof(Sink, records), 0, NULL},
    {"op_events", T_ULONGLONG, offsetof(Sink, op_events), 0, NULL},
    {"tensor_bytes", T_ULONGLONG, offsetof(Sink, tensor_bytes), 0, NULL},
    {"size", T_ULONGLONG, offsetof(Sink, pos), READONLY, NULL},
    {"closed", T_INT, offsetof(Sink, closed), READONLY, NULL},
    {"io_error", T_INT, offsetof(Sink, io_error), READONLY, "errno of the write that stopped the trace, or 0"},
    {NULL}};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ivytrace._speedups.Sink",
    .tp_basicsize = sizeof(Sink),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Sink_new,
    .tp_dealloc = (destructor)Sink_dealloc,
    .tp_methods = Sink_methods,
    .tp_members = Sink_members,
    .tp_doc = "Sink(fd, head): a trace file written through a shared memory mapping."};

/* ------------------------------------------------------------------------------------------ */
/* RecorderBase */

typedef struct {
  PyObject_HEAD
  /* shared with the Python code (same names as its attributes) */
  PyObject *ids, *info, *frame, *const_, *values, *params, *internal, *scopes, *threads, *sink, *w;
  long long next_tid, sweep_at, t0;
  char active;
  /* set by the Python encoder when an argument was a symbolic int (recorder/sym.py): the call
   * is then made with plain ints (TorchRecorder._unwrap_call), never with the stand-ins */
  int sym_seen;
  /* constants the Python side hands over once (_speedups_setup) */
  PyObject *tensor_t, *param_t, *dtype_field, *shapes, *alias_ops, *int_cache, *shape_field;
  PyObject *code_by_addr;   /* id(code) -> (code, _internal_code[code]) */
  PyObject *known_of, *known;   /* r->frame when `known` (its .known) was read; both owned */
  unsigned long last_ident;     /* the thread of the last call and its OpEvent.thread field */
  PyObject *last_ident_obj, *last_thread_field;
#define REC_INFOS 16
  struct { PyObject *info; uint64_t ver; } info_cache[REC_INFOS];   /* by func address: info (owned) */
#define REC_CODES 4
  struct { PyObject *code, *lines; int lasti[2]; PyObject *fl[2]; } code_cache[REC_CODES];   /* owned */
  int code_next;
#define REC_TAILS 4
  PyObject *tail_dt[REC_TAILS], *tail_shape[REC_TAILS], *tail[REC_TAILS];   /* dtype_shape_tail's cache */
  int tail_next;
} Rec;

/* Field tags, handed over from the generated descriptors by set_tags() (ivytrace/recorder/tags.py
 * c_tags()): the .proto files are the one place a field number is written. Every tag the C path
 * writes is one byte (field numbers below 16). */
static struct {
  uint8_t record_op, op_args, op_kwargs, op_result, op_mutated, op_flags, op_file, op_line, op_thread, op_start_ns,
      op_duration_ns, ref_id, ref_version, ref_storage, arg_tensor, arg_none, arg_b, arg_i, arg_f, arg_list,
      arg_tuple, list_items, kw_name, kw_value;
  uint64_t inplace;   /* the OpFlag INPLACE */
  int set;
} T;

static const struct { const char *name; size_t offset; } tag_names[] = {
#define TAG(field, name) {name, offsetof(__typeof__(T), field)}
    TAG(record_op, "record.op"), TAG(op_args, "op.args"), TAG(op_kwargs, "op.kwargs"),
    TAG(op_result, "op.result"), TAG(op_mutated, "op.mutated"), TAG(op_flags, "op.flags"),
    TAG(op_file, "op.file"), TAG(op_line, "op.line"), TAG(op_thread, "op.thread"), TAG(op_start_ns, "op.start_ns"), TAG(op_duration_ns, "op.duration_ns"),
    TAG(ref_id, "ref.id"), TAG(ref_version, "ref.version"), TAG(ref_storage, "ref.storage"),
    TAG(arg_tensor, "arg.tensor"), TAG(arg_none, "arg.none"), TAG(arg_b, "arg.b"), TAG(arg_i, "arg.i"),
    TAG(arg_f, "arg.f"), TAG(arg_list, "arg.list"), TAG(arg_tuple, "arg.tuple"), TAG(list_items, "list.items"),
    TAG(kw_name, "kw.name"), TAG(kw_value, "kw.value"),
#undef TAG
};

/* set_tags(tags: dict[str, int], inplace: int) */
static PyObject *set_tags(PyObject *mod, PyObject *args) {
  PyObject *d;
  unsigned long long inplace;
  if (!PyArg_ParseTuple(args, "O!K", &PyDict_Type, &d, &inplace)) return NULL;
  __typeof__(T) next = T;   /* filled and checked whole before it replaces the tags in use */
  for (size_t i = 0; i < sizeof tag_names / sizeof tag_names[0]; ++i) {
    PyObject *v = PyDict_GetItemString(d, tag_names[i].name);
    long t = v ? PyLong_AsLong(v) : -1;
    if (t == -1 && PyErr_Occurred()) return NULL;
    if (t < 1 || t > 127) {
      PyErr_Format(PyExc_ValueError, "ivytrace._speedups.set_tags: tag '%s' must be a one-byte field tag "
                   "(1..127), got %ld", tag_names[i].name, t);
      return NULL;
    }
    ((uint8_t *)&next)[tag_names[i].offset] = (uint8_t)t;
  }
  next.inplace = inplace;
  next.set = 1;
  T = next;
  Py_RETURN_NONE;
}

static PyObject *s_version, *s_base, *s_dtype, *s_shape, *s_known, *s_written, *s_classify, *s_handle,
    *s_in, *s_encode, *s_constant_key, *s_finish, *s_raised, *s_file_line, *s_emit_op, *s_unwrap_call;

static inline long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);   /* time.perf_counter_ns's clock on Linux */
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A tensor's `_version`, `_base`, `dtype` and `shape`, read through the data descriptors its type
 * resolves them to (torch's getters), cached per type and dropped when the type changes (its
 * version tag): the generic getattr looks the name up along the type's MRO first, on every read,
 * and the C path reads four to six of these per op. A type whose attribute is not a data
 * descriptor (or not cached) goes through getattr. */
enum { TA_VERSION, TA_BASE, TA_DTYPE, TA_SHAPE, TA_N };
/* Borrowed: the type holds them. A getset descriptor (torch's getters are) is called through its
 * getter function directly: getset_get's type check is made once, when the slot is filled. */
static struct {
  PyTypeObject *tp;
  unsigned int ver;
  PyObject *d[TA_N];
  getter get[TA_N];
  void *closure[TA_N];
} tattr_cache[2];

static PyObject *tattr(PyObject *t, int which) {
  PyTypeObject *tp = Py_TYPE(t);
  for (int i = 0; i < 2; ++i) {
    if (tattr_cache[i].tp != tp) continue;
    if (!PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) || tp->tp_version_tag != tattr_cache[i].ver) {
      tattr_cache[i].tp = NULL;   /* the type changed: look again */
      break;
    }
    if (tattr_cache[i].get[which]) return tattr_cache[i].get[which](t, tattr_cache[i].closure[which]);
    PyObject *d = tattr_cache[i].d[which];
    if (d) return Py_TYPE(d)->tp_descr_get(d, t, (PyObject *)tp);
    break;
  }
  PyObject *names[TA_N] = {s_version, s_base, s_dtype, s_shape};
  for (int i = 0; i < 2; ++i) {
    if (tattr_cache[i].tp == tp) return PyObject_GetAttr(t, names[which]);
  }
  /* fill a slot (the tensor class and Parameter take both) */
  int slot = tattr_cache[0].tp == NULL ? 0 : (tattr_cache[1].tp == NULL ? 1 : -1);
  if (slot >= 0) {
    PyObject *ds[TA_N];
    getter gs[TA_N];
    void *cs[TA_N];
    for (int k = 0; k < TA_N; ++k) {
      PyObject *d = _PyType_Lookup(tp, names[k]);   /* borrowed; assigns the type a version tag */
      ds[k] = d && PyDescr_IsData(d) && Py_TYPE(d)->tp_descr_get ? d : NULL;
      gs[k] = NULL;
      cs[k] = NULL;
      if (ds[k] && Py_TYPE(d) == &PyGetSetDescr_Type && PyType_IsSubtype(tp, PyDescr_TYPE(d)) &&
          ((PyGetSetDescrObject *)d)->d_getset->get) {
        gs[k] = ((PyGetSetDescrObject *)d)->d_getset->get;
        cs[k] = ((PyGetSetDescrObject *)d)->d_getset->closure;
      }
    }
    if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) {
      tattr_cache[slot].tp = tp;
      tattr_cache[slot].ver = tp->tp_version_tag;
      memcpy(tattr_cache[slot].d, ds, sizeof ds);
      memcpy(tattr_cache[slot].get, gs, sizeof gs);
      memcpy(tattr_cache[slot].closure, cs, sizeof cs);
    }
  }
  return PyObject_GetAttr(t, names[which]);
}

/* The tensor's _version as a C integer; -1 with an exception on failure. */
static long long tensor_version(PyObject *t) {
  PyObject *v = tattr(t, TA_VERSION);
  if (!v) return -1;
  long long r = PyLong_AsLongLong(v);
  Py_DECREF(v);
  return r;
}

static PyObject *bytes_varint_field(uint8_t tag, uint64_t v) {
  uint8_t b[11];
  b[0] = tag;
  size_t n = 1 + varint_to(b + 1, v);
  return PyBytes_FromStringAndSize((char *)b, (Py_ssize_t)n);
}

/* The torch recorder's id table (TorchRecorder._ids): tensor address -> Entry, an open-addressing
 * hash table in C. An Entry is a weak reference to the tensor (a weakref.ref subclass, so that
 * `e[0]()` is the tensor as with the pure-Python recorder's 5-tuples) carrying the tensor id, its
 * storage id and their TensorRef fields as C members; `e[1]`..`e[4]` read them as the tuple's
 * items (tid, sid, id field, storage field). One allocation per new tensor instead of a weakref,
 * two ints, two bytes, a tuple, a key int and a dict slot; a lookup is a pointer hash, no key
 * object. An entry is valid while its weakref still points at the tensor at that address;
 * entries of dead tensors are swept when the table has doubled since the last sweep. */
typedef struct {
  PyWeakReference wr;
  long long tid, sid;
  PyObject *tid_obj, *sid_obj;   /* owned ints (the same object when tid == sid) */
  uint8_t fid_n, fsid_n;
  uint8_t fid[12], fsid[12];     /* TensorRef.id and .storage fields: tag + varint */
} Entry;

static PyTypeObject EntryType;
#define ENTRY(o) ((Entry *)(o))
#define Entry_Check(o) (Py_TYPE(o) == &EntryType)

static void Entry_dealloc(Entry *e) {
  Py_CLEAR(e->tid_obj);
  Py_CLEAR(e->sid_obj);
  _PyWeakref_RefType.tp_dealloc((PyObject *)e);
}

static Py_ssize_t Entry_len(PyObject *e) { return 5; }

static PyObject *Entry_item(PyObject *o, Py_ssize_t i) {
  Entry *e = ENTRY(o);
  switch (i) {
    case 0: Py_INCREF(o); return o;
    case 1: Py_INCREF(e->tid_obj); return e->tid_obj;
    case 2: Py_INCREF(e->sid_obj); return e->sid_obj;
    case 3: return PyBytes_FromStringAndSize((const char *)e->fid, e->fid_n);
    case 4: return PyBytes_FromStringAndSize((const char *)e->fsid, e->fsid_n);
  }
  PyErr_SetString(PyExc_IndexError, "ids entry index out of range");
  return NULL;
}

static PySequenceMethods Entry_as_seq = {.sq_length = Entry_len, .sq_item = Entry_item};

static PyObject *Entry_repr(PyObject *o) {
  return PyUnicode_FromFormat("<ids entry tid=%lld sid=%lld>", ENTRY(o)->tid, ENTRY(o)->sid);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ivytrace._speedups.IdEntry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT,   /* GC flag, traverse and clear inherited from weakref.ref */
    .tp_dealloc = (destructor)Entry_dealloc,
    .tp_as_sequence = &Entry_as_seq,
    .tp_repr = Entry_repr,
    .tp_doc = "An id table entry: a weak reference to a tensor with its ids; e[0..4] as "
              "(weakref, tensor id, storage id, TensorRef.id field, TensorRef.storage field)."};

/* A new entry for tensor t (not inserted anywhere); NULL with an exception on failure. */
static Entry *entry_new(PyObject *t, long long tid, long long sid, uint8_t tag_id, uint8_t tag_storage) {
  static PyObject *a;   /* the argument tuple of weakref's __new__, kept: it does not keep it */
  if (!a && !(a = PyTuple_New(1))) return NULL;
  Entry *e;
  if (Py_REFCNT(a) == 1) {
    PyTuple_SET_ITEM(a, 0, t);   /* borrowed for the call */
    e = (Entry *)EntryType.tp_new(&EntryType, a, NULL);
    PyTuple_SET_ITEM(a, 0, NULL);
  } else {   /* still held (re-entered): a tuple of its own */
    PyObject *own = PyTuple_Pack(1, t);
    e = own ? (Entry *)EntryType.tp_new(&EntryType, own, NULL) : NULL;
    Py_XDECREF(own);
  }
  if (!e) return NULL;
  /* Nothing in it can be part of a reference cycle (no callback; ints): the cyclic GC need not
   * visit it. A long run keeps thousands alive between sweeps, and tracking them made full
   * collections of the whole (large) torch heap frequent. */
  PyObject_GC_UnTrack(e);
  e->tid = tid;
  e->sid = sid;
  e->tid_obj = PyLong_FromLongLong(tid);
  if (!e->tid_obj) { Py_DECREF(e); return NULL; }
  if (sid == tid) {
    Py_INCREF(e->tid_obj);
    e->sid_obj = e->tid_obj;
  } else if (!(e->sid_obj = PyLong_FromLongLong(sid))) {
    Py_DECREF(e);
    return NULL;
  }
  e->fid[0] = tag_id;
  e->fid_n = (uint8_t)(1 + varint_to(e->fid + 1, (uint64_t)tid));
  e->fsid[0] = tag_storage;
  e->fsid_n = (uint8_t)(1 + varint_to(e->fsid + 1, (uint64_t)sid));
  return e;
}

typedef struct { uintptr_t key; Entry *val; } IdSlot;   /* key 0: empty */
typedef struct {
  PyObject_HEAD
  IdSlot *slots;
  size_t mask, n;   /* capacity - 1 (a power of two), entries */
} Ids;

static PyTypeObject IdsType;
#define Ids_Check(o) (Py_TYPE(o) == &IdsType)

static inline size_t ids_home(const Ids *m, uintptr_t k) {
  uint64_t h = (uint64_t)(k >> 4) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & m->mask;
}

/* The slot of key k, or of the empty slot where it would go. */
static inline size_t ids_slot(const Ids *m, uintptr_t k) {
  size_t i = ids_home(m, k);
  while (m->slots[i].key && m->slots[i].key != k) i = (i + 1) & m->mask;
  return i;
}

static inline Entry *ids_get(const Ids *m, uintptr_t k) {   /* borrowed */
  return m->slots[ids_slot(m, k)].val;
}

static int ids_resize(Ids *m, size_t cap) {
  IdSlot *old = m->slots;
  size_t oldcap = old ? m->mask + 1 : 0;
  IdSlot *s = PyMem_Calloc(cap, sizeof *s);
  if (!s) { PyErr_NoMemory(); return -1; }
  m->slots = s;
  m->mask = cap - 1;
  for (size_t i = 0; i < oldcap; ++i) {
    if (old[i].key) m->slots[ids_slot(m, old[i].key)] = old[i];
  }
  PyMem_Free(old);
  return 0;
}

/* Insert or replace; steals a reference to e. */
static int ids_put(Ids *m, uintptr_t k, Entry *e) {
  if ((m->n + 1) * 4 > (m->mask + 1) * 3 && ids_resize(m, (m->mask + 1) * 2)) { Py_DECREF(e); return -1; }
  size_t i = ids_slot(m, k);
  Entry *old = m->slots[i].val;
  if (!old) m->n++;
  m->slots[i].key = k;
  m->slots[i].val = e;
  Py_XDECREF(old);
  return 0;
}

static int ids_del(Ids *m, uintptr_t k) {   /* 1: deleted, 0: absent */
  size_t i = ids_slot(m, k);
  Entry *old = m->slots[i].val;
  if (!old) return 0;
  /* backward-shift deletion (linear probing keeps no tombstones) */
  size_t j = i;
  for (;;) {
    j = (j + 1) & m->mask;
    if (!m->slots[j].key) break;
    size_t h = ids_home(m, m->slots[j].key);
    int move = i <= j ? (h <= i || h > j) : (h <= i && h > j);
    if (move) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = 0;
  m->slots[i].val = NULL;
  m->n--;
  Py_DECREF(old);
  return 1;
}

/* Drop the entries of dead tensors (the table is rebuilt: no probing chain is left broken). */
static int ids_sweep(Ids *m) {
  size_t cap = m->mask + 1;
  IdSlot *old = m->slots;
  IdSlot *s = PyMem_Calloc(cap, sizeof *s);
  if (!s) { PyErr_NoMemory(); return -1; }
  m->slots = s;
  m->n = 0;
  for (size_t i = 0; i < cap; ++i) {
    if (!old[i].key) continue;
    if (PyWeakref_GET_OBJECT((PyObject *)old[i].val) == Py_None) {
      Py_DECREF(old[i].val);
    } else {
      m->slots[ids_slot(m, old[i].key)] = old[i];
      m->n++;
    }
  }
  PyMem_Free(old);
  return 0;
}

static PyObject *Ids_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  if ((args && PyTuple_GET_SIZE(args)) || (kw && PyDict_GET_SIZE(kw))) {
    PyErr_SetString(PyExc_TypeError, "TensorIds() takes no arguments");
    return NULL;
  }
  Ids *m = (Ids *)type->tp_alloc(type, 0);
  if (m && ids_resize(m, 1024)) { Py_DECREF(m); return NULL; }
  return (PyObject *)m;
}

static void Ids_clear_all(Ids *m) {
  IdSlot *old = m->slots;
  size_t cap = old ? m->mask + 1 : 0;
  m->slots = NULL;
  m->n = 0;
  for (size_t i = 0; i < cap; ++i) Py_XDECREF(old[i].val);
  PyMem_Free(old);
}

static void Ids_dealloc(Ids *m) {
  Ids_clear_all(m);
  Py_TYPE(m)->tp_free((PyObject *)m);
}

static int ids_key(PyObject *k, uintptr_t *out) {
  if (!PyLong_Check(k)) { PyErr_SetObject(PyExc_KeyError, k); return -1; }
  void *p = PyLong_AsVoidPtr(k);
  if (!p && PyErr_Occurred()) return -1;
  if (!p) { PyErr_SetObject(PyExc_KeyError, k); return -1; }
  *out = (uintptr_t)p;
  return 0;
}

static Py_ssize_t Ids_len(Ids *m) { return (Py_ssize_t)m->n; }

static PyObject *Ids_subscript(Ids *m, PyObject *k) {
  uintptr_t p;
  if (ids_key(k, &p)) return NULL;
  Entry *e = ids_get(m, p);
  if (!e) { PyErr_SetObject(PyExc_KeyError, k); return NULL; }
  Py_INCREF(e);
  return (PyObject *)e;
}

static int Ids_ass_subscript(Ids *m, PyObject *k, PyObject *v) {
  uintptr_t p;
  if (ids_key(k, &p)) return -1;
  if (!v) {
    if (ids_del(m, p)) return 0;
    PyErr_SetObject(PyExc_KeyError, k);
    return -1;
  }
  if (!Entry_Check(v)) { PyErr_SetString(PyExc_TypeError, "TensorIds values are ids entries"); return -1; }
  Py_INCREF(v);
  return ids_put(m, p, ENTRY(v));
}

static PyObject *Ids_get(Ids *m, PyObject *const *argv, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) { PyErr_SetString(PyExc_TypeError, "get(key, default=None)"); return NULL; }
  PyObject *dflt = nargs > 1 ? argv[1] : Py_None;
  uintptr_t p = 0;
  if (PyLong_Check(argv[0])) {
    void *v = PyLong_AsVoidPtr(argv[0]);
    if (!v && PyErr_Occurred()) { PyErr_Clear(); v = NULL; }
    p = (uintptr_t)v;
  }
  Entry *e = p ? ids_get(m, p) : NULL;
  PyObject *out = e ? (PyObject *)e : dflt;
  Py_INCREF(out);
  return out;
}

static PyObject *Ids_items(Ids *m, PyObject *unused) {
  PyObject *l = PyList_New(0);
  if (!l) return NULL;
  for (size_t i = 0; m->slots && i <= m->mask; ++i) {
    if (!m->slots[i].key) continue;
    PyObject *k = PyLong_FromVoidPtr((void *)m->slots[i].key);
    PyObject *t = k ? PyTuple_Pack(2, k, (PyObject *)m->slots[i].val) : NULL;
    Py_XDECREF(k);
    if (!t || PyList_Append(l, t)) { Py_XDECREF(t); Py_DECREF(l); return NULL; }
    Py_DECREF(t);
  }
  return l;
}

static PyObject *Ids_clear(Ids *m, PyObject *unused) {
  Ids_clear_all(m);
  if (ids_resize(m, 1024)) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef Ids_methods[] = {
    {"get", (PyCFunction)(void (*)(void))Ids_get, METH_FASTCALL, "get(id(tensor), default=None)"},
    {"items", (PyCFunction)Ids_items, METH_NOARGS, "[(id(tensor), entry)] (a list)"},
    {"clear", (PyCFunction)Ids_clear, METH_NOARGS, "Drop every entry."},
    {NULL}};

static PyMappingMethods Ids_as_map = {.mp_length = (lenfunc)Ids_len, .mp_subscript = (binaryfunc)Ids_subscript,
                                      .mp_ass_subscript = (objobjargproc)Ids_ass_subscript};

static PyTypeObject IdsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ivytrace._speedups.TensorIds",
    .tp_basicsize = sizeof(Ids),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Ids_new,
    .tp_dealloc = (destructor)Ids_dealloc,
    .tp_as_mapping = &Ids_as_map,
    .tp_methods = Ids_methods,
    .tp_doc = "TorchRecorder's id table in C: id(tensor) -> ids entry (see IdEntry)."};

static int rec_sweep(Rec *r) {
  Ids *m = (Ids *)r->ids;
  if (ids_sweep(m)) return -1;
  long long n = 2 * (long long)m->n;
  r->sweep_at = n > 4096 ? n : 4096;
  return 0;
}

static int rec_check_ids(Rec *r) {
  if (r->ids && Ids_Check(r->ids)) return 0;
  PyErr_SetString(PyExc_TypeError, "RecorderBase._ids must be a _speedups.TensorIds");
  return -1;
}

/* ids entry of tensor t (borrowed), made on first sight (as TorchRecorder._ref_of). r->ids is a
 * TensorIds (rec_check_ids). */
static Entry *rec_ref_of(Rec *r, PyObject *t) {
  Ids *m = (Ids *)r->ids;
  Entry *e = ids_get(m, (uintptr_t)t);
  if (e && PyWeakref_GET_OBJECT((PyObject *)e) == t) return e;
  long long tid = r->next_tid++;
  long long sid = tid;
  PyObject *b = tattr(t, TA_BASE);
  if (!b) return NULL;
  if (b != Py_None) {
    Entry *be = rec_ref_of(r, b);
    if (!be) { Py_DECREF(b); return NULL; }
    sid = be->tid;
  }
  Py_DECREF(b);
  e = entry_new(t, tid, sid, T.ref_id, T.ref_storage);
  if (!e || ids_put(m, (uintptr_t)t, e)) return NULL;   /* the table holds it */
  if ((long long)m->n > r->sweep_at && rec_sweep(r)) return NULL;   /* e stays: its tensor is alive */
  return e;
}

static PyObject *Rec_ref_of(Rec *r, PyObject *t) {
  if (rec_check_ids(r)) return NULL;
  Entry *e = rec_ref_of(r, t);
  Py_XINCREF(e);
  return (PyObject *)e;
}

/* A new entry for t with a new tensor id and storage id sid, in the table (TorchRecorder._alias_ref). */
static PyObject *Rec_new_ref(Rec *r, PyObject *args) {
  PyObject *t;
  long long sid;
  if (!PyArg_ParseTuple(args, "OL", &t, &sid) || rec_check_ids(r)) return NULL;
  Entry *e = entry_new(t, r->next_tid, sid, T.ref_id, T.ref_storage);
  if (!e) return NULL;
  r->next_tid++;
  Py_INCREF(e);
  if (ids_put((Ids *)r->ids, (uintptr_t)t, e)) { Py_DECREF(e); return NULL; }
  return (PyObject *)e;
}

static PyObject *Rec_sweep(Rec *r, PyObject *unused) {
  if (rec_check_ids(r) || rec_sweep(r)) return NULL;
  Py_RETURN_NONE;
}

/* TensorRef fields id + version + storage: [r3][version tag, varint(v) if v][r4] */
static int put_ref(Buf *b, Entry *e, long long v) {
  if (buf_put(b, e->fid, e->fid_n)) return -1;
  if (v > 0 && (buf_byte(b, T.ref_version) || buf_varint(b, (uint64_t)v))) return -1;
  return buf_put(b, e->fsid, e->fsid_n);
}

static PyObject *make_parts(PyObject *op_field, Buf *args) {
  PyObject *a = PyBytes_FromStringAndSize(args->p, (Py_ssize_t)args->n);
  if (!a) return NULL;
  PyObject *l = PyList_New(2);
  if (!l) { Py_DECREF(a); return NULL; }
  Py_INCREF(op_field);
  PyList_SET_ITEM(l, 0, op_field);
  PyList_SET_ITEM(l, 1, a);
  return l;
}

/* OpEvent file/line fields for the call made from frame f (borrowed result or NULL+exc). The
 * cache is TorchRecorder._internal_code: code -> 0 (inside torch/ivytrace) or {f_lasti: fields}. */
static PyObject *file_line(Rec *r, PyFrameObject *f0, PyObject **owned) {
  *owned = NULL;
  PyFrameObject *f = f0;
  Py_XINCREF(f);
  while (f) {
    PyCodeObject *c = PyFrame_GetCode(f);
    PyObject *lines = NULL;
    int slot = -1;
    for (int i = 0; i < REC_CODES; ++i) {   /* the last few codes seen, before the table */
      if (r->code_cache[i].code == (PyObject *)c) { slot = i; lines = r->code_cache[i].lines; break; }
    }
    if (!lines) {
      /* code objects hash by content (slow): a C-side table by address holds (code, lines) */
      PyObject *ck = PyLong_FromVoidPtr(c);
      PyObject *ent = ck ? PyDict_GetItemWithError(r->code_by_addr, ck) : NULL;
      if (ent && PyTuple_GET_ITEM(ent, 0) == (PyObject *)c) {
        lines = PyTuple_GET_ITEM(ent, 1);
      } else if (!PyErr_Occurred()) {
        lines = PyDict_GetItemWithError(r->internal, (PyObject *)c);
        if (lines) {
          PyObject *pair = PyTuple_Pack(2, (PyObject *)c, lines);
          if (!pair || PyDict_SetItem(r->code_by_addr, ck, pair)) lines = NULL;
          Py_XDECREF(pair);
        }
      }
      Py_XDECREF(ck);
      if (lines) {   /* as code_by_addr, for good: a code's entry is never replaced */
        slot = r->code_next;
        r->code_next = (slot + 1) % REC_CODES;
        Py_INCREF(c);
        Py_INCREF(lines);
        Py_XSETREF(r->code_cache[slot].code, (PyObject *)c);
        Py_XSETREF(r->code_cache[slot].lines, lines);
        Py_CLEAR(r->code_cache[slot].fl[0]);
        Py_CLEAR(r->code_cache[slot].fl[1]);
      }
    }
    Py_DECREF(c);
    if (!lines) {
      if (PyErr_Occurred()) { Py_DECREF(f); return NULL; }
      break;   /* not classified yet: the Python method does it */
    }
    if (PyDict_CheckExact(lines)) {
      int lasti = PyFrame_GetLasti(f);
      for (int j = 0; j < 2; ++j) {   /* the fields of the last two call sites of this code */
        if (r->code_cache[slot].fl[j] && r->code_cache[slot].lasti[j] == lasti) {
          Py_DECREF(f);
          return r->code_cache[slot].fl[j];
        }
      }
      PyObject *k = PyLong_FromLong(lasti);
      PyObject *fl = k ? PyDict_GetItemWithError(lines, k) : NULL;
      Py_XDECREF(k);
      if (fl) {   /* a call site's fields never change once made (_file_line) */
        PyObject *keep = r->code_cache[slot].fl[0];
        int klasti = r->code_cache[slot].lasti[0];
        Py_INCREF(fl);
        r->code_cache[slot].fl[0] = fl;
        r->code_cache[slot].lasti[0] = lasti;
        Py_XSETREF(r->code_cache[slot].fl[1], keep);
        r->code_cache[slot].lasti[1] = klasti;
        Py_DECREF(f);
        return fl;
      }
      if (PyErr_Occurred()) { Py_DECREF(f); return NULL; }
      break;
    }
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  if (!f) {
    *owned = PyBytes_FromStringAndSize(NULL, 0);
    return *owned;
  }
  *owned = PyObject_CallMethodOneArg((PyObject *)r, s_file_line, (PyObject *)f);
  Py_DECREF(f);
  return *owned;
}

/* The (tensor, ids entry, version before the call) of each tensor argument (TorchRecorder's
 * `ins`): kept in C arrays while only the C path adds to it, and made the Python list of tuples
 * the Python methods take (ins_list) when one of them is called; the list then takes the rest. */
#define INS_MAX 8
typedef struct {
  int n;
  PyObject *t[INS_MAX];   /* owned */
  Entry *e[INS_MAX];      /* owned */
  long long v[INS_MAX];
  PyObject *list;         /* owned; once made, the only store */
} Ins;

static PyObject *ins_list(Ins *in) {   /* borrowed */
  if (in->list) return in->list;
  PyObject *l = PyList_New(in->n);
  if (!l) return NULL;
  for (int i = 0; i < in->n; ++i) {
    PyObject *pv = PyLong_FromLongLong(in->v[i]);
    PyObject *tup = pv ? PyTuple_Pack(3, in->t[i], (PyObject *)in->e[i], pv) : NULL;
    Py_XDECREF(pv);
    if (!tup) { Py_DECREF(l); return NULL; }
    PyList_SET_ITEM(l, i, tup);
  }
  for (int i = 0; i < in->n; ++i) { Py_DECREF(in->t[i]); Py_DECREF(in->e[i]); }
  in->n = 0;
  in->list = l;
  return l;
}

static int ins_add(Ins *in, PyObject *t, Entry *e, long long v) {
  if (!in->list && in->n < INS_MAX) {
    Py_INCREF(t);
    Py_INCREF(e);
    in->t[in->n] = t;
    in->e[in->n] = e;
    in->v[in->n++] = v;
    return 0;
  }
  PyObject *l = ins_list(in);
  PyObject *pv = l ? PyLong_FromLongLong(v) : NULL;
  PyObject *tup = pv ? PyTuple_Pack(3, t, (PyObject *)e, pv) : NULL;
  Py_XDECREF(pv);
  int bad = !tup || PyList_Append(l, tup);
  Py_XDECREF(tup);
  return bad ? -1 : 0;
}

static Py_ssize_t ins_len(Ins *in) { return in->list ? PyList_GET_SIZE(in->list) : in->n; }

/* Item i as (tensor, entry, version), all borrowed; 0 when it is not such a triple (an item the
 * Python encoder added that the C path does not finish). */
static int ins_at(Ins *in, Py_ssize_t i, PyObject **t, Entry **e, long long *v) {
  if (!in->list) {
    *t = in->t[i];
    *e = in->e[i];
    *v = in->v[i];
    return 1;
  }
  PyObject *tup = PyList_GET_ITEM(in->list, i);
  if (!PyTuple_CheckExact(tup) || PyTuple_GET_SIZE(tup) != 3 || !Entry_Check(PyTuple_GET_ITEM(tup, 1)) ||
      !PyLong_CheckExact(PyTuple_GET_ITEM(tup, 2)))
    return 0;
  *t = PyTuple_GET_ITEM(tup, 0);
  *e = ENTRY(PyTuple_GET_ITEM(tup, 1));
  int overflow = 0;
  *v = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(tup, 2), &overflow);
  return !overflow;
}

static void ins_free(Ins *in) {
  for (int i = 0; i < in->n; ++i) { Py_DECREF(in->t[i]); Py_DECREF(in->e[i]); }
  in->n = 0;
  Py_CLEAR(in->list);
}

static int put_arg_d(Rec *r, Buf *b, PyObject *a, PyObject *known, Ins *ins, PyObject **encode, int depth);

/* Two shapes (torch.Size) of plain ints, equal item by item. */
static int same_plain_shape(PyObject *a, PyObject *b) {
  if (!b || Py_TYPE(a) != Py_TYPE(b) || !PyTuple_Check(a)) return 0;
  Py_ssize_t n = PyTuple_GET_SIZE(a);
  if (n != PyTuple_GET_SIZE(b)) return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
    if (x == y) continue;
    if (!PyLong_CheckExact(x) || !PyLong_CheckExact(y)) return 0;
    int ox = 0, oy = 0;
    long long vx = PyLong_AsLongLongAndOverflow(x, &ox), vy = PyLong_AsLongLongAndOverflow(y, &oy);
    if (ox || oy || vx != vy) return 0;
  }
  return 1;
}

static int plain_shape(PyObject *a) {
  if (!PyTuple_Check(a)) return 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) {
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(a, i))) return 0;
  }
  return 1;
}

/* TensorRef's dtype and shape fields of tensor t (new reference, bytes): the last few
 * (dtype, shape) pairs asked are kept with their fields (dtype_field[dtype] + shape_field(shape),
 * a function of the two only), so that a run of ops on tensors of one kind looks up neither. */
static PyObject *dtype_shape_tail(Rec *r, PyObject *t) {
  PyObject *dt = tattr(t, TA_DTYPE);
  if (!dt) return NULL;
  PyObject *shape = tattr(t, TA_SHAPE);
  if (!shape) { Py_DECREF(dt); return NULL; }
  for (int i = 0; i < REC_TAILS; ++i) {
    if (r->tail_dt[i] == dt && same_plain_shape(shape, r->tail_shape[i])) {
      Py_DECREF(dt);
      Py_DECREF(shape);
      Py_INCREF(r->tail[i]);
      return r->tail[i];
    }
  }
  PyObject *tail = NULL;
  PyObject *dfield = PyDict_GetItemWithError(r->dtype_field, dt);   /* absent: no field */
  PyObject *sfield = NULL;
  if (dfield || !PyErr_Occurred()) {
    sfield = PyDict_GetItemWithError(r->shapes, shape);
    if (sfield) Py_INCREF(sfield);
    else if (!PyErr_Occurred()) sfield = PyObject_CallOneArg(r->shape_field, shape);
  }
  if (sfield && PyBytes_Check(sfield) && (!dfield || PyBytes_Check(dfield))) {
    Py_ssize_t dn = dfield ? PyBytes_GET_SIZE(dfield) : 0, sn = PyBytes_GET_SIZE(sfield);
    tail = PyBytes_FromStringAndSize(NULL, dn + sn);
    if (tail) {
      if (dn) memcpy(PyBytes_AS_STRING(tail), PyBytes_AS_STRING(dfield), (size_t)dn);
      memcpy(PyBytes_AS_STRING(tail) + dn, PyBytes_AS_STRING(sfield), (size_t)sn);
    }
  } else if (sfield || (dfield && !PyBytes_Check(dfield))) {
    PyErr_SetString(PyExc_TypeError, "ivytrace: dtype and shape fields must be bytes");
  }
  Py_XDECREF(sfield);
  if (tail && plain_shape(shape)) {
    int i = r->tail_next;
    r->tail_next = (i + 1) % REC_TAILS;
    Py_INCREF(tail);
    Py_XSETREF(r->tail_dt[i], dt);   /* takes the reference */
    Py_XSETREF(r->tail_shape[i], shape);
    Py_XSETREF(r->tail[i], tail);
    return tail;
  }
  Py_DECREF(dt);
  Py_DECREF(shape);
  return tail;
}

/* Arg{tensor = TensorRef{id, version, storage[, dtype, shape]}} (full: with dtype and shape,
 * as TorchRecorder._full_ref). */
static int put_tensor_arg(Rec *r, Buf *b, PyObject *t, Entry *e, long long v, int full) {
  size_t k = (size_t)e->fid_n + (size_t)e->fsid_n +
             (v > 0 ? 1 + varint_len((uint64_t)v) : 0);
  PyObject *tail = NULL;
  if (full) {
    if (!(tail = dtype_shape_tail(r, t))) return -1;
    k += (size_t)PyBytes_GET_SIZE(tail);
  }
  int bad = buf_byte(b, T.arg_tensor) || buf_varint(b, k) || put_ref(b, e, v) || (tail && buf_bytes_obj(b, tail));
  Py_XDECREF(tail);
  return bad ? -1 : 0;
}

/* A tensor (entry e, version v) the current frame does not know yet, as _in_tensor and
 * _define_external treat it when that writes nothing: its storage was written at this version by
 * a recorded op (then it is known), or this session already wrote its value with the same role and
 * name (then it is known and a constant). 1: now known; 0: the Python path must define it. */
static int knows_already(Rec *r, PyObject *t, Entry *e, long long v, PyObject *known) {
  PyObject *tid = e->tid_obj;
  PyObject *written = PyObject_GetAttr(r->frame, s_written);
  if (!written) return -1;
  PyObject *wv = PyDict_GetItemWithError(written, e->sid_obj);
  int hit = wv && PyLong_AsLongLong(wv) == v;
  Py_DECREF(written);
  if (!wv && PyErr_Occurred()) return -1;
  PyObject *pv = PyLong_FromLongLong(v);
  if (!pv) return -1;
  if (hit) {
    int bad = PyDict_SetItem(known, tid, pv);
    Py_DECREF(pv);
    return bad ? -1 : 1;
  }
  PyObject *have = PyDict_GetItemWithError(r->values, tid);   /* (version, role, name) */
  if (!have) { Py_DECREF(pv); return PyErr_Occurred() ? -1 : 0; }
  PyObject *key = PyLong_FromVoidPtr(t);
  PyObject *p = key ? PyDict_GetItemWithError(r->params, key) : NULL;   /* (weakref, name, role) */
  Py_XDECREF(key);
  if (!p && PyErr_Occurred()) { Py_DECREF(pv); return -1; }
  PyObject *want;
  if (p && PyWeakref_GET_OBJECT(PyTuple_GET_ITEM(p, 0)) == t) {
    want = PyTuple_Pack(3, pv, PyTuple_GET_ITEM(p, 2), PyTuple_GET_ITEM(p, 1));
  } else {
    want = PyTuple_Pack(3, pv, PyTuple_GET_ITEM(s_constant_key, 0), PyTuple_GET_ITEM(s_constant_key, 1));
  }
  if (!want) { Py_DECREF(pv); return -1; }
  int eq = PyObject_RichCompareBool(have, want, Py_EQ);
  Py_DECREF(want);
  if (eq == 1 && (PyDict_SetItem(known, tid, pv) || PyDict_SetItem(r->const_, tid, pv))) eq = -1;
  Py_DECREF(pv);
  return eq == 1 ? 2 : eq;   /* 2: the Python path writes this first read with dtype and shape */
}

/* One Arg message for value a (as TorchRecorder's encoder `_in` writes it): tensors the frame
 * knows, ints, floats, None and bools here; anything else through `self._in.encode(a, ins)`. */
static int put_arg_d(Rec *r, Buf *b, PyObject *a, PyObject *known, Ins *ins, PyObject **encode, int depth) {
  PyTypeObject *tp = Py_TYPE(a);
  if ((PyObject *)tp == r->tensor_t || (PyObject *)tp == r->param_t) {
    Entry *e = rec_ref_of(r, a);
    if (!e) return -1;
    long long v = tensor_version(a);
    if (v < 0 && PyErr_Occurred()) return -1;
    PyObject *kv = PyDict_GetItemWithError(known, e->tid_obj);
    if (!kv && PyErr_Occurred()) return -1;
    int ok = kv && PyLong_AsLongLong(kv) == v;
    if (!ok) {
      int k2 = knows_already(r, a, e, v, known);
      if (k2 < 0) return -1;
      ok = k2;
    }
    if (ok) {
      if (ins_add(ins, a, e, v)) return -1;
      return put_tensor_arg(r, b, a, e, v, ok == 2);   /* Arg.tensor = 1 */
    }
  } else if (tp == &PyLong_Type) {
    PyObject *c = PyDict_GetItemWithError(r->int_cache, a);
    if (c) return buf_bytes_obj(b, c);
    if (PyErr_Occurred()) return -1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(a, &overflow);
    if (!overflow) {   /* Arg.int = 4, zigzag */
      return buf_byte(b, T.arg_i) || buf_varint(b, ((uint64_t)x << 1) ^ (uint64_t)(x >> 63)) ? -1 : 0;
    }
  } else if (tp == &PyFloat_Type) {
    double d = PyFloat_AS_DOUBLE(a);   /* Arg.float = 5, fixed64: little-endian hosts (x86-64, arm64) */
    return buf_byte(b, T.arg_f) || buf_put(b, &d, 8) ? -1 : 0;
  } else if (a == Py_None) {
    return buf_byte(b, T.arg_none) || buf_byte(b, 1) ? -1 : 0;
  } else if (tp == &PyBool_Type) {
    return buf_byte(b, T.arg_b) || buf_byte(b, a == Py_True) ? -1 : 0;
  } else if ((tp == &PyTuple_Type || tp == &PyList_Type) && depth < 8) {
    /* Arg.list = 9 / Arg.tuple = 10: ArgList{items = 1} */
    Py_ssize_t n = tp == &PyTuple_Type ? PyTuple_GET_SIZE(a) : PyList_GET_SIZE(a);
    Buf items, one;
    buf_init(&items);
    buf_init(&one);
    int bad = 0;
    for (Py_ssize_t i = 0; i < n && !bad; ++i) {
      /* a list may change while its items are encoded (by the Python encoder): re-check */
      if (tp == &PyList_Type && i >= PyList_GET_SIZE(a)) break;
      PyObject *x = tp == &PyTuple_Type ? PyTuple_GET_ITEM(a, i) : PyList_GET_ITEM(a, i);
      Py_INCREF(x);
      one.n = 0;
      bad = put_arg_d(r, &one, x, known, ins, encode, depth + 1) || buf_byte(&items, T.list_items) ||
            buf_varint(&items, one.n) || buf_put(&items, one.p, one.n);
      Py_DECREF(x);
    }
    bad = bad || buf_byte(b, tp == &PyTuple_Type ? T.arg_tuple : T.arg_list) || buf_varint(b, items.n) ||
          buf_put(b, items.p, items.n);
    buf_free(&items);
    buf_free(&one);
    return bad ? -1 : 0;
  }
  if (!*encode) {
    PyObject *in = PyObject_GetAttr((PyObject *)r, s_in);
    if (!in) return -1;
    *encode = PyObject_GetAttr(in, s_encode);
    Py_DECREF(in);
    if (!*encode) return -1;
  }
  PyObject *l = ins_list(ins);
  if (!l) return -1;
  PyObject *v2[] = {a, l};
  PyObject *enc = PyObject_Vectorcall(*encode, v2, 2, NULL);
  if (!enc) return -1;
  int bad = !PyBytes_Check(enc) || buf_bytes_obj(b, enc);
  if (bad && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "encoder returned no bytes");
  Py_DECREF(enc);
  return bad ? -1 : 0;
}

static int put_arg(Rec *r, Buf *b, PyObject *a, PyObject *known, Ins *ins, PyObject **encode) {
  return put_arg_d(r, b, a, known, ins, encode, 0);
}

/* The Python path for everything after the call. */
static PyObject *finish_in_python(Rec *r, PyObject *info, Buf *args, Ins *in, PyObject *result,
                                  long long start, long long end, PyObject *call_args) {
  PyObject *ins = ins_list(in);
  if (!ins) { Py_DECREF(result); return NULL; }
  PyObject *parts = make_parts(PyTuple_GET_ITEM(info, 1), args);
  if (!parts) { Py_DECREF(result); return NULL; }
  PyObject *ps = PyLong_FromLongLong(start), *pe = PyLong_FromLongLong(end);
  PyObject *out = NULL;
  if (ps && pe) {
    PyObject *argv[] = {(PyObject *)r, info, parts, ins, result, ps, pe, call_args};
    out = PyObject_VectorcallMethod(s_finish, argv, 8, NULL);
  }
  Py_XDECREF(ps); Py_XDECREF(pe);
  Py_DECREF(parts);
  Py_DECREF(result);
  return out;
}

/* A dict's version tag (PEP 509): a new value on every change of the dict, unique over all dicts.
 * 0: not available (the caches below are then not used). */
static inline uint64_t dict_version(PyObject *d) {
#if PY_VERSION_HEX < 0x030C0000   /* deprecated from 3.12 */
  return ((PyDictObject *)d)->ma_version_tag;
#else
  (void)d;
  return 0;
#endif
}

/* _info[id(func)] when it is func's (borrowed), or NULL (with an exception on failure). The last
 * answers are kept by func address while the _info dict is unchanged (its version tag). */
static PyObject *rec_info_of(Rec *r, PyObject *func) {
  size_t slot = ((uintptr_t)func >> 4) % REC_INFOS;
  uint64_t ver = dict_version(r->info);
  PyObject *c = r->info_cache[slot].info;
  if (c && ver && r->info_cache[slot].ver == ver && PyTuple_GET_ITEM(c, 4) == func) return c;
  PyObject *key = PyLong_FromVoidPtr(func);
  if (!key) return NULL;
  PyObject *info = PyDict_GetItemWithError(r->info, key);
  Py_DECREF(key);
  if (!info) return NULL;
  if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) < 5 || PyTuple_GET_ITEM(info, 4) != func) return NULL;
  if (ver) {
    Py_INCREF(info);
    Py_XSETREF(r->info_cache[slot].info, info);   /* holds func too (info[4]): its address stays its own */
    r->info_cache[slot].ver = ver;
  }
  return info;
}

static PyObject *Rec_torch_function(Rec *r, PyObject *const *argv, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 4) {
    PyErr_SetString(PyExc_TypeError, "__torch_function__(func, types, args=(), kwargs=None)");
    return NULL;
  }
  PyObject *func = argv[0];
  PyObject *args = nargs > 2 ? argv[2] : NULL;
  PyObject *kwargs = nargs > 3 ? argv[3] : NULL;
  if (kwargs == Py_None) kwargs = NULL;
  PyObject *info = NULL;
  if (r->active && r->info && r->frame && r->ids && Ids_Check(r->ids) && r->const_ && r->internal && r->scopes && r->threads &&
      r->int_cache && r->code_by_addr && r->values && r->params && (!args || PyTuple_CheckExact(args)) && (!kwargs || PyDict_CheckExact(kwargs))) {
    info = rec_info_of(r, func);
    if (!info && PyErr_Occurred()) return NULL;
    if (!info) {
      info = PyObject_CallMethodOneArg((PyObject *)r, s_classify, func);
      if (!info) return NULL;
      Py_DECREF(info);  /* _classify keeps it in _info, or it is a property read (slow path) */
      if (!PyTuple_Check(info) || PyTuple_GET_ITEM(info, 4) != func) info = NULL;
    }
    if (info && PyLong_AsLong(PyTuple_GET_ITEM(info, 0)) != 0) {
      if (PyLong_AsLong(PyTuple_GET_ITEM(info, 0)) == 1) {   /* SKIP: call through */
        if (args) return PyObject_Call(func, args, kwargs);
        PyObject *empty = PyTuple_New(0);
        PyObject *x = empty ? PyObject_Call(func, empty, kwargs) : NULL;
        Py_XDECREF(empty);
        return x;
      }
      info = NULL;
    }
  }
  if (!info || !args) {   /* inactive, shape read, guard, property: the Python handler */
    PyObject *v[5] = {(PyObject *)r, func, nargs > 1 ? argv[1] : Py_None, args ? args : Py_None, kwargs ? kwargs : Py_None};
    PyObject *empty = NULL;
    if (!args) { empty = PyTuple_New(0); v[3] = empty; }
    PyObject *out = PyObject_VectorcallMethod(s_handle, v, 5, NULL);
    Py_XDECREF(empty);
    return out;
  }
  Py_INCREF(info);

  /* Arguments, before the call (versions as the op saw them). */
  PyObject *known = NULL, *result = NULL, *encode = NULL, *out = NULL;
  Ins ins;
  ins.n = 0;
  ins.list = NULL;
  PyObject *uw_args = NULL, *uw_kwargs = NULL;   /* owned: args/kwargs with symbolic ints unwrapped */
  Buf b, ab;
  buf_init(&b);
  buf_init(&ab);
  if (r->known_of != r->frame || !r->known) {   /* a region began or ended: its frame's table */
    PyObject *k = PyObject_GetAttr(r->frame, s_known);
    if (!k) goto fail;
    Py_INCREF(r->frame);
    Py_XSETREF(r->known_of, r->frame);
    Py_XSETREF(r->known, k);
  }
  known = r->known;
  Py_INCREF(known);
  if (!known) goto fail;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  for (Py_ssize_t i = 0; i < n; ++i) {
    ab.n = 0;
    if (put_arg(r, &ab, PyTuple_GET_ITEM(args, i), known, &ins, &encode)) goto fail;
    /* OpEvent.args = 2 */
    if (buf_byte(&b, T.op_args) || buf_varint(&b, ab.n) || buf_put(&b, ab.p, ab.n)) goto fail;
  }
  if (kwargs) {
    Py_ssize_t pos = 0;
    PyObject *k, *val;
    while (PyDict_Next(kwargs, &pos, &k, &val)) {
      Py_ssize_t kn;
      const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, &kn) : NULL;
      if (!ks) goto fail;
      ab.n = 0;
      if (put_arg(r, &ab, val, known, &ins, &encode)) goto fail;
      /* OpEvent.kwargs = 3: KwArg{name = 1, value = 2} */
      size_t kw = 1 + varint_len((uint64_t)kn) + (size_t)kn + 1 + varint_len(ab.n) + ab.n;
      if (buf_byte(&b, T.op_kwargs) || buf_varint(&b, kw) || buf_byte(&b, T.kw_name) || buf_varint(&b, (uint64_t)kn) ||
          buf_put(&b, ks, (size_t)kn) || buf_byte(&b, T.kw_value) || buf_varint(&b, ab.n) || buf_put(&b, ab.p, ab.n))
        goto fail;
    }
  }

  int had_sym = r->sym_seen;   /* the Python finish sorts out what such a call records */
  if (r->sym_seen) {   /* symbolic ints among the arguments: call with their plain values */
    r->sym_seen = 0;
    PyObject *pair = PyObject_CallMethodObjArgs((PyObject *)r, s_unwrap_call, args, kwargs ? kwargs : Py_None, NULL);
    if (!pair) goto fail;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyTuple_CheckExact(PyTuple_GET_ITEM(pair, 0))) {
      Py_DECREF(pair);
      PyErr_SetString(PyExc_TypeError, "_unwrap_call must return (args tuple, kwargs)");
      goto fail;
    }
    uw_args = PyTuple_GET_ITEM(pair, 0);
    Py_INCREF(uw_args);
    if (PyDict_Check(PyTuple_GET_ITEM(pair, 1))) {
      uw_kwargs = PyTuple_GET_ITEM(pair, 1);
      Py_INCREF(uw_kwargs);
    }
    Py_DECREF(pair);
    args = uw_args;
    kwargs = uw_kwargs;
  }
  long long start = now_ns();
  result = PyObject_Call(func, args, kwargs);
  long long end = now_ns();
  if (!result) {
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *parts = make_parts(PyTuple_GET_ITEM(info, 1), &b);
    PyObject *ps = PyLong_FromLongLong(start);
    PyObject *il = ins_list(&ins);
    if (parts && ps && il) {
      PyObject *v[] = {(PyObject *)r, info, parts, il, ps};
      PyObject *x = PyObject_VectorcallMethod(s_raised, v, 5, NULL);
      Py_XDECREF(x);
    }
    Py_XDECREF(parts);
    Py_XDECREF(ps);
    if (PyErr_Occurred()) {   /* recording the failure failed: the call's own error wins */
      PyErr_Clear();
    }
    PyErr_Restore(et, ev, etb);
    goto fail;
  }

  /* The fast finish: one plain tensor result, not random, not foldable, not an alias op. */
  int fast = !had_sym && Py_TYPE(result) == (PyTypeObject *)r->tensor_t && !PyObject_IsTrue(PyTuple_GET_ITEM(info, 2));
  if (fast) {
    int c = PySet_Contains(r->alias_ops, PyTuple_GET_ITEM(info, 3));
    if (c < 0) goto fail;
    fast = !c;
  }
  Py_ssize_t nin = ins_len(&ins);
  int all_const = 1;
  for (Py_ssize_t i = 0; fast && i < nin; ++i) {   /* (tensor, entry, version) each, else Python */
    PyObject *t;
    Entry *te;
    long long tv;
    fast = ins_at(&ins, i, &t, &te, &tv);
    if (fast && all_const) {
      PyObject *cv = PyDict_GET_SIZE(r->const_) ? PyDict_GetItemWithError(r->const_, te->tid_obj) : NULL;
      if (!cv && PyErr_Occurred()) goto fail;
      if (!cv || PyLong_AsLongLong(cv) != tv) all_const = 0;
    }
  }
  if (!fast || all_const) {   /* every input a constant: its outputs are recorded (Python) */
    out = finish_in_python(r, info, &b, &ins, result, start, end, args);
    result = NULL;
    goto done;
  }
  {
    Entry *e = rec_ref_of(r, result);
    if (!e) goto fail;
    long long v = tensor_version(result);
    if (v < 0 && PyErr_Occurred()) goto fail;
    ab.n = 0;
    if (put_tensor_arg(r, &ab, result, e, v, 1) || buf_byte(&b, T.op_result) || buf_varint(&b, ab.n) ||
        buf_put(&b, ab.p, ab.n))   /* OpEvent.result = 4 */
      goto fail;
    /* Arguments written in place (TorchRecorder._mutations): OpEvent.mutated = 5 at their new
     * version, each storage known at it in this frame. */
    PyObject *written = NULL;
    Entry *seen[16];
    int nm = 0;
    for (Py_ssize_t i = 0; i < nin; ++i) {
      PyObject *t;
      Entry *te;
      long long tv;
      ins_at(&ins, i, &t, &te, &tv);   /* each a triple (checked above) */
      long long nv = tensor_version(t);
      if (nv < 0 && PyErr_Occurred()) { Py_XDECREF(written); goto fail; }
      if (nv == tv) continue;
      int dup = 0;
      for (int j = 0; j < nm; ++j) dup |= seen[j] == te;
      if (dup) continue;
      if (nm == 16) { Py_XDECREF(written); PyErr_SetString(PyExc_RuntimeError, "ivytrace: too many writes"); goto fail; }
      seen[nm++] = te;
      if (!written && !(written = PyObject_GetAttr(r->frame, s_written))) goto fail;
      PyObject *pv = PyLong_FromLongLong(nv);
      int bad = !pv || PyDict_SetItem(known, te->tid_obj, pv) ||
                PyDict_SetItem(written, te->sid_obj, pv);
      Py_XDECREF(pv);
      size_t k = (size_t)te->fid_n + (size_t)te->fsid_n +
                 (nv > 0 ? 1 + varint_len((uint64_t)nv) : 0);
      bad = bad || buf_byte(&b, T.op_mutated) || buf_varint(&b, k) || put_ref(&b, te, nv);
      if (!bad) {   /* an output: not a constant any more */
        PyObject *cv = PyDict_GetItemWithError(r->const_, te->tid_obj);
        bad = (!cv && PyErr_Occurred()) || (cv && PyDict_DelItem(r->const_, te->tid_obj));
      }
      if (bad) { Py_XDECREF(written); goto fail; }
    }
    Py_XDECREF(written);
    PyObject *pv = PyLong_FromLongLong(v);
    if (!pv || PyDict_SetItem(known, e->tid_obj, pv)) { Py_XDECREF(pv); goto fail; }
    Py_DECREF(pv);
    PyObject *cv = PyDict_GET_SIZE(r->const_) ? PyDict_GetItemWithError(r->const_, e->tid_obj) : NULL;
    if (!cv && PyErr_Occurred()) goto fail;
    if (cv && PyDict_DelItem(r->const_, e->tid_obj)) goto fail;
    if (nm && (buf_byte(&b, T.op_flags) || buf_varint(&b, T.inplace))) goto fail;   /* OpEvent.flags = INPLACE */
  }
  {
    /* file/line, scope, thread, timing */
    PyObject *owned = NULL;
    PyObject *fl = file_line(r, PyEval_GetFrame(), &owned);
    if (!fl) goto fail;
    int bad = buf_bytes_obj(&b, fl);
    Py_XDECREF(owned);
    if (bad) goto fail;
    unsigned long ident = PyThread_get_thread_ident();
    PyObject *pid;
    if (r->last_ident_obj && r->last_ident == ident) {
      pid = r->last_ident_obj;
      Py_INCREF(pid);
    } else {
      pid = PyLong_FromUnsignedLong(ident);
      if (!pid) goto fail;
      Py_INCREF(pid);
      Py_XSETREF(r->last_ident_obj, pid);
      Py_CLEAR(r->last_thread_field);
      r->last_ident = ident;
    }
    if (PyDict_GET_SIZE(r->scopes)) {   /* no module scope open anywhere: nothing to look up */
      PyObject *st = PyDict_GetItemWithError(r->scopes, pid);
      if (st && PyList_Check(st) && PyList_GET_SIZE(st)) {
        PyObject *top = PyList_GET_ITEM(st, PyList_GET_SIZE(st) - 1);
        int on = PyObject_IsTrue(PyTuple_GET_ITEM(top, 2));
        if (on < 0 || (on && buf_bytes_obj(&b, PyTuple_GET_ITEM(top, 4)))) { Py_DECREF(pid); goto fail; }
      } else if (!st && PyErr_Occurred()) {
        Py_DECREF(pid);
        goto fail;
      }
    }
    /* OpEvent.thread of this thread: _threads[ident], made once (a function of the ident) */
    PyObject *tb = r->last_thread_field;
    if (!tb) {
      tb = PyDict_GetItemWithError(r->threads, pid);
      if (!tb) {
        if (PyErr_Occurred()) { Py_DECREF(pid); goto fail; }
        tb = bytes_varint_field(T.op_thread, ident);
        if (!tb || PyDict_SetItem(r->threads, pid, tb)) { Py_XDECREF(tb); Py_DECREF(pid); goto fail; }
        Py_DECREF(tb);
      }
      Py_INCREF(tb);
      r->last_thread_field = tb;
    }
    Py_DECREF(pid);
    if (buf_bytes_obj(&b, tb) || buf_byte(&b, T.op_start_ns) || buf_varint(&b, (uint64_t)(start - r->t0)) ||
        buf_byte(&b, T.op_duration_ns) || buf_varint(&b, (uint64_t)(end - start)))
      goto fail;
  }
  /* the record: op field + the rest */
  {
    PyObject *op = PyTuple_GET_ITEM(info, 1);
    size_t opn = (size_t)PyBytes_GET_SIZE(op);
    if (r->sink && Py_TYPE(r->sink) == &SinkType) {
      Sink *s = (Sink *)r->sink;
      size_t pn = opn + b.n;
      size_t inner = 1 + varint_len(pn) + pn;
      char *p = sink_reserve(s, varint_len(inner) + inner);
      if (!p) goto fail;
      p += varint_to((uint8_t *)p, inner);
      *p++ = (char)T.record_op;
      p += varint_to((uint8_t *)p, pn);
      memcpy(p, PyBytes_AS_STRING(op), opn);
      memcpy(p + opn, b.p, b.n);
      s->records++;
      s->op_events++;
    } else {
      PyObject *payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(opn + b.n));
      if (!payload) goto fail;
      memcpy(PyBytes_AS_STRING(payload), PyBytes_AS_STRING(op), opn);
      memcpy(PyBytes_AS_STRING(payload) + opn, b.p, b.n);
      PyObject *x = PyObject_CallMethodOneArg(r->w, s_emit_op, payload);
      Py_DECREF(payload);
      if (!x) goto fail;
      Py_DECREF(x);
    }
  }
  out = result;
  result = NULL;
  goto done;
fail:
  out = NULL;
done:
  Py_XDECREF(result);
  Py_XDECREF(uw_args);
  Py_XDECREF(uw_kwargs);
  Py_XDECREF(known);
  ins_free(&ins);
  Py_XDECREF(encode);
  Py_DECREF(info);
  buf_free(&b);
  buf_free(&ab);
  return out;
}

static PyObject *Rec_setup(Rec *r, PyObject *args) {
  PyObject *tensor_t, *param_t, *dtype_field, *shapes, *alias_ops, *int_cache, *shape_field;
  PyObject *constant_key;
  if (!PyArg_ParseTuple(args, "OOO!O!O!O!OO!", &tensor_t, &param_t, &PyDict_Type, &dtype_field, &PyDict_Type,
                        &shapes, &PyFrozenSet_Type, &alias_ops, &PyDict_Type, &int_cache, &shape_field,
                        &PyTuple_Type, &constant_key))
    return NULL;
  if (!T.set) { PyErr_SetString(PyExc_RuntimeError, "ivytrace._speedups: set_tags() was not called"); return NULL; }
  if (PyTuple_GET_SIZE(constant_key) != 2) { PyErr_SetString(PyExc_ValueError, "constant key: (role, name)"); return NULL; }
  Py_INCREF(constant_key);
  Py_XSETREF(s_constant_key, constant_key);
#define SET(f, v) do { Py_INCREF(v); Py_XSETREF(r->f, v); } while (0)
  SET(tensor_t, tensor_t);
  SET(param_t, param_t);
  SET(dtype_field, dtype_field);
  SET(shapes, shapes);
  SET(alias_ops, alias_ops);
  SET(int_cache, int_cache);
  SET(shape_field, shape_field);
#undef SET
  Py_RETURN_NONE;
}

static PyObject *Rec_take_tid(Rec *r, PyObject *unused) { return PyLong_FromLongLong(r->next_tid++); }

static int Rec_traverse(Rec *r, visitproc visit, void *arg) {
  Py_VISIT(r->ids); Py_VISIT(r->info); Py_VISIT(r->frame); Py_VISIT(r->const_); Py_VISIT(r->values); Py_VISIT(r->params);
  Py_VISIT(r->internal); Py_VISIT(r->scopes); Py_VISIT(r->threads); Py_VISIT(r->sink);
  Py_VISIT(r->w); Py_VISIT(r->tensor_t); Py_VISIT(r->param_t); Py_VISIT(r->dtype_field); Py_VISIT(r->shapes);
  Py_VISIT(r->alias_ops); Py_VISIT(r->int_cache); Py_VISIT(r->shape_field); Py_VISIT(r->code_by_addr); Py_VISIT(r->known_of); Py_VISIT(r->known); Py_VISIT(r->last_ident_obj); Py_VISIT(r->last_thread_field);
  for (int i = 0; i < REC_TAILS; ++i) { Py_VISIT(r->tail_dt[i]); Py_VISIT(r->tail_shape[i]); Py_VISIT(r->tail[i]); }
  for (int i = 0; i < REC_INFOS; ++i) Py_VISIT(r->info_cache[i].info);
  for (int i = 0; i < REC_CODES; ++i) {
    Py_VISIT(r->code_cache[i].code); Py_VISIT(r->code_cache[i].lines); Py_VISIT(r->code_cache[i].fl[0]); Py_VISIT(r->code_cache[i].fl[1]);
  }
  return 0;
}

static int Rec_clear(Rec *r) {
  Py_CLEAR(r->ids); Py_CLEAR(r->info); Py_CLEAR(r->frame); Py_CLEAR(r->const_); Py_CLEAR(r->values); Py_CLEAR(r->params);
  Py_CLEAR(r->internal); Py_CLEAR(r->scopes); Py_CLEAR(r->threads); Py_CLEAR(r->sink);
  Py_CLEAR(r->w); Py_CLEAR(r->tensor_t); Py_CLEAR(r->param_t); Py_CLEAR(r->dtype_field); Py_CLEAR(r->shapes);
  Py_CLEAR(r->alias_ops); Py_CLEAR(r->int_cache); Py_CLEAR(r->shape_field); Py_CLEAR(r->code_by_addr); Py_CLEAR(r->known_of); Py_CLEAR(r->known); Py_CLEAR(r->last_ident_obj); Py_CLEAR(r->last_thread_field);
  for (int i = 0; i < REC_TAILS; ++i) { Py_CLEAR(r->tail_dt[i]); Py_CLEAR(r->tail_shape[i]); Py_CLEAR(r->tail[i]); }
  for (int i = 0; i < REC_INFOS; ++i) Py_CLEAR(r->info_cache[i].info);
  for (int i = 0; i < REC_CODES; ++i) {
    Py_CLEAR(r->code_cache[i].code); Py_CLEAR(r->code_cache[i].lines); Py_CLEAR(r->code_cache[i].fl[0]); Py_CLEAR(r->code_cache[i].fl[1]);
  }
  return 0;
}

static void Rec_dealloc(Rec *r) {
  PyObject_GC_UnTrack(r);
  Rec_clear(r);
  Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *Rec_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  Rec *r = (Rec *)type->tp_alloc(type, 0);
  if (r) {
    r->next_tid = 1;
    r->sweep_at = 4096;
    r->code_by_addr = PyDict_New();
    if (!r->code_by_addr) { Py_DECREF(r); return NULL; }
  }
  return (PyObject *)r;
}

static PyMethodDef Rec_methods[] = {
    {"__torch_function__", (PyCFunction)(void (*)(void))Rec_torch_function, METH_FASTCALL,
     "Record one call (the common case here, the rest through the Python methods)."},
    {"_speedups_setup", (PyCFunction)Rec_setup, METH_VARARGS, "Hand over the type tables."},
    {"_take_tid", (PyCFunction)Rec_take_tid, METH_NOARGS, "A new tensor id."},
    {"_c_ref_of", (PyCFunction)Rec_ref_of, METH_O, "ids entry of a tensor (TorchRecorder._ref_of)."},
    {"_c_new_ref", (PyCFunction)Rec_new_ref, METH_VARARGS,
     "_c_new_ref(t, sid): a new ids entry for t, a new tensor id on storage sid (TorchRecorder._alias_ref)."},
    {"_c_sweep", (PyCFunction)Rec_sweep, METH_NOARGS, "Drop the ids entries of dead tensors (TorchRecorder._sweep)."},
    {NULL}};

static PyMemberDef Rec_members[] = {
    {"_ids", T_OBJECT, offsetof(Rec, ids), 0, NULL},
    {"_info", T_OBJECT, offsetof(Rec, info), 0, NULL},
    {"_frame", T_OBJECT, offsetof(Rec, frame), 0, NULL},
    {"_const", T_OBJECT, offsetof(Rec, const_), 0, NULL},
    {"_values", T_OBJECT, offsetof(Rec, values), 0, NULL},
    {"_params", T_OBJECT, offsetof(Rec, params), 0, NULL},
    {"_internal_code", T_OBJECT, offsetof(Rec, internal), 0, NULL},
    {"_scopes", T_OBJECT, offsetof(Rec, scopes), 0, NULL},
    {"_threads", T_OBJECT, offsetof(Rec, threads), 0, NULL},
    {"_sink", T_OBJECT, offsetof(Rec, sink), 0, NULL},
    {"w", T_OBJECT, offsetof(Rec, w), 0, NULL},
    {"_next_tid", T_LONGLONG, offsetof(Rec, next_tid), 0, NULL},
    {"_sweep_at", T_LONGLONG, offsetof(Rec, sweep_at), 0, NULL},
    {"_t0", T_LONGLONG, offsetof(Rec, t0), 0, NULL},
    {"_active", T_BOOL, offsetof(Rec, active), 0, NULL},
    {"_sym_seen", T_INT, offsetof(Rec, sym_seen), 0, NULL},
    {NULL}};

static PyTypeObject RecType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ivytrace._speedups.RecorderBase",
    .tp_basicsize = sizeof(Rec),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = Rec_new,
    .tp_dealloc = (destructor)Rec_dealloc,
    .tp_traverse = (traverseproc)Rec_traverse,
    .tp_clear = (inquiry)Rec_clear,
    .tp_methods = Rec_methods,
    .tp_members = Rec_members,
    .tp_doc = "C base of TorchRecorder: the recorder's tables and its __torch_function__ fast path."};


/* ------------------------------------------------------------------------------------------ */
/* NumPy: the common ufunc call (numpy_recorder.NumpyRecorder.record_ufunc, which defines what this
 * must write; tests/python/test_record_bytes.py checks both against the baseline recorder).
 * np_ufunc(rec, ufunc, inputs) records `ufunc(*inputs)`, when the recorder is active on this thread
 * and not busy and every input is a TracedArray the
 * current frame knows (at least one not a constant) or a Python float/int, and returns the new
 * TracedArray; it returns the NOT_HERE sentinel, having called nothing, for every other call. */

#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Pack8 _PyFloat_Pack8   /* public from Python 3.11 */
#endif

static PyObject *np_traced_t, *np_ndarray_t, *np_not_here, *np_state, *np_dtype_shape, *np_shape_get,
    *np_prefixes, *np_rewrap, *np_shape_desc, *np_dtype_desc, *np_globals, *np_rest, *s_REC, *s_call;
static PyObject *s_links, *s_ids, *s_np_known, *s_versions, *s_const, *s_ids_sid, *s_by_storage, *s_sweep_at,
    *s_new_id, *s_sweep, *s_ufunc_op, *s_intern, *s_t0, *s_w, *s_sink, *s_add, *s_emit, *s_busy, *s_view,
    *s_name, *s_tensor_ref, *s_np_finish, *s_pop, *s_setdefault, *s_dtype_attr, *s_c_locations, *s_session,
    *s_torch, *s_next, *s_ufunc_fields, *s_active, *s_thread, *s_np_base;

static PyObject *np_setup(PyObject *mod, PyObject *args) {
  PyObject *v[8];
  if (!PyArg_ParseTuple(args, "OOOOO!OO!O", &v[0], &v[1], &v[2], &v[3], &PyDict_Type, &v[4], &v[5], &PyTuple_Type,
                        &v[6], &v[7]))
    return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v[6]); ++i)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(v[6], i))) { PyErr_SetString(PyExc_TypeError, "prefixes: str"); return NULL; }
  PyObject **dst[8] = {&np_traced_t, &np_ndarray_t, &np_not_here, &np_state, &np_dtype_shape, &np_shape_get,
                       &np_prefixes, &np_rewrap};
  for (int i = 0; i < 8; ++i) { Py_INCREF(v[i]); Py_XSETREF(*dst[i], v[i]); }
  /* ndarray's own `shape` getter, called as a descriptor (no method-wrapper call per read) */
  PyObject *desc = PyType_Check(np_ndarray_t) ? PyDict_GetItemWithError(((PyTypeObject *)np_ndarray_t)->tp_dict, s_shape) : NULL;
  if (!desc && PyErr_Occurred()) return NULL;
  Py_XINCREF(desc);
  Py_XSETREF(np_shape_desc, desc && Py_TYPE(desc)->tp_descr_get ? desc : NULL);
  if (desc && !np_shape_desc) Py_DECREF(desc);
  /* and its `dtype` getter: TracedArray.dtype is a property that guards the program's dtype reads
     (numpy_recorder._dtype_get); the recorder's own reads must not go through it */
  desc = PyType_Check(np_ndarray_t) ? PyDict_GetItemWithError(((PyTypeObject *)np_ndarray_t)->tp_dict, s_dtype_attr) : NULL;
  if (!desc && PyErr_Occurred()) return NULL;
  Py_XINCREF(desc);
  Py_XSETREF(np_dtype_desc, desc && Py_TYPE(desc)->tp_descr_get ? desc : NULL);
  if (desc && !np_dtype_desc) Py_DECREF(desc);
  Py_RETURN_NONE;
}

/* np_setup_call(globals, rest): TracedArray.__array_ufunc__ in C (np_array_ufunc below) reads the
 * recorder from globals["_REC"] and hands every call np_ufunc does not take to
 * rest(ufunc, method, inputs, kwargs) (numpy_recorder._array_ufunc_rest). */
static PyObject *np_setup_call(PyObject *mod, PyObject *args) {
  PyObject *g, *rest;
  if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &g, &rest)) return NULL;
  Py_INCREF(g); Py_XSETREF(np_globals, g);
  Py_INCREF(rest); Py_XSETREF(np_rest, rest);
  Py_RETURN_NONE;
}

/* ndarray.shape of a (new reference) */
static inline PyObject *np_shape_of(PyObject *a) {
  if (np_shape_desc) return Py_TYPE(np_shape_desc)->tp_descr_get(np_shape_desc, a, (PyObject *)Py_TYPE(a));
  return PyObject_CallOneArg(np_shape_get, a);
}

/* Attribute `name` of o (new reference), from its instance dict d when it is there: the
 * recorder's tables are plain instance attributes, and np_ufunc reads about fifteen of them per
 * op; a dict lookup skips the type's attribute lookup that getattr does first (written here
 * because the generic getattr has no cheaper public entry). Anything else through getattr. */
static PyObject *dattr(PyObject *o, PyObject *d, PyObject *name) {
  if (d) {
    PyObject *v = PyDict_GetItemWithError(d, name);
    if (v) { Py_INCREF(v); return v; }
    if (PyErr_Occurred()) return NULL;
  }
  return PyObject_GetAttr(o, name);
}

/* the TensorRef bytes after id/version/storage: dtype and shape fields, cached per (dtype, shape) */
static PyObject *np_last_dt, *np_last_shape, *np_last_tail;   /* the last (dtype, shape) asked, and its tail */

static PyObject *np_ref_tail_d(PyObject *rec, PyObject *a, PyObject *dt, PyObject *shape);

/* An op's operands and result mostly share one dtype and shape: the last answer is kept and
 * given again for the same dtype object (held, so its address is not reused) and an equal shape,
 * which skips the key tuple, its hash and the dict lookup (twice per op). */
static PyObject *np_ref_tail(PyObject *rec, PyObject *a, PyObject *shape) {
  PyObject *dt = np_dtype_desc ? Py_TYPE(np_dtype_desc)->tp_descr_get(np_dtype_desc, a, (PyObject *)Py_TYPE(a))
                               : PyObject_GetAttr(a, s_dtype_attr);
  if (!dt) return NULL;
  if (dt == np_last_dt && np_last_shape && PyTuple_CheckExact(shape)) {
    int eq = PyObject_RichCompareBool(shape, np_last_shape, Py_EQ);
    if (eq < 0) { Py_DECREF(dt); return NULL; }
    if (eq) { Py_DECREF(dt); Py_INCREF(np_last_tail); return np_last_tail; }
  }
  PyObject *tail = np_ref_tail_d(rec, a, dt, shape);
  if (tail && PyTuple_CheckExact(shape)) {
    Py_INCREF(shape); Py_INCREF(tail);
    Py_XSETREF(np_last_dt, dt);   /* takes the reference */
    Py_XSETREF(np_last_shape, shape);
    Py_XSETREF(np_last_tail, tail);
  } else {
    Py_DECREF(dt);
  }
  return tail;
}

/* the tail for dtype dt (borrowed) and shape, from the shared (dtype, shape) cache */
static PyObject *np_ref_tail_d(PyObject *rec, PyObject *a, PyObject *dt, PyObject *shape) {
  PyObject *key = PyTuple_Pack(2, dt, shape);
  if (!key) return NULL;
  PyObject *tail = PyDict_GetItemWithError(np_dtype_shape, key);
  if (tail) { Py_INCREF(tail); Py_DECREF(key); return tail; }
  if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
  /* rec._tensor_ref(a, 0, 0, 0) = id 0, storage 0 (4 bytes), then the tail */
  PyObject *zero = PyLong_FromLong(0);
  PyObject *full = zero ? PyObject_CallMethodObjArgs(rec, s_tensor_ref, a, zero, zero, zero, NULL) : NULL;
  Py_XDECREF(zero);
  if (!full) { Py_DECREF(key); return NULL; }
  if (!PyBytes_Check(full) || PyBytes_GET_SIZE(full) < 4) {
    Py_DECREF(full); Py_DECREF(key);
    PyErr_SetString(PyExc_RuntimeError, "np_ufunc: unexpected TensorRef");
    return NULL;
  }
  tail = PyBytes_FromStringAndSize(PyBytes_AS_STRING(full) + 4, PyBytes_GET_SIZE(full) - 4);
  Py_DECREF(full);
  if (tail && PyDict_GET_SIZE(np_dtype_shape) < 4096 && PyDict_SetItem(np_dtype_shape, key, tail)) Py_CLEAR(tail);
  Py_DECREF(key);
  return tail;
}

/* a dict lookup by int key -> long long, `dflt` when absent; -2 on error, -3 when not an int */
static long long dict_ll(PyObject *d, PyObject *key, long long dflt) {
  PyObject *x = PyDict_GetItemWithError(d, key);
  if (!x) return PyErr_Occurred() ? -2 : dflt;
  if (!PyLong_CheckExact(x)) return -3;
  long long v = PyLong_AsLongLong(x);
  if (v == -1 && PyErr_Occurred()) return -2;
  return v;
}

static int np_put_ref(Buf *b, long long tid, long long v, long long sid, PyObject *tail) {
  Buf ref;
  buf_init(&ref);
  int bad = buf_byte(&ref, T.ref_id) || buf_varint(&ref, (uint64_t)tid) ||
            (v && (buf_byte(&ref, T.ref_version) || buf_varint(&ref, (uint64_t)v))) ||
            buf_byte(&ref, T.ref_storage) || buf_varint(&ref, (uint64_t)sid) || buf_bytes_obj(&ref, tail);
  /* Arg{tensor = ref} */
  bad = bad || buf_varint(b, 1 + varint_len(ref.n) + ref.n) || buf_byte(b, T.arg_tensor) ||
        buf_varint(b, ref.n) || buf_put(b, ref.p, ref.n);
  buf_free(&ref);
  return bad ? -1 : 0;
}

/* NumpyRecorder._new_id without a Python call when no torch recorder shares the id sequence */
static long long np_new_id(PyObject *rec, PyObject *d) {
  PyObject *session = dattr(rec, d, s_session);
  PyObject *torch = session ? PyObject_GetAttr(session, s_torch) : NULL;
  Py_XDECREF(session);
  if (!torch) return -1;
  int none = torch == Py_None;
  Py_DECREF(torch);
  if (!none) {
    PyObject *x = PyObject_CallMethodNoArgs(rec, s_new_id);
    if (!x) return -1;
    long long v = PyLong_AsLongLong(x);
    Py_DECREF(x);
    return v;
  }
  PyObject *nx = dattr(rec, d, s_next);
  if (!nx) return -1;
  long long tid = PyLong_AsLongLong(nx);
  Py_DECREF(nx);
  if (tid == -1 && PyErr_Occurred()) return -1;
  PyObject *n1 = PyLong_FromLongLong(tid + 1);
  int bad = !n1 || PyObject_SetAttr(rec, s_next, n1);
  Py_XDECREF(n1);
  return bad ? -1 : tid;
}

/* An id table entry (weakref, ints...) and its weak reference leave the cyclic GC's lists: neither
 * can be part of a reference cycle (a weak reference without a callback holds nothing strongly,
 * the tuple holds it and ints). A recorder keeps thousands of them alive (until its next sweep),
 * and while tracked each full collection walked them all, with every object of the program: at
 * 60,000 NumPy ops per region, 1.3 of 7.0 us per op went to gc_collect_main (perf). */
static void untrack_ref_entry(PyObject *w, PyObject *e) {
  if (!PyWeakref_CheckRefExact(w) || ((PyWeakReference *)w)->wr_callback != NULL) return;
  if (PyObject_GC_IsTracked(w)) PyObject_GC_UnTrack(w);
  if (PyObject_GC_IsTracked(e)) PyObject_GC_UnTrack(e);
}

/* Two new ids, as two NumpyRecorder._new_id calls give them (sid first): one read and one write of
 * rec._next when no torch recorder shares the sequence. -1 on error. */
static int np_new_ids(PyObject *rec, PyObject *d, long long *first, long long *second) {
  PyObject *session = dattr(rec, d, s_session);
  PyObject *torch = session ? PyObject_GetAttr(session, s_torch) : NULL;
  Py_XDECREF(session);
  if (!torch) return -1;
  int none = torch == Py_None;
  Py_DECREF(torch);
  if (!none) {
    *first = np_new_id(rec, d);
    if (*first == -1 && PyErr_Occurred()) return -1;
    *second = np_new_id(rec, d);
    return *second == -1 && PyErr_Occurred() ? -1 : 0;
  }
  PyObject *nx = dattr(rec, d, s_next);
  if (!nx) return -1;
  long long t = PyLong_AsLongLong(nx);
  Py_DECREF(nx);
  if (t == -1 && PyErr_Occurred()) return -1;
  PyObject *n2 = PyLong_FromLongLong(t + 2);
  int bad = !n2 || PyObject_SetAttr(rec, s_next, n2);
  Py_XDECREF(n2);
  if (bad) return -1;
  *first = t;
  *second = t + 1;
  return 0;
}

/* ids[id(a)] = (weakref(a), tid, sid); ids_sid[tid] = sid; by_storage[sid] += [weakref]; sweep */
static int np_register(PyObject *rec, PyObject *d, PyObject *ids, PyObject *ids_sid, PyObject *by_storage, PyObject *a,
                       long long tid, long long sid) {
  int bad = -1;
  PyObject *w = PyWeakref_NewRef(a, NULL), *k = PyLong_FromVoidPtr(a), *t = PyLong_FromLongLong(tid),
           *sd = PyLong_FromLongLong(sid), *e = NULL, *lst = NULL, *empty = NULL;
  if (!w || !k || !t || !sd) goto done;
  if (!(e = PyTuple_Pack(3, w, t, sd))) goto done;
  untrack_ref_entry(w, e);
  if (PyDict_SetItem(ids, k, e) || PyDict_SetItem(ids_sid, t, sd)) goto done;
  if (!PyDict_CheckExact(by_storage)) { PyErr_SetString(PyExc_TypeError, "_by_storage: a dict"); goto done; }
  lst = PyDict_GetItemWithError(by_storage, sd);   /* by_storage.setdefault(sid, []).append(w) */
  if (lst) {
    Py_INCREF(lst);
  } else {
    if (PyErr_Occurred() || !(empty = PyList_New(0))) goto done;
    PyObject_GC_UnTrack(empty);   /* it holds weak references only (see untrack_ref_entry) */
    if (PyDict_SetItem(by_storage, sd, empty)) goto done;
    lst = empty;
    empty = NULL;
  }
  if (PyList_Append(lst, w)) goto done;
  long long at = 0;
  PyObject *sa = dattr(rec, d, s_sweep_at);
  if (!sa) goto done;
  at = PyLong_AsLongLong(sa);
  Py_DECREF(sa);
  if (at == -1 && PyErr_Occurred()) goto done;
  if (PyDict_GET_SIZE(ids) > at) {
    PyObject *x = PyObject_CallMethodNoArgs(rec, s_sweep);
    if (!x) goto done;
    Py_DECREF(x);
  }
  bad = 0;
done:
  Py_XDECREF(w); Py_XDECREF(k); Py_XDECREF(t); Py_XDECREF(sd); Py_XDECREF(e); Py_XDECREF(lst); Py_XDECREF(empty);
  return bad;
}

/* A cache of code objects by address: cache[address] = (code, value). Code objects hash by content
 * (~0.3 us per lookup in CPython 3.11, and the caller lookup meets several frames per op); the
 * tuple holds the code, so its address is not reused while the entry lives. */
static PyObject *code_cache_get(PyObject *cache, PyCodeObject *c) {   /* borrowed; NULL: absent or error */
  PyObject *k = PyLong_FromVoidPtr(c);
  if (!k) return NULL;
  PyObject *e = PyDict_GetItemWithError(cache, k);
  Py_DECREF(k);
  if (e && PyTuple_CheckExact(e) && PyTuple_GET_SIZE(e) == 2 && PyTuple_GET_ITEM(e, 0) == (PyObject *)c)
    return PyTuple_GET_ITEM(e, 1);
  return NULL;
}

static int code_cache_set(PyObject *cache, PyCodeObject *c, PyObject *v) {
  PyObject *k = PyLong_FromVoidPtr(c);
  PyObject *t = k ? PyTuple_Pack(2, (PyObject *)c, v) : NULL;
  int bad = !t || PyDict_SetItem(cache, k, t);
  Py_XDECREF(k);
  Py_XDECREF(t);
  return bad ? -1 : 0;
}

/* (file id, line) of the first frame whose file does not start with one of np_prefixes, as
 * array_recorder.caller_location finds it; cached in `cache` (the recorder's _c_locations, a
 * code_cache: True if internal, else {lasti: (file id, line)}). */
static int np_location_c(PyObject *rec, PyObject *cache, long long *fid, long long *line) {
  *fid = *line = 0;
  PyFrameObject *f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f) {
    PyCodeObject *c = PyFrame_GetCode(f);
    PyObject *ent = code_cache_get(cache, c);
    if (!ent) {
      if (PyErr_Occurred()) { Py_DECREF(c); Py_DECREF(f); return -1; }
      int internal = 0;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(np_prefixes) && !internal; ++i) {
        Py_ssize_t m = PyUnicode_Tailmatch(c->co_filename, PyTuple_GET_ITEM(np_prefixes, i), 0, PY_SSIZE_T_MAX, -1);
        if (m < 0) { Py_DECREF(c); Py_DECREF(f); return -1; }
        internal = (int)m;
      }
      PyObject *v = internal ? Py_True : PyDict_New();
      if (!v) { Py_DECREF(c); Py_DECREF(f); return -1; }
      if (internal) Py_INCREF(v);
      int bad = code_cache_set(cache, c, v);
      Py_DECREF(v);
      if (bad) { Py_DECREF(c); Py_DECREF(f); return -1; }
      ent = v;
    }
    if (ent != Py_True) {
      PyObject *k = PyLong_FromLong(PyFrame_GetLasti(f));
      PyObject *fl = k ? PyDict_GetItemWithError(ent, k) : NULL;
      if (!fl && !PyErr_Occurred() && k) {
        int n = PyFrame_GetLineNumber(f);
        PyObject *fido = PyObject_CallMethodOneArg(rec, s_intern, c->co_filename);
        PyObject *lo = fido ? PyLong_FromLong(n < 0 ? 0 : n) : NULL;
        fl = lo ? PyTuple_Pack(2, fido, lo) : NULL;
        Py_XDECREF(fido); Py_XDECREF(lo);
        if (fl && PyDict_SetItem(ent, k, fl)) Py_CLEAR(fl);
        Py_XDECREF(fl);   /* the dict holds it */
      }
      Py_XDECREF(k);
      Py_DECREF(c);
      Py_DECREF(f);
      if (!fl) return -1;
      *fid = PyLong_AsLongLong(PyTuple_GET_ITEM(fl, 0));
      *line = PyLong_AsLongLong(PyTuple_GET_ITEM(fl, 1));
      return PyErr_Occurred() ? -1 : 0;
    }
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(c);
    Py_DECREF(f);
    f = back;
  }
  return 0;
}

#define NP_MAX_IN 8   /* more operands than any ufunc has: the Python twin records such a call */

/* ins as the Python _finish takes it: [(array, tid, sid, version)] of the array operands. Built
 * only on the paths that call _finish: the common path needs none of these objects. */
static PyObject *np_ins_list(int nin, PyObject **ia, PyObject **itid, PyObject **isid, long long *iv) {
  PyObject *ins = PyList_New(0);
  for (int i = 0; ins && i < nin; ++i) {
    PyObject *vo = PyLong_FromLongLong(iv[i]);
    PyObject *e = vo ? PyTuple_Pack(4, ia[i], itid[i], isid[i], vo) : NULL;
    Py_XDECREF(vo);
    if (!e || PyList_Append(ins, e)) Py_CLEAR(ins);
    Py_XDECREF(e);
  }
  return ins;
}

/* [op field, argument bytes]: the parts the Python _finish takes */
static PyObject *np_parts(PyObject *op, Buf *b) {
  PyObject *args_b = PyBytes_FromStringAndSize(b->p, (Py_ssize_t)b->n);
  if (!args_b) return NULL;
  PyObject *parts = PyList_New(2);
  if (!parts) { Py_DECREF(args_b); return NULL; }
  Py_INCREF(PyTuple_GET_ITEM(op, 1));
  PyList_SET_ITEM(parts, 0, PyTuple_GET_ITEM(op, 1));
  PyList_SET_ITEM(parts, 1, args_b);
  return parts;
}

/* a tuple of n objects (CPython's own _PyTuple_FromArray is not public) */
static PyObject *tuple_of(PyObject *const *x, Py_ssize_t n) {
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; ++i) { Py_INCREF(x[i]); PyTuple_SET_ITEM(t, i, x[i]); }
  return t;
}

/* np_ufunc for the n operands in in[] (inputs: them as a tuple, or NULL: made when needed) */
static PyObject *np_ufunc_impl(PyObject *rec, PyObject *ufunc, PyObject *const *in, Py_ssize_t n, PyObject *inputs) {
  if (!np_traced_t || !T.set) { PyErr_SetString(PyExc_RuntimeError, "np_ufunc: np_setup/set_tags not called"); return NULL; }
  PyObject *out = NULL, *links = NULL, *ids = NULL, *known = NULL, *versions = NULL, *constd = NULL,
           *plain = NULL, *op = NULL, *result = NULL, *traced = NULL, *d = NULL,
           *prev = NULL, *ids_sid = NULL, *by_storage = NULL, *tail = NULL;
  PyObject *ia[NP_MAX_IN], *itid[NP_MAX_IN], *isid[NP_MAX_IN];   /* borrowed: in[] and the ids entries */
  long long iv[NP_MAX_IN];
  int nin = 0;
  int busy_set = 0;
  Buf b;
  buf_init(&b);
  Py_INCREF(rec);   /* the recorder stays alive while this runs, whatever the ufunc does */
  if (n > NP_MAX_IN) goto not_here;
  d = PyObject_GenericGetDict(rec, NULL);
  if (!d) { PyErr_Clear(); }
  else if (!PyDict_CheckExact(d)) Py_CLEAR(d);
  /* recording here: the recorder active, its thread, the busy flag down (kept in `prev`) */
  {
    PyObject *x = dattr(rec, d, s_active);
    int on = x ? PyObject_IsTrue(x) : -1;
    Py_XDECREF(x);
    if (on < 0) goto fail;
    if (!on) goto not_here;
    if (!(x = dattr(rec, d, s_thread))) goto fail;
    unsigned long th = PyLong_AsUnsignedLong(x);
    Py_DECREF(x);
    if (th == (unsigned long)-1 && PyErr_Occurred()) goto fail;
    if (th != PyThread_get_thread_ident()) goto not_here;
    prev = PyObject_GetAttr(np_state, s_busy);
    if (!prev) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError)) goto fail;
      PyErr_Clear();
      prev = Py_False;
      Py_INCREF(prev);
    }
    int busy = PyObject_IsTrue(prev);
    if (busy < 0) goto fail;
    if (busy) goto not_here;
  }
  if (!(links = dattr(rec, d, s_links))) goto fail;
  int lk = PyObject_IsTrue(links);
  if (lk < 0) goto fail;
  if (lk) goto not_here;
  if (!(ids = dattr(rec, d, s_ids)) || !(known = dattr(rec, d, s_np_known)) ||
      !(versions = dattr(rec, d, s_versions)) || !(constd = dattr(rec, d, s_const)))
    goto fail;
  if (!PyDict_CheckExact(ids) || !PyDict_CheckExact(known) || !PyDict_CheckExact(versions) || !PyDict_CheckExact(constd))
    goto not_here;
  if (!(plain = PyTuple_New(n))) goto fail;
  int foldable = 1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *a = in[i];
    if (Py_TYPE(a) == (PyTypeObject *)np_traced_t) {
      PyObject *k = PyLong_FromVoidPtr(a);
      if (!k) goto fail;
      PyObject *r = PyDict_GetItemWithError(ids, k);
      Py_DECREF(k);
      if (!r) { if (PyErr_Occurred()) goto fail; goto not_here; }
      if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 3 || !PyWeakref_CheckRef(PyTuple_GET_ITEM(r, 0)) ||
          PyWeakref_GetObject(PyTuple_GET_ITEM(r, 0)) != a)
        goto not_here;
      PyObject *tido = PyTuple_GET_ITEM(r, 1), *sido = PyTuple_GET_ITEM(r, 2);
      long long tid = PyLong_AsLongLong(tido), sid = PyLong_AsLongLong(sido);
      if ((tid == -1 || sid == -1) && PyErr_Occurred()) goto fail;
      long long v = dict_ll(versions, sido, 0);
      if (v == -2) goto fail;
      long long kv = dict_ll(known, tido, -1);
      if (kv == -2) goto fail;
      if (v < 0 || kv != v) goto not_here;
      long long cv = dict_ll(constd, tido, -1);
      if (cv == -2) goto fail;
      if (cv != v) foldable = 0;
      PyObject *shape = np_shape_of(a);
      if (!shape) goto fail;
      Py_XSETREF(tail, np_ref_tail(rec, a, shape));
      Py_DECREF(shape);
      if (!tail) goto fail;
      if (buf_byte(&b, T.op_args) || np_put_ref(&b, tid, v, sid, tail)) goto fail;
      /* the ids entry r holds tido and sido; `in` holds a, for as long as this call runs */
      ia[nin] = a; itid[nin] = tido; isid[nin] = sido; iv[nin] = v;
      Py_INCREF(tido); Py_INCREF(sido);
      nin++;
      PyObject *pv = PyObject_CallMethodOneArg(a, s_view, np_ndarray_t);
      if (!pv) goto fail;
      PyTuple_SET_ITEM(plain, i, pv);
    } else if (PyFloat_CheckExact(a)) {
      unsigned char dd[8];
      if (PyFloat_Pack8(PyFloat_AS_DOUBLE(a), (char *)dd, 1)) goto fail;
      if (buf_byte(&b, T.op_args) || buf_byte(&b, 9) || buf_byte(&b, T.arg_f) || buf_put(&b, dd, 8)) goto fail;
      Py_INCREF(a);
      PyTuple_SET_ITEM(plain, i, a);
    } else if (PyLong_CheckExact(a)) {
      int over = 0;
      long long x = PyLong_AsLongLongAndOverflow(a, &over);
      if (x == -1 && PyErr_Occurred()) goto fail;
      if (over) goto not_here;
      uint64_t z = ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
      if (buf_byte(&b, T.op_args) || buf_byte(&b, (uint8_t)(1 + varint_len(z))) || buf_byte(&b, T.arg_i) ||
          buf_varint(&b, z))
        goto fail;
      Py_INCREF(a);
      PyTuple_SET_ITEM(plain, i, a);
    } else {
      goto not_here;
    }
  }
  if (foldable) goto not_here;
  {
    PyObject *name = PyObject_GetAttr(ufunc, s_name);
    if (!name) goto fail;
    /* (qual, op field) or None (random): rec._ufunc_fields[name] once known, else rec._ufunc_op(name) */
    PyObject *fields = dattr(rec, d, s_ufunc_fields);
    op = fields && PyDict_CheckExact(fields) ? PyDict_GetItemWithError(fields, name) : NULL;
    Py_XDECREF(fields);   /* the recorder holds the dict, the dict the entry */
    if (op && (op == Py_None || (PyTuple_CheckExact(op) && PyTuple_GET_SIZE(op) == 2))) {
      Py_INCREF(op);
    } else {
      if (PyErr_Occurred()) { Py_DECREF(name); goto fail; }
      op = PyObject_CallMethodOneArg(rec, s_ufunc_op, name);
    }
    Py_DECREF(name);
    if (!op) goto fail;
    if (op == Py_None) goto not_here;
  }
  /* the busy flag up while the ufunc runs (its own NumPy calls are not recorded) */
  if (PyObject_SetAttr(np_state, s_busy, Py_True)) goto fail;
  busy_set = 1;
  long long start = now_ns();
  PyObject *startobj;
  result = PyObject_Call(ufunc, plain, NULL);
  if (!result) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    startobj = PyLong_FromLongLong(start);
    PyObject *parts = startobj ? np_parts(op, &b) : NULL;
    PyObject *ins = parts ? np_ins_list(nin, ia, itid, isid, iv) : NULL;
    PyObject *empty = ins ? PyList_New(0) : NULL;
    PyObject *x = empty ? PyObject_CallMethod(rec, "_finish", "OOOOOOO", parts, PyTuple_GET_ITEM(op, 0), ins, empty,
                                             Py_None, startobj, Py_True) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(ins);
    Py_XDECREF(parts);
    Py_XDECREF(startobj);
    if (!x) { Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb); goto fail; }
    Py_DECREF(x);
    PyErr_Restore(et, ev, tb);
    goto fail;
  }
  PyObject *base = Py_TYPE(result) == (PyTypeObject *)np_ndarray_t ? PyObject_GetAttr(result, s_np_base) : NULL;
  if (!base || base != Py_None) {
    Py_XDECREF(base);
    PyErr_Clear();
    startobj = PyLong_FromLongLong(start);
    if (!startobj) goto fail;
    /* not one new array: the Python path finishes it (record_ufunc does the same) */
    PyObject *tup = inputs ? inputs : tuple_of(in, n);
    if (inputs) Py_INCREF(tup);
    PyObject *empty_kw = tup ? PyDict_New() : NULL;
    PyObject *rw = empty_kw ? PyObject_CallFunctionObjArgs(np_rewrap, result, tup, empty_kw, Py_None, NULL) : NULL;
    Py_XDECREF(empty_kw);
    Py_XDECREF(tup);
    PyObject *parts = rw ? np_parts(op, &b) : NULL;
    PyObject *ins = parts ? np_ins_list(nin, ia, itid, isid, iv) : NULL;
    PyObject *empty = ins ? PyList_New(0) : NULL;
    PyObject *x = empty ? PyObject_CallMethod(rec, "_finish", "OOOOOO", parts, PyTuple_GET_ITEM(op, 0), ins, empty,
                                             rw, startobj) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(ins);
    Py_XDECREF(parts);
    Py_DECREF(startobj);
    if (!x) { Py_XDECREF(rw); goto fail; }
    Py_DECREF(x);
    out = rw;
    goto done;
  }
  Py_DECREF(base);
  if (!(traced = PyObject_CallMethodOneArg(result, s_view, np_traced_t))) goto fail;
  if (!(ids_sid = dattr(rec, d, s_ids_sid)) || !(by_storage = dattr(rec, d, s_by_storage))) goto fail;
  long long sid, tid;
  if (np_new_ids(rec, d, &sid, &tid)) goto fail;
  if (np_register(rec, d, ids, ids_sid, by_storage, result, sid, sid)) goto fail;
  if (np_register(rec, d, ids, ids_sid, by_storage, traced, tid, sid)) goto fail;
  {
    PyObject *shape = np_shape_of(result);
    if (!shape) goto fail;
    Py_XSETREF(tail, np_ref_tail(rec, result, shape));
    Py_DECREF(shape);
    if (!tail) goto fail;
  }
  if (buf_byte(&b, T.op_result) || np_put_ref(&b, tid, 0, sid, tail)) goto fail;
  {
    PyObject *t = PyLong_FromLongLong(tid), *zero = PyLong_FromLong(0);
    int bad = !t || !zero || PyDict_SetItem(known, t, zero);
    if (!bad) {   /* constd.pop(t, None), without raising and clearing a KeyError (the usual case) */
      PyObject *c = PyDict_GetItemWithError(constd, t);
      bad = c ? PyDict_DelItem(constd, t) : PyErr_Occurred() != NULL;
    }
    Py_XDECREF(t); Py_XDECREF(zero);
    if (bad) goto fail;
  }
  long long end = now_ns();
  {
    long long fid, line;
    PyObject *cache = dattr(rec, d, s_c_locations);
    if (!cache) goto fail;
    int bad = !PyDict_CheckExact(cache) || np_location_c(rec, cache, &fid, &line);
    Py_DECREF(cache);
    if (bad) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_c_locations: a dict"); goto fail; }
    if (fid && (buf_byte(&b, T.op_file) || buf_varint(&b, (uint64_t)fid) || buf_byte(&b, T.op_line) ||
                buf_varint(&b, (uint64_t)line)))
      goto fail;
  }
  {
    PyObject *t0o = dattr(rec, d, s_t0);
    if (!t0o) goto fail;
    long long t0 = PyLong_AsLongLong(t0o);
    Py_DECREF(t0o);
    if (t0 == -1 && PyErr_Occurred()) goto fail;
    if (buf_byte(&b, T.op_thread) || buf_varint(&b, (uint64_t)PyThread_get_thread_ident()) ||
        buf_byte(&b, T.op_start_ns) || buf_varint(&b, (uint64_t)(start - t0)) ||
        buf_byte(&b, T.op_duration_ns) || buf_varint(&b, (uint64_t)(end - start)))
      goto fail;
  }
  /* the record: Record.op = op field + b */
  {
    PyObject *opf = PyTuple_GET_ITEM(op, 1);
    size_t opn = (size_t)PyBytes_GET_SIZE(opf);
    PyObject *w = dattr(rec, d, s_w);
    if (!w) goto fail;
    PyObject *sink = PyObject_GetAttr(w, s_sink);
    if (!sink) { Py_DECREF(w); goto fail; }
    if (Py_TYPE(sink) == &SinkType && !((Sink *)sink)->io_error) {
      /* into the mapping, as the torch path does (TraceWriter.add would do the same under its lock) */
      Sink *sk = (Sink *)sink;
      size_t pn = opn + b.n;
      size_t inner = 1 + varint_len(pn) + pn;
      char *p = sink_reserve(sk, varint_len(inner) + inner);
      if (p) {
        p += varint_to((uint8_t *)p, inner);
        *p++ = (char)T.record_op;
        p += varint_to((uint8_t *)p, pn);
        memcpy(p, PyBytes_AS_STRING(opf), opn);
        memcpy(p + opn, b.p, b.n);
        sk->records++;
        sk->op_events++;
      }
      Py_DECREF(sink);
      Py_DECREF(w);
      if (!p && PyErr_Occurred()) goto fail;
    } else {
      PyObject *payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(opn + b.n));
      if (!payload) { Py_DECREF(w); Py_DECREF(sink); goto fail; }
      memcpy(PyBytes_AS_STRING(payload), PyBytes_AS_STRING(opf), opn);
      memcpy(PyBytes_AS_STRING(payload) + opn, b.p, b.n);
      PyObject *tag = PyBytes_FromStringAndSize((char *)&T.record_op, 1);
      PyObject *x = tag ? PyObject_CallMethodObjArgs(rec, s_add, tag, payload, NULL) : NULL;   /* rec._add_op */
      Py_XDECREF(x);
      Py_XDECREF(tag);
      Py_DECREF(payload);
      Py_DECREF(sink);
      Py_DECREF(w);
      if (!x) goto fail;
    }
  }
  out = traced;
  traced = NULL;
  goto done;
not_here:
  Py_INCREF(np_not_here);
  out = np_not_here;
  goto done;
fail:
  out = NULL;
done:
  if (busy_set) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyObject_SetAttr(np_state, s_busy, prev)) PyErr_Clear();
    PyErr_Restore(et, ev, tb);
  }
  buf_free(&b);
  for (int i = 0; i < nin; ++i) { Py_DECREF(itid[i]); Py_DECREF(isid[i]); }
  Py_XDECREF(links); Py_XDECREF(ids); Py_XDECREF(known); Py_XDECREF(versions); Py_XDECREF(constd);
  Py_XDECREF(plain); Py_XDECREF(op); Py_XDECREF(result); Py_XDECREF(traced); Py_XDECREF(d);
  Py_XDECREF(prev); Py_XDECREF(ids_sid); Py_XDECREF(by_storage); Py_XDECREF(tail);
  Py_DECREF(rec);
  return out;
}

static PyObject *np_ufunc(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs) {
  if (nargs != 3 || !PyTuple_Check(argv[2])) { PyErr_SetString(PyExc_TypeError, "np_ufunc(rec, ufunc, inputs)"); return NULL; }
  return np_ufunc_impl(argv[0], argv[1], &PyTuple_GET_ITEM(argv[2], 0), PyTuple_GET_SIZE(argv[2]), argv[2]);
}

/* TracedArray.__array_ufunc__(self, ufunc, method, *inputs, **kwargs), installed on the class as
 * an instance method (np_array_ufunc_method): the twin of the Python method in
 * numpy_recorder.py. NumPy calls it with the operands as separate arguments; a plain call of a
 * ufunc without keywords goes to np_ufunc_impl with the operands as they are (no Python frame,
 * no tuple), everything else, and what np_ufunc does not take, to np_rest. */
static PyObject *np_array_ufunc(PyObject *mod, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 3) { PyErr_SetString(PyExc_TypeError, "__array_ufunc__(self, ufunc, method, *inputs, **kwargs)"); return NULL; }
  if (!np_globals || !np_rest) { PyErr_SetString(PyExc_RuntimeError, "np_array_ufunc: np_setup_call not called"); return NULL; }
  PyObject *method = argv[2];
  int call = method == s_call;
  if (!call && PyUnicode_Check(method)) {
    call = PyUnicode_Compare(method, s_call) == 0;
    if (call == 0 && PyErr_Occurred()) return NULL;
  }
  if (call && (!kwnames || PyTuple_GET_SIZE(kwnames) == 0)) {
    PyObject *rec = PyDict_GetItemWithError(np_globals, s_REC);
    if (!rec && PyErr_Occurred()) return NULL;
    if (rec && rec != Py_None) {
      PyObject *r = np_ufunc_impl(rec, argv[1], argv + 3, nargs - 3, NULL);
      if (r != np_not_here) return r;
      Py_DECREF(r);
    }
  }
  /* _array_ufunc_rest(ufunc, method, inputs, kwargs) */
  PyObject *inputs = tuple_of(argv + 3, nargs - 3);
  PyObject *kw = inputs ? PyDict_New() : NULL;
  if (kw && kwnames) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i)
      if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), argv[nargs + i])) { Py_CLEAR(kw); break; }
  }
  PyObject *r = kw ? PyObject_CallFunctionObjArgs(np_rest, argv[1], method, inputs, kw, NULL) : NULL;
  Py_XDECREF(inputs);
  Py_XDECREF(kw);
  return r;
}

static PyMethodDef np_array_ufunc_def = {"__array_ufunc__", (PyCFunction)(void (*)(void))np_array_ufunc,
                                         METH_FASTCALL | METH_KEYWORDS,
                                         "TracedArray.__array_ufunc__ in C (numpy_recorder.py)."};



/* ------------------------------------------------------------------------------------------ */
/* JAX: the end of a recorded primitive with one jax.Array result that is not random
 * (jax_recorder.JaxRecorder._finish_array, which defines what this must write, and runs instead
 * when this returns NotImplemented: a writer without a mapped file, or one that hit an I/O
 * error). jax_setup(location, fold_limit, foldable_op, foldable_role) hands over the module's
 * Locator and the constants; jax_finish(rec, parts, ins, result, start) then writes the OpEvent
 * (parts + result + tail) into the mapping, updates the frame's known/constant sets, and has the
 * Python recorder write the folded value when the op is foldable. */

static PyObject *jax_location, *jax_foldable_role;
static long long jax_fold_limit = -1;
static uint64_t jax_foldable_op;
static PyObject *s_ref_full, *s_jknown, *s_jconst, *s_nbytes, *s_write_value, *s_check_sink, *s_intern_attr;

static PyObject *jax_setup(PyObject *mod, PyObject *args) {
  PyObject *loc, *role;
  long long limit;
  unsigned long long flag;
  if (!PyArg_ParseTuple(args, "OLKO", &loc, &limit, &flag, &role)) return NULL;
  Py_INCREF(loc);
  Py_XSETREF(jax_location, loc);
  Py_INCREF(role);
  Py_XSETREF(jax_foldable_role, role);
  jax_fold_limit = limit;
  jax_foldable_op = flag;
  Py_RETURN_NONE;
}

static PyObject *jax_finish(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs) {
  if (nargs != 5 || !PyList_CheckExact(argv[1]) || !PyList_CheckExact(argv[2]) || !PyLong_CheckExact(argv[4])) {
    PyErr_SetString(PyExc_TypeError, "jax_finish(rec, parts: list, ins: list, result, start: int)");
    return NULL;
  }
  if (!jax_location || !T.set) { PyErr_SetString(PyExc_RuntimeError, "jax_finish: jax_setup/set_tags not called"); return NULL; }
  long long end = now_ns();
  PyObject *rec = argv[0], *parts = argv[1], *ins = argv[2], *result = argv[3];
  long long start = PyLong_AsLongLong(argv[4]);
  if (start == -1 && PyErr_Occurred()) return NULL;
  PyObject *out = NULL, *w = NULL, *sink = NULL, *tr = NULL, *known = NULL, *constd = NULL, *intern = NULL,
           *fl = NULL;
  Buf b;
  buf_init(&b);
  if (!(w = PyObject_GetAttr(rec, s_w)) || !(sink = PyObject_GetAttr(w, s_sink))) goto done;
  if (Py_TYPE(sink) != &SinkType || ((Sink *)sink)->io_error || ((Sink *)sink)->closed) goto python;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); ++i)
    if (!PyBytes_CheckExact(PyList_GET_ITEM(parts, i))) goto python;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ins); ++i) {
    PyObject *e = PyList_GET_ITEM(ins, i);
    if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) < 2) goto python;
  }
  if (!(known = PyObject_GetAttr(rec, s_jknown)) || !(constd = PyObject_GetAttr(rec, s_jconst))) goto done;
  if (!PySet_CheckExact(known) || !PySet_CheckExact(constd)) goto python;
  /* (tid, TensorRef bytes) of the result: its id from now on */
  if (!(tr = PyObject_CallMethodOneArg(rec, s_ref_full, result))) goto done;
  if (!PyTuple_CheckExact(tr) || PyTuple_GET_SIZE(tr) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(tr, 1))) {
    PyErr_SetString(PyExc_TypeError, "jax_finish: _ref_full must give (int, bytes)");
    goto done;
  }
  PyObject *tido = PyTuple_GET_ITEM(tr, 0), *ref = PyTuple_GET_ITEM(tr, 1);
  size_t rn = (size_t)PyBytes_GET_SIZE(ref);
  /* result = Arg{tensor = ref} */
  if (buf_byte(&b, T.op_result) || buf_varint(&b, 1 + varint_len(rn) + rn) || buf_byte(&b, T.arg_tensor) ||
      buf_varint(&b, rn) || buf_put(&b, PyBytes_AS_STRING(ref), rn))
    goto done;
  /* foldable: every input a constant of the frame (an operand standing for a number is not) */
  int foldable = 1;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ins) && foldable; ++i) {
    int c = PySet_Contains(constd, PyTuple_GET_ITEM(PyList_GET_ITEM(ins, i), 1));
    if (c < 0) goto done;
    foldable = c;
  }
  uint64_t flags = 0;
  if (foldable) {
    PyObject *nb = PyObject_CallMethodOneArg(rec, s_nbytes, result);
    if (!nb) goto done;
    long long n = PyLong_AsLongLong(nb);
    Py_DECREF(nb);
    if (n == -1 && PyErr_Occurred()) goto done;
    if (n <= jax_fold_limit) flags = jax_foldable_op;
  }
  if (PySet_Add(known, tido)) goto done;
  if (foldable ? PySet_Add(constd, tido) : (PySet_Discard(constd, tido) < 0)) goto done;
  /* where the call came from, then the tail: flags, file/line, thread, clocks */
  if (!(intern = PyObject_GetAttr(rec, s_intern_attr)) || !(fl = PyObject_CallOneArg(jax_location, intern))) goto done;
  if (!PyTuple_Check(fl) || PyTuple_GET_SIZE(fl) != 2) { PyErr_SetString(PyExc_TypeError, "jax_finish: location"); goto done; }
  long long fid = PyLong_AsLongLong(PyTuple_GET_ITEM(fl, 0)), line = PyLong_AsLongLong(PyTuple_GET_ITEM(fl, 1));
  if (PyErr_Occurred()) goto done;
  PyObject *t0o = PyObject_GetAttr(rec, s_t0);
  if (!t0o) goto done;
  long long t0 = PyLong_AsLongLong(t0o);
  Py_DECREF(t0o);
  if (t0 == -1 && PyErr_Occurred()) goto done;
  if ((flags && (buf_byte(&b, T.op_flags) || buf_varint(&b, flags))) ||
      (fid && (buf_byte(&b, T.op_file) || buf_varint(&b, (uint64_t)fid) || buf_byte(&b, T.op_line) ||
               buf_varint(&b, (uint64_t)line))) ||
      buf_byte(&b, T.op_thread) || buf_varint(&b, (uint64_t)PyThread_get_thread_ident()) ||
      buf_byte(&b, T.op_start_ns) || buf_varint(&b, (uint64_t)(start - t0)) ||
      buf_byte(&b, T.op_duration_ns) || buf_varint(&b, (uint64_t)(end - start)))
    goto done;
  /* Record.op = parts + b, into the mapping (TraceWriter.add with a sink does the same) */
  {
    Sink *sk = (Sink *)sink;
    size_t pn = b.n;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); ++i) pn += (size_t)PyBytes_GET_SIZE(PyList_GET_ITEM(parts, i));
    size_t inner = 1 + varint_len(pn) + pn;
    char *p = sink_reserve(sk, varint_len(inner) + inner);
    if (!p) goto done;
    p += varint_to((uint8_t *)p, inner);
    *p++ = (char)T.record_op;
    p += varint_to((uint8_t *)p, pn);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); ++i) {
      PyObject *x = PyList_GET_ITEM(parts, i);
      memcpy(p, PyBytes_AS_STRING(x), (size_t)PyBytes_GET_SIZE(x));
      p += PyBytes_GET_SIZE(x);
    }
    memcpy(p, b.p, b.n);
    sk->records++;
    sk->op_events++;
    if (sk->io_error) {   /* as TraceWriter.add: the writer reports the error that stopped the trace */
      PyObject *x = PyObject_CallMethodNoArgs(w, s_check_sink);
      if (!x) goto done;
      Py_DECREF(x);
    }
  }
  if (flags) {
    PyObject *x = PyObject_CallMethodObjArgs(rec, s_write_value, result, ref, jax_foldable_role, NULL);
    if (!x) goto done;
    Py_DECREF(x);
  }
  out = Py_None;
  Py_INCREF(out);
  goto done;
python:
  out = Py_NotImplemented;
  Py_INCREF(out);
done:
  buf_free(&b);
  Py_XDECREF(w); Py_XDECREF(sink); Py_XDECREF(tr); Py_XDECREF(known); Py_XDECREF(constd); Py_XDECREF(intern);
  Py_XDECREF(fl);
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* Locator: array_recorder.caller_location in C (the Python closure there defines what it must
 * return). Locator(prefixes)(intern) -> (intern(file), line) of the first Python frame, from the
 * caller's outwards, whose file does not start with one of `prefixes`; (0, 0) if none. Cached per
 * code object (internal or not) and instruction offset (the line), as the Python twin caches. */

typedef struct {
  PyObject_HEAD
  PyObject *prefixes;   /* tuple of str */
  PyObject *codes;      /* code_cache: True if internal, else {lasti: line} */
} Locator;

static PyObject *Locator_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyObject *prefixes;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &prefixes)) return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); ++i)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(prefixes, i))) { PyErr_SetString(PyExc_TypeError, "prefixes: str"); return NULL; }
  Locator *l = (Locator *)type->tp_alloc(type, 0);
  if (!l) return NULL;
  Py_INCREF(prefixes);
  l->prefixes = prefixes;
  if (!(l->codes = PyDict_New())) { Py_DECREF(l); return NULL; }
  return (PyObject *)l;
}

static void Locator_dealloc(Locator *l) {
  Py_XDECREF(l->prefixes);
  Py_XDECREF(l->codes);
  Py_TYPE(l)->tp_free((PyObject *)l);
}

static PyObject *Locator_call(Locator *l, PyObject *args, PyObject *kw) {
  PyObject *intern;
  if (!PyArg_ParseTuple(args, "O", &intern)) return NULL;
  PyFrameObject *f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f) {
    PyCodeObject *c = PyFrame_GetCode(f);
    PyObject *ent = code_cache_get(l->codes, c);
    if (!ent) {
      if (PyErr_Occurred()) goto fail;
      int internal = 0;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(l->prefixes) && !internal; ++i) {
        Py_ssize_t m = PyUnicode_Tailmatch(c->co_filename, PyTuple_GET_ITEM(l->prefixes, i), 0, PY_SSIZE_T_MAX, -1);
        if (m < 0) goto fail;
        internal = (int)m;
      }
      PyObject *v = internal ? Py_True : PyDict_New();
      if (!v) goto fail;
      if (internal) Py_INCREF(v);
      int bad = code_cache_set(l->codes, c, v);
      Py_DECREF(v);
      if (bad) goto fail;
      ent = v;
    }
    if (ent != Py_True) {
      PyObject *k = PyLong_FromLong(PyFrame_GetLasti(f));
      if (!k) goto fail;
      PyObject *line = PyDict_GetItemWithError(ent, k);
      if (line) {
        Py_INCREF(line);
      } else if (!PyErr_Occurred()) {
        int n = PyFrame_GetLineNumber(f);
        line = PyLong_FromLong(n < 0 ? 0 : n);
        if (line && PyDict_SetItem(ent, k, line)) Py_CLEAR(line);
      }
      Py_DECREF(k);
      if (!line) goto fail;
      PyObject *fid = PyObject_CallOneArg(intern, c->co_filename);
      Py_DECREF(c);
      Py_DECREF(f);
      if (!fid) { Py_DECREF(line); return NULL; }
      PyObject *out = PyTuple_Pack(2, fid, line);
      Py_DECREF(fid);
      Py_DECREF(line);
      return out;
    }
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(c);
    Py_DECREF(f);
    f = back;
    continue;
  fail:
    Py_DECREF(c);
    Py_DECREF(f);
    return NULL;
  }
  return Py_BuildValue("(ii)", 0, 0);
}

static PyTypeObject LocatorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ivytrace._speedups.Locator",
    .tp_basicsize = sizeof(Locator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Locator_new,
    .tp_dealloc = (destructor)Locator_dealloc,
    .tp_call = (ternaryfunc)Locator_call,
    .tp_doc = "Locator(prefixes)(intern) -> (file id, line): array_recorder.caller_location in C."};


/* TensorData messages (ArrayRecorder._write_value, which defines what this must write; its
 * Python lines run when the extension is not built). td_setup(tags) hands over the field tags, as
 * bytes, in the order: Tensor dtype, shape, data, name, role, framework; TensorData ref, value,
 * total_bytes. */
enum { TD_DTYPE, TD_SHAPE, TD_DATA, TD_NAME, TD_ROLE, TD_FW, TD_REF, TD_VALUE, TD_TOTAL, TD_N };
static PyObject *td_tags;   /* tuple of TD_N bytes */

static PyObject *td_setup(PyObject *mod, PyObject *tags) {
  if (!PyTuple_CheckExact(tags) || PyTuple_GET_SIZE(tags) != TD_N) {
    PyErr_SetString(PyExc_TypeError, "td_setup(tags): a tuple of 9 bytes");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < TD_N; ++i)
    if (!PyBytes_CheckExact(PyTuple_GET_ITEM(tags, i))) { PyErr_SetString(PyExc_TypeError, "td_setup: bytes"); return NULL; }
  Py_INCREF(tags);
  Py_XSETREF(td_tags, tags);
  Py_RETURN_NONE;
}

static int buf_ld(Buf *b, int tag, const void *p, size_t n) {   /* tag + varint(n) + the n bytes */
  return buf_bytes_obj(b, PyTuple_GET_ITEM(td_tags, tag)) || buf_varint(b, n) || buf_put(b, p, n);
}

/* tensor_data(ref: bytes, data: bytes, dt: int, shape: tuple, name: str, role: int, fw: str) -> the
 * TensorData message: ref, value = Tensor{dtype, shape, data, name, role, framework}, total_bytes,
 * default values left out, in field order (what SerializeToString writes). */
static PyObject *tensor_data(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs) {
  if (nargs != 7 || !PyBytes_Check(argv[0]) || !PyBytes_Check(argv[1]) || !PyTuple_Check(argv[3]) ||
      !PyUnicode_Check(argv[4]) || !PyUnicode_Check(argv[6])) {
    PyErr_SetString(PyExc_TypeError, "tensor_data(ref: bytes, data: bytes, dt: int, shape: tuple, name: str, role: int, fw: str)");
    return NULL;
  }
  if (!td_tags) { PyErr_SetString(PyExc_RuntimeError, "tensor_data: td_setup not called"); return NULL; }
  long long dt = PyLong_AsLongLong(argv[2]), role = PyLong_AsLongLong(argv[5]);
  if (PyErr_Occurred()) return NULL;
  Py_ssize_t nn, fn;
  const char *name = PyUnicode_AsUTF8AndSize(argv[4], &nn), *fw = PyUnicode_AsUTF8AndSize(argv[6], &fn);
  if (!name || !fw) return NULL;
  size_t n = (size_t)PyBytes_GET_SIZE(argv[1]);
  Buf t, sh, m;
  buf_init(&t); buf_init(&sh); buf_init(&m);
  PyObject *out = NULL;
  int bad = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argv[3]) && !bad; ++i) {   /* varint(int(d)) per dim */
    PyObject *d = PyNumber_Index(PyTuple_GET_ITEM(argv[3], i));
    long long v = d ? PyLong_AsLongLong(d) : -1;
    Py_XDECREF(d);
    bad = (v == -1 && PyErr_Occurred()) || buf_varint(&sh, (uint64_t)v);
  }
  if (!bad && dt) bad = buf_bytes_obj(&t, PyTuple_GET_ITEM(td_tags, TD_DTYPE)) || buf_varint(&t, (uint64_t)dt);
  if (!bad && PyTuple_GET_SIZE(argv[3])) bad = buf_ld(&t, TD_SHAPE, sh.p, sh.n);
  if (!bad && n) bad = buf_ld(&t, TD_DATA, PyBytes_AS_STRING(argv[1]), n);
  if (!bad && nn) bad = buf_ld(&t, TD_NAME, name, (size_t)nn);
  if (!bad && role) bad = buf_bytes_obj(&t, PyTuple_GET_ITEM(td_tags, TD_ROLE)) || buf_varint(&t, (uint64_t)role);
  if (!bad && fn) bad = buf_ld(&t, TD_FW, fw, (size_t)fn);
  if (!bad) bad = buf_ld(&m, TD_REF, PyBytes_AS_STRING(argv[0]), (size_t)PyBytes_GET_SIZE(argv[0])) ||
                  buf_ld(&m, TD_VALUE, t.p, t.n) ||
                  (n && (buf_bytes_obj(&m, PyTuple_GET_ITEM(td_tags, TD_TOTAL)) || buf_varint(&m, n)));
  if (!bad) out = PyBytes_FromStringAndSize(m.p, (Py_ssize_t)m.n);
  buf_free(&t); buf_free(&sh); buf_free(&m);
  return out;
}

/* untracked(t): t itself, its weak references and itself taken off the cyclic GC's lists when it
 * is a tuple of plain weak references (no callback), ints and bytes (nothing in it can be part of
 * a reference cycle; see untrack_ref_entry); any other value is returned as it is. For the id
 * tables the Python recorders keep (jax_recorder.JaxRecorder._ref). */
static PyObject *untracked(PyObject *mod, PyObject *t) {
  if (PyTuple_CheckExact(t)) {
    int plain = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t) && plain; ++i) {
      PyObject *x = PyTuple_GET_ITEM(t, i);
      plain = PyLong_CheckExact(x) || PyBytes_CheckExact(x) ||
              (PyWeakref_CheckRefExact(x) && ((PyWeakReference *)x)->wr_callback == NULL);
    }
    if (plain) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (PyWeakref_CheckRefExact(x) && PyObject_GC_IsTracked(x)) PyObject_GC_UnTrack(x);
      }
      if (PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
    }
  }
  Py_INCREF(t);
  return t;
}

static PyMethodDef module_methods[] = {
    {"set_tags", (PyCFunction)set_tags, METH_VARARGS,
     "set_tags(tags, inplace): the field tags (name -> one-byte tag, see recorder/tags.py c_tags) and "
     "the INPLACE flag the C recorder writes."},
    {"np_setup", (PyCFunction)np_setup, METH_VARARGS, "Hand over what np_ufunc needs (numpy_recorder.py)."},
    {"np_setup_call", (PyCFunction)np_setup_call, METH_VARARGS,
     "np_setup_call(globals, rest): what the C TracedArray.__array_ufunc__ (np_array_ufunc) needs."},
    {"td_setup", (PyCFunction)td_setup, METH_O, "td_setup(tags): the TensorData and Tensor field tags (tensor_data)."},
    {"tensor_data", (PyCFunction)(void (*)(void))tensor_data, METH_FASTCALL,
     "tensor_data(ref, data, dt, shape, name, role, fw): a TensorData message (ArrayRecorder._write_value)."},
    {"untracked", (PyCFunction)untracked, METH_O,
     "untracked(t): a tuple of plain weakrefs, ints and bytes off the cyclic GC's lists (and t)."},
    {"jax_setup", (PyCFunction)jax_setup, METH_VARARGS, "Hand over what jax_finish needs (jax_recorder.py)."},
    {"jax_finish", (PyCFunction)(void (*)(void))jax_finish, METH_FASTCALL,
     "jax_finish(rec, parts, ins, result, start): JaxRecorder._finish_array in C (NotImplemented: not here)."},
    {"np_ufunc", (PyCFunction)(void (*)(void))np_ufunc, METH_FASTCALL,
     "np_ufunc(rec, ufunc, inputs): NumpyRecorder.record_ufunc in C."},
    {NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "ivytrace._speedups",
                                    "The recorder's hot path in C (optional; see _speedups.c).", -1,
                                    module_methods};

PyMODINIT_FUNC PyInit__speedups(void) {
#define S(var, text) if (!(var = PyUnicode_InternFromString(text))) return NULL
  S(s_version, "_version"); S(s_base, "_base"); S(s_dtype, "dtype"); S(s_shape, "shape");
  S(s_known, "known"); S(s_written, "written"); S(s_classify, "_classify"); S(s_handle, "handle");
  S(s_in, "_in"); S(s_encode, "encode"); S(s_finish, "_finish"); S(s_raised, "_raised");
  S(s_file_line, "_file_line"); S(s_emit_op, "emit_op"); S(s_unwrap_call, "_unwrap_call");
  S(s_links, "_links"); S(s_ids, "_ids"); S(s_np_known, "_known"); S(s_versions, "_versions"); S(s_const, "_const");
  S(s_ids_sid, "_ids_sid"); S(s_by_storage, "_by_storage"); S(s_sweep_at, "_sweep_at"); S(s_new_id, "_new_id");
  S(s_sweep, "_sweep"); S(s_ufunc_op, "_ufunc_op"); S(s_intern, "_intern"); S(s_t0, "_t0"); S(s_w, "w");
  S(s_sink, "sink"); S(s_add, "_add_op"); S(s_emit, "emit"); S(s_busy, "busy"); S(s_view, "view");
  S(s_name, "__name__"); S(s_tensor_ref, "_tensor_ref"); S(s_np_finish, "_finish"); S(s_pop, "pop");
  S(s_setdefault, "setdefault"); S(s_dtype_attr, "dtype"); S(s_c_locations, "_c_locations");
  S(s_session, "session"); S(s_torch, "torch"); S(s_next, "_next"); S(s_ufunc_fields, "_ufunc_fields");
  S(s_active, "active"); S(s_thread, "thread"); S(s_np_base, "base"); S(s_REC, "_REC"); S(s_call, "__call__");
  S(s_ref_full, "_ref_full"); S(s_jknown, "_known"); S(s_jconst, "_const"); S(s_nbytes, "_nbytes");
  S(s_write_value, "_write_value"); S(s_check_sink, "_check_sink"); S(s_intern_attr, "_intern");
#undef S
  EntryType.tp_base = &_PyWeakref_RefType;
  if (PyType_Ready(&SinkType) < 0 || PyType_Ready(&RecType) < 0 || PyType_Ready(&LocatorType) < 0 ||
      PyType_Ready(&EntryType) < 0 || PyType_Ready(&IdsType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  Py_INCREF(&SinkType);
  Py_INCREF(&RecType);
  Py_INCREF(&LocatorType);
  if (PyModule_AddObject(m, "Sink", (PyObject *)&SinkType) || PyModule_AddObject(m, "RecorderBase", (PyObject *)&RecType) ||
      PyModule_AddObject(m, "Locator", (PyObject *)&LocatorType)) {
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(&EntryType);
  Py_INCREF(&IdsType);
  if (PyModule_AddObject(m, "IdEntry", (PyObject *)&EntryType) || PyModule_AddObject(m, "TensorIds", (PyObject *)&IdsType)) {
    Py_DECREF(m);
    return NULL;
  }
  /* an instance method, so that it binds like a Python function when read from an array */
  PyObject *fn = PyCFunction_NewEx(&np_array_ufunc_def, NULL, NULL);
  PyObject *meth = fn ? PyInstanceMethod_New(fn) : NULL;
  Py_XDECREF(fn);
  if (!meth || PyModule_AddObject(m, "np_array_ufunc_method", meth)) {
    Py_XDECREF(meth);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
