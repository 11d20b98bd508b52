#include "core/export/onnx/simplify_exported.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ivytrace {
namespace onnx_export {
namespace {

// Ops whose outputs are not a function of their inputs and attributes alone.
bool Deterministic(const onnx::NodeProto& n) {
  static const std::unordered_set<std::string_view> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
      "Dropout"};
  if (kRandom.count(n.op_type())) return false;
  for (const auto& a : n.attribute()) {
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return false;
  }
  return true;
}

// What makes two nodes compute the same values: op, domain, inputs (after renaming) and attributes
// in order. Node names and outputs are not part of it.
std::string Key(const onnx::NodeProto& n) {
  std::string k = n.domain();
  k += '\x1f';
  k += n.op_type();
  for (const auto& in : n.input()) {
    k += '\x1e';
    k += in;
  }
  for (const auto& a : n.attribute()) {
    k += '\x1d';
    a.AppendToString(&k);
  }
  return k;
}

// The value of a 0-d (or one-element) int64 initializer, if `name` is one.
bool ConstantIndex(const std::unordered_map<std::string, const onnx::TensorProto*>& inits, const std::string& name,
                   int64_t* out) {
  auto it = inits.find(name);
  if (it == inits.end()) return false;
  const onnx::TensorProto& t = *it->second;
  if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() > 1 || (t.dims_size() == 1 && t.dims(0) != 1)) {
    return false;
  }
  if (t.has_raw_data() && t.raw_data().size() == sizeof(int64_t)) {
    std::memcpy(out, t.raw_data().data(), sizeof(int64_t));
    return true;
  }
  if (t.int64_data_size() == 1) {
    *out = t.int64_data(0);
    return true;
  }
  return false;
}

void RenameInputs(onnx::GraphProto* graph, const std::unordered_map<std::string, std::string>& renamed) {
  if (renamed.empty()) return;
  for (auto& n : *graph->mutable_node()) {
    for (auto& in : *n.mutable_input()) {
      auto it = renamed.find(in);
      if (it != renamed.end()) in = it->second;
    }
  }
}

// Removes the nodes marked in `drop`, keeping the others in order.
void DropNodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, const std::vector<bool>& drop) {
  int kept = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    if (drop[static_cast<size_t>(i)]) continue;
    if (kept != i) nodes->SwapElements(kept, i);
    ++kept;
  }
  nodes->DeleteSubrange(kept, nodes->size() - kept);
}

// Bytes per element of an initializer's data_type stored as raw_data; 0 for types not handled.
size_t ElementBytes(int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::BOOL: case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: return 1;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16: case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16: return 2;
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: return 8;
    default: return 0;
  }
}

// A rows x cols matrix of ELEM-byte elements transposed, in tiles (for the cache); the element
// size is a template argument so that each copy is one move, not a call.
template <size_t ELEM>
void TransposeMatrix(const char* in, size_t rows, size_t cols, char* out) {
  constexpr size_t kTile = 32;
  for (size_t r0 = 0; r0 < rows; r0 += kTile) {
    for (size_t c0 = 0; c0 < cols; c0 += kTile) {
      const size_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (size_t r = r0; r < r1; ++r) {
        for (size_t c = c0; c < c1; ++c) std::memcpy(out + (c * rows + r) * ELEM, in + (r * cols + c) * ELEM, ELEM);
      }
    }
  }
}

