#include "core/passes/specialize_symbols.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/ir/arg.h"

#include "core/passes/recorded_values.h"

namespace ivytrace {
namespace {

bool IsSymbolic(const Graph& g, ValueId v) {
  return v < g.values.size() && (g.values[v].dtype == v1::SYM_INT || g.values[v].dtype == v1::SYM_BOOL);
}

// Replaces the symbolic references inside `arg` (any depth) that `which` accepts by their
// recorded values.
Status Specialize(const Graph& g, v1::Arg* arg, const std::function<bool(ValueId)>& which, size_t* replaced) {
  switch (arg->kind_case()) {
    case v1::Arg::kTensor: {
      const ValueId v = arg->tensor().value();
      if (!IsSymbolic(g, v) || !which(v)) return Status::Ok();
      const auto x = RecordedScalar(g, v);
      if (!x) {
        return Status::Unsupported("symbolic value %" + std::to_string(v) +
                                   " has no recorded value (the trace holds no OBSERVED record for it)");
      }
      if (g.values[v].dtype == v1::SYM_BOOL) arg->set_b(*x != 0);
      else arg->set_i(*x);
      ++*replaced;
      return Status::Ok();
    }
    case v1::Arg::kList:
      for (auto& a : *arg->mutable_list()->mutable_items()) IVY_RETURN_IF_ERROR(Specialize(g, &a, which, replaced));
      return Status::Ok();
    case v1::Arg::kTuple:
      for (auto& a : *arg->mutable_tuple()->mutable_items()) IVY_RETURN_IF_ERROR(Specialize(g, &a, which, replaced));
      return Status::Ok();
    case v1::Arg::kDict:
      for (auto& a : *arg->mutable_dict()->mutable_values()) IVY_RETURN_IF_ERROR(Specialize(g, &a, which, replaced));
      return Status::Ok();
    case v1::Arg::kSlice: {
      auto* s = arg->mutable_slice();
      if (s->has_start()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_start(), which, replaced));
      if (s->has_stop()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_stop(), which, replaced));
      if (s->has_step()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_step(), which, replaced));
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

}  // namespace

Status SpecializeSymbols(Graph* graph, size_t* replaced, std::vector<v1::Guard>* moved_guards) {
  *replaced = 0;
  for (Node& n : graph->nodes) {
    if (n.erased || n.op.rfind("ivytrace.sym.", 0) == 0) continue;
    const size_t before = *replaced;
    auto all = [](ValueId) { return true; };
    for (auto& a : n.args) IVY_RETURN_IF_ERROR(Specialize(*graph, &a, all, replaced));
    for (auto& kw : n.kwargs) IVY_RETURN_IF_ERROR(Specialize(*graph, kw.mutable_value(), all, replaced));
    if (*replaced != before) {
      Graph::IndexNode(&n);
      // Its tensor inputs were constants and it read shapes, now constants too: constant-fold
      // may replace it by its recorded (OBSERVED) outputs.
      if (n.flags & v1::SHAPE_FOLDABLE) n.flags |= v1::FOLDABLE_OP;
    }
  }
  graph->Recount();
  std::vector<v1::Guard> kept;
  for (auto& guard : graph->guards) {
    if (!IsSymbolic(*graph, guard.tensor().value())) kept.push_back(std::move(guard));
    else moved_guards->push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
  return Status::Ok();
}

namespace {
bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool DropInputShapeGuards(Graph* graph) {
  std::vector<v1::Guard> kept;
  bool shapes = false;
  for (auto& guard : graph->guards) {
    const ValueId v = guard.tensor().value();
    const bool input = v < graph->values.size() && graph->values[v].kind == v1::INPUT;
    if (input && (EndsWith(guard.op(), ".dim") || EndsWith(guard.op(), ".ndim"))) continue;
    if (input && EndsWith(guard.op(), ".shape")) {
      shapes = true;
      continue;
    }
    kept.push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
  return shapes;
}

namespace {

// Flattened position of each region input tensor (ForEachTensor order over graph.inputs).
std::map<ValueId, size_t> InputOrdinals(const Graph& g) {
  std::map<ValueId, size_t> ord;
  size_t k = 0;
  for (const auto& in : g.inputs) {
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) { ord.emplace(r.value(), k++); });
  }
  return ord;
}

// Whether symbolic value `v` is computed only from constants and input dims `is_static` accepts,
// so that its value is the recorded one on every input the exported model accepts.
bool FromStaticDims(const Graph& g, ValueId v, const std::function<bool(ValueId, int64_t)>& is_static,
                    int depth = 0) {
  if (v >= g.values.size() || depth > 64) return false;
  const Value& val = g.values[v];
  if (val.kind == v1::CONSTANT_VALUE) return true;
  if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return false;
  const Node& n = g.nodes[val.producer];
  auto input_of = [&](const Node& node) -> const Value* {
    if (node.args.empty() || !node.args[0].has_tensor()) return nullptr;
    const Value& x = g.values[node.args[0].tensor().value()];
    return x.kind == v1::INPUT ? &x : nullptr;
  };
  if (n.op == "ivytrace.sym.size") {
    const Value* x = input_of(n);
    if (!x || n.args.size() < 2 || n.args[1].kind_case() != v1::Arg::kI) return false;
    const int64_t rank = static_cast<int64_t>(x->shape.size());
    int64_t d = n.args[1].i();
    if (d < 0) d += rank;
    return d >= 0 && d < rank && is_static(n.args[0].tensor().value(), d);
  }
  if (n.op == "ivytrace.sym.dim") return input_of(n) != nullptr;
  if (n.op == "ivytrace.sym.numel") {
    const Value* x = input_of(n);
    if (!x) return false;
    for (int64_t d = 0; d < static_cast<int64_t>(x->shape.size()); ++d) {
      if (!is_static(n.args[0].tensor().value(), d)) return false;
    }
    return true;
  }
  if (n.op.rfind("ivytrace.sym.", 0) != 0) return false;
  for (ValueId in : n.inputs) {
    if (!FromStaticDims(g, in, is_static, depth + 1)) return false;
  }
  return true;
}

// (input value, dim) when `v` is ivytrace.sym.size of a region input, read directly.
std::optional<std::pair<ValueId, int64_t>> InputDimRead(const Graph& g, ValueId v) {
  if (v >= g.values.size()) return std::nullopt;
  const Value& val = g.values[v];
  if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return std::nullopt;
  const Node& n = g.nodes[val.producer];
  if (n.op != "ivytrace.sym.size" || n.args.size() < 2 || !n.args[0].has_tensor() ||
      n.args[1].kind_case() != v1::Arg::kI) {
    return std::nullopt;
  }
  const ValueId x = n.args[0].tensor().value();
  if (g.values[x].kind != v1::INPUT) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(g.values[x].shape.size());
  int64_t d = n.args[1].i();
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) return std::nullopt;
  return std::make_pair(x, d);
}


// Input dims that meet a weight before anything else reshapes them: an MLP's features (the last
// dim into `linear`, or `x @ W` with W a constant), a conv's channels, the normalized dims of a
// norm layer, a dim added to a constant bias that has that size. The weights fix them, so the
// model declares them static even though the program never read them. The other unread dims of
// size >= 2 (a conv net's height and width, an audio length) follow the input: the graph was not
// specialized on them (no guard, no shape read), and replaying it at other sizes is what the
// program does. Axes are followed one to one through ops that keep their input's shape (an
// activation, a cast, dropout, an elementwise op with a broadcast operand) and no further: a
// dim this misses is declared dynamic, and a wrong size then fails in onnxruntime, never
// silently, because no value the graph computes was derived from it.
std::set<std::pair<ValueId, int64_t>> DimsFixedByWeights(const Graph& g) {
  using Origin = std::vector<std::optional<std::pair<ValueId, int64_t>>>;
  std::map<ValueId, Origin> origin;
  for (ValueId v : g.InputValues()) {
    if (v >= g.values.size()) continue;
    Origin o(g.values[v].shape.size());
    for (size_t d = 0; d < o.size(); ++d) o[d] = std::make_pair(v, static_cast<int64_t>(d));
    origin.emplace(v, std::move(o));
  }
  std::set<std::pair<ValueId, int64_t>> fixed;
  auto is_const = [&](ValueId v) { return v < g.values.size() && g.values[v].kind == v1::CONSTANT_VALUE; };
  auto pin = [&](ValueId v, int64_t axis) {
    auto it = origin.find(v);
    if (it == origin.end()) return;
    const int64_t rank = static_cast<int64_t>(it->second.size());
    if (axis < 0) axis += rank;
    if (axis >= 0 && axis < rank && it->second[axis]) fixed.insert(*it->second[axis]);
  };
  static const std::set<std::string, std::less<>> kReorders = {
      "transpose", "permute", "swapaxes", "moveaxis", "movedim", "t", "rot90", "matrix_transpose", "flip"};
  // Elementwise ops whose operands broadcast against each other (numpy's rules).
  static const std::set<std::string, std::less<>> kBroadcasting = {
      "add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum",
      "minimum", "fmax", "fmin", "atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "where",
      "masked_fill", "select_n", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
      "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "addcmul",
      "addcdiv", "lerp", "clamp", "heaviside", "nextafter", "ldexp"};
  for (const Node& n : g.nodes) {
    if (n.erased || n.inputs.empty()) continue;
    const std::string& c = n.canonical();
    const ValueId x = n.inputs[0];
    if (c == "linear") {
      pin(x, -1);
    } else if (c == "conv1d" || c == "conv2d" || c == "conv3d" || c == "conv_transpose1d" ||
               c == "conv_transpose2d" || c == "conv_transpose3d" || c == "batch_norm" || c == "group_norm" ||
               c == "instance_norm") {
      pin(x, 1);
    } else if (c == "layer_norm" || c == "rms_norm") {
      if (n.inputs.size() > 1 && g.values[n.inputs[1]].shape.size() >= 1) {
        for (int64_t k = 1; k <= static_cast<int64_t>(g.values[n.inputs[1]].shape.size()); ++k) pin(x, -k);
      } else {
        pin(x, -1);
      }
    } else if (c == "matmul" && n.inputs.size() == 2) {
      if (is_const(n.inputs[1])) pin(n.inputs[0], -1);
      if (is_const(n.inputs[0]) && g.values[n.inputs[1]].shape.size() >= 2) pin(n.inputs[1], -2);
    }
    // Follow the axes into a result of the same shape (elementwise, activations, casts).
    if (n.outputs.empty()) continue;
    const ValueId out = n.outputs[0];
    if (out >= g.values.size() || kReorders.count(c)) continue;
    const auto& out_shape = g.values[out].shape;
    const Origin* from = nullptr;
    for (ValueId in : n.inputs) {
      auto it = origin.find(in);
      if (it != origin.end() && g.values[in].shape == out_shape) {
        from = &it->second;
        break;
      }
    }
    if (!from) continue;
    // A constant operand of an elementwise op, broadcast against the input: its sizes > 1 fix the
    // aligned axes. Only elementwise ops broadcast their operands this way: a linear's weight has
    // the result's rank too, but its (out, in) sizes are not aligned with the result's axes (a
    // square 16x16 weight must not pin a sequence axis of the [b, 8, 16] result).
    if (kBroadcasting.count(c)) {
      for (ValueId in : n.inputs) {
        if (!is_const(in)) continue;
        const auto& cs = g.values[in].shape;
        if (cs.size() > out_shape.size()) continue;
        const size_t off = out_shape.size() - cs.size();
        for (size_t j = 0; j < cs.size(); ++j) {
          if (cs[j] > 1 && cs[j] == out_shape[off + j] && (*from)[off + j]) fixed.insert(*(*from)[off + j]);
        }
      }
    }
    Origin copy = *from;
    origin[out] = std::move(copy);
  }
  return fixed;
}

}  // namespace

void DropGuardsOnStaticDims(Graph* graph, const InputDims& dims) {
  const auto ord = InputOrdinals(*graph);
  auto is_static = [&](ValueId x, int64_t d) {
    auto it = ord.find(x);
    return it != ord.end() && !dims.IsDynamic(it->second, d);
  };
  std::vector<v1::Guard> kept;
  for (auto& guard : graph->guards) {
    const ValueId v = guard.tensor().value();
    if (IsSymbolic(*graph, v) && FromStaticDims(*graph, v, is_static)) continue;
    kept.push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
}

InputDims AnalyzeInputDims(const Graph& g, const InputDimsOptions& options, std::vector<bool>* drop_guards) {
  const Graph* graph = &g;
  const auto ord = InputOrdinals(*graph);
  InputDims dims;
  std::vector<ValueId> by_ordinal(ord.size());
  for (const auto& [v, k] : ord) by_ordinal[k] = v;
  for (ValueId v : by_ordinal) dims.group.emplace_back(graph->values[v].shape.size(), -1);
  drop_guards->assign(graph->guards.size(), false);
  if (options.all_static) return dims;

  // Guards that pin an input dim to its recorded size (`x.shape[1] == 32` recorded True, or `!=`
  // recorded False): the model declares that dim static, where the guard holds by construction.
  std::set<std::pair<ValueId, int64_t>> pinned;
  std::vector<std::pair<std::pair<ValueId, int64_t>, std::pair<ValueId, int64_t>>> tied;
  std::set<size_t> pinning_guards;  // `range(x.shape[1])`: an int taken from an input dim itself
  for (size_t gi = 0; gi < graph->guards.size(); ++gi) {
    const auto& guard = graph->guards[gi];
    const ValueId v = guard.tensor().value();
    if (guard.observed().kind_case() == v1::Arg::kI) {
      if (auto r = InputDimRead(*graph, v)) {
        pinned.insert(*r);
        pinning_guards.insert(gi);
      }
      continue;
    }
    if (v >= graph->values.size() || graph->values[v].kind != v1::NODE_OUTPUT || graph->values[v].producer < 0) continue;
    const Node& n = graph->nodes[graph->values[v].producer];
    if ((n.op != "ivytrace.sym.eq" && n.op != "ivytrace.sym.ne") || n.args.size() != 2) continue;
    if (guard.observed().kind_case() != v1::Arg::kB) continue;
    const bool equal = guard.observed().b() == (n.op == "ivytrace.sym.eq");
    if (!equal) continue;
    std::optional<std::pair<ValueId, int64_t>> a, b;
    if (n.args[0].has_tensor()) a = InputDimRead(*graph, n.args[0].tensor().value());
    if (n.args[1].has_tensor()) b = InputDimRead(*graph, n.args[1].tensor().value());
    if (a && n.args[1].kind_case() == v1::Arg::kI) pinned.insert(*a);
    else if (b && n.args[0].kind_case() == v1::Arg::kI) pinned.insert(*b);
    else if (a && b) tied.emplace_back(*a, *b);
  }

  // The sizes the program read as shapes: an input dim it read (directly, or a dim of the same
  // recorded size of a tensor computed from the inputs) is one its code follows.
  std::set<int64_t> read_sizes;
  std::set<std::pair<ValueId, int64_t>> read_dims;
  for (ValueId v = 0; v < graph->values.size(); ++v) {
    const Value& val = graph->values[v];
    if (val.kind != v1::NODE_OUTPUT || val.producer < 0 || graph->nodes[val.producer].erased ||
        graph->nodes[val.producer].op != "ivytrace.sym.size") {
      continue;
    }
    if (auto r = InputDimRead(*graph, v)) read_dims.insert(*r);
    if (auto x = RecordedScalar(*graph, v)) read_sizes.insert(*x);
  }
  const std::set<std::pair<ValueId, int64_t>> fixed_by_weights = DimsFixedByWeights(*graph);
  const int64_t batch = !by_ordinal.empty() && !graph->values[by_ordinal[0]].shape.empty()
                            ? graph->values[by_ordinal[0]].shape[0] : -1;

  // Dynamic: dim 0 when it has the first input's recorded size (the batch), and every dim the
  // program read as a shape; but not a dim recorded as 0 or 1 (size-1 dims broadcast and squeeze,
  // and the graph was recorded with that meaning), a dim a guard pins, or dim 0 under
  // static_batch. Dims of one recorded size share a group (a name). A dim the program never read
  // follows too, unless a weight fixes it (DimsFixedByWeights: an MLP's features stay static).
  // Two dims of one input share a name only where a guard ties them (`x.shape[0] == x.shape[1]`
  // recorded True): an input recorded square ([2, 2]) is not square on every input, and
  // onnxruntime takes dims of one name to be equal (it plans buffers by them).
  auto is_tied = [&](ValueId v, int64_t d1, int64_t d2) {
    for (const auto& [a, b] : tied) {
      if ((a == std::make_pair(v, d1) && b == std::make_pair(v, d2)) ||
          (a == std::make_pair(v, d2) && b == std::make_pair(v, d1))) {
        return true;
      }
    }
    return false;
  };
  std::map<int64_t, int> group_of_size;
  int groups = 0;
  for (size_t k = 0; k < by_ordinal.size(); ++k) {
    const auto& shape = graph->values[by_ordinal[k]].shape;
    std::map<int, int64_t> used_here;  // group -> the dim of this input that has it
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] <= 1 || (d == 0 && options.static_batch) || pinned.count({by_ordinal[k], d})) continue;
      const bool follows = (d == 0 && shape[0] == batch) || read_dims.count({by_ordinal[k], d}) ||
                           read_sizes.count(shape[d]) || !fixed_by_weights.count({by_ordinal[k], d});
      if (!follows) continue;
      auto it = group_of_size.find(shape[d]);
      int grp = it != group_of_size.end() ? it->second : (group_of_size[shape[d]] = groups++);
      auto used = used_here.find(grp);
      if (used != used_here.end() && !is_tied(by_ordinal[k], used->second, static_cast<int64_t>(d))) grp = groups++;
      used_here.emplace(grp, static_cast<int64_t>(d));
      dims.group[k][d] = grp;
    }
  }
  // The pinning guards hold by construction in a model declaring the dim static.
  drop_guards->assign(graph->guards.size(), false);
  for (size_t gi = 0; gi < graph->guards.size(); ++gi) {
    const auto& guard = graph->guards[gi];
    const ValueId v = guard.tensor().value();
    bool drop = pinning_guards.count(gi) > 0;
    if (v < graph->values.size() && graph->values[v].kind == v1::NODE_OUTPUT && graph->values[v].producer >= 0) {
      const Node& n = graph->nodes[graph->values[v].producer];
      if ((n.op == "ivytrace.sym.eq" || n.op == "ivytrace.sym.ne") && n.args.size() == 2) {
        for (const auto& arg : n.args) {
          if (!arg.has_tensor()) continue;
          auto r = InputDimRead(*graph, arg.tensor().value());
          if (r && pinned.count(*r)) drop = true;
        }
      }
    }
    (*drop_guards)[gi] = drop;
  }
  return dims;
}

