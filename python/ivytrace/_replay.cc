// ivytrace._replay: the steps of a long plan, run by a small register machine instead of compiled
// as Python.
//
// codegen.py turns a plan into Python source, and CPython compiles about 7-9 us of source per line
// (measured on this machine: a 1M-step plan spent ~8 s in compile() alone), and reading each step's
// fields through Python protobuf costs ~8 us more. A plan above a size (codegen.MACHINE_MIN_STEPS)
// therefore has its steps read here, by the C++ protobuf library, into a flat int32 program that
// the loop below runs: each step is one vectorcall of the function the plan names (or the Python
// operator / method codegen would have written), its arguments gathered from a register file of
// slots, its result stored, unpacked or picked apart, its guards called, its dead slots released.
// What a step means is codegen.py's (`_Gen.run`): this file mirrors it and its load-time checks,
// with the same messages; tests/python/test_replay_machine.py runs plans both ways and compares.
//
// Everything the code names is resolved in Python first: function names through the allow-list,
// literal Args through values.literal, guard checks as codegen makes them. Nothing from the plan
// file is ever looked up or compiled here.
//
//   Program(plan_bytes)            parses the Plan (ValueError if it does not); .num_steps; .head()
//                                  is the Plan without its steps, for Python to read the rest.
//   .build(path, num_slots, defined, constants, outputs, guards, plan_error, guard_error)
//                                  checks and translates the steps; then .functions / .literals list
//                                  what Python must resolve ((name, first step) and (serialized
//                                  Arg, first step, its function)); .defined_outputs.
//   .link(functions, kinds, literals) -> Machine
//   Machine(*values of `defined`, in order) -> tuple of the values of `defined_outputs`
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <google/protobuf/arena.h>

#include "ivytrace/v1/plan.pb.h"

namespace {

namespace v1 = ivytrace::v1;

// Instructions. Each is an opcode followed by its operands (int32 words).
enum Op : int32_t {
  kStep = 1,   // step_index: where errors are reported
  kCall,       // dst fn nargs nkw kwnames [expr]*(nargs+nkw); dst -1: the result is dropped
  kUnpack,     // src n top dst*n (dst -1: skipped): a list/tuple result into slots
  kGetPath,    // dst src n key*n: dst = src[key0][key1]...
  kMove,       // dst src: a tensor written in place and not returned is the argument object
  kCheck,      // fn reg: a guard check, called with the value
  kFree,       // n reg*n
  kEnd,
};
// Argument expressions (recursive).
enum Expr : int32_t { kSlot = 1, kObj, kList, kTuple, kDict, kSlice };
// How a function is called (Program.link's kinds).
enum Kind : int32_t { kPlain = 0, kBinary = 1, kUnary = 2, kMethod = 3 };
// Binary and unary operators, in the order of codegen._MACHINE_OPERATORS.
enum BinOp : int32_t {
  kMul = 0, kAdd, kSub, kTrueDiv, kMatMul, kPow, kFloorDiv, kMod, kEq, kNe, kLt, kLe, kGt, kGe, kAnd,
  kOr, kXor, kGetItem, kNeg = 100, kInvert,
};

struct Program;

// A placeholder in the object table, filled by link(): the function or literal with this index.
constexpr int32_t kNoReg = -1;

PyObject* Str(std::string_view s) { return PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "replace"); }

struct StepInfo {
  int32_t function;   // index into function names
  int32_t file;       // index into files, -1 for none
  uint32_t line;
};

// A function as the machine calls it (Program.link's kinds).
struct FnInfo {
  PyObject* callable;   // borrowed from the object table
  int32_t kind;
  int32_t op;           // kBinary / kUnary: the operator
  PyObject* method;     // kMethod: the name (borrowed from the object table)
};

struct Program {
  PyObject_HEAD
  std::vector<FnInfo>* fninfo;           // by function index, filled by link()
  // Filled by the constructor.
  google::protobuf::Arena* arena;       // holds the parsed Plan until build() has read it
  v1::Plan* plan;
  std::string* path;
  std::vector<int32_t>* code;
  std::vector<PyObject*>* objs;          // owned references; nullptr where link() fills in
  std::vector<int32_t>* fn_obj;          // function i -> objs index
  std::vector<int32_t>* lit_obj;         // literal i -> objs index
  std::vector<std::string>* fn_names;
  std::vector<int32_t>* fn_first;
  std::vector<std::string>* lit_bytes;
  std::vector<int32_t>* lit_first;
  std::vector<StepInfo>* steps;
  std::vector<std::string>* files;       // recorded source files, by StepInfo.file
  std::vector<int32_t>* inputs;          // registers the machine's arguments go to
  std::vector<int32_t>* outputs;         // registers it returns
  std::vector<std::pair<int32_t, PyObject*>>* constants;   // (register, value) set in every frame
  int32_t nregs;
  int32_t num_steps;
  PyObject* guard_error;
  bool built;
  bool linked;
};

struct Machine {
  PyObject_HEAD
  Program* program;   // owned reference; its tables are the machine's
  vectorcallfunc vectorcall;
  PyObject* weakrefs;
};

PyObject* Machine_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

// --- Building: Plan steps -> program -----------------------------------------------------------
class Builder {
 public:
  Builder(Program* p, PyObject* plan_error) : p_(p), plan_error_(plan_error) {}

  bool Fail(const std::string& msg) {
    PyObject* m = Str(msg);
    if (m) {
      PyErr_SetObject(plan_error_, m);
      Py_DECREF(m);
    }
    return false;
  }

  std::string Where(int step) const {
    return *p_->path + ": step " + std::to_string(step) + " (" + p_->plan->steps(step).function() + ")";
  }

  int32_t File(const std::string& file) {
    if (file.empty()) return -1;
    if (last_file_ >= 0 && (*p_->files)[last_file_] == file) return last_file_;   // runs of one file
    auto it = file_index_.find(file);
    if (it == file_index_.end()) {
      it = file_index_.emplace(file, (int32_t)p_->files->size()).first;
      p_->files->push_back(file);
    }
    return last_file_ = it->second;
  }

  int32_t Function(const std::string& name, int step) {
    auto it = fn_index_.find(name);
    if (it != fn_index_.end()) return it->second;
    int32_t i = (int32_t)p_->fn_names->size();
    fn_index_.emplace(name, i);
    p_->fn_names->push_back(name);
    p_->fn_first->push_back(step);
    p_->fn_obj->push_back((int32_t)p_->objs->size());
    p_->objs->push_back(nullptr);
    return i;
  }