// `in` (row-major, dims `dims`, `elem` bytes each) permuted by `perm` into `out`. A matrix (the
// case that matters: linear weights) goes through TransposeMatrix; other ranks element by element.
void Permute(const std::string& in, const std::vector<int64_t>& dims, const std::vector<int64_t>& perm, size_t elem,
             std::string* out) {
  out->resize(in.size());
  const size_t rank = dims.size();
  if (rank == 2 && perm[0] == 1) {
    const size_t rows = static_cast<size_t>(dims[0]), cols = static_cast<size_t>(dims[1]);
    switch (elem) {
      case 1: return TransposeMatrix<1>(in.data(), rows, cols, out->data());
      case 2: return TransposeMatrix<2>(in.data(), rows, cols, out->data());
      case 4: return TransposeMatrix<4>(in.data(), rows, cols, out->data());
      default: return TransposeMatrix<8>(in.data(), rows, cols, out->data());
    }
  }
  std::vector<size_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * static_cast<size_t>(dims[i]);
  std::vector<size_t> out_dims(rank), step(rank);  // output dim k walks input dim perm[k]
  for (size_t k = 0; k < rank; ++k) {
    out_dims[k] = static_cast<size_t>(dims[static_cast<size_t>(perm[k])]);
    step[k] = in_strides[static_cast<size_t>(perm[k])];
  }
  std::vector<size_t> index(rank, 0);
  const size_t count = in.size() / elem;
  size_t from = 0;
  for (size_t o = 0; o < count; ++o) {
    std::memcpy(out->data() + o * elem, in.data() + from * elem, elem);
    for (size_t k = rank; k-- > 0;) {  // next output index, row-major
      from += step[k];
      if (++index[k] < out_dims[k]) break;
      from -= step[k] * out_dims[k];
      index[k] = 0;
    }
  }
}

}  // namespace

int FoldInitializerTransposes(onnx::GraphProto* graph) {
  {  // Most graphs have no Transpose of an initializer: said without hashing every name.
    std::unordered_set<std::string_view> init_names;
    for (const auto& t : graph->initializer()) init_names.insert(t.name());
    bool any = false;
    for (const auto& n : graph->node()) {
      any = any || (n.op_type() == "Transpose" && n.input_size() == 1 && init_names.count(n.input(0)) > 0);
    }
    if (!any) return 0;
  }
  std::unordered_map<std::string, int> readers;
  std::unordered_set<std::string> names;  // every name in the graph, to keep new ones unique
  std::unordered_set<std::string> fixed;  // graph inputs and outputs: never renamed or dropped
  for (const auto& v : graph->input()) fixed.insert(v.name());
  for (const auto& v : graph->output()) {
    fixed.insert(v.name());
    ++readers[v.name()];
  }
  for (const auto& n : graph->node()) {
    for (const auto& in : n.input()) ++readers[in];
    for (const auto& out : n.output()) names.insert(out);
  }
  std::unordered_map<std::string, int> init_index;
  for (int i = 0; i < graph->initializer_size(); ++i) {
    init_index.emplace(graph->initializer(i).name(), i);
    names.insert(graph->initializer(i).name());
  }
  names.insert(fixed.begin(), fixed.end());
  std::unordered_map<std::string, std::string> renamed;
  auto* nodes = graph->mutable_node();
  std::vector<bool> folded(nodes->size(), false);
  int count = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    const onnx::NodeProto& n = nodes->Get(i);
    if (n.op_type() != "Transpose" || !n.domain().empty() || n.input_size() != 1 || n.output_size() != 1) continue;
    auto it = init_index.find(n.input(0));
    if (it == init_index.end() || readers[n.input(0)] != 1 || fixed.count(n.input(0)) || fixed.count(n.output(0))) {
      continue;
    }
    onnx::TensorProto* t = graph->mutable_initializer(it->second);
    const size_t elem = ElementBytes(t->data_type());
    const size_t rank = static_cast<size_t>(t->dims_size());
    if (elem == 0 || t->data_location() != onnx::TensorProto::DEFAULT || rank < 2) continue;
    std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
    size_t numel = 1;
    for (int64_t d : dims) numel *= static_cast<size_t>(std::max<int64_t>(d, 0));
    if (t->raw_data().size() != numel * elem) continue;
    std::vector<int64_t> perm;
    for (const auto& a : n.attribute()) {
      if (a.name() == "perm") perm.assign(a.ints().begin(), a.ints().end());
    }
    if (perm.empty()) {
      for (size_t k = rank; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
    }
    std::vector<bool> seen(rank, false);
    bool valid = perm.size() == rank;
    for (int64_t p : perm) {
      valid = valid && p >= 0 && static_cast<size_t>(p) < rank && !seen[static_cast<size_t>(p)];
      if (valid) seen[static_cast<size_t>(p)] = true;
    }
    if (!valid) continue;
    std::string moved;
    Permute(t->raw_data(), dims, perm, elem, &moved);
    t->set_raw_data(std::move(moved));
    for (size_t k = 0; k < rank; ++k) t->set_dims(static_cast<int>(k), dims[static_cast<size_t>(perm[k])]);
    std::string name = t->name() + ".T";
    for (int suffix = 2; names.count(name); ++suffix) name = t->name() + ".T" + std::to_string(suffix);
    names.insert(name);
    renamed[n.output(0)] = name;
    t->set_name(name);
    folded[i] = true;
    ++count;
  }
  if (!count) return 0;
  RenameInputs(graph, renamed);
  DropNodes(nodes, folded);
  return count;
}

