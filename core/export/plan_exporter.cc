#include "core/export/plan_exporter.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "core/export/unsupported_ops.h"
#include "core/io/file_kind.h"
#include "core/io/graph_file.h"
#include "core/ir/arg.h"
#include "core/ir/guard_expr.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

// First disallowed symbol in `arg`, or "".
std::string DisallowedSymbol(const v1::Arg& arg, const SchemaRegistry& reg) {
  switch (arg.kind_case()) {
    case v1::Arg::kSymbol: return reg.IsAllowedSymbol(arg.symbol()) ? "" : arg.symbol();
    case v1::Arg::kOpaque: return "<" + arg.opaque() + ">";
    case v1::Arg::kList:
      for (const auto& a : arg.list().items()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    case v1::Arg::kTuple:
      for (const auto& a : arg.tuple().items()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    case v1::Arg::kDict:
      for (const auto& a : arg.dict().values()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    default: return "";
  }
}


// The plan of a graph, prepared once and then handed out part by part: everything but the
// steps is small, and each step is made on request (into a caller's v1::Step), so a plan can be
// written without ever being whole in memory. Prepare() does every check, so once it succeeded
// making the parts cannot fail.
class PlanLowering {
 public:
  PlanLowering(const Graph& g, const PlanOptions& o) : g_(g), target_(o.target) {}

  // Unsupported if the graph has ops the runtime cannot replay.
  Status Prepare();

  const Graph& graph() const { return g_; }
  const std::string& framework() const { return framework_; }
  // The framework to replay in, when not the recorded one (PlanOptions::target); else empty.
  const std::string& target() const { return target_; }
  uint32_t num_slots() const { return static_cast<uint32_t>(g_.values.size()); }
  // The slots of the constants the plan carries (those something reads), in slot order; the
  // tensor of slot s is g.constants[g.values[s].constant].
  const std::vector<uint32_t>& constant_slots() const { return constant_slots_; }
  const v1::Tensor& constant(uint32_t slot) const { return g_.constants[g_.values[slot].constant]; }
  size_t num_steps() const { return live_.size(); }
  const Node& step_node(size_t s) const { return *live_[s]; }
  // Step `s` into `step`, which must be empty (new or Clear()ed).
  void MakeStep(size_t s, v1::Step* step) const;
  const v1::Arg& outputs() const { return outputs_; }
  // Guard `i` of the graph as the plan holds it, into `guard`.
  void MakeGuard(size_t i, v1::Guard* guard) const;
  // Not a view-or-copy guard that always holds (ViewOrCopyFacts).
  bool KeepsGuard(size_t i) const {
    const Node* view = ViewOrCopyNode(g_, g_.guards[i]);
    return !view || !view_facts_.Holds(*view);
  }

 private:
  void Rename(v1::Arg* a) const {
    ForEachTensorMutable(a, [&](v1::TensorRef* r) { r->set_value(alias_[r->value()]); });
  }
  Status PrepareWritten();

  const Graph& g_;
  std::string target_;
  std::string framework_;
  std::vector<uint32_t> constant_slots_;
  std::vector<ValueId> alias_;
  v1::Arg outputs_;
  std::vector<const Node*> live_;
  // free_after of step s: free_slots_[free_begin_[s] .. free_begin_[s+1]), ascending.
  std::vector<size_t> free_begin_;
  std::vector<uint32_t> free_slots_;
  // The `written` entries of all steps, in step order (few steps have any).
  struct Written {
    size_t step;
    uint32_t slot, arg;
  };
  std::vector<Written> written_;
  mutable ViewOrCopyFacts view_facts_{g_};
};

Status PlanLowering::Prepare() {
  const Graph& g = g_;
  const auto& reg = SchemaRegistry::Default();
  UnsupportedOps unsupported;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    if (!n.schema) {
      unsupported.Add(n, "not in schemas/: the runtime's allow-list refuses it");
      continue;
    }
    std::string bad;
    for (const auto& a : n.args) {
      if (bad.empty()) bad = DisallowedSymbol(a, reg);
    }
    for (const auto& kw : n.kwargs) {
      if (bad.empty()) bad = DisallowedSymbol(kw.value(), reg);
    }
    if (!bad.empty()) unsupported.Add(n, "argument " + bad + " cannot be replayed");
  }
  if (!unsupported.empty()) return Status::Unsupported(unsupported.Message("a plan"));
  if (!target_.empty()) {
    if (!reg.IsFramework(target_)) {
      return Status::InvalidArgument("cannot export a plan for framework '" + target_ +
                                     "': the schemas describe torch, numpy and jax");
    }
    for (const Node& n : g.nodes) {
      if (n.erased) continue;
      std::string f = n.op.substr(0, n.op.find('.'));
      if (f == "ivytrace" || f == target_) continue;
      const std::string& canonical = n.schema->canonical();
      if (canonical.empty()) {
        unsupported.Add(n, "no canonical op in its schema");
      } else if (!reg.HasImpl(target_, canonical, f)) {
        unsupported.Add(n, "canonical op '" + canonical + "' has no " + target_ + " implementation");
      }
    }
    if (!unsupported.empty()) return Status::Unsupported(unsupported.Message("a " + target_ + " plan"));
  }

  // The frameworks the steps call into: the first component of the live ops' names
  // ("numpy.add" -> "numpy"), in order of first use and joined by "," when a mixed program
  // converts between them ("torch,numpy"); "torch" when the plan has no steps. Constants carry
  // their own framework (Tensor.framework) in a mixed plan. The runtime's own shape arithmetic
  // (ivytrace.sym.*, schemas/sym.textproto) is not a framework.
  std::vector<std::string> frameworks;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    std::string f = n.op.substr(0, n.op.find('.'));
    if (f == "ivytrace") continue;  // shape arithmetic (ivytrace.sym.*): plain Python, no framework
    if (std::find(frameworks.begin(), frameworks.end(), f) == frameworks.end()) frameworks.push_back(f);
  }
  for (const auto& f : frameworks) framework_ += (framework_.empty() ? "" : ",") + f;
  if (framework_.empty()) framework_ = "torch";
  // Only constants something reads travel with the plan.
  std::vector<char> needed(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    for (ValueId in : n.inputs) needed[in] = 1;
  }
  for (ValueId v : g.OutputValues()) needed[v] = 1;
  for (const auto& guard : g.guards) needed[guard.tensor().value()] = 1;
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (g.values[i].kind == v1::CONSTANT_VALUE && needed[i]) constant_slots_.push_back(static_cast<uint32_t>(i));
  }
  // A value an op wrote in place without returning it (x[i] = v, fill) is, on replay, the same
  // object as the argument it wrote: later steps read that argument's slot (the latest earlier
  // value with the same recorder tensor id). Framework-neutral; values are allocated in
  // definition order, so "earlier" is a smaller id.
  alias_.resize(g.values.size());
  for (size_t i = 0; i < alias_.size(); ++i) alias_[i] = static_cast<ValueId>(i);
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    std::vector<ValueId> returned;
    ForEachTensor(n.result, [&](const v1::TensorRef& r) { returned.push_back(r.value()); });
    for (const auto& m : n.mutated) {
      const ValueId mv = m.value();
      if (std::find(returned.begin(), returned.end(), mv) != returned.end()) continue;
      // The argument the call wrote, when it is one: its slot holds the object written. It is
      // not always the latest earlier value of the same recorder tensor: after a write through
      // an indexing view, a region input's newer versions live in a private copy (the builder's
      // clone + __setitem__, under a synthetic id), and `x[mask] = v` then writes that copy.
      int64_t arg_value = -1;
      auto find = [&](const v1::TensorRef& r) {
        if (arg_value < 0 && r.id() == m.id()) arg_value = r.value();
      };
      for (const auto& a : n.args) ForEachTensor(a, find);
      for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), find);
      if (arg_value >= 0 && static_cast<ValueId>(arg_value) < mv) {
        alias_[mv] = alias_[arg_value];
        continue;
      }
      for (ValueId j = mv; j-- > 0;) {
        const Value& c = g.values[j];
        if (c.tensor_id != g.values[mv].tensor_id) continue;
        if (c.kind == v1::NODE_OUTPUT && (c.producer < 0 || g.nodes[c.producer].erased)) continue;
        alias_[mv] = alias_[j];
        break;
      }
    }
  }
  outputs_ = g.outputs;
  Rename(&outputs_);
  // Last step reading each slot, so the runtime can drop what it no longer needs.
  std::vector<int> last_use(g.values.size(), -1);
  for (const Node& n : g.nodes) {
    if (!n.erased) live_.push_back(&n);
  }
  const int end = static_cast<int>(live_.size());
  for (size_t s = 0; s < live_.size(); ++s) {
    for (ValueId in : live_[s]->inputs) last_use[alias_[in]] = static_cast<int>(s);
  }
  ForEachTensor(outputs_, [&](const v1::TensorRef& r) { last_use[r.value()] = end; });
  for (ValueId v : g.OutputValues()) last_use[alias_[v]] = end;  // never freed
  for (const auto& guard : g.guards) last_use[alias_[guard.tensor().value()]] = end;
  for (ValueId v : g.InputValues()) {
    if (last_use[v] < 0) last_use[v] = end;
  }
  // Each step's slots, grouped by step in one array (a counting sort keeps them ascending).
  auto freed_at = [&](size_t v) {
    return last_use[v] >= 0 && last_use[v] < end && g.values[v].kind != v1::CONSTANT_VALUE;
  };
  free_begin_.assign(live_.size() + 1, 0);
  for (size_t v = 0; v < last_use.size(); ++v) {
    if (freed_at(v)) ++free_begin_[last_use[v] + 1];
  }
  for (size_t s = 0; s < live_.size(); ++s) free_begin_[s + 1] += free_begin_[s];
  free_slots_.resize(free_begin_.back());
  std::vector<size_t> next(free_begin_.begin(), free_begin_.end() - 1);
  for (size_t v = 0; v < last_use.size(); ++v) {
    if (freed_at(v)) free_slots_[next[last_use[v]]++] = static_cast<uint32_t>(v);
  }
  return PrepareWritten();
}