  // The objs index of a literal Arg (decoded by Python at link), shared by equal Args.
  int32_t Literal(const v1::Arg& arg, int step) {
    std::string key;
    // Scalars by kind and value; other Args by their serialized bytes (a key, not a decoding).
    switch (arg.kind_case()) {
      case v1::Arg::kI: key = "i" + std::to_string(arg.i()); break;
      case v1::Arg::kF: {
        double f = arg.f();
        key.assign("f");
        key.append(reinterpret_cast<const char*>(&f), sizeof f);
        break;
      }
      case v1::Arg::kB: key = arg.b() ? "b1" : "b0"; break;
      case v1::Arg::kNone: key = "n"; break;
      default: key = "*" + arg.SerializeAsString();
    }
    auto it = lit_index_.find(key);
    if (it != lit_index_.end()) return (*p_->lit_obj)[it->second];
    int32_t i = (int32_t)p_->lit_bytes->size();
    lit_index_.emplace(std::move(key), i);
    p_->lit_bytes->push_back(arg.SerializeAsString());
    p_->lit_first->push_back(step);
    p_->lit_obj->push_back((int32_t)p_->objs->size());
    p_->objs->push_back(nullptr);
    return (*p_->lit_obj)[i];
  }

  // A Python object made here (a str key, an int index, a kwnames tuple): interned by content.
  int32_t Key(std::string_view s) {
    std::string k("s");
    k.append(s);
    auto it = key_index_.find(k);
    if (it != key_index_.end()) return it->second;
    PyObject* o = Str(s);
    if (!o) return -1;
    PyUnicode_InternInPlace(&o);
    return key_index_[k] = Own(o);
  }
  int32_t Index(int i) {
    std::string k = "i" + std::to_string(i);
    auto it = key_index_.find(k);
    if (it != key_index_.end()) return it->second;
    PyObject* o = PyLong_FromLong(i);
    if (!o) return -1;
    return key_index_[k] = Own(o);
  }
  int32_t Own(PyObject* o) {
    p_->objs->push_back(o);
    return (int32_t)p_->objs->size() - 1;
  }

  static bool HasSlot(const v1::Arg& a) {
    switch (a.kind_case()) {
      case v1::Arg::kTensor: return true;
      case v1::Arg::kList:
        for (const auto& x : a.list().items()) if (HasSlot(x)) return true;
        return false;
      case v1::Arg::kTuple:
        for (const auto& x : a.tuple().items()) if (HasSlot(x)) return true;
        return false;
      case v1::Arg::kDict:
        for (const auto& x : a.dict().values()) if (HasSlot(x)) return true;
        return false;
      case v1::Arg::kSlice:
        return (a.slice().has_start() && HasSlot(a.slice().start())) ||
               (a.slice().has_stop() && HasSlot(a.slice().stop())) ||
               (a.slice().has_step() && HasSlot(a.slice().step()));
      default: return false;
    }
  }
  static bool NeedsPaths(const v1::Arg& a) {
    if (a.kind_case() == v1::Arg::kDict) return HasSlot(a);
    const v1::ArgList* l = a.kind_case() == v1::Arg::kList ? &a.list() : a.kind_case() == v1::Arg::kTuple ? &a.tuple() : nullptr;
    if (!l) return false;
    for (const auto& x : l->items()) if (NeedsPaths(x)) return true;
    return false;
  }

  enum State : uint8_t { kUndefined = 0, kDefined = 1, kFreed = 2 };

  void Grow(uint32_t slot) {
    if (slot >= state_.size()) {
      state_.resize(slot + 1, kUndefined);
      constant_.resize(slot + 1, 0);
      output_.resize(slot + 1, 0);
    }
  }

  bool Read(uint32_t s, int step) {
    if (s >= state_.size() || state_[s] == kUndefined)
      return Fail(Where(step) + ": reads slot " + std::to_string(s) + ", which no input, constant or earlier step defines");
    if (state_[s] == kFreed)
      return Fail(Where(step) + ": reads slot " + std::to_string(s) + " after a step that listed it in free_after");
    return true;
  }

  bool Define(uint32_t s, int step) {
    if (num_slots_ && s >= num_slots_)
      return Fail(Where(step) + ": slot " + std::to_string(s) + " is out of range (num_slots = " +
                  std::to_string(num_slots_) + ")");
    Grow(s);
    if (state_[s] != kUndefined) return Fail(Where(step) + ": slot " + std::to_string(s) + " is defined twice");
    state_[s] = kDefined;
    defined_.push_back(s);
    return true;
  }

  // An argument expression, as codegen's _Gen.expr writes it.
  bool Expr(const v1::Arg& a, int step) {
    auto& c = *p_->code;
    switch (a.kind_case()) {
      case v1::Arg::kTensor:
        if (!Read(a.tensor().value(), step)) return false;
        c.push_back(kSlot);
        c.push_back((int32_t)a.tensor().value());
        return true;
      case v1::Arg::kList:   // always a new list: the callee may change it
        c.push_back(kList);
        c.push_back(a.list().items_size());
        for (const auto& x : a.list().items()) if (!Expr(x, step)) return false;
        return true;
      case v1::Arg::kDict: {   // always a new dict too (codegen's, for torch and NumPy plans)
        const auto& d = a.dict();
        if (d.keys_size() != d.values_size())
          return Fail(Where(step) + ": dict argument has " + std::to_string(d.keys_size()) + " keys but " +
                      std::to_string(d.values_size()) + " values");
        c.push_back(kDict);
        c.push_back(d.keys_size());
        for (int i = 0; i < d.keys_size(); ++i) {
          int32_t k = Key(d.keys(i));
          if (k < 0) return false;
          c.push_back(kObj);
          c.push_back(k);
          if (!Expr(d.values(i), step)) return false;
        }
        return true;
      }
      default: break;
    }
    if (!HasSlot(a)) {
      c.push_back(kObj);
      c.push_back(Literal(a, step));
      return true;
    }
    switch (a.kind_case()) {
      case v1::Arg::kTuple:
        c.push_back(kTuple);
        c.push_back(a.tuple().items_size());
        for (const auto& x : a.tuple().items()) if (!Expr(x, step)) return false;
        return true;
      case v1::Arg::kSlice: {
        c.push_back(kSlice);
        const auto& s = a.slice();
        const v1::Arg* parts[3] = {s.has_start() ? &s.start() : nullptr, s.has_stop() ? &s.stop() : nullptr,
                                   s.has_step() ? &s.step() : nullptr};
        for (const v1::Arg* x : parts) {
          if (x) {
            if (!Expr(*x, step)) return false;
          } else {
            c.push_back(kObj);
            c.push_back(Literal(v1::Arg(), step));   // an unset Arg is None
          }
        }
        return true;
      }
      default:
        return Fail(Where(step) + ": unexpected argument kind " + std::to_string((int)a.kind_case()));
    }
  }

