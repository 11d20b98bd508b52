#include "core/ir/graph_builder.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>
#include <absl/hash/hash.h>

#include "core/inspect/trace_stats.h"
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
  size_t operator()(const TensorKey& k) const { return absl::HashOf(k.id, k.version); }
};

// Where an op was called, for error messages. Built only when a message needs it: making the
// string for each of a million ops was a measurable part of building a graph.
struct Where {
  Where(const std::string* op, const std::string* file, uint32_t line) : op(op), file(file), line(line) {}
  Where(std::string text) : text(std::move(text)) {}  // NOLINT: implicit, for fixed descriptions
  Where(const char* text) : text(text) {}             // NOLINT
  std::string str() const { return op ? "op '" + *op + "' at " + *file + ":" + std::to_string(line) : text; }

  const std::string* op = nullptr;
  const std::string* file = nullptr;
  uint32_t line = 0;
  std::string text;
};

class Builder {
 public:
  Builder(const BuildOptions& options, Graph* graph) : graph_(graph) {
    const auto colon = options.region.rfind(':');
    if (colon != std::string::npos) {
      want_name_ = options.region.substr(0, colon);
      // Digits only (checked by BuildGraphFromTrace); a number too large matches no region.
      const std::string k = options.region.substr(colon + 1);
      want_index_ = k.size() > 18 ? SIZE_MAX : std::stoull(k);
    } else {
      want_name_ = options.region;
    }
  }