// A written tensor the call does not return is the argument object it wrote.
Status PlanLowering::PrepareWritten() {
  for (size_t s = 0; s < live_.size(); ++s) {
    const Node& n = *live_[s];
    for (const auto& m : n.mutated) {
      bool returned = false;
      ForEachTensor(n.result, [&](const v1::TensorRef& r) { returned = returned || r.value() == m.value(); });
      if (returned) continue;
      int64_t arg_slot = -1;
      auto find = [&](const v1::TensorRef& r) {
        if (arg_slot < 0 && r.id() == m.id()) arg_slot = r.value();
      };
      for (const auto& a : n.args) ForEachTensor(a, find);
      for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), find);
      // Another alias of the written storage (the NumPy recorder lists them all): later steps
      // already read it through the slot of its earlier value (see `alias_` above).
      if (arg_slot < 0 && alias_[m.value()] != m.value()) continue;
      if (arg_slot < 0) {
        return Status::Unsupported("cannot export to a plan: op '" + n.op + "' at " + n.loc.file() + ":" +
                                   std::to_string(n.loc.line()) + " writes tensor t" +
                                   std::to_string(m.id()) + " in place, which is neither an argument "
                                   "nor what it returns");
      }
      // The argument's slot as the step reads it (MakeStep renames args through alias_): NumPy's
      // `x[:, 0] += 1` writes through a view and then sets the item on a later version of x,
      // which lives in x's slot; the raw value would be a slot no step defines.
      written_.push_back({s, m.value(), static_cast<uint32_t>(alias_[arg_slot])});
    }
  }
  return Status::Ok();
}