  // Unpacks a list/tuple result held in register `src` (codegen's _Gen.target).
  bool Unpack(const v1::ArgList& items, int32_t src, bool top, int step, int depth) {
    auto& c = *p_->code;
    c.push_back(kUnpack);
    c.push_back(src);
    c.push_back(items.items_size());
    c.push_back(top ? 1 : 0);
    size_t at = c.size();
    c.resize(c.size() + items.items_size(), kNoReg);
    std::vector<std::pair<int, int32_t>> nested;
    for (int i = 0; i < items.items_size(); ++i) {
      const v1::Arg& a = items.items(i);
      if (!HasSlot(a)) continue;
      if (a.kind_case() == v1::Arg::kTensor) {
        if (!Define(a.tensor().value(), step)) return false;
        c[at + i] = (int32_t)a.tensor().value();
      } else if (a.kind_case() == v1::Arg::kList || a.kind_case() == v1::Arg::kTuple) {
        int32_t t = Temp(depth + 1);
        c[at + i] = t;
        nested.emplace_back(i, t);
      } else {
        return Fail(Where(step) + ": a result item of this kind cannot hold tensors");
      }
    }
    for (auto [i, t] : nested) {
      const v1::Arg& a = items.items(i);
      if (!Unpack(a.kind_case() == v1::Arg::kList ? a.list() : a.tuple(), t, false, step, depth + 1)) return false;
    }
    return true;
  }

  // Each slot of a result tree reached by indexing (codegen's _Gen.paths): a dict somewhere in it.
  bool Paths(const v1::Arg& a, int32_t src, std::vector<int32_t>& keys, int step) {
    auto& c = *p_->code;
    switch (a.kind_case()) {
      case v1::Arg::kTensor:
        if (!Define(a.tensor().value(), step)) return false;
        c.push_back(kGetPath);
        c.push_back((int32_t)a.tensor().value());
        c.push_back(src);
        c.push_back((int32_t)keys.size());
        c.insert(c.end(), keys.begin(), keys.end());
        return true;
      case v1::Arg::kList:
      case v1::Arg::kTuple: {
        const auto& l = a.kind_case() == v1::Arg::kList ? a.list() : a.tuple();
        for (int i = 0; i < l.items_size(); ++i) {
          int32_t k = Index(i);
          if (k < 0) return false;
          keys.push_back(k);
          bool ok = Paths(l.items(i), src, keys, step);
          keys.pop_back();
          if (!ok) return false;
        }
        return true;
      }
      case v1::Arg::kDict: {
        const auto& d = a.dict();
        int n = std::min(d.keys_size(), d.values_size());   // codegen's zip()
        for (int i = 0; i < n; ++i) {
          int32_t k = Key(d.keys(i));
          if (k < 0) return false;
          keys.push_back(k);
          bool ok = Paths(d.values(i), src, keys, step);
          keys.pop_back();
          if (!ok) return false;
        }
        return true;
      }
      default:
        if (HasSlot(a)) return Fail(Where(step) + ": a slice cannot hold tensors in a result");
        return true;
    }
  }

  int32_t Temp(int depth) {
    if (depth + 1 > temps_) temps_ = depth + 1;
    return -2 - depth;   // registers after the slots, numbered when their count is known (Finish)
  }

  bool Step(int i) {
    const v1::Step& s = p_->plan->steps(i);
    auto& c = *p_->code;
    int32_t fn = Function(s.function(), i);
    p_->steps->push_back(StepInfo{fn, File(s.loc().file()), s.loc().line()});
    c.push_back(kStep);
    c.push_back(i);
    defined_.clear();
    // The call.
    c.push_back(kCall);
    size_t dst_at = c.size();
    c.push_back(kNoReg);
    c.push_back(fn);
    c.push_back(s.args_size());
    c.push_back(s.kwargs_size());
    size_t kw_at = c.size();
    c.push_back(-1);
    for (const auto& a : s.args()) if (!Expr(a, i)) return false;
    if (s.kwargs_size()) {
      std::string names;
      for (int k = 0; k < s.kwargs_size(); ++k) {
        const std::string& n = s.kwargs(k).name();
        for (int j = 0; j < k; ++j)
          if (s.kwargs(j).name() == n) return Fail(Where(i) + ": keyword " + n + " is given twice");
        names.append(n);
        names.push_back('\0');
      }
      int32_t t = KwNames(names, s);
      if (t < 0) return false;
      c[kw_at] = t;
      for (const auto& k : s.kwargs()) if (!Expr(k.value(), i)) return false;
    }
    // Where the result goes.
    if (s.has_result() && HasSlot(s.result())) {
      const v1::Arg& r = s.result();
      if (NeedsPaths(r)) {
        int32_t t = Temp(0);
        c[dst_at] = t;
        std::vector<int32_t> keys;
        if (!Paths(r, t, keys, i)) return false;
        FreeTemp(t);
      } else if (r.kind_case() == v1::Arg::kTensor) {
        if (!Define(r.tensor().value(), i)) return false;
        c[dst_at] = (int32_t)r.tensor().value();
      } else if (r.kind_case() == v1::Arg::kList || r.kind_case() == v1::Arg::kTuple) {
        int32_t t = Temp(0);
        c[dst_at] = t;
        if (!Unpack(r.kind_case() == v1::Arg::kList ? r.list() : r.tuple(), t, true, i, 0)) return false;
        FreeTemp(t);
      } else {
        return Fail(Where(i) + ": a result of this kind cannot hold tensors");
      }
    }
    // Tensors written in place that the result does not hold: the argument objects.
    for (const auto& w : s.written()) {
      if (!Read(w.arg(), i)) return false;
      if (!Define(w.slot(), i)) return false;
      c.push_back(kMove);
      c.push_back((int32_t)w.slot());
      c.push_back((int32_t)w.arg());
    }
    // Guards on what the step defined.
    for (uint32_t d : guards_.empty() ? std::vector<uint32_t>{} : defined_) {
      auto it = guards_.find(d);
      if (it == guards_.end()) continue;
      for (int32_t g : it->second) {
        c.push_back(kCheck);
        c.push_back(g);
        c.push_back((int32_t)d);
      }
      guards_.erase(it);
    }
    // Values whose last reader this was.
    auto& free = free_;
    free.clear();
    for (uint32_t f : s.free_after()) {
      if (f < state_.size() && state_[f] == kDefined && !constant_[f] && !output_[f]) {
        state_[f] = kFreed;
        free.push_back((int32_t)f);
      }
    }
    if (!free.empty()) {
      c.push_back(kFree);
      c.push_back((int32_t)free.size());
      c.insert(c.end(), free.begin(), free.end());
    }
    return true;
  }