  Status Run(const std::string& path, BuildSummary* summary) {
    IVY_RETURN_IF_ERROR(reader_.Open(path));
    ReserveForTrace(path);
    // A program killed after the region ended still left a complete region.
    reader_.set_allow_missing_footer(true);
    v1::Record rec;
    bool eof = false;
    // Records after the chosen region are still read, so damage anywhere in the file is
    // reported rather than silently ignored.
    while (true) {
      IVY_RETURN_IF_ERROR(reader_.Next(&rec, &eof));
      if (eof) break;
      if (rec.has_footer() && rec.footer().has_stopped_by_limit()) limit_ = rec.footer().stopped_by_limit();
      if (done_) continue;
      Status st = Handle(&rec);
      if (!st.ok()) return VerifyRest(st);
    }
    if (summary) {
      summary->regions_in_trace = regions_seen_;
      summary->region_chosen = chosen_;
      summary->ops_read = ops_read_;
      summary->shape_reads_dropped = shape_reads_;
      if (limit_) summary->stopped_by_limit = DescribeLimit(*limit_);
    }
    if (active_ && limit_) {
      // The region's ops after the limit were never recorded: its graph would be a wrong prefix.
      return Status::Corruption("trace '" + path + "': region '" + chosen_ +
                                "' was cut by a recording limit before it ended (" +
                                DescribeLimit(*limit_) + "); record again with a higher limit, or "
                                "choose a region that ended before the limit with --region");
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
                                "' (regions in the trace: " + names + ")" +
                                (limit_ ? "; the recording stopped early at a limit (" + DescribeLimit(*limit_) +
                                              "), so later regions are not in the trace"
                                        : ""));
      }
      // No region anywhere: the graph is every op of the trace, with no declared outputs.
      graph_->name = "trace";
    }
    return Status::Ok();
  }

 private:
  // The builder stopped at `error` before the end of the file. Damage makes records that parse
  // but mean nothing (a flipped byte in a tensor id reads as a tensor no op produced), so the
  // rest of the file is read and its checksum checked first: corruption is reported as such,
  // with its offset, and `error` only for a file that is intact.
  Status VerifyRest(const Status& error) {
    if (error.kind() == Status::Kind::kIOError) return error;
    reader_.set_allow_missing_footer(true);
    v1::Record rec;
    bool eof = false;
    while (!eof) {
      Status st = reader_.Next(&rec, &eof);
      if (!st.ok()) return st;
    }
    return error;
  }

  // Room for as many nodes and values as a trace of this size can hold, so that the arrays do not
  // grow by doubling: that allocated (and the kernel zeroed) twice their final size and moved
  // every node at each step. Reserved pages that are never touched cost nothing, so the estimate
  // errs high: the smallest op record (a call with one tensor and a scalar) is about 48 bytes.
  // Capped so a huge trace whose region is small does not ask for gigabytes of address space;
  // past the cap the arrays grow as before.
  void ReserveForTrace(const std::string& path) {
    constexpr uintmax_t kSmallestOpBytes = 48;
    constexpr uintmax_t kMaxReserved = uintmax_t{1} << 22;  // 4M nodes: 1.3 GB of address space
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (ec) return;
    trace_bytes_ = bytes;
    const auto n = static_cast<size_t>(std::min(bytes / kSmallestOpBytes, kMaxReserved));
    graph_->nodes.reserve(n);
    graph_->values.reserve(n);
  }

  Status Handle(v1::Record* rec) {
    switch (rec->kind_case()) {
      case v1::Record::kHeader: graph_->source = rec->header(); break;
      case v1::Record::kTensor: StoreTensor(rec->mutable_tensor()); break;
      case v1::Record::kRegionBegin: return BeginRegion(rec->region_begin());
      case v1::Record::kRegionEnd: return EndRegion(rec->region_end());
      case v1::Record::kOp:
        ++ops_read_;
        if (active_ || (regions_seen_ == 0 && want_name_.empty())) return AddOp(rec->mutable_op());
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
    if (td->offset() == 0) {
      partial = std::move(*td->mutable_value());
      // The whole value's room at once: appending chunk by chunk copied a 90 MB embedding about
      // twice and left it a third too big. A total the file cannot hold is corrupt (reported
      // when the value ends short), and gets no room reserved.
      if (td->total_bytes() <= trace_bytes_) partial.mutable_data()->reserve(td->total_bytes());
    } else {
      partial.mutable_data()->append(td->value().data());
    }
    if (partial.data().size() >= td->total_bytes()) {
      v1::Tensor whole = std::move(partial);
      partial_.erase(key);
      Complete(key, std::move(whole));
    }
  }

  // A value is complete. The outputs of a foldable or random op in the graph keep it (the
  // recorder writes it right after the op), for constant-fold and bake-generators; so do
  // symbolic ints and bools (OBSERVED: what they were while recording, for exporters that
  // specialize on the recorded shapes).
  void Complete(const TensorKey& key, v1::Tensor t) {
    const auto role = t.role();
    if (role == v1::FOLDABLE || role == v1::RANDOM_OUTPUT || role == v1::OBSERVED) {
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
    graph_->Recount();  // the ops before the region are not in its graph
    defined_.clear();
    awaiting_value_.clear();
    links_.clear();
    poisoned_.clear();
    copied_storages_.clear();
    last_version_.clear();
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
    if (re.raised()) {
      // No result: a graph of it would have no outputs (and DCE would keep nothing).
      return Status::Corruption("trace '" + reader_.path() + "': region '" + chosen_ +
                                "' ended by an exception (the program raised inside it), so it has "
                                "no result to build a graph of; choose another region with --region");
    }
    v1::Arg out = re.result();
    Status st;
    ForEachTensorMutable(&out, [&](v1::TensorRef* r) {
      if (!st.ok()) return;
      ValueId id;
      st = Resolve(*r, "the region's result", &id);
      r->set_value(id);
    });
    IVY_RETURN_IF_ERROR(st);
    IVY_RETURN_IF_ERROR(CopyBackIntoInputs());
    graph_->outputs = std::move(out);
    active_ = false;
    done_ = true;
    return Status::Ok();
  }

  // Resolves a tensor read to its SSA value: the latest definition, else a stored constant.
  Status Resolve(const v1::TensorRef& r, const Where& where, ValueId* out) {
    TensorKey key{r.id(), r.version()};
    auto it = defined_.find(key);
    if (it != defined_.end()) {
      *out = it->second;
      return Status::Ok();
    }
    auto st = stored_.find(key);
    if (st == stored_.end() && links_.count(r.id())) return DeriveAlias(r, where, out);
    if (st == stored_.end()) {
      auto p = poisoned_.find(TensorKey{r.storage(), r.version()});
      if (p != poisoned_.end()) {
        return Status::Unsupported("trace '" + reader_.path() + "': " + where.str() + " reads tensor t" +
                                   std::to_string(r.id()) + " (version " + std::to_string(r.version()) +
                                   "), " + p->second);
      }
      return Status::Unsupported(
          "trace '" + reader_.path() + "' (record ending at byte " + std::to_string(reader_.offset()) +
          "): " + where.str() + " reads tensor t" + std::to_string(r.id()) + " (version " +
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
    if (active_) {
      // Moved, not copied: in the region a value is resolved once (defined_ answers every later
      // read), and a copy doubled the memory of reading a model's weights. Before a region
      // begins, the graph may still be dropped with defined_ (BeginRegion), so it copies.
      graph_->constants.push_back(std::move(st->second));
      stored_.erase(st);
    } else {
      graph_->constants.push_back(st->second);
    }
    *out = graph_->AddValue(std::move(v));
    defined_[key] = *out;
    return Status::Ok();
  }

  // Takes the event's argument trees (swapped out, not copied: the record is parsed afresh for
  // the next op, and a deep copy of each call's arguments was a tenth of building the graph).
  // Trace string `id` interned: once per string of the trace rather than once per op (hashing
  // every op's name, file and scope under the intern table's lock was ~3% of building a graph).
  InternedString Interned(uint32_t id) {
    const auto& strings = reader_.strings();
    if (id >= strings.size()) return InternedString(reader_.String(id));
    if (id >= interned_.size()) interned_.resize(strings.size());
    if (interned_[id].empty() && !strings[id].empty()) interned_[id] = strings[id];
    return interned_[id];
  }
  // The schema of the op named by trace string `id` (found once per op name, not once per op).
  const v1::OpSchema* SchemaOf(uint32_t id, InternedString op) {
    if (id >= interned_.size()) return registry_.Find(op);
    if (id >= schemas_.size()) schemas_.resize(interned_.size(), {nullptr, false});
    auto& [schema, known] = schemas_[id];
    if (!known) {
      schema = registry_.Find(op);
      known = true;
    }
    return schema;
  }

  Status AddOp(v1::OpEvent* event) {
    v1::OpEvent& op = *event;
    if (op.mutated_size() > 0 && !maybe_views_.empty()) GuardViewOrCopyBefore(op);
    Node n;
    n.op = Interned(op.op());
    n.schema = SchemaOf(op.op(), n.op);
    n.flags = op.flags();
    n.loc.set_file(Interned(op.file()));
    n.loc.set_line(op.line());
    if (op.scope()) n.scope = Interned(op.scope());
    n.duration_ns = op.duration_ns();
    const Where where{&reader_.String(op.op()), &reader_.String(op.file()), op.line()};
    Status st;
    auto resolve = [&](v1::TensorRef* r) {
      if (!st.ok()) return;
      ValueId id;
      st = Resolve(*r, where, &id);
      r->set_value(id);
    };
    n.args.resize(op.args_size());
    for (int i = 0; i < op.args_size(); ++i) n.args[i].Swap(op.mutable_args(i));
    for (auto& a : n.args) ForEachTensorMutable(&a, resolve);
    n.kwargs.resize(op.kwargs_size());
    for (int i = 0; i < op.kwargs_size(); ++i) n.kwargs[i].Swap(op.mutable_kwargs(i));
    for (auto& kw : n.kwargs) ForEachTensorMutable(kw.mutable_value(), resolve);
    IVY_RETURN_IF_ERROR(st);

    // Every tensor the call returns or writes is a new value, even when the call returns one of
    // its arguments (x.contiguous()): the graph stays SSA and the alias is explicit.
    const int32_t node_index = static_cast<int32_t>(graph_->nodes.size());
    // The values this call defines: a handful, so a linear search in place (no allocation).
    absl::InlinedVector<std::pair<TensorKey, ValueId>, 4> mine;
    auto define = [&](v1::TensorRef* r) {
      TensorKey key{r->id(), r->version()};
      for (const auto& [k, id] : mine) {
        if (k == key) {
          r->set_value(id);
          return;
        }
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
      mine.emplace_back(key, id);
      r->set_value(id);
    };
    n.result.Swap(op.mutable_result());
    ForEachTensorMutable(&n.result, define);
    n.mutated.resize(op.mutated_size());
    for (int i = 0; i < op.mutated_size(); ++i) n.mutated[i].Swap(op.mutable_mutated(i));
    // Views share their base's version counter, so one write bumps every alias the call was
    // passed (`t[0] += 5` on a view passes both the view and the item). Only one of them was
    // written: the first argument (self) if it is among them; the others are re-derived from
    // the new version of their storage when something reads them (DeriveAlias).
    std::vector<uint32_t> old_versions;
    const bool carries_views = n.op.rfind("torch.", 0) == 0;  // see the write-back below
    if (carries_views) {
      uint64_t self_id = 0;
      if (!n.args.empty() && n.args[0].has_tensor()) self_id = n.args[0].tensor().id();
      // `torch.add(a, b, out=v)` writes `out`, not its first argument: when `a` is a view of
      // the same storage (`torch.add(x[:, :1], 1, out=x[:, -1:])`) both are listed as mutated
      // (one version counter), and keeping `a` would write the result back into the wrong box.
      for (const auto& kw : n.kwargs) {
        if (kw.name() == "out" && kw.value().has_tensor()) self_id = kw.value().tensor().id();
      }
      std::vector<v1::TensorRef> kept;
      for (const auto& m : n.mutated) {
        bool drop = false;
        for (const auto& o : n.mutated) {
          if (&o != &m && o.storage() == m.storage() && o.storage() != 0 && m.id() != self_id &&
              (o.id() == self_id || &o < &m)) {
            drop = true;
          }
        }
        if (!drop) kept.push_back(m);
      }
      n.mutated = std::move(kept);
      for (const auto& m : n.mutated) {
        uint32_t ov = m.version();
        auto find_old = [&](const v1::TensorRef& r) {
          if (r.id() == m.id() && r.version() < m.version()) ov = r.version();
        };
        for (const auto& a : n.args) ForEachTensor(a, find_old);
        for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), find_old);
        old_versions.push_back(ov);
      }
    }
    // The recorder writes a mutated tensor's id/version/storage only: its dtype and shape are
    // the argument's (an in-place op keeps both).
    for (auto& m : n.mutated) {
      if (m.dtype() != v1::DTYPE_UNSPECIFIED || m.shape_size() > 0) continue;
      bool found = false;
      auto fill = [&](const v1::TensorRef& r) {
        if (found || r.id() != m.id()) return;
        found = true;
        const Value& v = graph_->values[r.value()];
        m.set_dtype(v.dtype);
        for (int64_t d : v.shape) m.add_shape(d);
      };
      for (const auto& a : n.args) ForEachTensor(a, fill);
      for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), fill);
    }
    for (auto& m : n.mutated) define(&m);
    if (n.canonical() == "cast") GuardCastReturningInput(n);
    NoteMaybeView(n);
    for (const auto& [key, id] : mine) {
      defined_[key] = id;
      auto& last = last_version_[key.id];
      last = std::max(last, key.version);
    }
    if (n.flags & (v1::FOLDABLE_OP | v1::RANDOM | v1::SHAPE_FOLDABLE)) {
      for (const auto& [key, id] : mine) awaiting_value_[key] = id;
    } else {
      for (const auto& [key, id] : mine) {
        const auto dt = graph_->values[id].dtype;
        if (dt == v1::SYM_INT || dt == v1::SYM_BOOL || dt == v1::SYM_FLOAT) awaiting_value_[key] = id;  // its OBSERVED value
      }
    }
    // Writes through views are carried back to the base for torch ops, whose recorder lists
    // only the tensor a call wrote. The NumPy recorder instead lists every array on the written
    // storage as mutated by the call (a replayed NumPy view writes its base's memory itself).
    if (carries_views) IVY_RETURN_IF_ERROR(RecordViewLink(n));
    Graph::IndexNode(&n);
    const std::vector<v1::TensorRef> written = carries_views ? n.mutated : std::vector<v1::TensorRef>{};
    const SourceLoc loc = n.loc;  // (a v1::SourceLocation here copied the file name for every op)
    graph_->AddNode(std::move(n));
    for (size_t i = 0; i < written.size(); ++i) {
      IVY_RETURN_IF_ERROR(WriteBack(written[i], old_versions[i], loc, where));
    }
    return Status::Ok();
  }

  // ---- writes through views ---------------------------------------------------------------
  //
  // The recorder gives a view the storage id of its root base, and every alias of a storage
  // shares one version counter (as in PyTorch). The graph stays SSA and functional:
  //  * a view op whose output shares its input's storage leaves a link (view -> parent, how);
  //  * a write to a view v (version ov -> nv) is followed by "scatter back" nodes that compute
  //    the parent at nv from the parent at ov and v at nv, up the links to the root:
  //      reshape-like views (view, reshape, flatten, unsqueeze, squeeze, view_as, detach):
  //          parent' = torch.reshape(v', parent.shape)
  //      transposes (t, T, mT, transpose, swapaxes, permute):
  //          parent' = torch.permute(v', inverse permutation)
  //      indexing views (__getitem__ with ints/slices/None/Ellipsis, select, narrow, and each
  //      output of split/chunk/unbind):
  //          c = torch.clone(parent); torch.Tensor.__setitem__(c, index, v'); parent' = c
  //      (c has its own storage id, so CSE and the other passes never take it for an alias);
  //  * any other alias read at a version no op defined is re-derived from its parent at that
  //    version by replaying its view op (so `y.view(-1)` made before `y.add_(1)` sees the write).
  //  * a region input or a constant (module state) written back through such a copy gets one
  //    final torch.Tensor.copy_ of its last version, so the caller's tensor is written as the
  //    program wrote it (CopyBackIntoInputs);
  //  * x.detach() shares x's storage id (recorder) and is written back like a reshape.
  // A write through a view made by any other op (or a view whose base the region never saw)
  // leaves the new version of the storage undefined; reading it fails with a message naming
  // the op and line that made the view and the write, never a wrong graph.
  enum class Inverse { kReshape, kPermute, kSetItem, kUnsupported };
  struct ViewLink {
    uint64_t parent = 0;
    Inverse inverse = Inverse::kUnsupported;
    std::vector<int64_t> perm;          // kPermute: the forward permutation
    v1::Arg index;                      // kSetItem: the index
    Node node;                          // the view op (args resolved), to re-derive the view
    std::vector<int64_t> parent_shape;
    v1::DType parent_dtype = v1::DTYPE_UNSPECIFIED;
    bool underivable = false;           // one of several outputs of an op we cannot invert
    // split/chunk: the index holds the recorded offsets, right only at the recorded size of the
    // parent's dim `size_dim`; using the link guards that size (once).
    int64_t size_dim = -1;
    int64_t recorded_size = 0;
    bool size_guarded = false;
  };

  static bool IntArg(const v1::Arg& a, int64_t* v) {
    if (a.kind_case() != v1::Arg::kI) return false;
    *v = a.i();
    return true;
  }
  static bool IntList(const std::vector<v1::Arg>& args, size_t from, std::vector<int64_t>* out) {
    out->clear();
    if (args.size() == from + 1 && (args[from].has_list() || args[from].has_tuple())) {
      const auto& items = args[from].has_list() ? args[from].list().items() : args[from].tuple().items();
      for (const auto& a : items) {
        int64_t v;
        if (!IntArg(a, &v)) return false;
        out->push_back(v);
      }
      return true;
    }
    for (size_t i = from; i < args.size(); ++i) {
      int64_t v;
      if (!IntArg(args[i], &v)) return false;
      out->push_back(v);
    }
    return true;
  }

  // Views returned in a tuple (split, chunk, unbind, tensor_split...): each one is the parent
  // indexed along one dimension. split/chunk/unbind get an indexing link (re-derived and
  // written back with __getitem__ / __setitem__); other ops an unsupported one.
  void RecordMultiViewLinks(const Node& n) {
    if (n.args.empty() || !n.args[0].has_tensor()) return;
    if (!n.result.has_tuple() && !n.result.has_list()) return;
    const auto& items = n.result.has_tuple() ? n.result.tuple().items() : n.result.list().items();
    const auto& in = n.args[0].tensor();
    const Value& parent = graph_->values[in.value()];
    const int64_t rank = static_cast<int64_t>(parent.shape.size());
    const std::string& op = n.op;
    const bool unbind = op == "torch.unbind" || op == "torch.Tensor.unbind";
    const bool split = op == "torch.split" || op == "torch.Tensor.split" || op == "torch.chunk" ||
                       op == "torch.Tensor.chunk";
    int64_t dim = 0;
    bool known = unbind || split;
    const size_t dim_pos = unbind ? 1 : 2;
    if (n.args.size() > dim_pos && !IntArg(n.args[dim_pos], &dim)) known = false;
    for (const auto& kw : n.kwargs) {
      if (kw.name() == "dim") known = known && IntArg(kw.value(), &dim);
      else known = false;
    }
    if (dim < 0) dim += rank;
    if (dim < 0 || dim >= rank) known = false;
    int64_t offset = 0;
    for (int i = 0; i < items.size(); ++i) {
      if (!items[i].has_tensor()) return;
      const auto& out = items[i].tensor();
      // (The trace's storage id: a value the builder made for a write back has its own.)
      if (out.storage() == 0 || out.storage() != in.storage() || out.id() == in.id()) continue;
      ViewLink link;
      link.parent = in.id();
      link.parent_shape = parent.shape;
      link.parent_dtype = parent.dtype;
      link.node.op = op;
      link.node.loc = n.loc;
      const Value& ov = graph_->values[out.value()];
      int64_t next = 0;
      if (known && (unbind || static_cast<int64_t>(ov.shape.size()) == rank) &&
          !__builtin_add_overflow(offset, unbind ? 1 : ov.shape[dim], &next)) {
        const int64_t len = unbind ? 1 : ov.shape[dim];
        link.inverse = Inverse::kSetItem;
        link.index = IndexAt(dim, [&](v1::Arg* x) {
          if (unbind) {
            x->set_i(i);
          } else {
            x->mutable_slice()->mutable_start()->set_i(offset);
            x->mutable_slice()->mutable_stop()->set_i(offset + len);
          }
        });
        offset += len;
        if (!unbind) {   // unbind's item i is x[i] at any size; split/chunk offsets are not
          link.size_dim = dim;
          link.recorded_size = parent.shape[dim];
        }
        // Re-derived as parent[index], the same view.
        link.node.op = "torch.Tensor.__getitem__";
        link.node.schema = registry_.Find(link.node.op);
        link.node.args = {n.args[0], link.index};
        link.node.result = items[i];
      } else {
        link.underivable = true;
      }
      links_[out.id()] = std::move(link);
    }
  }

  // REQUIRES: n's args resolved. Dims and indices come from the trace, which is untrusted input:
  // each one is checked against the rank of the tensor it indexes before it is used (a crafted
  // transpose dim once read far out of bounds, a permute wrote out of bounds, and a select with
  // dim 2^40 looped 2^40 times).
  Status RecordViewLink(const Node& n) {
    RecordMultiViewLinks(n);
    if (!n.result.has_tensor() || n.args.empty() || !n.args[0].has_tensor()) return Status::Ok();
    const auto& out = n.result.tensor();
    const auto& in = n.args[0].tensor();
    if (out.storage() == 0 || out.id() == in.id()) return Status::Ok();
    // `torch.add(a, b, out=v)` returns `v` itself: no new view of `a`, whatever storage they share.
    for (const auto& kw : n.kwargs) {
      if (kw.name() == "out" && kw.value().has_tensor() && kw.value().tensor().id() == out.id()) return Status::Ok();
    }
    const Value& parent = graph_->values[in.value()];
    if (in.storage() != out.storage()) return Status::Ok();
    ViewLink link;
    link.parent = in.id();
    link.node = n;
    link.node.mutated.clear();
    link.node.flags = 0;
    link.parent_shape = parent.shape;
    link.parent_dtype = parent.dtype;
    const std::string& op = n.op;
    const int64_t rank = static_cast<int64_t>(parent.shape.size());
    auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
    // As torch wraps dims: a 0-d tensor takes dim 0 and -1 (x.transpose(0, 0) of a scalar).
    auto bad_dim = [&](int64_t d) {
      return Status::Corruption("trace '" + reader_.path() + "' (record ending at byte " +
                                std::to_string(reader_.offset()) + "): op '" + op + "' at " + At(n.loc) +
                                ": dim " + std::to_string(d) + " is out of range for a tensor of rank " +
                                std::to_string(rank) + " (the trace is damaged or was not written by "
                                "a recorder)");
    };
    auto check_dim = [&](int64_t d) -> bool {
      const int64_t wrap = std::max<int64_t>(rank, 1);
      return d >= -wrap && d < wrap;
    };
    int64_t a = 0, b = 0;
    static const char* kReshape[] = {"torch.Tensor.view", "torch.Tensor.reshape", "torch.reshape",
                                     "torch.flatten", "torch.Tensor.flatten", "torch.Tensor.view_as",
                                     "torch.unsqueeze", "torch.Tensor.unsqueeze", "torch.squeeze",
                                     "torch.Tensor.squeeze", "torch.Tensor.unflatten", "torch.unflatten",
                                     "torch.Tensor.detach", "torch.detach"};
    const bool same_dtype = graph_->values[out.value()].dtype == parent.dtype;
    if (std::find(std::begin(kReshape), std::end(kReshape), op) != std::end(kReshape) && same_dtype) {
      link.inverse = Inverse::kReshape;
    } else if ((op == "torch.t" || op == "torch.Tensor.t") && rank <= 2) {
      link.inverse = Inverse::kPermute;
      for (int64_t i = rank; i-- > 0;) link.perm.push_back(i);
    } else if (op == "torch.Tensor.T.__get__") {
      link.inverse = Inverse::kPermute;
      for (int64_t i = rank; i-- > 0;) link.perm.push_back(i);
    } else if (op == "torch.Tensor.mT.__get__" && rank >= 2) {
      link.inverse = Inverse::kPermute;
      for (int64_t i = 0; i < rank; ++i) link.perm.push_back(i);
      std::swap(link.perm[rank - 2], link.perm[rank - 1]);
    } else if ((op == "torch.transpose" || op == "torch.Tensor.transpose" || op == "torch.swapaxes" ||
                op == "torch.Tensor.swapaxes") && n.args.size() == 3 && n.kwargs.empty() &&
               IntArg(n.args[1], &a) && IntArg(n.args[2], &b)) {
      if (!check_dim(a)) return bad_dim(a);
      if (!check_dim(b)) return bad_dim(b);
      link.inverse = Inverse::kPermute;
      for (int64_t i = 0; i < rank; ++i) link.perm.push_back(i);
      if (rank > 0) std::swap(link.perm[norm(a)], link.perm[norm(b)]);  // a 0-d tensor: identity
    } else if ((op == "torch.permute" || op == "torch.Tensor.permute") && n.kwargs.empty() &&
               IntList(n.args, 1, &link.perm) && static_cast<int64_t>(link.perm.size()) == rank) {
      std::vector<char> seen(static_cast<size_t>(rank), 0);
      for (auto& d : link.perm) {
        if (!check_dim(d) || rank == 0) return bad_dim(d);
        d = norm(d);
        if (seen[static_cast<size_t>(d)]++) {
          return Status::Corruption("trace '" + reader_.path() + "' (record ending at byte " +
                                    std::to_string(reader_.offset()) + "): op '" + op + "' at " +
                                    At(n.loc) + ": dims are not a permutation (dim " +
                                    std::to_string(d) + " appears twice)");
        }
      }
      link.inverse = Inverse::kPermute;
    } else if (op == "torch.Tensor.__getitem__" && n.args.size() == 2 && n.kwargs.empty()) {
      link.inverse = Inverse::kSetItem;
      link.index = n.args[1];
    } else if ((op == "torch.select" || op == "torch.Tensor.select") && n.args.size() == 3 &&
               n.kwargs.empty() && IntArg(n.args[1], &a) && IntArg(n.args[2], &b)) {
      if (!check_dim(a) || rank == 0) return bad_dim(a);
      link.inverse = Inverse::kSetItem;
      link.index = IndexAt(norm(a), [&](v1::Arg* x) { x->set_i(b); });
    } else if ((op == "torch.narrow" || op == "torch.Tensor.narrow") && n.args.size() == 4 &&
               n.kwargs.empty() && IntArg(n.args[1], &a) && IntArg(n.args[2], &b)) {
      int64_t len;
      if (IntArg(n.args[3], &len)) {
        if (!check_dim(a) || rank == 0) return bad_dim(a);
        link.inverse = Inverse::kSetItem;
        const int64_t d = norm(a);
        // A negative start counts from the end at any size: the slice keeps it negative (and
        // open-ended when the view reaches the end), not resolved against the recorded size.
        int64_t start = b, stop = 0;
        // Values from the file: overflow is damage, not undefined behaviour.
        if (__builtin_add_overflow(start, len, &stop)) {
          return Status::Corruption("trace '" + reader_.path() + "' (record ending at byte " +
                                    std::to_string(reader_.offset()) + "): op '" + op + "' at " +
                                    At(n.loc) + ": start " + std::to_string(b) + " and length " +
                                    std::to_string(len) + " overflow");
        }
        link.index = IndexAt(d, [&](v1::Arg* x) {
          x->mutable_slice()->mutable_start()->set_i(start);
          if (!(start < 0 && stop == 0)) x->mutable_slice()->mutable_stop()->set_i(stop);
        });
      }
    }
    links_[out.id()] = std::move(link);
    return Status::Ok();
  }

  // (slice(None),) * dim + (item,)
  template <typename F>
  static v1::Arg IndexAt(int64_t dim, F fill) {
    v1::Arg idx;
    auto* items = idx.mutable_tuple();
    for (int64_t i = 0; i < dim; ++i) items->add_items()->mutable_slice();
    fill(items->add_items());
    return idx;
  }

  v1::Arg TensorArg(ValueId id) const {
    const Value& v = graph_->values[id];
    v1::Arg a;
    auto* r = a.mutable_tensor();
    r->set_id(v.tensor_id);
    r->set_version(v.tensor_version);
    r->set_storage(v.storage);
    r->set_dtype(v.dtype);
    for (int64_t d : v.shape) r->add_shape(d);
    r->set_value(id);
    return a;
  }

  // A new value (tensor id/version/storage as given) made by `n`, which is appended.
  ValueId Emit(Node n, uint64_t tid, uint32_t version, uint64_t storage, v1::DType dtype,
               const std::vector<int64_t>& shape, bool as_result = true) {
    n.schema = registry_.Find(n.op);
    Value v;
    v.kind = v1::NODE_OUTPUT;
    v.dtype = dtype;
    v.shape = shape;
    v.producer = static_cast<int32_t>(graph_->nodes.size());
    v.tensor_id = tid;
    v.tensor_version = version;
    v.storage = storage;
    const ValueId id = graph_->AddValue(std::move(v));
    if (as_result) n.result = TensorArg(id);
    else n.mutated.push_back(TensorArg(id).tensor());
    Graph::IndexNode(&n);
    graph_->AddNode(std::move(n));
    return id;
  }

  static std::string At(const v1::SourceLocation& loc) {
    return loc.file() + ":" + std::to_string(loc.line());
  }

  // A region input written through an indexing view ends with its new value in a private copy
  // (clone + __setitem__). The program wrote the caller's tensor: so does the graph, with one
  // copy_ of the input's last version into the input at the end of the region.
  Status CopyBackIntoInputs() {
    // Module state (parameters, buffers, outside tensors) the region wrote the same way: the
    // plan's constant is the state, as for a plain in-place write to it.
    std::vector<v1::GraphInput> targets = graph_->inputs;
    for (size_t i = 0; i < graph_->values.size(); ++i) {
      const Value& v = graph_->values[i];
      if (v.kind != v1::CONSTANT_VALUE || !copied_storages_.count(v.storage)) continue;
      v1::GraphInput gi;
      gi.set_name(v.name.empty() ? "t" + std::to_string(v.tensor_id) : v.name);
      auto* r = gi.mutable_value()->mutable_tensor();
      r->set_id(v.tensor_id);
      r->set_version(v.tensor_version);
      r->set_storage(v.storage);
      r->set_value(static_cast<ValueId>(i));
      targets.push_back(std::move(gi));
    }
    for (const auto& gi : targets) {
      Status st;
      ForEachTensor(gi.value(), [&](const v1::TensorRef& r) {
        if (!st.ok() || !copied_storages_.count(r.storage()) || r.id() != r.storage()) return;
        auto last = last_version_.find(r.id());
        if (last == last_version_.end() || last->second <= r.version()) return;
        ValueId newest;
        v1::TensorRef nr = r;
        nr.set_version(last->second);
        st = Resolve(nr, "the copy back into '" + gi.name() + "'", &newest);
        if (!st.ok()) return;
        const ValueId input = r.value();
        Node n;
        n.op = "torch.Tensor.copy_";
        n.flags = v1::INPLACE;
        n.args = {TensorArg(input), TensorArg(newest)};
        const Value& iv = graph_->values[input];
        const uint64_t out_id = kSyntheticId | ++synthetic_;
        const v1::DType dtype = iv.dtype;
        const std::vector<int64_t> shape = iv.shape;
        const ValueId done = Emit(std::move(n), out_id, 1, r.storage(), dtype, shape, /*as_result=*/false);
        // copy_ returns the input object it wrote: its result is that same new value.
        Node& emitted = graph_->nodes.back();
        emitted.result = TensorArg(done);
        emitted.mutated.back().set_id(r.id());
        Graph::IndexNode(&emitted);
      });
      IVY_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

  // reshape, flatten/ravel and contiguous return a view of their input where its memory layout
  // allows one and a copy otherwise (x.transpose(0, 1).reshape(-1) copies; at another shape it may
  // not). The graph holds what the recorded call did: a write through the result reaches the input
  // (view) or not (copy), and a write to the input shows in the result or not. So once the memory
  // of either is written, the decision is guarded: `ivytrace.sym.shares_memory(result, input)`
  // computed before the write, checked against the recorded one. Reading alone never guards.
  struct MaybeView {
    ValueId result = 0, input = 0;
    bool shared = false;
    bool guarded = false;
    v1::SourceLocation loc;
  };

  void NoteMaybeView(const Node& n) {
    const std::string& c = n.canonical();
    if (c != "reshape" && c != "flatten" && c != "contiguous") return;
    if (n.op == "torch.Tensor.view" || n.op == "torch.Tensor.view_as") return;   // a view or an error, never a copy
    if (n.result.kind_case() != v1::Arg::kTensor || n.args.empty() || n.args[0].kind_case() != v1::Arg::kTensor) return;
    const ValueId result = n.result.tensor().value(), input = n.args[0].tensor().value();
    const uint64_t rs = graph_->values[result].storage, is = graph_->values[input].storage;
    if (!rs || !is) return;
    MaybeView mv;
    mv.result = result;
    mv.input = input;
    mv.shared = rs == is;
    mv.loc = n.loc;
    const size_t idx = maybe_views_.size();
    maybe_views_.push_back(std::move(mv));
    maybe_views_by_storage_[rs].push_back(idx);
    if (is != rs) maybe_views_by_storage_[is].push_back(idx);
  }

  void GuardViewOrCopyBefore(const v1::OpEvent& op) {
    for (const auto& m : op.mutated()) {
      auto it = maybe_views_by_storage_.find(m.storage());
      if (it == maybe_views_by_storage_.end()) continue;
      for (size_t idx : it->second) {
        MaybeView& mv = maybe_views_[idx];
        if (mv.guarded) continue;
        mv.guarded = true;
        v1::Arg shared;
        shared.set_b(mv.shared);
        EmitGuardedSym("ivytrace.sym.shares_memory", {TensorArg(mv.result), TensorArg(mv.input)}, v1::SYM_BOOL,
                       "ivytrace.sym.__bool__", shared, mv.loc);
      }
    }
  }

  // A cast to the dtype its input already has returns the input itself (torch's `x.float()` of a
  // float32 x, `.to(x.dtype)`, `.type_as(t)`): one object, so every later read of x reads "the
  // cast's result" and the graph cannot tell which reads meant x. On a replay with another input
  // dtype the cast makes a new tensor and those reads would see the wrong one, so the dtypes of
  // the tensors the cast read are guarded (checked on replay; an ONNX model's input types fix
  // them).
  void GuardCastReturningInput(const Node& n) {
    bool returned_input = false;
    std::vector<std::pair<uint64_t, uint32_t>> results;
    ForEachTensor(n.result, [&](const v1::TensorRef& r) { results.emplace_back(r.id(), r.version()); });
    auto read = [&](const v1::TensorRef& r) {
      for (const auto& [id, version] : results) returned_input = returned_input || (r.id() == id && r.version() == version);
    };
    for (const auto& a : n.args) ForEachTensor(a, read);
    for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), read);
    if (!returned_input) return;
    const char* op = n.op.rfind("numpy.", 0) == 0 ? "numpy.ndarray.dtype"
                     : n.op.rfind("jax.", 0) == 0 ? "jax.Array.dtype"
                                                  : "torch.Tensor.dtype";
    auto guard = [&](const v1::TensorRef& r) {
      v1::Guard g;
      *g.mutable_tensor() = r;
      g.set_op(op);
      g.mutable_observed()->set_dtype(graph_->values[r.value()].dtype);
      *g.mutable_loc() = n.loc;
      graph_->guards.push_back(std::move(g));
    };
    for (const auto& a : n.args) ForEachTensor(a, guard);
    for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), guard);
  }

  // A split/chunk view's index holds the offsets recorded: re-deriving it, or writing it back,
  // is right only while the parent's dim has its recorded size, so the first use guards that
  // size (ivytrace.sym.size of the parent, checked on replay and in an exported model).
  void GuardLinkSize(uint64_t view_id, ValueId parent) {
    auto it = links_.find(view_id);
    if (it == links_.end()) return;
    ViewLink& link = it->second;
    if (link.size_dim < 0 || link.size_guarded) return;
    link.size_guarded = true;
    v1::Arg dim, size;
    dim.set_i(link.size_dim);
    size.set_i(link.recorded_size);
    EmitGuardedSym("ivytrace.sym.size", {TensorArg(parent), dim}, v1::SYM_INT, "ivytrace.sym.__int__", size,
                   link.node.loc);
  }

  // A builder-made ivytrace.sym op (`op` on `args`, giving a `dtype` value) and a guard `guard_op`
  // that its value is `observed` on replay, both at `loc`.
  void EmitGuardedSym(const char* op, std::vector<v1::Arg> args, v1::DType dtype, const char* guard_op,
                      const v1::Arg& observed, const v1::SourceLocation& loc) {
    Node n;
    n.op = op;
    n.loc = loc;
    n.args = std::move(args);
    const uint64_t sid = kSyntheticId | ++synthetic_;
    const ValueId value = Emit(std::move(n), sid, 0, sid, dtype, {});
    v1::Guard g;
    *g.mutable_tensor() = TensorArg(value).tensor();
    g.set_op(guard_op);
    *g.mutable_observed() = observed;
    *g.mutable_loc() = loc;
    graph_->guards.push_back(std::move(g));
  }

  // `r` (a view, at a version no op defined): its view op replayed on its parent at that version.
  Status DeriveAlias(const v1::TensorRef& r, const Where& where, ValueId* out) {
    const ViewLink& link = links_.at(r.id());
    if (link.underivable) {
      return Status::Unsupported("trace '" + reader_.path() + "': " + where.str() + " reads tensor t" +
                                 std::to_string(r.id()) + " (version " + std::to_string(r.version()) +
                                 "), a view made by '" + link.node.op + "' at " + At(link.node.loc) +
                                 " whose base was written since; the builder cannot re-derive "
                                 "this view (supported: split, chunk, unbind, and single views)");
    }
    v1::TensorRef pr;
    pr.set_id(link.parent);
    pr.set_version(r.version());
    pr.set_storage(r.storage());
    ValueId parent;
    IVY_RETURN_IF_ERROR(Resolve(pr, where, &parent));
    GuardLinkSize(r.id(), parent);
    Node n = link.node;
    n.args[0] = TensorArg(parent);
    const Value& old = graph_->values[link.node.result.tensor().value()];
    const v1::DType dtype = old.dtype;
    const std::vector<int64_t> shape = old.shape;
    *out = Emit(std::move(n), r.id(), r.version(), r.storage(), dtype, shape);
    defined_[TensorKey{r.id(), r.version()}] = *out;
    return Status::Ok();
  }

  // After a write to `m` (now at m.version(), before at `ov`): define every parent up to the
  // storage's root at the new version.
  Status WriteBack(const v1::TensorRef& m, uint32_t ov, const v1::SourceLocation& loc,
                   const Where& where) {
    uint64_t child = m.id();
    ValueId child_new = defined_.at(TensorKey{m.id(), m.version()});
    const uint32_t nv = m.version();
    while (child != m.storage()) {
      auto it = links_.find(child);
      std::string why;
      if (it == links_.end()) {
        why = "which is a view of t" + std::to_string(m.storage()) +
              " made outside the region or by an op that was not recorded";
      } else if (it->second.inverse == Inverse::kUnsupported || it->second.underivable) {
        why = "which is a view made by '" + it->second.node.op + "' at " + At(it->second.node.loc) +
              ", a view op whose writes cannot be carried back to its base (supported: view, "
              "reshape, flatten, (un)squeeze, t, T, mT, transpose, permute, select, narrow, "
              "__getitem__, split, chunk, unbind)";
      }
      if (!why.empty()) {
        poisoned_[TensorKey{m.storage(), nv}] =
            "the value after " + where.str() + " wrote tensor t" + std::to_string(m.id()) + ", " + why;
        return Status::Ok();
      }
      const ViewLink& link = it->second;
      v1::TensorRef pr;
      pr.set_id(link.parent);
      pr.set_version(ov);
      pr.set_storage(m.storage());
      ValueId parent_old;
      IVY_RETURN_IF_ERROR(Resolve(pr, where, &parent_old));
      GuardLinkSize(child, parent_old);
      ValueId parent_new = 0;
      Node n;
      n.loc = loc;
      switch (link.inverse) {
        case Inverse::kReshape: {
          // reshape_as the parent, not a reshape to its recorded shape: a replay at another
          // shape writes back at that shape (`v = x.view(-1); v[0] = 5` at any size of x).
          n.op = "torch.Tensor.reshape_as";
          n.args.push_back(TensorArg(child_new));
          n.args.push_back(TensorArg(parent_old));
          parent_new = Emit(std::move(n), link.parent, nv, m.storage(), link.parent_dtype, link.parent_shape);
          break;
        }
        case Inverse::kPermute: {
          n.op = "torch.permute";
          n.args.push_back(TensorArg(child_new));
          std::vector<int64_t> inv(link.perm.size());
          for (size_t i = 0; i < link.perm.size(); ++i) inv[link.perm[i]] = static_cast<int64_t>(i);
          v1::Arg dims;
          dims.mutable_tuple();
          for (int64_t d : inv) dims.mutable_tuple()->add_items()->set_i(d);
          n.args.push_back(dims);
          parent_new = Emit(std::move(n), link.parent, nv, m.storage(), link.parent_dtype, link.parent_shape);
          break;
        }
        case Inverse::kSetItem: {
          // A private copy of the parent (its own storage id, so passes never see it alias the
          // program's memory), written in place with the view's new value.
          const uint64_t copy_id = kSyntheticId | ++synthetic_;
          n.op = "torch.clone";
          n.args.push_back(TensorArg(parent_old));
          Node set;
          set.loc = loc;
          ValueId copy = Emit(std::move(n), copy_id, 0, copy_id, link.parent_dtype, link.parent_shape);
          set.op = "torch.Tensor.__setitem__";
          set.args.push_back(TensorArg(copy));
          set.args.push_back(link.index);
          set.args.push_back(TensorArg(child_new));
          set.result.set_none(true);
          set.flags = v1::INPLACE;
          parent_new = Emit(std::move(set), copy_id, 1, copy_id, link.parent_dtype, link.parent_shape,
                            /*as_result=*/false);
          break;
        }
        case Inverse::kUnsupported: return Status::Unsupported("unreachable");
      }
      defined_[TensorKey{link.parent, nv}] = parent_new;
      if (link.inverse == Inverse::kSetItem) copied_storages_.insert(m.storage());
      auto& last = last_version_[link.parent];
      last = std::max(last, nv);
      child = link.parent;
      child_new = parent_new;
    }
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
  std::optional<v1::LimitHit> limit_;   // from the footer: a recording limit stopped the trace
  uint64_t region_id_ = 0;
  std::string chosen_;
  absl::flat_hash_map<TensorKey, ValueId, TensorKeyHash> defined_;
  std::vector<InternedString> interned_;  // by trace string id; see Interned()
  std::vector<std::pair<const v1::OpSchema*, bool>> schemas_;  // by trace string id; see SchemaOf()
  absl::flat_hash_map<TensorKey, v1::Tensor, TensorKeyHash> stored_;
  absl::flat_hash_map<TensorKey, v1::Tensor, TensorKeyHash> partial_;
  uintmax_t trace_bytes_ = 0;  // size of the trace file (0: unknown)
  // Views made in the region: view tensor id -> how it was made from its parent.
  std::unordered_map<uint64_t, ViewLink> links_;
  // (storage, version) left undefined by a write through a view that cannot be carried back.
  absl::flat_hash_map<TensorKey, std::string, TensorKeyHash> poisoned_;
  absl::flat_hash_set<uint64_t> copied_storages_;          // storages written back by a copy
  absl::flat_hash_map<uint64_t, uint32_t> last_version_;   // tensor id -> newest version defined
  std::vector<MaybeView> maybe_views_;
  absl::flat_hash_map<uint64_t, std::vector<size_t>> maybe_views_by_storage_;   // storage -> maybe_views_
  static constexpr uint64_t kSyntheticId = 1ull << 62;   // tensor ids of builder-made copies
  uint64_t synthetic_ = 0;
  // Outputs of foldable/random ops whose recorded values have not been read yet.
  absl::flat_hash_map<TensorKey, ValueId, TensorKeyHash> awaiting_value_;
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