void PlanLowering::MakeStep(size_t s, v1::Step* step) const {
  const Node& n = *live_[s];
  step->set_function(n.op);
  for (const auto& a : n.args) Rename(&(*step->add_args() = a));
  for (const auto& kw : n.kwargs) Rename((*step->add_kwargs() = kw).mutable_value());
  *step->mutable_result() = n.result;
  *step->mutable_loc() = n.loc;
  auto w = std::lower_bound(written_.begin(), written_.end(), s,
                            [](const Written& x, size_t step) { return x.step < step; });
  for (; w != written_.end() && w->step == s; ++w) {
    auto* pw = step->add_written();
    pw->set_slot(w->slot);
    pw->set_arg(w->arg);
  }
  for (size_t i = free_begin_[s]; i < free_begin_[s + 1]; ++i) step->add_free_after(free_slots_[i]);
}

void PlanLowering::MakeGuard(size_t i, v1::Guard* guard) const {
  *guard = g_.guards[i];
  guard->set_expr(GuardExpression(g_, g_.guards[i].tensor().value()));
  guard->mutable_tensor()->set_value(alias_[g_.guards[i].tensor().value()]);
}

// ---------------------------------------------------------------------------------------------
// Writing a plan file
//
// As graph files are (core/io/graph_file.cc), the top-level v1::Plan is written field by field,
// never built whole: building it copied every node's args into millions of small messages and
// then serialized them into one string the size of the file (1.8 GB peak RSS and ~2.1 s for a
// 1M-op graph), and protobuf refuses a message over 2 GB. Each step is lowered into one reused
// v1::Step that protobuf sizes and serializes. The constants' bytes go first, straight from the
// graph's tensors into the aligned data section (format 02, plan.proto), and the Plan after them
// holds where they are. Fields go in field-number order, as protobuf's serializer writes them, so
// the Plan's bytes are those of v1::Plan::SerializeToString of ExportPlan's plan once each
// constant's data is moved into the data section.