  void FreeTemp(int32_t t) {
    auto& c = *p_->code;
    c.push_back(kFree);
    c.push_back(1);
    c.push_back(t);
  }

  int32_t KwNames(const std::string& joined, const v1::Step& s) {
    auto it = kw_index_.find(joined);
    if (it != kw_index_.end()) return it->second;
    PyObject* t = PyTuple_New(s.kwargs_size());
    if (!t) return -1;
    for (int k = 0; k < s.kwargs_size(); ++k) {
      PyObject* n = Str(s.kwargs(k).name());
      if (!n) {
        Py_DECREF(t);
        return -1;
      }
      PyUnicode_InternInPlace(&n);
      PyTuple_SET_ITEM(t, k, n);
    }
    return kw_index_[joined] = Own(t);
  }

  // Temporaries were written as -2 - depth; they become registers after the slots.
  void Finish() {
    int32_t base = (int32_t)state_.size();
    auto& c = *p_->code;
    c.push_back(kEnd);
    // Rewrite in one pass over the instructions (operands that are registers only).
    size_t pc = 0;
    auto reg = [&](int32_t& r) {
      if (r <= -2) r = base + (-2 - r);
    };
    while (pc < c.size()) {
      switch (c[pc++]) {
        case kStep: pc += 1; break;
        case kCall: {
          reg(c[pc]);
          int32_t nargs = c[pc + 2], nkw = c[pc + 3];
          pc += 5;
          for (int32_t k = 0; k < nargs + nkw; ++k) pc = SkipExpr(c, pc);
          break;
        }
        case kUnpack: {
          reg(c[pc]);
          int32_t n = c[pc + 1];
          for (int32_t k = 0; k < n; ++k) reg(c[pc + 3 + k]);
          pc += 3 + n;
          break;
        }
        case kGetPath: reg(c[pc + 1]); pc += 3 + c[pc + 2]; break;
        case kMove: pc += 2; break;
        case kCheck: pc += 2; break;
        case kFree: {
          int32_t n = c[pc];
          for (int32_t k = 0; k < n; ++k) reg(c[pc + 1 + k]);
          pc += 1 + n;
          break;
        }
        case kEnd: pc = c.size(); break;
      }
    }
    p_->nregs = base + temps_;
  }

  static size_t SkipExpr(const std::vector<int32_t>& c, size_t pc) {
    switch (c[pc]) {
      case kSlot:
      case kObj: return pc + 2;
      case kList:
      case kTuple: {
        int32_t n = c[pc + 1];
        pc += 2;
        for (int32_t k = 0; k < n; ++k) pc = SkipExpr(c, pc);
        return pc;
      }
      case kDict: {
        int32_t n = c[pc + 1];
        pc += 2;
        for (int32_t k = 0; k < 2 * n; ++k) pc = SkipExpr(c, pc);
        return pc;
      }
      case kSlice: {
        pc += 1;
        for (int k = 0; k < 3; ++k) pc = SkipExpr(c, pc);
        return pc;
      }
    }
    return c.size();
  }

  uint32_t num_slots_ = 0;
  std::vector<uint8_t> state_, constant_, output_;
  std::unordered_map<uint32_t, std::vector<int32_t>> guards_;

 private:
  Program* p_;
  PyObject* plan_error_;
  std::unordered_map<std::string, int32_t> fn_index_, lit_index_, key_index_, kw_index_, file_index_;
  std::vector<int32_t> free_;
  int32_t last_file_ = -1;
  std::vector<uint32_t> defined_;
  int temps_ = 0;
};

void Program_clear_tables(Program* p) {
  if (p->objs)
    for (PyObject* o : *p->objs) Py_XDECREF(o);
  if (p->constants)
    for (auto& [r, o] : *p->constants) Py_XDECREF(o);
  delete p->arena;   // the Plan is on it
  p->arena = nullptr;
  delete p->path;
  delete p->code;
  delete p->objs;
  delete p->fn_obj;
  delete p->lit_obj;
  delete p->fn_names;
  delete p->fn_first;
  delete p->lit_bytes;
  delete p->lit_first;
  delete p->steps;
  delete p->files;
  p->files = nullptr;
  delete p->inputs;
  delete p->outputs;
  delete p->constants;
  delete p->fninfo;
  p->fninfo = nullptr;
  p->plan = nullptr;
  p->path = nullptr;
  p->code = nullptr;
  p->objs = nullptr;
  p->fn_obj = p->lit_obj = p->fn_first = p->lit_first = p->inputs = p->outputs = nullptr;
  p->fn_names = p->lit_bytes = nullptr;
  p->steps = nullptr;
  p->constants = nullptr;
}

void Program_dealloc(PyObject* self) {
  Program* p = (Program*)self;
  Program_clear_tables(p);
  Py_XDECREF(p->guard_error);
  Py_TYPE(self)->tp_free(self);
}

bool SlotList(PyObject* seq, const char* what, std::vector<uint32_t>& out) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == (unsigned long)-1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return false;
    }
    out.push_back((uint32_t)v);
  }
  Py_DECREF(fast);
  return true;
}

// Program(plan_bytes): parses the Plan (GIL released). ValueError if it does not parse.
int Program_init(PyObject* self, PyObject* args, PyObject* kw) {
  static const char* kwlist[] = {"plan", nullptr};
  Py_buffer buf;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*", (char**)kwlist, &buf)) return -1;
  Program* p = (Program*)self;
  Program_clear_tables(p);
  // An arena: a long plan is millions of small messages, parsed ~2x faster than with one heap
  // allocation each, and freed at once.
  p->arena = new google::protobuf::Arena();
  p->plan = google::protobuf::Arena::CreateMessage<v1::Plan>(p->arena);
  p->path = new std::string();
  p->code = new std::vector<int32_t>();
  p->objs = new std::vector<PyObject*>();
  p->fn_obj = new std::vector<int32_t>();
  p->lit_obj = new std::vector<int32_t>();
  p->fn_names = new std::vector<std::string>();
  p->fn_first = new std::vector<int32_t>();
  p->lit_bytes = new std::vector<std::string>();
  p->lit_first = new std::vector<int32_t>();
  p->steps = new std::vector<StepInfo>();
  p->files = new std::vector<std::string>();
  p->inputs = new std::vector<int32_t>();
  p->outputs = new std::vector<int32_t>();
  p->constants = new std::vector<std::pair<int32_t, PyObject*>>();
  p->fninfo = new std::vector<FnInfo>();
  p->linked = false;
  p->built = false;
  if (buf.len > INT32_MAX) {   // ParseFromArray takes an int size (a plan's steps past 2 GiB)
    PyBuffer_Release(&buf);
    PyErr_SetString(PyExc_ValueError, "the plan message is over 2 GiB, more than protobuf parses at once");
    return -1;
  }
  bool parsed;
  Py_BEGIN_ALLOW_THREADS
  parsed = p->plan->ParseFromArray(buf.buf, (int)buf.len);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&buf);
  if (!parsed) {
    PyErr_SetString(PyExc_ValueError, "the plan does not parse as ivytrace.v1.Plan");
    return -1;
  }
  p->num_steps = p->plan->steps_size();
  return 0;
}