int DropRedundantGates(onnx::GraphProto* graph) {
  // The gates CombineGuardChecks makes: Equal(Size(...), n), 0-d. Up to 64 of them are followed,
  // one bit each; a model with more keeps the gates past the 64th.
  std::unordered_set<std::string_view> sizes;  // outputs of Size nodes (views into the nodes)
  for (const auto& n : graph->node()) {
    if (n.op_type() == "Size" && n.output_size() == 1) sizes.insert(n.output(0));
  }
  if (sizes.empty()) return 0;
  std::unordered_map<std::string, int> gate_bit;
  for (const auto& n : graph->node()) {
    if (n.op_type() != "Equal" || n.input_size() != 2 || n.output_size() != 1 || gate_bit.size() >= 64) continue;
    if (sizes.count(n.input(0))) gate_bit.emplace(n.output(0), static_cast<int>(gate_bit.size()));
  }
  if (gate_bit.empty()) return 0;
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());
  // after[v]: the gates value v is computed after (it reads them, or reads a value that does).
  std::unordered_map<std::string, uint64_t> after;
  std::unordered_map<std::string, std::string> renamed;
  auto* nodes = graph->mutable_node();
  std::vector<bool> drop(nodes->size(), false);
  int dropped = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto* n = nodes->Mutable(i);
    for (auto& in : *n->mutable_input()) {
      auto r = renamed.find(in);
      if (r != renamed.end()) in = r->second;
    }
    uint64_t mask = 0;
    for (const auto& in : n->input()) {
      auto a = after.find(in);
      if (a != after.end()) mask |= a->second;
      auto g = gate_bit.find(in);
      if (g != gate_bit.end()) mask |= uint64_t{1} << g->second;
    }
    if (n->op_type() == "Where" && n->input_size() == 3 && n->output_size() == 1 && n->input(1) == n->input(2) &&
        !graph_outputs.count(n->output(0))) {
      auto g = gate_bit.find(n->input(0));
      auto a = after.find(n->input(1));
      if (g != gate_bit.end() && a != after.end() && (a->second >> g->second & 1)) {
        // Where(gate, v, v) is v, and v is already computed after the gate: the gate adds nothing.
        renamed[n->output(0)] = n->input(1);
        drop[static_cast<size_t>(i)] = true;
        ++dropped;
        continue;
      }
    }
    if (mask) {
      for (const auto& o : n->output()) after[o] = mask;
    }
  }
  if (!dropped) return 0;
  DropNodes(nodes, drop);
  return dropped;
}

int AnnotateRangeLengths(onnx::GraphProto* graph) {
  std::unordered_set<std::string> params;  // dim_params of the graph's inputs
  for (const auto& v : graph->input()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (d.has_dim_param()) params.insert(d.dim_param());
    }
  }
  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : graph->initializer()) inits.emplace(t.name(), &t);
  std::unordered_map<std::string, std::string> cast_of;  // Cast output -> its input
  for (const auto& n : graph->node()) {
    if (n.op_type() == "Cast" && n.input_size() == 1 && n.output_size() == 1) cast_of[n.output(0)] = n.input(0);
  }
  std::unordered_set<std::string> typed;
  for (const auto& v : graph->value_info()) typed.insert(v.name());
  int count = 0;
  for (const auto& n : graph->node()) {
    if (n.op_type() != "Range" || !n.domain().empty() || n.input_size() != 3 || n.output_size() != 1) continue;
    int64_t start = -1, delta = 0;
    if (!ConstantIndex(inits, n.input(0), &start) || !ConstantIndex(inits, n.input(2), &delta) || start != 0 ||
        delta != 1 || typed.count(n.output(0))) {
      continue;
    }
    std::string limit = n.input(1);
    auto c = cast_of.find(limit);
    if (c != cast_of.end()) limit = c->second;
    if (limit.rfind("dim.", 0) != 0 || !params.count(limit.substr(4))) continue;
    auto* vi = graph->add_value_info();
    vi->set_name(n.output(0));
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(inits.at(n.input(0))->data_type());
    t->mutable_shape()->add_dim()->set_dim_param(limit.substr(4));
    ++count;
  }
  return count;
}

