#include "core/ir/graph_builder.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "core/io/trace_reader.h"
#include "core/ir/arg.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

struct TensorKey {
  uint64_t id;
  uint32_t version;
  bool operator==(const TensorKey& o) const { return id == o.id && version == o.version; }
};
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const { return k.id * 0x9E3779B97F4A7C15ull ^ k.version; }
};

class Builder {
 public:
  Builder(const BuildOptions& options, Graph* graph) : graph_(graph) {
    const auto colon = options.region.rfind(':');
    if (colon != std::string::npos) {
      want_name_ = options.region.substr(0, colon);
      want_index_ = std::stoul(options.region.substr(colon + 1));
    } else {
      want_name_ = options.region;
    }
  }

  Status Run(const std::string& path, BuildSummary* summary) {
    IVY_RETURN_IF_ERROR(reader_.Open(path));
    // A program killed after the region ended still left a complete region.
    reader_.set_allow_missing_footer(true);
    v1::Record rec;
    bool eof = false;
    // Records after the chosen region are still read, so damage anywhere in the file is
    // reported rather than silently ignored.
    while (true) {
      IVY_RETURN_IF_ERROR(reader_.Next(&rec, &eof));
      if (eof) break;
      if (!done_) IVY_RETURN_IF_ERROR(Handle(&rec));
    }
    if (summary) {
      summary->regions_in_trace = regions_seen_;
      summary->region_chosen = chosen_;
      summary->ops_read = ops_read_;
      summary->shape_reads_dropped = shape_reads_;
    }
    if (active_) {
      return Status::Corruption("trace '" + path + "': region '" + chosen_ +
                                "' began but never ended (the program stopped inside it; the "
                                "trace ends at byte " + std::to_string(reader_.offset()) + ")");
    }
    if (!done_ && !reader_.saw_footer()) {
      return Status::Corruption("trace '" + path + "' ends at byte " + std::to_string(reader_.offset()) +
                                " without a footer (the program was stopped before the trace was "
                                "closed) and holds no complete region");
    }
    if (!done_) {
      if (!want_name_.empty() || regions_seen_ > 0) {
        std::string names;
        for (const auto& n : region_names_) names += (names.empty() ? "" : ", ") + n;
        if (regions_seen_ == 0) names = "none";
        return Status::NotFound("trace '" + path + "': no region '" + want_name_ +
                                (want_index_ ? ":" + std::to_string(want_index_) : "") +
                                "' (regions in the trace: " + names + ")");
      }
      // No region anywhere: the graph is every op of the trace, with no declared outputs.
      graph_->name = "trace";
    }
    return Status::Ok();
  }

 private:
  Status Handle(v1::Record* rec) {
    switch (rec->kind_case()) {
      case v1::Record::kHeader: graph_->source = rec->header(); break;
      case v1::Record::kTensor: StoreTensor(rec->mutable_tensor()); break;
      case v1::Record::kRegionBegin: return BeginRegion(rec->region_begin());
      case v1::Record::kRegionEnd: return EndRegion(rec->region_end());
      case v1::Record::kOp:
        ++ops_read_;
        if (active_ || (regions_seen_ == 0 && want_name_.empty())) return AddOp(rec->op());
        break;
      case v1::Record::kGuard:
        if (active_) return AddGuard(rec->guard());
        break;
      case v1::Record::kShapeRead:
        if (active_ || (regions_seen_ == 0 && want_name_.empty())) ++shape_reads_;
        break;
      default: break;
    }
    return Status::Ok();
  }

  void StoreTensor(v1::TensorData* td) {
    const auto role = td->value().role();
    if (role == v1::REGION_INPUT || role == v1::REGION_OUTPUT) return;  // verification only
    TensorKey key{td->ref().id(), td->ref().version()};
    if (td->offset() == 0 && td->total_bytes() <= td->value().data().size()) {
      Complete(key, std::move(*td->mutable_value()));
      return;
    }
    v1::Tensor& partial = partial_[key];
    if (td->offset() == 0) partial = td->value();
    else partial.mutable_data()->append(td->value().data());
    if (partial.data().size() >= td->total_bytes()) {
      v1::Tensor whole = std::move(partial);
      partial_.erase(key);
      Complete(key, std::move(whole));
    }
  }

  // A value is complete. The outputs of a foldable or random op in the graph keep it (the
  // recorder writes it right after the op), for constant-fold and bake-generators.
  void Complete(const TensorKey& key, v1::Tensor t) {
    const auto role = t.role();
    if (role == v1::FOLDABLE || role == v1::RANDOM_OUTPUT) {
      auto it = awaiting_value_.find(key);
      if (it != awaiting_value_.end()) {
        graph_->values[it->second].recorded = static_cast<int32_t>(graph_->constants.size());
        graph_->constants.push_back(t);
        awaiting_value_.erase(it);
      }
    }
    stored_[key] = std::move(t);
  }