// head() -> the Plan without its steps, serialized: what Python reads of a plan the machine runs.
PyObject* Program_head(PyObject* self, PyObject*) {
  Program* p = (Program*)self;
  if (p->built) {
    PyErr_SetString(PyExc_RuntimeError, "head() before build()");
    return nullptr;
  }
  // The steps moved aside and back: a swap of pointers, the holder being on the Plan's arena.
  auto* aside = google::protobuf::Arena::CreateMessage<v1::Plan>(p->arena);
  aside->mutable_steps()->Swap(p->plan->mutable_steps());
  std::string out = p->plan->SerializeAsString();
  aside->mutable_steps()->Swap(p->plan->mutable_steps());
  return PyBytes_FromStringAndSize(out.data(), (Py_ssize_t)out.size());
}

bool Build(Program* p, unsigned long num_slots, PyObject* defined, PyObject* constants, PyObject* outputs,
           PyObject* guards, PyObject* plan_error);

// build(path, num_slots, defined, constants, outputs, guards, plan_error, guard_error): checks and
// translates the steps (PlanError as codegen words it).
PyObject* Program_build(PyObject* self, PyObject* args) {
  const char* path;
  unsigned long num_slots;
  PyObject *defined, *constants, *outputs, *guards, *plan_error, *guard_error;
  if (!PyArg_ParseTuple(args, "skOOOOOO", &path, &num_slots, &defined, &constants, &outputs, &guards, &plan_error,
                        &guard_error))
    return nullptr;
  Program* p = (Program*)self;
  if (p->built) {
    PyErr_SetString(PyExc_RuntimeError, "this program is built already");
    return nullptr;
  }
  p->built = true;
  *p->path = path;
  Py_XDECREF(p->guard_error);
  Py_INCREF(guard_error);
  p->guard_error = guard_error;
  return Build(p, num_slots, defined, constants, outputs, guards, plan_error) ? Py_NewRef(Py_None) : nullptr;
}
bool Build(Program* p, unsigned long num_slots, PyObject* defined, PyObject* constants, PyObject* outputs,
           PyObject* guards, PyObject* plan_error) {
  const char* path = p->path->c_str();
  Builder b(p, plan_error);
  b.num_slots_ = (uint32_t)num_slots;
  // Registers: every slot. Without num_slots, as many as the largest slot named.
  uint32_t most = (uint32_t)num_slots;
  std::vector<uint32_t> def, outs;
  if (!SlotList(defined, "defined", def) || !SlotList(outputs, "outputs", outs)) return false;
  if (!num_slots) {
    for (uint32_t s : def) most = std::max(most, s + 1);
    for (uint32_t s : outs) most = std::max(most, s + 1);
    for (const auto& s : p->plan->steps()) {
      for (uint32_t f : s.free_after()) most = std::max(most, f + 1);
      for (const auto& w : s.written()) most = std::max(most, std::max(w.slot(), w.arg()) + 1);
      std::vector<const v1::Arg*> todo{&s.result()};
      for (const auto& a : s.args()) todo.push_back(&a);
      for (const auto& k : s.kwargs()) todo.push_back(&k.value());
      while (!todo.empty()) {
        const v1::Arg* a = todo.back();
        todo.pop_back();
        switch (a->kind_case()) {
          case v1::Arg::kTensor: most = std::max(most, a->tensor().value() + 1); break;
          case v1::Arg::kList: for (const auto& x : a->list().items()) todo.push_back(&x); break;
          case v1::Arg::kTuple: for (const auto& x : a->tuple().items()) todo.push_back(&x); break;
          case v1::Arg::kDict: for (const auto& x : a->dict().values()) todo.push_back(&x); break;
          case v1::Arg::kSlice:
            if (a->slice().has_start()) todo.push_back(&a->slice().start());
            if (a->slice().has_stop()) todo.push_back(&a->slice().stop());
            if (a->slice().has_step()) todo.push_back(&a->slice().step());
            break;
          default: break;
        }
      }
    }
  }
  b.Grow(most ? most - 1 : 0);
  for (uint32_t s : def) {
    b.Grow(s);
    b.state_[s] = Builder::kDefined;
    p->inputs->push_back((int32_t)s);
  }
  // constants: {slot: value}
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  if (!PyDict_Check(constants) || !PyDict_Check(guards)) {
    PyErr_SetString(PyExc_TypeError, "constants and guards must be dicts");
    return false;
  }
  while (PyDict_Next(constants, &pos, &key, &value)) {
    unsigned long s = PyLong_AsUnsignedLong(key);
    if (PyErr_Occurred()) return false;
    b.Grow((uint32_t)s);
    b.state_[s] = Builder::kDefined;
    b.constant_[s] = 1;
    Py_INCREF(value);
    p->constants->emplace_back((int32_t)s, value);
  }
  for (uint32_t s : outs) {
    b.Grow(s);
    b.output_[s] = 1;
  }
  pos = 0;
  while (PyDict_Next(guards, &pos, &key, &value)) {
    unsigned long s = PyLong_AsUnsignedLong(key);
    if (PyErr_Occurred()) return false;
    PyObject* fast = PySequence_Fast(value, "guards");
    if (!fast) return false;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
      PyObject* g = PySequence_Fast_GET_ITEM(fast, i);
      Py_INCREF(g);
      b.guards_[(uint32_t)s].push_back(b.Own(g));
    }
    Py_DECREF(fast);
  }
  for (int i = 0; i < p->plan->steps_size(); ++i)
    if (!b.Step(i)) return false;
  if (!b.guards_.empty()) {
    uint32_t least = UINT32_MAX;
    for (auto& [s, g] : b.guards_) least = std::min(least, s);
    PyErr_Format(plan_error, "%s: guard on slot %u, which the plan never defines", path, least);
    return false;
  }
  for (uint32_t s : outs)
    if (s < b.state_.size() && b.state_[s] == Builder::kDefined &&
        std::find(def.begin(), def.end(), s) == def.end() && !b.constant_[s] &&
        std::find(p->outputs->begin(), p->outputs->end(), (int32_t)s) == p->outputs->end())
      p->outputs->push_back((int32_t)s);
  b.Finish();
  delete p->arena;   // nothing reads the Plan after this (errors name steps by the StepInfo table)
  p->arena = nullptr;
  p->plan = nullptr;
  return true;
}