InputDims ChooseInputDims(Graph* graph, const InputDimsOptions& options) {
  std::vector<bool> drop;
  InputDims dims = AnalyzeInputDims(*graph, options, &drop);
  std::vector<v1::Guard> kept;
  for (size_t gi = 0; gi < graph->guards.size(); ++gi) {
    if (!drop[gi]) kept.push_back(std::move(graph->guards[gi]));
  }
  graph->guards = std::move(kept);
  return dims;
}

std::vector<std::vector<std::string>> InputDimNames(const std::vector<std::string>& input_names,
                                                    const std::vector<std::vector<int>>& groups) {
  std::map<int, std::string> names;
  bool batch_named = false;
  std::vector<std::vector<std::string>> out;
  for (size_t k = 0; k < groups.size(); ++k) {
    out.emplace_back(groups[k].size());
    for (size_t d = 0; d < groups[k].size(); ++d) {
      const int grp = groups[k][d];
      if (grp < 0) continue;
      auto it = names.find(grp);
      if (it == names.end()) {
        std::string n = d == 0 && !batch_named ? "batch"
                        : (k < input_names.size() ? input_names[k] : "input" + std::to_string(k)) + "_dim" + std::to_string(d);
        batch_named = batch_named || n == "batch";
        it = names.emplace(grp, n).first;
      }
      out[k][d] = it->second;
    }
  }
  return out;
}