  Status BeginRegion(const v1::RegionBegin& rb) {
    if (active_) return Status::Ok();  // nested region: its ops belong to the outer one
    const size_t k = name_counts_[rb.name()]++;
    ++regions_seen_;
    if (region_names_.size() < 20 &&
        std::find(region_names_.begin(), region_names_.end(), rb.name()) == region_names_.end()) {
      region_names_.push_back(rb.name());
    }
    const bool match = want_name_.empty() ? regions_seen_ == 1
                                          : (rb.name() == want_name_ && k == want_index_);
    if (!match) return Status::Ok();
    // Ops recorded before the region (when the trace had no region yet) are not part of it.
    graph_->nodes.clear();
    graph_->values.clear();
    graph_->constants.clear();
    defined_.clear();
    awaiting_value_.clear();
    active_ = true;
    region_id_ = rb.region();
    chosen_ = rb.name() + ":" + std::to_string(k);
    graph_->name = rb.name();
    for (const auto& in : rb.inputs()) {
      v1::GraphInput gi;
      gi.set_name(in.name());
      *gi.mutable_value() = in.value();
      int count = 0;
      ForEachTensor(in.value(), [&](const v1::TensorRef&) { ++count; });
      int index = 0;
      ForEachTensorMutable(gi.mutable_value(), [&](v1::TensorRef* r) {
        TensorKey key{r->id(), r->version()};
        auto it = defined_.find(key);
        if (it != defined_.end()) {
          r->set_value(it->second);
          return;
        }
        Value v;
        v.kind = v1::INPUT;
        v.dtype = r->dtype();
        v.shape.assign(r->shape().begin(), r->shape().end());
        v.name = count == 1 ? in.name() : in.name() + "." + std::to_string(index);
        v.tensor_id = r->id();
        v.tensor_version = r->version();
        v.storage = r->storage();
        ValueId id = graph_->AddValue(std::move(v));
        defined_[key] = id;
        r->set_value(id);
        ++index;
      });
      graph_->inputs.push_back(std::move(gi));
    }
    return Status::Ok();
  }

  Status EndRegion(const v1::RegionEnd& re) {
    if (!active_ || re.region() != region_id_) return Status::Ok();
    v1::Arg out = re.result();
    Status st;
    ForEachTensorMutable(&out, [&](v1::TensorRef* r) {
      if (!st.ok()) return;
      ValueId id;
      st = Resolve(*r, "the region's result", &id);
      r->set_value(id);
    });
    IVY_RETURN_IF_ERROR(st);
    graph_->outputs = std::move(out);
    active_ = false;
    done_ = true;
    return Status::Ok();
  }

  // Resolves a tensor read to its SSA value: the latest definition, else a stored constant.
  Status Resolve(const v1::TensorRef& r, const std::string& where, ValueId* out) {
    TensorKey key{r.id(), r.version()};
    auto it = defined_.find(key);
    if (it != defined_.end()) {
      *out = it->second;
      return Status::Ok();
    }
    auto st = stored_.find(key);
    if (st == stored_.end()) {
      return Status::Unsupported(
          "trace '" + reader_.path() + "' (record ending at byte " + std::to_string(reader_.offset()) +
          "): " + where + " reads tensor t" + std::to_string(r.id()) + " (version " +
          std::to_string(r.version()) +
          ") that no op in the region produced, that is not a region input and whose value was "
          "not recorded (was it computed outside the region, or written through a view?)");
    }
    Value v;
    v.kind = v1::CONSTANT_VALUE;
    v.tensor_id = r.id();
    v.tensor_version = r.version();
    v.storage = r.storage();
    v.dtype = st->second.dtype();
    v.shape.assign(st->second.shape().begin(), st->second.shape().end());
    v.name = st->second.name();
    v.constant = static_cast<int32_t>(graph_->constants.size());
    graph_->constants.push_back(st->second);
    *out = graph_->AddValue(std::move(v));
    defined_[key] = *out;
    return Status::Ok();
  }