namespace pb = ::google::protobuf;
using pb::io::CodedOutputStream;
using WFL = pb::internal::WireFormatLite;
using streamed_file::WriteMessageField;
using P = v1::Plan;
using PC = v1::PlanConstant;

// The value's fields other than its bytes (format 02 keeps those in the data section). Set one by
// one, since copying the message and clearing `data` would copy the bytes first; a field added to
// v1::Tensor must be added here (PlanFile tests compare the file with ExportPlan's plan).
v1::Tensor WithoutData(const v1::Tensor& value) {
  v1::Tensor meta;
  meta.set_dtype(value.dtype());
  *meta.mutable_shape() = value.shape();
  meta.set_name(value.name());
  meta.set_role(value.role());
  meta.set_framework(value.framework());
  return meta;
}

uint64_t AlignedSize(uint64_t n) { return (n + kPlanDataAlign - 1) / kPlanDataAlign * kPlanDataAlign; }

// Writes `n` bytes (CodedOutputStream::WriteRaw takes an int).
void WriteBytes(const char* p, uint64_t n, CodedOutputStream* out) {
  constexpr uint64_t kStep = uint64_t{1} << 30;
  for (uint64_t done = 0; done < n; done += kStep) out->WriteRaw(p + done, static_cast<int>(std::min(kStep, n - done)));
}

void WriteZeros(uint64_t n, CodedOutputStream* out) {
  static const char kZeros[kPlanDataAlign] = {};
  for (; n > 0; n -= std::min<uint64_t>(n, sizeof kZeros)) {
    out->WriteRaw(kZeros, static_cast<int>(std::min<uint64_t>(n, sizeof kZeros)));
  }
}

// Format 02's start: the magic, the data section's size, zeros up to byte 64, then each constant's
// bytes at an aligned offset. Returns the offsets, in constant_slots() order.
std::vector<uint64_t> WriteDataSection(const PlanLowering& p, CodedOutputStream* out) {
  std::vector<uint64_t> offsets;
  uint64_t size = 0;
  for (uint32_t slot : p.constant_slots()) {
    offsets.push_back(size);
    size += AlignedSize(p.constant(slot).data().size());
  }
  out->WriteRaw(kPlanMagic, 8);
  out->WriteLittleEndian64(size);
  WriteZeros(kPlanDataStart - 16, out);
  for (uint32_t slot : p.constant_slots()) {
    const std::string& data = p.constant(slot).data();
    WriteBytes(data.data(), data.size(), out);
    WriteZeros(AlignedSize(data.size()) - data.size(), out);
  }
  return offsets;
}