std::vector<std::string> InputTensorNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& in : graph.inputs) {
    size_t n = 0;
    ForEachTensor(in.value(), [&](const v1::TensorRef&) { ++n; });
    for (size_t i = 0; i < n; ++i) {
      names.push_back(n == 1 && in.value().kind_case() == v1::Arg::kTensor ? in.name() : in.name() + "." + std::to_string(i));
    }
  }
  return names;
}

Status SpecializeStaticSymbols(Graph* graph, const InputDims& dims, size_t* replaced) {
  const auto ord = InputOrdinals(*graph);
  auto is_static = [&](ValueId x, int64_t d) {
    auto it = ord.find(x);
    return it != ord.end() && !dims.IsDynamic(it->second, d);
  };
  *replaced = 0;
  for (Node& n : graph->nodes) {
    if (n.erased || n.op.rfind("ivytrace.sym.", 0) == 0) continue;
    const size_t before = *replaced;
    auto which = [&](ValueId v) { return FromStaticDims(*graph, v, is_static); };
    for (auto& a : n.args) IVY_RETURN_IF_ERROR(Specialize(*graph, &a, which, replaced));
    for (auto& kw : n.kwargs) IVY_RETURN_IF_ERROR(Specialize(*graph, kw.mutable_value(), which, replaced));
    if (*replaced != before) {
      Graph::IndexNode(&n);
      if (n.flags & v1::SHAPE_FOLDABLE) n.flags |= v1::FOLDABLE_OP;
    }
  }
  graph->Recount();
  return Status::Ok();
}

}  // namespace ivytrace