int RemoveUnreadInitializers(onnx::GraphProto* graph) {
  // Keyed by the initializers' names (views into them): a lookup per node input, no copies.
  std::unordered_map<std::string_view, bool> read;
  for (const auto& t : graph->initializer()) read.emplace(t.name(), false);
  auto mark = [&](const std::string& name) {
    auto it = read.find(name);
    if (it != read.end()) it->second = true;
  };
  for (const auto& v : graph->output()) mark(v.name());
  for (const auto& n : graph->node()) {
    for (const auto& in : n.input()) mark(in);
  }
  std::vector<bool> keep;
  for (const auto& t : graph->initializer()) keep.push_back(read.at(t.name()));
  auto* inits = graph->mutable_initializer();
  int kept = 0;
  for (int i = 0; i < inits->size(); ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    if (kept != i) inits->SwapElements(kept, i);
    ++kept;
  }
  const int removed = inits->size() - kept;
  inits->DeleteSubrange(kept, removed);
  return removed;
}

bool HasSubgraphs(const onnx::GraphProto& graph) {
  for (const auto& n : graph.node()) {
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return true;
    }
  }
  return false;
}

int ReplaceKnownDimReads(onnx::GraphProto* graph,
                         const std::function<const onnx::TypeProto*(const std::string&)>& inferred,
                         const std::function<std::string(int64_t)>& constant) {
  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : graph->initializer()) {
    if (t.data_type() == onnx::TensorProto::INT64 && t.dims_size() <= 1) inits.emplace(t.name(), &t);
  }
  // dim_param -> (input, axis) of the graph inputs' dims that no other input dim shares a name
  // with. A shared name (`x: [batch, batch]` when both were 2 when recorded; `input_ids` and
  // `attention_mask` both [batch, seq]) says what the program expects, but onnxruntime does not
  // check it, so a dim of that name is not taken for another.
  std::unordered_map<std::string, std::pair<std::string, int>> input_dims;
  std::unordered_set<std::string> shared;
  for (const auto& in : graph->input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    const auto& shape = in.type().tensor_type().shape();
    for (int j = 0; j < shape.dim_size(); ++j) {
      if (!shape.dim(j).has_dim_param()) continue;
      if (!input_dims.emplace(shape.dim(j).dim_param(), std::make_pair(in.name(), j)).second) {
        shared.insert(shape.dim(j).dim_param());
      }
    }
  }
  for (const auto& name : shared) input_dims.erase(name);
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());
  std::unordered_map<std::string, std::string> shape_of;  // Shape node output -> the value it reads
  std::unordered_map<std::string, std::string> renamed;
  std::unordered_map<std::string, std::string> input_dim_value;  // dim_param -> name of its read
  std::vector<onnx::NodeProto> reads;                             // the nodes that read them
  int replaced = 0;
  for (const auto& n : graph->node()) {
    if (n.op_type() == "Shape" && n.domain().empty() && n.attribute_size() == 0 && n.input_size() == 1) {
      shape_of.emplace(n.output(0), n.input(0));
      continue;
    }
    if (n.op_type() != "Gather" || !n.domain().empty() || n.input_size() != 2 || n.output_size() != 1) continue;
    if (graph_outputs.count(n.output(0))) continue;
    bool axis0 = true;
    for (const auto& a : n.attribute()) axis0 = axis0 && a.name() == "axis" && a.i() == 0;
    auto src = shape_of.find(n.input(0));
    int64_t index = 0;
    if (!axis0 || src == shape_of.end() || !ConstantIndex(inits, n.input(1), &index)) continue;
    const onnx::TypeProto* type = inferred(src->second);
    if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) continue;
    const auto& shape = type->tensor_type().shape();
    if (index < 0) index += shape.dim_size();
    if (index < 0 || index >= shape.dim_size()) continue;
    // A one-element index gives a one-element vector, not a scalar: only 0-d indices are replaced.
    if (inits.at(n.input(1))->dims_size() != 0) continue;
    const auto& dim = shape.dim(static_cast<int>(index));
    std::string by;
    if (dim.has_dim_value()) {
      by = constant(dim.dim_value());
    } else if (dim.has_dim_param()) {
      auto in = input_dims.find(dim.dim_param());
      if (in == input_dims.end()) continue;
      if (in->second.first == src->second) continue;  // already read from the input
      auto [it, fresh] = input_dim_value.emplace(dim.dim_param(), "");
      if (fresh) {
        const std::string base = "dim." + dim.dim_param();
        onnx::NodeProto shape_node;
        shape_node.set_op_type("Shape");
        shape_node.set_name(base + ".Shape");
        shape_node.add_input(in->second.first);
        shape_node.add_output(base + ".shape");
        onnx::NodeProto gather;
        gather.set_op_type("Gather");
        gather.set_name(base + ".Gather");
        gather.add_input(base + ".shape");
        gather.add_input(constant(in->second.second));
        gather.add_output(base);
        auto* axis = gather.add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto::INT);
        axis->set_i(0);
        reads.push_back(std::move(shape_node));
        reads.push_back(std::move(gather));
        it->second = base;
      }
      by = it->second;
    } else {
      continue;
    }
    renamed[n.output(0)] = by;
    ++replaced;
  }
  if (!replaced) return 0;
  RenameInputs(graph, renamed);
  // The input dims' reads go first: they depend on the graph inputs only.
  auto* nodes = graph->mutable_node();
  const int before = nodes->size();
  for (auto& r : reads) *nodes->Add() = std::move(r);
  std::rotate(nodes->pointer_begin(), nodes->pointer_begin() + before, nodes->pointer_end());
  return replaced;
}