// A new list of n items, item(i) each (a new reference, or nullptr with an exception set).
template <typename Item>
PyObject* ListOf(size_t n, Item item) {
  PyObject* out = PyList_New((Py_ssize_t)n);
  if (!out) return nullptr;
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = item(i);
    if (!v) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, (Py_ssize_t)i, v);
  }
  return out;
}

PyObject* Program_functions(PyObject* self, void*) {
  Program* p = (Program*)self;
  return ListOf(p->fn_names->size(), [p](size_t i) {
    const std::string& name = (*p->fn_names)[i];
    return Py_BuildValue("(s#i)", name.data(), (Py_ssize_t)name.size(), (*p->fn_first)[i]);
  });
}

PyObject* Program_literals(PyObject* self, void*) {
  Program* p = (Program*)self;
  return ListOf(p->lit_bytes->size(), [p](size_t i) {
    const int32_t first = (*p->lit_first)[i];
    const std::string& fn = (*p->fn_names)[(*p->steps)[first].function];
    const std::string& arg = (*p->lit_bytes)[i];
    return Py_BuildValue("(y#is#)", arg.data(), (Py_ssize_t)arg.size(), first, fn.data(), (Py_ssize_t)fn.size());
  });
}

PyObject* Program_outputs(PyObject* self, void*) {
  Program* p = (Program*)self;
  return ListOf(p->outputs->size(), [p](size_t i) { return PyLong_FromLong((*p->outputs)[i]); });
}

PyObject* Program_num_steps(PyObject* self, void*) { return PyLong_FromLong(((Program*)self)->num_steps); }

PyObject* Program_code_words(PyObject* self, void*) {
  return PyLong_FromSize_t(((Program*)self)->code->size());
}

PyTypeObject MachineType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// link(functions, kinds, literals) -> Machine. kinds[i]: 0 (call), (1, op) binary operator,
// (2, op) unary operator, (3, name) method of the first argument.
PyObject* Program_link(PyObject* self, PyObject* args) {
  Program* p = (Program*)self;
  PyObject *fns, *kinds, *lits;
  if (!PyArg_ParseTuple(args, "OOO", &fns, &kinds, &lits)) return nullptr;
  if (p->linked || !p->built) {
    PyErr_SetString(PyExc_RuntimeError, p->linked ? "this program is linked already" : "link() before build()");
    return nullptr;
  }
  if (!PyList_Check(fns) || !PyList_Check(kinds) || !PyList_Check(lits) ||
      PyList_GET_SIZE(fns) != (Py_ssize_t)p->fn_names->size() || PyList_GET_SIZE(kinds) != PyList_GET_SIZE(fns) ||
      PyList_GET_SIZE(lits) != (Py_ssize_t)p->lit_bytes->size()) {
    PyErr_SetString(PyExc_ValueError, "link() takes one function and kind per name, one value per literal");
    return nullptr;
  }
  // Each function's (callable, kind) pair is kept in the object table (owning both); the machine
  // reads the unpacked FnInfo.
  for (size_t i = 0; i < p->fn_names->size(); ++i) {
    PyObject* k = PyList_GET_ITEM(kinds, (Py_ssize_t)i);
    PyObject* f = PyList_GET_ITEM(fns, (Py_ssize_t)i);
    FnInfo info{f, kPlain, 0, nullptr};
    if (PyTuple_Check(k) && PyTuple_GET_SIZE(k) == 2) {
      info.kind = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(k, 0));
      if (info.kind == kMethod) info.method = PyTuple_GET_ITEM(k, 1);
      else info.op = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(k, 1));
      if (PyErr_Occurred()) return nullptr;
      if (info.kind == kMethod && !PyUnicode_Check(info.method)) {
        PyErr_SetString(PyExc_TypeError, "a method kind names the method with a str");
        return nullptr;
      }
    } else if (k != Py_None && !(PyLong_Check(k) && PyLong_AsLong(k) == 0)) {
      PyErr_SetString(PyExc_TypeError, "a kind is 0, None or (kind, operand)");
      return nullptr;
    }
    PyObject* entry = PyTuple_Pack(2, f, k);
    if (!entry) return nullptr;
    (*p->objs)[(*p->fn_obj)[i]] = entry;
    p->fninfo->push_back(info);
  }
  for (size_t i = 0; i < p->lit_bytes->size(); ++i) {
    PyObject* v = PyList_GET_ITEM(lits, (Py_ssize_t)i);
    Py_INCREF(v);
    (*p->objs)[(*p->lit_obj)[i]] = v;
  }
  p->linked = true;
  Machine* m = PyObject_New(Machine, &MachineType);
  if (!m) return nullptr;
  Py_INCREF(self);
  m->program = p;
  m->vectorcall = Machine_vectorcall;
  m->weakrefs = nullptr;
  return (PyObject*)m;
}

PyGetSetDef Program_getset[] = {
    {"functions", Program_functions, nullptr, "[(name, first step)] the program calls", nullptr},
    {"literals", Program_literals, nullptr, "[(serialized Arg, first step)] it passes", nullptr},
    {"defined_outputs", Program_outputs, nullptr, "output slots the steps define, in the order returned", nullptr},
    {"code_words", Program_code_words, nullptr, "length of the program in int32 words", nullptr},
    {"num_steps", Program_num_steps, nullptr, "how many steps the plan has", nullptr},
    {nullptr}};
PyMethodDef Program_methods[] = {
    {"head", Program_head, METH_NOARGS, "the Plan without its steps, serialized"},
    {"build", Program_build, METH_VARARGS, "check and translate the steps"},
    {"link", Program_link, METH_VARARGS, "resolve names; returns the Machine"},
    {nullptr}};

PyTypeObject ProgramType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// --- Running ---------------------------------------------------------------------------------

struct Frame {
  std::vector<PyObject*> regs;
  ~Frame() {
    for (PyObject* o : regs) Py_XDECREF(o);
  }
};