// A PlanConstant {slot, value without its bytes, data_offset, data_bytes} as field `constants`.
bool WritePlanConstant(uint32_t slot, const v1::Tensor& value, uint64_t offset, CodedOutputStream* out) {
  PC c;
  c.set_slot(slot);
  *c.mutable_value() = WithoutData(value);
  c.set_data_offset(offset);
  c.set_data_bytes(value.data().size());
  return WriteMessageField(P::kConstantsFieldNumber, c, out);
}

// Writes the magic and the Plan's fields. Returns an error for an element over 2 GB; stream
// errors show in out->HadError().
Status WritePlan(const PlanLowering& p, const std::string& path, CodedOutputStream* out) {
  auto too_big = [&](const std::string& what) {
    return Status::InvalidArgument("cannot write '" + path + "': " + what +
                                   " is over protobuf's 2 GB message limit");
  };
  const Graph& g = p.graph();
  const std::vector<uint64_t> offsets = WriteDataSection(p, out);
  if (!g.name.empty()) WFL::WriteString(P::kNameFieldNumber, g.name, out);
  WFL::WriteString(P::kFrameworkFieldNumber, p.framework(), out);  // never empty
  if (!p.target().empty() && p.target() != p.framework()) WFL::WriteString(P::kTargetFieldNumber, p.target(), out);
  if (p.num_slots() != 0) WFL::WriteUInt32(P::kNumSlotsFieldNumber, p.num_slots(), out);
  for (const auto& in : g.inputs) {
    if (!WriteMessageField(P::kInputsFieldNumber, in, out)) return too_big("input '" + in.name() + "'");
  }
  size_t i = 0;
  for (uint32_t slot : p.constant_slots()) {
    if (!WritePlanConstant(slot, p.constant(slot), offsets[i++], out)) {
      return too_big("the constant in slot " + std::to_string(slot) + " ('" + p.constant(slot).name() + "')");
    }
  }
  v1::Step step;  // reused: Clear() keeps its sub-messages' memory for the next step
  for (size_t s = 0; s < p.num_steps(); ++s) {
    step.Clear();
    p.MakeStep(s, &step);
    if (!WriteMessageField(P::kStepsFieldNumber, step, out)) {
      return too_big("step " + std::to_string(s) + " (" + p.step_node(s).op + ")");
    }
  }
  if (!WriteMessageField(P::kOutputsFieldNumber, p.outputs(), out)) return too_big("the outputs");
  v1::Guard guard;
  for (size_t i = 0; i < g.guards.size(); ++i) {
    if (!p.KeepsGuard(i)) continue;
    p.MakeGuard(i, &guard);
    if (!WriteMessageField(P::kGuardsFieldNumber, guard, out)) return too_big("guard " + std::to_string(i));
  }
  if (!WriteMessageField(P::kSourceFieldNumber, g.source, out)) return too_big("the trace header");
  return Status::Ok();
}

}  // namespace

Status ExportPlan(const Graph& g, v1::Plan* plan, const PlanOptions& options) {
  PlanLowering p(g, options);
  IVY_RETURN_IF_ERROR(p.Prepare());
  plan->Clear();
  plan->set_name(g.name);
  plan->set_framework(p.framework());
  if (!p.target().empty() && p.target() != p.framework()) plan->set_target(p.target());
  plan->set_num_slots(p.num_slots());
  *plan->mutable_source() = g.source;
  for (const auto& in : g.inputs) *plan->add_inputs() = in;
  for (uint32_t slot : p.constant_slots()) {
    auto* c = plan->add_constants();
    c->set_slot(slot);
    *c->mutable_value() = p.constant(slot);
  }
  for (size_t s = 0; s < p.num_steps(); ++s) p.MakeStep(s, plan->add_steps());
  *plan->mutable_outputs() = p.outputs();
  for (size_t i = 0; i < g.guards.size(); ++i) {
    if (p.KeepsGuard(i)) p.MakeGuard(i, plan->add_guards());
  }
  return Status::Ok();
}

Status ExportPlanFile(const Graph& g, const std::string& path, const PlanOptions& options) {
  PlanLowering p(g, options);
  IVY_RETURN_IF_ERROR(p.Prepare());
  return streamed_file::Write(path, [&](CodedOutputStream* out) { return WritePlan(p, path, out); });
}

}  // namespace ivytrace