  Status AddOp(const v1::OpEvent& op) {
    Node n;
    n.op = reader_.String(op.op());
    n.schema = registry_.Find(n.op);
    n.flags = op.flags();
    n.loc.set_file(reader_.String(op.file()));
    n.loc.set_line(op.line());
    if (op.scope()) n.scope = reader_.String(op.scope());
    const std::string where = "op '" + n.op + "' at " + n.loc.file() + ":" + std::to_string(n.loc.line());
    Status st;
    auto resolve = [&](v1::TensorRef* r) {
      if (!st.ok()) return;
      ValueId id;
      st = Resolve(*r, where, &id);
      r->set_value(id);
    };
    n.args.assign(op.args().begin(), op.args().end());
    for (auto& a : n.args) ForEachTensorMutable(&a, resolve);
    n.kwargs.assign(op.kwargs().begin(), op.kwargs().end());
    for (auto& kw : n.kwargs) ForEachTensorMutable(kw.mutable_value(), resolve);
    IVY_RETURN_IF_ERROR(st);

    // Every tensor the call returns or writes is a new value, even when the call returns one of
    // its arguments (x.contiguous()): the graph stays SSA and the alias is explicit.
    const int32_t node_index = static_cast<int32_t>(graph_->nodes.size());
    std::unordered_map<TensorKey, ValueId, TensorKeyHash> mine;
    auto define = [&](v1::TensorRef* r) {
      TensorKey key{r->id(), r->version()};
      auto it = mine.find(key);
      if (it != mine.end()) {
        r->set_value(it->second);
        return;
      }
      Value v;
      v.kind = v1::NODE_OUTPUT;
      v.dtype = r->dtype();
      v.shape.assign(r->shape().begin(), r->shape().end());
      v.producer = node_index;
      v.tensor_id = r->id();
      v.tensor_version = r->version();
      v.storage = r->storage();
      ValueId id = graph_->AddValue(std::move(v));
      mine[key] = id;
      r->set_value(id);
    };
    n.result = op.result();
    ForEachTensorMutable(&n.result, define);
    n.mutated.assign(op.mutated().begin(), op.mutated().end());
    for (auto& m : n.mutated) define(&m);
    for (const auto& [key, id] : mine) defined_[key] = id;
    if (n.flags & (v1::FOLDABLE_OP | v1::RANDOM)) {
      for (const auto& [key, id] : mine) awaiting_value_[key] = id;
    }
    Graph::IndexNode(&n);
    graph_->nodes.push_back(std::move(n));
    return Status::Ok();
  }

  // A guard keeps the value it checked alive, so a replay can check it again. A guard on a
  // tensor the builder cannot resolve would check nothing: it is an error, not a silent drop.
  Status AddGuard(const v1::GuardEvent& g) {
    v1::Guard out;
    *out.mutable_tensor() = g.tensor();
    out.set_op(reader_.String(g.op()));
    *out.mutable_observed() = g.value();
    out.mutable_loc()->set_file(reader_.String(g.file()));
    out.mutable_loc()->set_line(g.line());
    ValueId id;
    IVY_RETURN_IF_ERROR(Resolve(g.tensor(), "guard '" + out.op() + "' at " + out.loc().file() + ":" +
                                                std::to_string(out.loc().line()), &id));
    out.mutable_tensor()->set_value(id);
    graph_->guards.push_back(std::move(out));
    return Status::Ok();
  }

  Graph* graph_;
  const SchemaRegistry& registry_ = SchemaRegistry::Default();
  TraceReader reader_;
  std::string want_name_;
  size_t want_index_ = 0;
  std::unordered_map<std::string, size_t> name_counts_;
  std::vector<std::string> region_names_;
  size_t regions_seen_ = 0;
  size_t ops_read_ = 0;
  size_t shape_reads_ = 0;
  bool active_ = false;
  bool done_ = false;
  uint64_t region_id_ = 0;
  std::string chosen_;
  std::unordered_map<TensorKey, ValueId, TensorKeyHash> defined_;
  std::unordered_map<TensorKey, v1::Tensor, TensorKeyHash> stored_;
  std::unordered_map<TensorKey, v1::Tensor, TensorKeyHash> partial_;
  // Outputs of foldable/random ops whose recorded values have not been read yet.
  std::unordered_map<TensorKey, ValueId, TensorKeyHash> awaiting_value_;
};

}  // namespace

Status BuildGraphFromTrace(const std::string& path, const BuildOptions& options, Graph* graph,
                           BuildSummary* summary) {
  *graph = Graph();
  if (!options.region.empty()) {
    const auto colon = options.region.rfind(':');
    if (colon != std::string::npos) {
      const std::string k = options.region.substr(colon + 1);
      if (k.empty() || k.find_first_not_of("0123456789") != std::string::npos) {
        return Status::InvalidArgument("--region '" + options.region +
                                       "': expected NAME or NAME:K with K a number");
      }
    }
  }
  Builder b(options, graph);
  return b.Run(path, summary);
}

}  // namespace ivytrace