// Evaluates an expression at code[pc]; returns a new reference and advances pc.
PyObject* Eval(const int32_t*& pc, PyObject** regs, PyObject* const* objs) {
  switch (*pc++) {
    case kSlot: {
      PyObject* v = regs[*pc++];
      if (!v) {   // the builder proved every read follows a definition
        PyErr_SetString(PyExc_SystemError, "ivytrace._replay: read of an empty register");
        return nullptr;
      }
      Py_INCREF(v);
      return v;
    }
    case kObj: {
      PyObject* v = objs[*pc++];
      Py_INCREF(v);
      return v;
    }
    case kList:
    case kTuple: {
      bool list = pc[-1] == kList;
      int32_t n = *pc++;
      PyObject* out = list ? PyList_New(n) : PyTuple_New(n);
      if (!out) return nullptr;
      for (int32_t i = 0; i < n; ++i) {
        PyObject* v = Eval(pc, regs, objs);
        if (!v) {
          Py_DECREF(out);
          return nullptr;   // pc is left mid-expression: the caller stops
        }
        if (list) PyList_SET_ITEM(out, i, v);
        else PyTuple_SET_ITEM(out, i, v);
      }
      return out;
    }
    case kDict: {
      int32_t n = *pc++;
      PyObject* out = PyDict_New();
      if (!out) return nullptr;
      for (int32_t i = 0; i < n; ++i) {
        PyObject* k = Eval(pc, regs, objs);
        if (!k) {
          Py_DECREF(out);
          return nullptr;
        }
        PyObject* v = Eval(pc, regs, objs);
        if (!v || PyDict_SetItem(out, k, v) < 0) {
          Py_DECREF(k);
          Py_XDECREF(v);
          Py_DECREF(out);
          return nullptr;
        }
        Py_DECREF(k);
        Py_DECREF(v);
      }
      return out;
    }
    case kSlice: {
      PyObject* a = Eval(pc, regs, objs);
      if (!a) return nullptr;
      PyObject* b = Eval(pc, regs, objs);
      if (!b) {
        Py_DECREF(a);
        return nullptr;
      }
      PyObject* c = Eval(pc, regs, objs);
      if (!c) {
        Py_DECREF(a);
        Py_DECREF(b);
        return nullptr;
      }
      PyObject* s = PySlice_New(a, b, c);
      Py_DECREF(a);
      Py_DECREF(b);
      Py_DECREF(c);
      return s;
    }
  }
  PyErr_SetString(PyExc_SystemError, "ivytrace._replay: bad expression");
  return nullptr;
}

PyObject* Binary(int32_t op, PyObject* a, PyObject* b) {
  switch (op) {
    case kMul: return PyNumber_Multiply(a, b);
    case kAdd: return PyNumber_Add(a, b);
    case kSub: return PyNumber_Subtract(a, b);
    case kTrueDiv: return PyNumber_TrueDivide(a, b);
    case kMatMul: return PyNumber_MatrixMultiply(a, b);
    case kPow: return PyNumber_Power(a, b, Py_None);
    case kFloorDiv: return PyNumber_FloorDivide(a, b);
    case kMod: return PyNumber_Remainder(a, b);
    case kEq: return PyObject_RichCompare(a, b, Py_EQ);
    case kNe: return PyObject_RichCompare(a, b, Py_NE);
    case kLt: return PyObject_RichCompare(a, b, Py_LT);
    case kLe: return PyObject_RichCompare(a, b, Py_LE);
    case kGt: return PyObject_RichCompare(a, b, Py_GT);
    case kGe: return PyObject_RichCompare(a, b, Py_GE);
    case kAnd: return PyNumber_And(a, b);
    case kOr: return PyNumber_Or(a, b);
    case kXor: return PyNumber_Xor(a, b);
    case kGetItem: return PyObject_GetItem(a, b);
  }
  PyErr_SetString(PyExc_SystemError, "ivytrace._replay: bad operator");
  return nullptr;
}

// The note an exception from a step carries: which step of which plan, recorded where.
void NoteStep(Program* p, int32_t step) {
  if (step < 0 || !PyErr_Occurred()) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && !PyObject_IsSubclass(type, p->guard_error)) {
    const StepInfo& s = (*p->steps)[step];
    std::string note = "ivytrace plan " + *p->path + ", step " + std::to_string(step) + ": " +
                       (*p->fn_names)[s.function];
    if (s.file >= 0) note += " (recorded at " + (*p->files)[s.file] + ":" + std::to_string(s.line) + ")";
    PyObject* r = PyObject_CallMethod(value, "add_note", "s", note.c_str());
    if (r) Py_DECREF(r);
    else PyErr_Clear();   // an exception type without add_note: the traceback still stands
  }
  if (tb) PyException_SetTraceback(value, tb);
  PyErr_Restore(type, value, tb);
}