int RemoveUnreadNodes(onnx::GraphProto* graph) {
  std::unordered_map<std::string, int> readers;
  for (const auto& o : graph->output()) ++readers[o.name()];
  for (const auto& n : graph->node()) {
    for (const auto& in : n.input()) ++readers[in];
  }
  auto* nodes = graph->mutable_node();
  std::vector<bool> dead(nodes->size(), false);
  int removed = 0;
  for (int i = nodes->size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = nodes->Get(i);
    bool read = false;
    for (const auto& o : n.output()) read = read || (!o.empty() && readers[o] > 0);
    if (read) continue;
    dead[i] = true;
    ++removed;
    for (const auto& in : n.input()) --readers[in];
  }
  if (!removed) return 0;
  DropNodes(nodes, dead);
  return removed;
}

int MergeDuplicateNodes(onnx::GraphProto* graph) {
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());
  // Keys are kept by hash; a hash hit is confirmed by comparing the full keys (rare collisions
  // cost a recomputation, not a wrong merge).
  std::unordered_multimap<uint64_t, int> seen;  // key hash -> index of a kept node
  std::unordered_map<std::string, std::string> renamed;
  auto* nodes = graph->mutable_node();
  int kept = 0;
  int dropped = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto* n = nodes->Mutable(i);
    if (!renamed.empty()) {
      for (auto& in : *n->mutable_input()) {
        auto it = renamed.find(in);
        if (it != renamed.end()) in = it->second;
      }
    }
    bool merged = false;
    if (Deterministic(*n)) {
      bool is_output = false;
      for (const auto& o : n->output()) is_output = is_output || graph_outputs.count(o) > 0;
      const std::string key = Key(*n);
      const uint64_t h = std::hash<std::string>{}(key);
      auto range = seen.equal_range(h);
      for (auto it = range.first; it != range.second && !is_output; ++it) {
        const onnx::NodeProto& earlier = nodes->Get(it->second);
        if (earlier.output_size() != n->output_size() || Key(earlier) != key) continue;
        for (int j = 0; j < n->output_size(); ++j) {
          if (!n->output(j).empty()) renamed[n->output(j)] = earlier.output(j);
        }
        merged = true;
        break;
      }
      if (!merged) seen.emplace(h, kept);
    }
    if (merged) {
      ++dropped;
      continue;
    }
    if (kept != i) nodes->SwapElements(kept, i);
    ++kept;
  }
  nodes->DeleteSubrange(kept, nodes->size() - kept);
  return dropped;
}

}  // namespace onnx_export
}  // namespace ivytrace