PyObject* Machine_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Machine* m = (Machine*)self;
  Program* p = m->program;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    PyErr_SetString(PyExc_TypeError, "an ivytrace plan machine takes positional arguments only");
    return nullptr;
  }
  if (nargs != (Py_ssize_t)p->inputs->size()) {
    PyErr_Format(PyExc_TypeError, "an ivytrace plan machine takes %zd values, got %zd", (Py_ssize_t)p->inputs->size(),
                 nargs);
    return nullptr;
  }
  Frame frame;
  frame.regs.assign((size_t)p->nregs, nullptr);
  PyObject** regs = frame.regs.data();
  for (auto& [r, o] : *p->constants) {
    Py_INCREF(o);
    regs[r] = o;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    Py_XSETREF(regs[(*p->inputs)[i]], args[i]);
  }
  PyObject* const* objs = p->objs->data();
  const int32_t* pc = p->code->data();
  int32_t step = -1;
  // Arguments of one call: a fixed buffer, a vector for calls with very many.
  PyObject* small[16];
  std::vector<PyObject*> big;
  for (;;) {
    switch (*pc++) {
      case kStep: step = *pc++; break;
      case kCall: {
        int32_t dst = pc[0], fn = pc[1], nargs_ = pc[2], nkw = pc[3], kwn = pc[4];
        pc += 5;
        bool first_is_slot = nargs_ > 0 && *pc == kSlot;
        int32_t total = nargs_ + nkw;
        // One slot in front for PY_VECTORCALL_ARGUMENTS_OFFSET.
        PyObject** stack = small;
        if (total + 1 > 16) {
          big.assign((size_t)total + 1, nullptr);
          stack = big.data();
        }
        int32_t got = 0;
        for (; got < total; ++got) {
          stack[got + 1] = Eval(pc, regs, objs);
          if (!stack[got + 1]) break;
        }
        PyObject* result = nullptr;
        if (got == total) {
          const FnInfo& info = (*p->fninfo)[fn];
          const int32_t k = info.kind;
          PyObject* kwt = kwn >= 0 ? objs[kwn] : nullptr;
          if (k == kBinary && nkw == 0 && nargs_ == 2 && first_is_slot) {
            result = Binary(info.op, stack[1], stack[2]);
          } else if (k == kUnary && nkw == 0 && nargs_ == 1 && first_is_slot) {
            result = info.op == kNeg ? PyNumber_Negative(stack[1]) : PyNumber_Invert(stack[1]);
          } else if (k == kMethod && first_is_slot) {
            result = PyObject_VectorcallMethod(info.method, stack + 1, (size_t)nargs_ | PY_VECTORCALL_ARGUMENTS_OFFSET, kwt);
          } else {
            result = PyObject_Vectorcall(info.callable, stack + 1, (size_t)nargs_ | PY_VECTORCALL_ARGUMENTS_OFFSET, kwt);
          }
        }
        for (int32_t i = 0; i < got; ++i) Py_DECREF(stack[i + 1]);
        if (!result) goto error;
        if (dst >= 0) Py_XSETREF(regs[dst], result);
        else Py_DECREF(result);
        break;
      }
      case kUnpack: {
        int32_t src = pc[0], n = pc[1], top = pc[2];
        const int32_t* dsts = pc + 3;
        pc += 3 + n;
        PyObject* v = regs[src];
        if (top) {   // codegen's count check: another count is another path
          Py_ssize_t len = PyObject_Length(v);
          if (len < 0) goto error;
          if (len != n) {
            const StepInfo& s = (*p->steps)[step];
            std::string where = s.file < 0 ? "an unknown line" : (*p->files)[s.file] + ":" + std::to_string(s.line);
            PyErr_Format(p->guard_error,
                         "ivytrace: guard failed at %s: when traced, %s returned %d values; on these inputs it "
                         "returns %zd. The graph was specialized on that count; trace again with inputs that take "
                         "this path.",
                         where.c_str(), (*p->fn_names)[s.function].c_str(), n, len);
            goto error;
          }
        }
        PyObject* fast = PySequence_Fast(v, "cannot unpack a non-iterable result");
        if (!fast) goto error;
        if (PySequence_Fast_GET_SIZE(fast) != n) {
          PyErr_Format(PyExc_ValueError, "expected %d values to unpack, got %zd", n, PySequence_Fast_GET_SIZE(fast));
          Py_DECREF(fast);
          goto error;
        }
        for (int32_t i = 0; i < n; ++i) {
          if (dsts[i] < 0) continue;
          PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
          Py_INCREF(item);
          Py_XSETREF(regs[dsts[i]], item);
        }
        Py_DECREF(fast);
        break;
      }
      case kGetPath: {
        int32_t dst = pc[0], src = pc[1], n = pc[2];
        const int32_t* keys = pc + 3;
        pc += 3 + n;
        PyObject* v = regs[src];
        Py_INCREF(v);
        for (int32_t i = 0; i < n; ++i) {
          PyObject* next = PyObject_GetItem(v, objs[keys[i]]);
          Py_DECREF(v);
          if (!next) goto error;
          v = next;
        }
        Py_XSETREF(regs[dst], v);
        break;
      }
      case kMove: {
        PyObject* v = regs[pc[1]];
        Py_INCREF(v);
        Py_XSETREF(regs[pc[0]], v);
        pc += 2;
        break;
      }
      case kCheck: {
        PyObject* r = PyObject_CallOneArg(objs[pc[0]], regs[pc[1]]);
        pc += 2;
        if (!r) goto error;
        Py_DECREF(r);
        break;
      }
      case kFree: {
        int32_t n = *pc++;
        for (int32_t i = 0; i < n; ++i) Py_CLEAR(regs[pc[i]]);
        pc += n;
        break;
      }
      case kEnd: {
        PyObject* out = PyTuple_New((Py_ssize_t)p->outputs->size());
        if (!out) return nullptr;
        for (size_t i = 0; i < p->outputs->size(); ++i) {
          PyObject* v = regs[(*p->outputs)[i]];
          if (!v) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_SystemError, "ivytrace._replay: an output register is empty");
            return nullptr;
          }
          Py_INCREF(v);
          PyTuple_SET_ITEM(out, (Py_ssize_t)i, v);
        }
        return out;
      }
      default:
        PyErr_SetString(PyExc_SystemError, "ivytrace._replay: bad instruction");
        return nullptr;
    }
  }
error:
  NoteStep(p, step);
  return nullptr;
}

void Machine_dealloc(PyObject* self) {
  Machine* m = (Machine*)self;
  if (m->weakrefs) PyObject_ClearWeakRefs(self);
  Py_XDECREF((PyObject*)m->program);
  PyObject_Free(self);
}

PyObject* Machine_call(PyObject* self, PyObject* args, PyObject* kw) {
  if (kw && PyDict_GET_SIZE(kw)) {
    PyErr_SetString(PyExc_TypeError, "an ivytrace plan machine takes positional arguments only");
    return nullptr;
  }
  return Machine_vectorcall(self, &PyTuple_GET_ITEM(args, 0), (size_t)PyTuple_GET_SIZE(args), nullptr);
}

PyModuleDef module = {PyModuleDef_HEAD_INIT, "ivytrace._replay",
                      "Runs the steps of long plans without compiling them as Python (see _replay.cc).", -1,
                      nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__replay(void) {
  ProgramType.tp_name = "ivytrace._replay.Program";
  ProgramType.tp_basicsize = sizeof(Program);
  ProgramType.tp_flags = Py_TPFLAGS_DEFAULT;
  ProgramType.tp_new = PyType_GenericNew;
  ProgramType.tp_init = Program_init;
  ProgramType.tp_dealloc = Program_dealloc;
  ProgramType.tp_getset = Program_getset;
  ProgramType.tp_methods = Program_methods;
  ProgramType.tp_doc = "A plan's steps translated for the machine (see _replay.cc).";
  MachineType.tp_name = "ivytrace._replay.Machine";
  MachineType.tp_basicsize = sizeof(Machine);
  MachineType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  MachineType.tp_vectorcall_offset = offsetof(Machine, vectorcall);
  MachineType.tp_call = Machine_call;
  MachineType.tp_weaklistoffset = offsetof(Machine, weakrefs);
  MachineType.tp_dealloc = Machine_dealloc;
  MachineType.tp_doc = "Runs a linked Program: call it with the values of its input slots.";
  if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&MachineType) < 0) return nullptr;
  PyObject* m = PyModule_Create(&module);
  if (!m) return nullptr;
  Py_INCREF(&ProgramType);
  Py_INCREF(&MachineType);
  if (PyModule_AddObject(m, "Program", (PyObject*)&ProgramType) < 0 ||
      PyModule_AddObject(m, "Machine", (PyObject*)&MachineType) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
