#include "core/export/onnx/simplify_exported.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
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

namespace {
// Whether an initializer holds only the value 1 (in its type), read from its raw bytes.
bool AllOnes(const onnx::TensorProto& t) {
  if (!t.has_raw_data() || t.raw_data().empty()) return false;
  const std::string& raw = t.raw_data();
  auto all = [&](auto one) {
    using T = decltype(one);
    if (raw.size() % sizeof(T)) return false;
    for (size_t i = 0; i < raw.size(); i += sizeof(T)) {
      T v;
      std::memcpy(&v, raw.data() + i, sizeof(T));
      if (!(v == one)) return false;
    }
    return true;
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return all(1.0f);
    case onnx::TensorProto::DOUBLE: return all(1.0);
    case onnx::TensorProto::INT64: return all(int64_t{1});
    case onnx::TensorProto::INT32: return all(int32_t{1});
    default: return false;   // half types: bit patterns, not worth the table
  }
}
}  // namespace

int DropMultipliesByOne(onnx::GraphProto* graph, const InferredTypes& inferred) {
  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : graph->initializer()) inits.emplace(t.name(), &t);
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());
  std::unordered_map<std::string, std::string> renamed;
  auto* nodes = graph->mutable_node();
  std::vector<bool> drop(static_cast<size_t>(nodes->size()), false);
  int dropped = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto& n = *nodes->Mutable(i);
    for (auto& in : *n.mutable_input()) {
      auto r = renamed.find(in);
      if (r != renamed.end()) in = r->second;
    }
    const bool mul = n.op_type() == "Mul";
    if ((!mul && n.op_type() != "Div") || !n.domain().empty() || n.input_size() != 2 || n.output_size() != 1 ||
        graph_outputs.count(n.output(0))) {
      continue;
    }
    // x * ones, ones * x, x / ones: x itself, bit for bit, when the ones broadcast into x's shape
    // without changing it (each of their dims 1 or x's own static dim, and no more of them).
    for (int side = 0; side < (mul ? 2 : 1); ++side) {
      const int one_at = 1 - side;
      auto c = inits.find(n.input(one_at));
      if (c == inits.end() || !AllOnes(*c->second)) continue;
      const onnx::TypeProto* xt = inferred(n.input(side));
      if (!xt || !xt->has_tensor_type() || !xt->tensor_type().has_shape() ||
          xt->tensor_type().elem_type() != c->second->data_type()) {
        continue;
      }
      const auto& xs = xt->tensor_type().shape();
      const onnx::TensorProto& ones = *c->second;
      if (ones.dims_size() > xs.dim_size()) continue;
      bool keeps = true;
      for (int j = 1; j <= ones.dims_size() && keeps; ++j) {
        const int64_t od = ones.dims(ones.dims_size() - j);
        const auto& xd = xs.dim(xs.dim_size() - j);
        keeps = od == 1 || (xd.has_dim_value() && xd.dim_value() == od);
      }
      if (!keeps) continue;
      renamed[n.output(0)] = n.input(side);
      drop[static_cast<size_t>(i)] = true;
      ++dropped;
      break;
    }
  }
  if (!dropped) return 0;
  DropNodes(nodes, drop);
  return dropped;
}

namespace {
// Puts the nodes in the order `order` (a permutation of their indices) by swapping pointers.
void PermuteNodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, const std::vector<int>& order) {
  std::vector<int> at(order.size()), where(order.size());
  for (size_t i = 0; i < order.size(); ++i) at[i] = where[i] = static_cast<int>(i);
  for (int p = 0; p < static_cast<int>(order.size()); ++p) {
    const int q = where[static_cast<size_t>(order[static_cast<size_t>(p)])];
    if (q == p) continue;
    nodes->SwapElements(p, q);
    std::swap(at[static_cast<size_t>(p)], at[static_cast<size_t>(q)]);
    where[static_cast<size_t>(at[static_cast<size_t>(p)])] = p;
    where[static_cast<size_t>(at[static_cast<size_t>(q)])] = q;
  }
}
}  // namespace

int FuseParallelMatMuls(onnx::GraphProto* graph, const Int64sInitializer& int64s) {
  std::unordered_map<std::string, onnx::TensorProto*> inits;
  for (auto& t : *graph->mutable_initializer()) inits.emplace(t.name(), &t);
  if (inits.empty()) return 0;
  std::unordered_map<std::string, int> readers;
  std::unordered_map<std::string, int> reader_of;   // a value's last reader (meaningful when it has one)
  auto* nodes = graph->mutable_node();
  for (int i = 0; i < nodes->size(); ++i) {
    for (const auto& in : nodes->Get(i).input()) {
      ++readers[in];
      reader_of[in] = i;
    }
  }
  std::unordered_set<std::string> names;   // every value name, for the new ones
  for (const auto& o : graph->output()) ++readers[o.name()];
  for (const auto& n : *nodes) names.insert(n.output().begin(), n.output().end());
  for (const auto& t : graph->initializer()) names.insert(t.name());
  for (const auto& in : graph->input()) names.insert(in.name());
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; names.count(name); ++k) name = base + "." + std::to_string(k);
    names.insert(name);
    return name;
  };
  // A weight a MatMul alone reads: 2-D, its bytes in the model.
  auto weight = [&](const onnx::NodeProto& n) -> onnx::TensorProto* {
    if (n.op_type() != "MatMul" || !n.domain().empty() || n.input_size() != 2 || n.output_size() != 1) return nullptr;
    auto w = inits.find(n.input(1));
    if (w == inits.end() || readers[n.input(1)] != 1) return nullptr;
    onnx::TensorProto* t = w->second;
    if (t->dims_size() != 2 || !t->has_raw_data() || t->dims(0) <= 0 || t->dims(1) <= 0) return nullptr;
    return t;
  };
  // The Add of a 1-d bias (an initializer only it reads) that alone reads MatMul node i's output.
  auto bias_add = [&](int i, const onnx::TensorProto& w) -> int {
    const std::string& out = nodes->Get(i).output(0);
    if (readers[out] != 1) return -1;
    const int a = reader_of[out];
    const onnx::NodeProto& add = nodes->Get(a);
    if (add.op_type() != "Add" || !add.domain().empty() || add.input_size() != 2 || add.output_size() != 1) return -1;
    const std::string& other = add.input(0) == out ? add.input(1) : add.input(0);
    auto b = inits.find(other);
    if (b == inits.end() || readers[other] != 1 || b->second->dims_size() != 1 ||
        b->second->dims(0) != w.dims(1) || b->second->data_type() != w.data_type() || !b->second->has_raw_data()) {
      return -1;
    }
    return a;
  };
  // Groups: MatMuls of one input by weights of one row count and type, in node order.
  std::unordered_map<std::string, std::vector<int>> by_input;
  std::vector<std::string> inputs_in_order;
  for (int i = 0; i < nodes->size(); ++i) {
    const onnx::NodeProto& n = nodes->Get(i);
    const onnx::TensorProto* w = weight(n);
    if (!w) continue;
    auto& g = by_input[n.input(0)];
    if (g.empty()) inputs_in_order.push_back(n.input(0));
    const onnx::TensorProto* first = g.empty() ? nullptr : inits[nodes->Get(g[0]).input(1)];
    if (!first || (first->dims(0) == w->dims(0) && first->data_type() == w->data_type())) g.push_back(i);
  }
  const int before = nodes->size();
  std::vector<bool> drop(static_cast<size_t>(before), false);
  std::unordered_map<int, std::vector<int>> insert_before;   // old index -> new nodes placed before it
  int fused = 0;
  for (const auto& x : inputs_in_order) {
    const std::vector<int>& group = by_input[x];
    if (group.size() < 2) continue;
    std::vector<onnx::TensorProto*> ws;
    std::vector<int> adds;
    for (int i : group) {
      ws.push_back(inits[nodes->Get(i).input(1)]);
      adds.push_back(bias_add(i, *ws.back()));
    }
    const bool with_bias = std::all_of(adds.begin(), adds.end(), [](int a) { return a >= 0; });
    const int64_t rows = ws[0]->dims(0);
    int64_t cols = 0;
    std::vector<int64_t> splits;
    bool ok = true;
    for (const auto* w : ws) {
      splits.push_back(w->dims(1));
      cols += w->dims(1);
      ok = ok && w->raw_data().size() % static_cast<size_t>(rows * w->dims(1)) == 0;
    }
    if (!ok) continue;
    const size_t elem = ws[0]->raw_data().size() / static_cast<size_t>(rows * ws[0]->dims(1));
    // [K, N1] ... [K, Nm] side by side: [K, N1 + ... + Nm], row by row.
    std::string joined(static_cast<size_t>(rows * cols) * elem, '\0');
    size_t col = 0;
    for (const auto* w : ws) {
      const size_t width = static_cast<size_t>(w->dims(1)) * elem;
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(joined.data() + (static_cast<size_t>(r * cols) * elem + col), w->raw_data().data() + r * width, width);
      }
      col += width;
    }
    onnx::TensorProto* fw = graph->add_initializer();
    fw->set_name(fresh(ws[0]->name() + ".fused"));
    fw->set_data_type(ws[0]->data_type());
    fw->add_dims(rows);
    fw->add_dims(cols);
    fw->set_raw_data(std::move(joined));
    std::string parts = "the weights ";
    for (size_t k = 0; k < ws.size(); ++k) parts += (k ? ", " : "") + ws[k]->name();
    fw->set_doc_string(parts + " side by side (columns in that order), for one MatMul");
    const onnx::NodeProto& first = nodes->Get(group[0]);
    std::vector<int> made;
    onnx::NodeProto* mm = nodes->Add();
    mm->set_op_type("MatMul");
    mm->set_name(first.name() + ".fused");
    mm->add_input(x);
    mm->add_input(fw->name());
    mm->add_output(fresh(first.output(0) + ".fused"));
    made.push_back(nodes->size() - 1);
    std::string joined_out = mm->output(0);
    if (with_bias) {
      std::string b;
      for (size_t k = 0; k < adds.size(); ++k) {
        const onnx::NodeProto& add = nodes->Get(adds[k]);
        const std::string& name = add.input(0) == nodes->Get(group[k]).output(0) ? add.input(1) : add.input(0);
        b += inits[name]->raw_data();
      }
      onnx::TensorProto* fb = graph->add_initializer();
      fb->set_name(fresh(fw->name() + ".bias"));
      fb->set_data_type(ws[0]->data_type());
      fb->add_dims(cols);
      fb->set_raw_data(std::move(b));
      onnx::NodeProto* add = nodes->Add();
      add->set_op_type("Add");
      add->set_name(first.name() + ".fused_bias");
      add->add_input(joined_out);
      add->add_input(fb->name());
      add->add_output(fresh(joined_out + ".bias"));
      joined_out = add->output(0);
      made.push_back(nodes->size() - 1);
    }
    onnx::NodeProto* split = nodes->Add();
    split->set_op_type("Split");
    split->set_name(first.name() + ".split");
    split->add_input(joined_out);
    split->add_input(int64s(splits));
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    for (size_t k = 0; k < group.size(); ++k) {
      split->add_output(with_bias ? nodes->Get(adds[k]).output(0) : nodes->Get(group[k]).output(0));
      drop[static_cast<size_t>(group[k])] = true;
      if (with_bias) drop[static_cast<size_t>(adds[k])] = true;
    }
    made.push_back(nodes->size() - 1);
    insert_before[group[0]] = std::move(made);
    ++fused;
  }
  if (!fused) return 0;
  // The new nodes where the group's first MatMul was (its input and the weights are defined
  // there; every reader of the outputs comes after it), the replaced ones dropped.
  std::vector<int> order;
  std::vector<bool> drop_at;
  order.reserve(static_cast<size_t>(nodes->size()));
  for (int i = 0; i < before; ++i) {
    auto it = insert_before.find(i);
    if (it != insert_before.end()) {
      for (int k : it->second) {
        order.push_back(k);
        drop_at.push_back(false);
      }
    }
    order.push_back(i);
    drop_at.push_back(drop[static_cast<size_t>(i)]);
  }
  PermuteNodes(nodes, order);
  DropNodes(nodes, drop_at);
  return fused;
}

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

namespace {
// The checks each gate of CombineGuardChecks waits on: gate (Equal's output) -> the Size's input,
// or the Concat's inputs when the Size reads a Concat. Gates are Equal(Size(...), n), in order.
std::vector<std::pair<std::string, std::vector<std::string>>> GateChecks(const onnx::GraphProto& graph) {
  std::unordered_map<std::string_view, const onnx::NodeProto*> size_of;  // Size output -> node
  std::unordered_map<std::string_view, const onnx::NodeProto*> concat_of;
  for (const auto& n : graph.node()) {
    if (n.output_size() != 1) continue;
    if (n.op_type() == "Size" && n.input_size() == 1) size_of.emplace(n.output(0), &n);
    if (n.op_type() == "Concat") concat_of.emplace(n.output(0), &n);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> gates;
  if (size_of.empty()) return gates;
  for (const auto& n : graph.node()) {
    if (n.op_type() != "Equal" || n.input_size() != 2 || n.output_size() != 1) continue;
    auto s = size_of.find(n.input(0));
    if (s == size_of.end()) continue;
    const std::string& all = s->second->input(0);
    auto c = concat_of.find(all);
    std::vector<std::string> checks;
    if (c == concat_of.end()) {
      checks.push_back(all);
    } else {
      checks.assign(c->second->input().begin(), c->second->input().end());
    }
    gates.emplace_back(n.output(0), std::move(checks));
  }
  return gates;
}
}  // namespace

int DedupeGateChecks(onnx::GraphProto* graph, const ScalarInitializer& scalar) {
  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : graph->initializer()) inits.emplace(t.name(), &t);
  std::unordered_map<std::string, int> readers;
  for (const auto& n : graph->node()) {
    for (const auto& in : n.input()) ++readers[in];
  }
  for (const auto& o : graph->output()) ++readers[o.name()];
  std::unordered_map<std::string, onnx::NodeProto*> producer;
  for (auto& n : *graph->mutable_node()) {
    for (const auto& o : n.output()) producer[o] = &n;
  }
  int changed = 0;
  for (auto& eq : *graph->mutable_node()) {
    if (eq.op_type() != "Equal" || eq.input_size() != 2 || eq.output_size() != 1) continue;
    auto s = producer.find(eq.input(0));
    if (s == producer.end() || s->second->op_type() != "Size" || s->second->input_size() != 1) continue;
    auto c = producer.find(s->second->input(0));
    if (c == producer.end() || c->second->op_type() != "Concat") continue;
    onnx::NodeProto* concat = c->second;
    int64_t n = 0;
    // Only a gate as CombineGuardChecks made it: n is the number of checks, and nothing else reads
    // the Concat or the Size (so changing them changes only this gate).
    if (!ConstantIndex(inits, eq.input(1), &n) || n != concat->input_size() || readers[concat->output(0)] != 1 ||
        readers[eq.input(0)] != 1) {
      continue;
    }
    std::unordered_set<std::string> seen;
    std::vector<std::string> unique;
    std::string passed;  // a check FoldIntConstants made a constant: it passes whatever the input
    for (const auto& in : concat->input()) {
      int64_t element = 0;
      if (ConstantIndex(inits, in, &element)) {
        passed = in;
      } else if (seen.insert(in).second) {
        unique.push_back(in);
      }
    }
    if (unique.empty()) unique.push_back(passed);  // a Concat of one constant, folded next round
    if (unique.size() == static_cast<size_t>(concat->input_size())) continue;
    concat->clear_input();
    for (auto& in : unique) concat->add_input(std::move(in));
    eq.set_input(1, scalar(static_cast<int64_t>(concat->input_size())));
    ++changed;
  }
  return changed;
}

int DropRedundantGates(onnx::GraphProto* graph) {
  // The gates CombineGuardChecks makes: Equal(Size(...), n), 0-d. Up to 64 of them are followed,
  // one bit each; a model with more keeps the gates past the 64th. A gate whose checks include
  // all of another's implies that one: a value computed after it is computed after both.
  const auto gates = GateChecks(*graph);
  if (gates.empty()) return 0;
  std::unordered_map<std::string, int> gate_bit;
  std::vector<uint64_t> implies;
  for (size_t i = 0; i < gates.size() && i < 64; ++i) gate_bit.emplace(gates[i].first, static_cast<int>(i));
  for (size_t i = 0; i < gate_bit.size(); ++i) {
    const std::unordered_set<std::string_view> mine(gates[i].second.begin(), gates[i].second.end());
    uint64_t mask = 0;
    for (size_t j = 0; j < gate_bit.size(); ++j) {
      if (std::all_of(gates[j].second.begin(), gates[j].second.end(),
                      [&](const std::string& c) { return mine.count(c) > 0; })) {
        mask |= uint64_t{1} << j;
      }
    }
    implies.push_back(mask);
  }
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
      if (g != gate_bit.end()) mask |= implies[static_cast<size_t>(g->second)];
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

namespace {

// The int64 values of a 0-d or 1-d int64 initializer, if `name` is one.
bool ConstantInts(const std::unordered_map<std::string, const onnx::TensorProto*>& inits, const std::string& name,
                  std::vector<int64_t>* out) {
  auto it = inits.find(name);
  if (it == inits.end()) return false;
  const onnx::TensorProto& t = *it->second;
  if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() > 1) return false;
  out->clear();
  if (t.has_raw_data()) {
    if (t.raw_data().size() % sizeof(int64_t)) return false;
    out->resize(t.raw_data().size() / sizeof(int64_t));
    if (!out->empty()) std::memcpy(out->data(), t.raw_data().data(), t.raw_data().size());
  } else {
    out->assign(t.int64_data().begin(), t.int64_data().end());
  }
  return true;
}

int64_t IntAttr(const onnx::NodeProto& n, std::string_view name, int64_t otherwise) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return otherwise;
}

// What is known about a size the graph computes: a constant, or the dim `param` of a graph input
// (a dim_param that names one input dim only: onnxruntime does not check that inputs sharing a
// dim name agree, so such a name proves nothing).
struct KnownSize {
  bool constant = false;
  int64_t value = 0;
  std::string param;
};

// Sizes and shapes the graph computes, resolved through the nodes the lowerings emit for them
// (Shape/Gather dim reads, Unsqueeze/Concat into shapes, Cast to int64, GateOn's Where(gate, s, s),
// adding 0, Identity) and what `inferred` knows of the shapes they read.
class KnownDims {
 public:
  KnownDims(const onnx::GraphProto& graph, InferredTypes inferred)
      : inferred_(std::move(inferred)) {
    for (const auto& t : graph.initializer()) {
      if (t.data_type() == onnx::TensorProto::INT64 && t.dims_size() <= 1) inits_.emplace(t.name(), &t);
      all_inits_.emplace(t.name(), &t);
    }
    for (const auto& n : graph.node()) {
      for (const auto& o : n.output()) producer_.emplace(o, &n);
    }
    for (const auto& in : graph.input()) {
      if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
      for (const auto& d : in.type().tensor_type().shape().dim()) {
        if (d.has_dim_param()) ++input_params_[d.dim_param()];
      }
    }
  }

  const onnx::NodeProto* MadeBy(const std::string& name, std::string_view op) const {
    auto it = producer_.find(name);
    return it != producer_.end() && it->second->op_type() == op && it->second->domain().empty() ? it->second
                                                                                                : nullptr;
  }

  // The values of an int64 initializer of that rank (0 or 1).
  bool Ints(const std::string& name, std::vector<int64_t>* out, int rank) const {
    auto it = inits_.find(name);
    return it != inits_.end() && it->second->dims_size() == rank && ConstantInts(inits_, name, out);
  }

  // The initializer of that name, or null.
  const onnx::TensorProto* Initializer(const std::string& name) const {
    auto it = all_inits_.find(name);
    return it == all_inits_.end() ? nullptr : it->second;
  }

  // The dim of `value` at `axis` (negative from the end), from its inferred shape.
  std::optional<KnownSize> Dim(const std::string& value, int64_t axis) const {
    const onnx::TypeProto* type = inferred_(value);
    if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return std::nullopt;
    const auto& shape = type->tensor_type().shape();
    if (axis < 0) axis += shape.dim_size();
    if (axis < 0 || axis >= shape.dim_size()) return std::nullopt;
    const auto& dim = shape.dim(static_cast<int>(axis));
    if (dim.has_dim_value()) return KnownSize{true, dim.dim_value(), {}};
    auto in = dim.has_dim_param() ? input_params_.find(dim.dim_param()) : input_params_.end();
    if (in == input_params_.end() || in->second != 1) return std::nullopt;
    return KnownSize{false, 0, dim.dim_param()};
  }

  // A 0-d int64 size.
  std::optional<KnownSize> Scalar(std::string s) const {
    std::vector<int64_t> ints;
    for (int hops = 0; hops < 8; ++hops) {
      if (const auto* w = MadeBy(s, "Where"); w && w->input_size() == 3 && w->input(1) == w->input(2)) {
        s = w->input(1);
      } else if (const auto* c = MadeBy(s, "Cast");
                 c && c->input_size() == 1 && IntAttr(*c, "to", 0) == onnx::TensorProto::INT64) {
        s = c->input(0);
      } else if (const auto* a = MadeBy(s, "Add"); a && a->input_size() == 2 && Ints(a->input(1), &ints, 0) &&
                                                    ints[0] == 0) {
        s = a->input(0);
      } else if (const auto* i = MadeBy(s, "Identity"); i && i->input_size() == 1) {
        s = i->input(0);
      } else {
        break;
      }
    }
    if (Ints(s, &ints, 0)) return KnownSize{true, ints[0], {}};
    const auto* g = MadeBy(s, "Gather");
    if (!g || g->input_size() != 2 || IntAttr(*g, "axis", 0) != 0 || !Ints(g->input(1), &ints, 0)) {
      return std::nullopt;
    }
    const int64_t index = ints[0];
    const auto* sh = MadeBy(g->input(0), "Shape");
    if (!sh || sh->input_size() != 1 || sh->attribute_size() != 0) return std::nullopt;
    return Dim(sh->input(0), index);
  }

  // A 1-d int64 shape: constants, Unsqueeze'd sizes, and Concats of them.
  bool Vector(const std::string& name, std::vector<KnownSize>* out) const {
    std::vector<int64_t> ints;
    if (Ints(name, &ints, 1)) {
      for (int64_t v : ints) out->push_back(KnownSize{true, v, {}});
      return true;
    }
    if (const auto* c = MadeBy(name, "Concat"); c && IntAttr(*c, "axis", -1) == 0) {
      for (const auto& p : c->input()) {
        if (!Vector(p, out)) return false;
      }
      return true;
    }
    if (const auto* sl = MadeBy(name, "Slice"); sl && sl->input_size() >= 3) {   // dims start:end of a Shape
      const auto* sh = MadeBy(sl->input(0), "Shape");
      std::vector<int64_t> starts, ends, axes{0}, steps{1};
      if (!sh || sh->input_size() != 1 || sh->attribute_size() != 0 || !Ints(sl->input(1), &starts, 1) ||
          !Ints(sl->input(2), &ends, 1) || starts.size() != 1 || ends.size() != 1) {
        return false;
      }
      if (sl->input_size() >= 4 && !sl->input(3).empty() && !Ints(sl->input(3), &axes, 1)) return false;
      if (sl->input_size() >= 5 && !sl->input(4).empty() && !Ints(sl->input(4), &steps, 1)) return false;
      if (axes != std::vector<int64_t>{0} || steps != std::vector<int64_t>{1}) return false;
      const onnx::TypeProto* type = inferred_(sh->input(0));
      if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return false;
      const int64_t rank = type->tensor_type().shape().dim_size();
      auto clamp = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
      for (int64_t j = clamp(starts[0]); j < clamp(ends[0]); ++j) {
        auto d = Dim(sh->input(0), j);
        if (!d) return false;
        out->push_back(*d);
      }
      return true;
    }
    if (const auto* sh = MadeBy(name, "Shape"); sh && sh->input_size() == 1 && sh->attribute_size() == 0) {
      const onnx::TypeProto* type = inferred_(sh->input(0));
      if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return false;
      for (int j = 0; j < type->tensor_type().shape().dim_size(); ++j) {
        auto d = Dim(sh->input(0), j);
        if (!d) return false;
        out->push_back(*d);
      }
      return true;
    }
    const auto* u = MadeBy(name, "Unsqueeze");
    if (!u || u->input_size() != 2 || !Ints(u->input(1), &ints, 1) || ints != std::vector<int64_t>{0}) return false;
    auto s = Scalar(u->input(0));
    if (!s) return false;
    out->push_back(*s);
    return true;
  }

 private:
  InferredTypes inferred_;
  std::unordered_map<std::string, const onnx::TensorProto*> inits_;
  std::unordered_map<std::string_view, const onnx::NodeProto*> producer_;
  std::unordered_map<std::string_view, const onnx::TensorProto*> all_inits_;
  std::unordered_map<std::string, int> input_params_;
};

// x.view(-1, k) -> Gemm -> view(<x's leading dims>, n) (a linear layer over a 3-d x as addmm,
// GPT-2's Conv1D): MatMul(x, w) + bias, which ONNX broadcasts over the leading dims itself. The
// Reshape at `i` becomes the Add (or the MatMul's output, with no bias), the Gemm the MatMul; the
// first Reshape is left to RemoveUnreadNodes. Only a Gemm of alpha = beta = 1, transA = 0 and a
// bias of one row, both of whose intermediate values nothing else reads.
bool FuseFlattenedGemm(const KnownDims& known, const InferredTypes& inferred,
                       const std::unordered_map<std::string_view, int>& readers,
                       const std::unordered_map<const onnx::NodeProto*, int>& index_of, int i,
                       google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes,
                       std::vector<std::pair<int, onnx::NodeProto>>* inserted, std::vector<bool>* drop) {
  onnx::NodeProto& back = *nodes->Mutable(i);
  auto reads = [&](const std::string& name) {
    auto it = readers.find(name);
    return it == readers.end() ? 0 : it->second;
  };
  const onnx::NodeProto* gemm_c = known.MadeBy(back.input(0), "Gemm");
  if (!gemm_c || gemm_c->input_size() < 2 || gemm_c->output_size() != 1 || reads(gemm_c->output(0)) != 1) {
    return false;
  }
  for (const auto& a : gemm_c->attribute()) {
    const bool one = a.type() == onnx::AttributeProto::FLOAT && a.f() == 1.0f;
    if ((a.name() == "alpha" || a.name() == "beta") && !one) return false;
    if (a.name() == "transA" && a.i() != 0) return false;
  }
  const onnx::NodeProto* flat = known.MadeBy(gemm_c->input(0), "Reshape");
  if (!flat || flat->input_size() != 2 || reads(flat->output(0)) != 1) return false;
  std::vector<int64_t> ints;
  if (!known.Ints(flat->input(1), &ints, 1) || ints.size() != 2 || ints[0] != -1) return false;
  const std::string& x = flat->input(0);
  const onnx::TypeProto* xt = inferred(x);
  if (!xt || !xt->has_tensor_type() || !xt->tensor_type().has_shape()) return false;
  const int rank = xt->tensor_type().shape().dim_size();
  const auto k = known.Dim(x, rank - 1);
  if (rank < 3 || !k || !k->constant || k->value != ints[1]) return false;
  // The shape it goes back to: x's leading dims, then the Gemm's columns.
  std::vector<KnownSize> entries;
  if (!known.Vector(back.input(1), &entries) || static_cast<int>(entries.size()) != rank) return false;
  // One leading -1 (with the columns a constant) is the leading dim left over: x's own.
  int infer = 0;
  for (const auto& e : entries) infer += e.constant && e.value == -1;
  if (infer > 1 || !entries.back().constant || (infer == 1 && entries.back().value <= 0)) return false;
  for (int j = 0; j + 1 < rank; ++j) {
    const auto d = known.Dim(x, j);
    const KnownSize& e = entries[static_cast<size_t>(j)];
    if (e.constant && e.value == -1) continue;
    if (!d || d->constant != e.constant || (e.constant ? d->value != e.value : d->param != e.param)) return false;
  }
  if (gemm_c->input_size() >= 3 && !gemm_c->input(2).empty()) {   // the bias: one row
    std::vector<int64_t> dims;
    if (const onnx::TensorProto* init = known.Initializer(gemm_c->input(2))) {
      dims.assign(init->dims().begin(), init->dims().end());
    } else {
      const onnx::TypeProto* bt = inferred(gemm_c->input(2));
      if (!bt || !bt->has_tensor_type() || !bt->tensor_type().has_shape()) return false;
      for (const auto& d : bt->tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    if (dims.size() > 2 || (dims.size() == 2 && dims[0] != 1)) return false;
  }
  const int g = index_of.at(gemm_c);
  onnx::NodeProto& gemm = *nodes->Mutable(g);
  std::string w = gemm.input(1);
  if (IntAttr(gemm, "transB", 0) == 1) {   // folded into the weight later (FoldInitializerTransposes)
    onnx::NodeProto t;
    t.set_op_type("Transpose");
    t.set_name(gemm.name() + ".Transpose");
    t.add_input(w);
    t.add_output(gemm.output(0) + ".wT");
    w = t.output(0);
    inserted->emplace_back(g, std::move(t));
  }
  const std::string bias = gemm.input_size() >= 3 ? gemm.input(2) : std::string();
  gemm.set_op_type("MatMul");
  gemm.clear_input();
  gemm.add_input(x);
  gemm.add_input(w);
  gemm.clear_attribute();
  if (bias.empty()) {
    gemm.set_output(0, back.output(0));
    (*drop)[static_cast<size_t>(i)] = true;
  } else {
    back.set_op_type("Add");
    back.clear_input();
    back.add_input(gemm.output(0));
    back.add_input(bias);
    back.clear_attribute();
  }
  return true;
}

// Pad(x) with zeros on the spatial dims only, read by one Conv: the Conv's own pads (F.pad before
// a conv, as transformers' MobileNetV2 pads "same" the TensorFlow way).
bool FusePadIntoConv(const KnownDims& known, const std::unordered_map<std::string_view, int>& readers,
                     const std::unordered_map<const onnx::NodeProto*, int>& index_of, int i,
                     google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, std::vector<bool>* drop) {
  onnx::NodeProto& conv = *nodes->Mutable(i);
  const onnx::NodeProto* pad = known.MadeBy(conv.input(0), "Pad");
  auto reads = readers.find(conv.input(0));
  if (!pad || pad->input_size() < 2 || reads == readers.end() || reads->second != 1) return false;
  for (const auto& a : pad->attribute()) {
    if (a.name() == "mode" && a.s() != "constant") return false;
  }
  if (pad->input_size() >= 3 && !pad->input(2).empty()) {   // the value padded with: 0 only
    const onnx::TensorProto* v = known.Initializer(pad->input(2));
    if (!v || !v->has_raw_data() || v->raw_data().empty() ||
        v->raw_data().find_first_not_of('\0') != std::string::npos) {
      return false;
    }
  }
  if (pad->input_size() >= 4 && !pad->input(3).empty()) return false;   // axes (opset 18)
  std::vector<int64_t> pads;
  if (!known.Ints(pad->input(1), &pads, 1) || pads.size() < 6 || pads.size() % 2) return false;
  const size_t rank = pads.size() / 2, spatial = rank - 2;
  for (size_t j = 0; j < pads.size(); ++j) {
    if (pads[j] < 0) return false;
  }
  if (pads[0] || pads[1] || pads[rank] || pads[rank + 1]) return false;   // batch and channel dims
  std::vector<int64_t> conv_pads(2 * spatial, 0);
  onnx::AttributeProto* existing = nullptr;
  for (auto& a : *conv.mutable_attribute()) {
    if (a.name() == "auto_pad" && !a.s().empty() && a.s() != "NOTSET") return false;
    if (a.name() == "pads") {
      if (static_cast<size_t>(a.ints_size()) != 2 * spatial) return false;
      existing = &a;
      for (int j = 0; j < a.ints_size(); ++j) conv_pads[static_cast<size_t>(j)] = a.ints(j);
    }
  }
  for (size_t j = 0; j < spatial; ++j) {
    conv_pads[j] += pads[2 + j];
    conv_pads[spatial + j] += pads[rank + 2 + j];
  }
  if (!existing) {
    existing = conv.add_attribute();
    existing->set_name("pads");
    existing->set_type(onnx::AttributeProto::INTS);
  }
  existing->clear_ints();
  for (int64_t v : conv_pads) existing->add_ints(v);
  conv.set_input(0, pad->input(0));
  (*drop)[static_cast<size_t>(index_of.at(pad))] = true;
  return true;
}

}  // namespace

int ConstantKnownShapes(onnx::GraphProto* graph, const InferredTypes& inferred, const Int64sInitializer& int64s,
                        const ScalarInitializer& scalar) {
  bool any = false;
  for (const auto& n : graph->node()) {
    any = any || n.op_type() == "Reshape" || n.op_type() == "Expand" ||
          n.op_type() == "Slice" || n.op_type() == "ConstantOfShape" || n.op_type() == "Conv";
  }
  if (!any) return 0;
  const KnownDims known(*graph, inferred);
  int rewritten = 0;
  std::vector<KnownSize> entries;
  std::vector<int64_t> ints;
  std::vector<std::pair<int, onnx::NodeProto>> inserted;  // (index of the node it goes before, node)
  std::unordered_map<std::string_view, int> readers;
  for (const auto& n : graph->node()) {
    for (const auto& in : n.input()) ++readers[in];
  }
  for (const auto& o : graph->output()) ++readers[o.name()];
  auto* nodes = graph->mutable_node();
  std::vector<bool> drop(static_cast<size_t>(nodes->size()), false);
  std::unordered_map<const onnx::NodeProto*, int> index_of;
  for (int i = 0; i < nodes->size(); ++i) index_of[&nodes->Get(i)] = i;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto& n = *nodes->Mutable(i);
    if (!n.domain().empty()) continue;
    entries.clear();
    if (n.op_type() == "Reshape" && n.input_size() == 2 &&
        FuseFlattenedGemm(known, inferred, readers, index_of, i, nodes, &inserted, &drop)) {
      ++rewritten;
    } else if (n.op_type() == "Reshape" && n.input_size() == 2 && !known.Ints(n.input(1), &ints, 1)) {
      // view(b, t, -1, d) of a value whose dims 0 and 1 are b and t: [0, 0, -1, d], 0 copying
      // them (allowzero off). Under allowzero a literal 0 (an empty dim) could not be told apart:
      // such a shape is left; without it, a literal 0 already copies, and stays.
      const bool allowzero = IntAttr(n, "allowzero", 0) == 1;
      if (!known.Vector(n.input(1), &entries)) continue;
      // One size that is not the data's dim at its position (`x.view(b, t, c)` of an x of shape
      // (b * t, c)) can be -1 when no other is: with every other size known and positive, -1
      // stands for the count left over, which is that size whenever the reshape is valid.
      // (A copied dim of 0, an empty batch, would leave -1 undefined where the program's own
      // sizes were fine: not both.)
      std::vector<int64_t> target;
      int infer = 0;
      bool ok = true, copies = false, made = false;
      for (size_t j = 0; j < entries.size() && ok; ++j) {
        const KnownSize& e = entries[j];
        if (e.constant) {
          ok = e.value > 0 || e.value == -1 || (e.value == 0 && !allowzero);
          infer += e.value == -1;
          copies = copies || e.value == 0;
          target.push_back(e.value);
          continue;
        }
        const auto d = known.Dim(n.input(0), static_cast<int64_t>(j));
        if (d && !d->constant && d->param == e.param) {
          target.push_back(0);
          copies = true;
        } else {
          target.push_back(-1);
          ++infer;
          made = true;
        }
      }
      if (!ok || infer > 1 || (made && copies)) continue;
      n.set_input(1, int64s(target));
      for (auto& a : *n.mutable_attribute()) {
        if (a.name() == "allowzero") a.set_i(0);
      }
      ++rewritten;
    } else if (n.op_type() == "Expand" && n.input_size() == 2) {
      // expand(b, t) of a value whose dims are already b and t: those entries become 1 (broadcast
      // keeps the value's own dim), and the shape is a constant.
      if (known.Ints(n.input(1), &ints, 1) || !known.Vector(n.input(1), &entries)) continue;
      const onnx::TypeProto* type = inferred(n.input(0));
      if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) continue;
      const int64_t shift = static_cast<int64_t>(entries.size()) - type->tensor_type().shape().dim_size();
      std::vector<int64_t> target;
      bool ok = true;
      for (size_t j = 0; j < entries.size() && ok; ++j) {
        const KnownSize& e = entries[j];
        if (e.constant) {
          target.push_back(e.value);
          continue;
        }
        const int64_t axis = static_cast<int64_t>(j) - shift;
        const auto d = axis >= 0 ? known.Dim(n.input(0), axis) : std::nullopt;
        ok = d && !d->constant && d->param == e.param;
        target.push_back(1);
      }
      if (!ok) continue;
      n.set_input(1, int64s(target));
      ++rewritten;
    } else if (n.op_type() == "Conv" && n.input_size() >= 2 && FusePadIntoConv(known, readers, index_of, i, nodes,
                                                                                &drop)) {
      ++rewritten;
    } else if (n.op_type() == "ConstantOfShape" && n.input_size() == 1) {
      // A shape of sizes that are all static (a `--static` export, or dims of fixed size).
      if (known.Ints(n.input(0), &ints, 1) || !known.Vector(n.input(0), &entries)) continue;
      std::vector<int64_t> target;
      for (const auto& e : entries) {
        if (!e.constant) break;
        target.push_back(e.value);
      }
      if (target.size() != entries.size()) continue;
      n.set_input(0, int64s(target));
      ++rewritten;
    } else if (n.op_type() == "Slice" && n.input_size() >= 3 && n.output_size() == 1) {
      // x[:, :n] with n an input dim: Gather(x, Range(0, n, 1)) along that axis, whose length ONNX
      // shape inference knows from the Range (AnnotateRangeLengths). A Slice clamps an end past
      // the dim; the Gather refuses it (an out-of-range index is an error in onnxruntime), so an
      // input the recorded program did not see the like of raises rather than differs.
      std::vector<int64_t> starts, axes{0}, steps{1};
      if (!known.Ints(n.input(1), &starts, 1) || starts != std::vector<int64_t>{0}) continue;
      if (n.input_size() >= 4 && !n.input(3).empty() && !known.Ints(n.input(3), &axes, 1)) continue;
      if (n.input_size() >= 5 && !n.input(4).empty() && !known.Ints(n.input(4), &steps, 1)) continue;
      if (axes.size() != 1 || steps != std::vector<int64_t>{1}) continue;
      const auto* u = known.MadeBy(n.input(2), "Unsqueeze");
      if (!u || u->input_size() != 2 || !known.Ints(u->input(1), &ints, 1) || ints != std::vector<int64_t>{0}) {
        continue;
      }
      const auto end = known.Scalar(u->input(0));
      const onnx::TypeProto* end_type = inferred(u->input(0));
      if (!end || end->constant || !end_type || !end_type->has_tensor_type() ||
          end_type->tensor_type().elem_type() != onnx::TensorProto::INT64) {
        continue;
      }
      onnx::NodeProto range;
      range.set_op_type("Range");
      range.set_name(n.name() + ".Range");
      range.add_input(scalar(0));
      range.add_input(u->input(0));
      range.add_input(scalar(1));
      range.add_output(n.output(0) + ".index");
      const std::string data = n.input(0);
      const std::string index = range.output(0);
      n.set_op_type("Gather");
      n.clear_input();
      n.add_input(data);
      n.add_input(index);
      n.clear_attribute();
      auto* axis = n.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(axes[0]);
      inserted.emplace_back(i, std::move(range));
      ++rewritten;
    }
  }
  if (!inserted.empty() || std::find(drop.begin(), drop.end(), true) != drop.end()) {
    // Each new node goes right before the node that reads it: the order stays topological.
    std::stable_sort(inserted.begin(), inserted.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    size_t next = 0;
    for (int i = 0; i < nodes->size(); ++i) {
      while (next < inserted.size() && inserted[next].first == i) *out.Add() = std::move(inserted[next++].second);
      if (!drop[static_cast<size_t>(i)]) *out.Add() = std::move(*nodes->Mutable(i));
    }
    nodes->Swap(&out);
  }
  return rewritten;
}

namespace {

// A small int64 constant: its values and rank (0 or 1).
struct IntConst {
  std::vector<int64_t> v;
  int rank = 0;
  bool is_bool = false;   // a bool (0 or 1): known here, never written as an initializer
};

// ONNX's broadcast of two rank <= 1 int64 constants (equal sizes, or one of size 1).
bool Broadcast(const IntConst& a, const IntConst& b, IntConst* out,
               const std::function<bool(int64_t, int64_t, int64_t*)>& f) {
  if (a.v.size() != b.v.size() && a.v.size() != 1 && b.v.size() != 1) return false;
  const size_t n = std::max(a.v.size(), b.v.size());
  out->rank = std::max(a.rank, b.rank);
  out->v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (!f(a.v[a.v.size() == 1 ? 0 : i], b.v[b.v.size() == 1 ? 0 : i], &out->v[i])) return false;
  }
  return true;
}

// The value of an int64 node whose inputs are all small constants, by ONNX's definition of the op.
bool EvalIntNode(const onnx::NodeProto& n, const std::vector<const IntConst*>& in, IntConst* out) {
  const std::string& op = n.op_type();
  // Comparisons of ints and logic of bools: the guards' checks on static sizes.
  auto compare = [&](const std::function<bool(int64_t, int64_t)>& f, bool on_bools) {
    if (in.size() != 2 || in[0]->is_bool != on_bools || in[1]->is_bool != on_bools) return false;
    if (!Broadcast(*in[0], *in[1], out, [&](int64_t a, int64_t b, int64_t* r) { return *r = f(a, b), true; })) {
      return false;
    }
    out->is_bool = true;
    return true;
  };
  if (op == "Equal") return in.size() == 2 && in[0]->is_bool == in[1]->is_bool &&
                            compare([](int64_t a, int64_t b) { return a == b; }, in[0]->is_bool);
  if (op == "Greater") return compare([](int64_t a, int64_t b) { return a > b; }, false);
  if (op == "Less") return compare([](int64_t a, int64_t b) { return a < b; }, false);
  if (op == "GreaterOrEqual") return compare([](int64_t a, int64_t b) { return a >= b; }, false);
  if (op == "LessOrEqual") return compare([](int64_t a, int64_t b) { return a <= b; }, false);
  if (op == "And") return compare([](int64_t a, int64_t b) { return a && b; }, true);
  if (op == "Or") return compare([](int64_t a, int64_t b) { return a || b; }, true);
  if (op == "Not" && in.size() == 1 && in[0]->is_bool) {
    *out = *in[0];
    for (auto& x : out->v) x = !x;
    return true;
  }
  if (op == "Cast" && in.size() == 1 && IntAttr(n, "to", 0) == onnx::TensorProto::BOOL) {
    *out = *in[0];
    for (auto& x : out->v) x = x != 0;
    out->is_bool = true;
    return true;
  }
  if (op == "Size" && in.size() == 1) {
    *out = IntConst{{static_cast<int64_t>(in[0]->v.size())}, 0, false};
    return true;
  }
  if (op == "Reshape" && in.size() == 2 && !in[0]->is_bool && in[1]->rank == 1 && in[1]->v.size() <= 1) {
    // To [] or [n] (a guard's check reshapes [0] to [1], or to [-2] and fails: left alone).
    const int64_t size = static_cast<int64_t>(in[0]->v.size());
    if (!in[1]->v.empty() && !(in[1]->v[0] == size || in[1]->v[0] == -1)) return false;
    if (in[1]->v.empty() && size != 1) return false;
    *out = *in[0];
    out->rank = static_cast<int>(in[1]->v.size());
    return true;
  }
  if (op == "Where" && in.size() == 3 && in[0]->is_bool && in[0]->v.size() == 1 &&
      in[1]->is_bool == in[2]->is_bool) {
    *out = *in[in[0]->v[0] ? 1 : 2];
    out->rank = std::max({in[0]->rank, in[1]->rank, in[2]->rank});
    return in[1]->v.size() == in[2]->v.size();
  }
  for (const IntConst* c : in) {
    if (c->is_bool && op != "Identity" && op != "Concat" && !(op == "Cast" && IntAttr(n, "to", 0) ==
                                                                    onnx::TensorProto::INT64)) {
      return false;
    }
  }
  auto arith = [&](const std::function<bool(int64_t, int64_t, int64_t*)>& f) {
    return in.size() == 2 && Broadcast(*in[0], *in[1], out, f);
  };
  if (op == "Add") return arith([](int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); });
  if (op == "Sub") return arith([](int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); });
  if (op == "Mul") return arith([](int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); });
  if (op == "Div") {   // integer Div truncates toward zero
    return arith([](int64_t a, int64_t b, int64_t* r) {
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      *r = a / b;
      return true;
    });
  }
  if (op == "Mod") {   // fmod=0: the sign of the divisor (Python's %); fmod=1: of the dividend (C's)
    const bool c_style = IntAttr(n, "fmod", 0) == 1;
    return arith([c_style](int64_t a, int64_t b, int64_t* r) {
      if (b == 0 || (a == INT64_MIN && b == -1)) return false;
      *r = a % b;
      if (!c_style && *r != 0 && ((*r < 0) != (b < 0))) *r += b;
      return true;
    });
  }
  if (op == "Max") return arith([](int64_t a, int64_t b, int64_t* r) { return *r = std::max(a, b), true; });
  if (op == "Min") return arith([](int64_t a, int64_t b, int64_t* r) { return *r = std::min(a, b), true; });
  if ((op == "Neg" || op == "Abs" || op == "Identity") && in.size() == 1) {
    *out = *in[0];
    for (auto& x : out->v) {
      if (op != "Identity" && x == INT64_MIN) return false;
      if (op == "Neg" || (op == "Abs" && x < 0)) x = -x;
    }
    return true;
  }
  if (op == "Cast" && in.size() == 1 && IntAttr(n, "to", 0) == onnx::TensorProto::INT64) {
    *out = *in[0];
    out->is_bool = false;
    return true;
  }
  if (op == "Unsqueeze" && in.size() == 2 && in[0]->rank == 0 && in[1]->v.size() == 1 &&
      (in[1]->v[0] == 0 || in[1]->v[0] == -1)) {
    *out = *in[0];
    out->rank = 1;
    return true;
  }
  if (op == "Squeeze" && !in.empty() && in[0]->rank == 1 && in[0]->v.size() == 1 &&
      (in.size() == 1 || (in[1]->v.size() == 1 && (in[1]->v[0] == 0 || in[1]->v[0] == -1)))) {
    *out = *in[0];
    out->rank = 0;
    return true;
  }
  if (op == "Concat" && IntAttr(n, "axis", 1) == 0) {
    out->rank = 1;
    out->is_bool = !in.empty() && in[0]->is_bool;
    for (const IntConst* c : in) {
      if (c->rank != 1 || c->is_bool != out->is_bool) return false;
      out->v.insert(out->v.end(), c->v.begin(), c->v.end());
    }
    return true;
  }
  if (op == "Gather" && in.size() == 2 && IntAttr(n, "axis", 0) == 0 && in[0]->rank == 1) {
    out->rank = in[1]->rank;
    const auto size = static_cast<int64_t>(in[0]->v.size());
    for (int64_t i : in[1]->v) {
      if (i < -size || i >= size) return false;
      out->v.push_back(in[0]->v[static_cast<size_t>(i < 0 ? i + size : i)]);
    }
    return true;
  }
  return false;
}

}  // namespace

namespace {
// The result of comparing an int or bool value of static shape (`t`, up to a few elements) with
// itself: true for Equal, GreaterOrEqual and LessOrEqual, false for Greater and Less.
bool SelfComparison(const std::string& op, const onnx::TypeProto* t, IntConst* out) {
  int64_t result;
  if (op == "Equal" || op == "GreaterOrEqual" || op == "LessOrEqual") {
    result = 1;
  } else if (op == "Greater" || op == "Less") {
    result = 0;
  } else {
    return false;
  }
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return false;
  switch (t->tensor_type().elem_type()) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL:
      break;
    default:
      return false;   // a float is not equal to itself when it is NaN
  }
  int64_t count = 1;
  for (const auto& d : t->tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0 || d.dim_value() > 64) return false;
    count *= d.dim_value();
  }
  if (count > 64) return false;
  out->v.assign(static_cast<size_t>(count), result);
  out->rank = t->tensor_type().shape().dim_size();
  out->is_bool = true;
  return true;
}
}  // namespace

int FoldIntConstants(onnx::GraphProto* graph, const InferredTypes& inferred, const Int64sInitializer& int64s,
                     const ScalarInitializer& scalar) {
  constexpr size_t kMaxElements = 4096;   // shapes, sizes and guards' checks, not data
  std::unordered_map<std::string, IntConst> known;
  std::vector<int64_t> ints;
  for (const auto& t : graph->initializer()) {
    if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() > 1) continue;
    std::unordered_map<std::string, const onnx::TensorProto*> one{{t.name(), &t}};
    if (ConstantInts(one, t.name(), &ints) && ints.size() <= kMaxElements) {
      known.emplace(t.name(), IntConst{ints, t.dims_size()});
    }
  }
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());
  static const std::unordered_set<std::string_view> kOps = {
      "Add",   "Sub",    "Mul",  "Div",  "Mod",  "Max",     "Min",     "Neg",     "Abs",            "Identity",
      "Cast",  "Unsqueeze", "Squeeze", "Concat", "Gather", "Shape", "Equal", "Greater", "Less", "GreaterOrEqual",
      "LessOrEqual", "And", "Or", "Not", "Size", "Reshape", "Where"};
  std::unordered_map<std::string, std::string> renamed;
  auto* nodes = graph->mutable_node();
  std::vector<bool> drop(static_cast<size_t>(nodes->size()), false);
  int folded = 0;
  std::vector<const IntConst*> in;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto& n = *nodes->Mutable(i);
    for (auto& name : *n.mutable_input()) {
      auto r = renamed.find(name);
      if (r != renamed.end()) name = r->second;
    }
    if (n.domain().empty() && n.output_size() == 1 && graph_outputs.count(n.output(0))) {
      // A graph output gated on checks that all folded: Where(true, v, v) or And(true, b) is an
      // Identity of v (the output keeps its name).
      auto c = n.input_size() >= 2 ? known.find(n.input(0)) : known.end();
      const bool gate = c != known.end() && c->second.is_bool && c->second.v.size() == 1 &&
                        ((n.op_type() == "Where" && n.input_size() == 3 && n.input(1) == n.input(2)) ||
                         (n.op_type() == "And" && n.input_size() == 2 && c->second.v[0] == 1));
      if (gate) {
        const std::string v = n.input(1);
        n.set_op_type("Identity");
        n.clear_input();
        n.add_input(v);
        ++folded;
      }
      continue;
    }
    if (!n.domain().empty() || n.output_size() != 1 || !kOps.count(n.op_type())) continue;
    IntConst value;
    if (n.op_type() == "Where" && n.input_size() == 3 && n.input(1) == n.input(2)) {
      // Where(c, v, v) is v whatever c is, once c is known (a gate whose checks are all constant:
      // GateOn's copy of v).
      auto c = known.find(n.input(0));
      if (c == known.end() || !c->second.is_bool || c->second.v.size() != 1) continue;
      renamed[n.output(0)] = n.input(1);
      drop[static_cast<size_t>(i)] = true;
      ++folded;
      continue;
    }
    if ((n.op_type() == "And" || n.op_type() == "Or") && n.input_size() == 2) {
      // And(true, b) is b, Or(false, b) is b (GateOn of a bool).
      auto c = known.find(n.input(0));
      const bool keeps = n.op_type() == "And" ? 1 : 0;
      if (c != known.end() && c->second.is_bool && c->second.v.size() == 1 && c->second.v[0] == keeps &&
          !known.count(n.input(1))) {
        renamed[n.output(0)] = n.input(1);
        drop[static_cast<size_t>(i)] = true;
        ++folded;
        continue;
      }
    }
    if (n.op_type() == "Shape") {   // of a value whose shape inference knows to be static
      const onnx::TypeProto* t = n.input_size() == 1 && n.attribute_size() == 0 ? inferred(n.input(0)) : nullptr;
      if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) continue;
      bool all = true;
      for (const auto& d : t->tensor_type().shape().dim()) {
        all = all && d.has_dim_value();
        value.v.push_back(d.dim_value());
      }
      if (!all) continue;
      value.rank = 1;
    } else if (n.input_size() == 2 && n.input(0) == n.input(1) && !known.count(n.input(0)) &&
               SelfComparison(n.op_type(), inferred(n.input(0)), &value)) {
      // A value compared with itself (kv_length > q_length when both are the same dim): an int
      // or bool equals itself, whatever it is.
    } else {
      in.clear();
      bool all = n.input_size() > 0;
      for (const auto& name : n.input()) {
        auto it = known.find(name);
        all = all && it != known.end();
        if (all) in.push_back(&it->second);
      }
      if (!all || !EvalIntNode(n, in, &value) || value.v.size() > kMaxElements) continue;
    }
    if (value.is_bool) {   // known to the nodes after it; the node goes once nothing reads it (not
      known.emplace(n.output(0), std::move(value));   // counted: a bool a data op reads stays)
      continue;
    }
    const std::string name = value.rank == 0 ? scalar(value.v[0]) : int64s(value.v);
    renamed[n.output(0)] = name;
    known[name] = value;
    known[n.output(0)] = std::move(value);
    drop[static_cast<size_t>(i)] = true;
    ++folded;
  }
  if (!folded) return 0;
  DropNodes(nodes, drop);
  return folded;
}

std::vector<onnx::ValueInfoProto> DeclareReshapeShapes(const onnx::GraphProto& graph, const InferredTypes& inferred) {
  std::vector<onnx::ValueInfoProto> out;
  if (std::none_of(graph.node().begin(), graph.node().end(),
                   [](const onnx::NodeProto& n) { return n.op_type() == "Reshape"; })) {
    return out;
  }
  const KnownDims known(graph, inferred);
  std::vector<int64_t> target;
  for (const auto& n : graph.node()) {
    if (n.op_type() != "Reshape" || !n.domain().empty() || n.input_size() != 2 || n.output_size() != 1 ||
        !known.Ints(n.input(1), &target, 1)) {
      continue;
    }
    const onnx::TypeProto* data = inferred(n.input(0));
    if (!data || !data->has_tensor_type() || !data->tensor_type().has_shape()) continue;
    if (const onnx::TypeProto* done = inferred(n.output(0)); done && done->has_tensor_type() &&
                                                              done->tensor_type().has_shape()) {
      bool all = static_cast<size_t>(done->tensor_type().shape().dim_size()) == target.size();
      for (const auto& d : done->tensor_type().shape().dim()) all = all && (d.has_dim_value() || d.has_dim_param());
      if (all) continue;   // inference knows it
    }
    const int rank = data->tensor_type().shape().dim_size();
    // The data's element count: a constant times input dims (one param each, with repeats).
    int64_t count = 1;
    std::vector<std::string> params;
    bool ok = true;
    for (int j = 0; j < rank && ok; ++j) {
      const auto d = known.Dim(n.input(0), j);
      if (!d || (d->constant && d->value < 0)) {
        ok = false;
      } else if (d->constant) {
        count *= d->value;
      } else {
        params.push_back(d->param);
      }
    }
    if (!ok || count == 0) continue;
    const bool allowzero = IntAttr(n, "allowzero", 0) == 1;
    std::vector<KnownSize> dims(target.size());
    int infer_at = -1;
    int64_t known_count = 1;
    for (size_t j = 0; j < target.size() && ok; ++j) {
      if (target[j] == -1 && infer_at < 0) {
        infer_at = static_cast<int>(j);
      } else if (target[j] > 0 || (target[j] == 0 && allowzero)) {
        dims[j] = KnownSize{true, target[j], {}};
        known_count *= target[j];
      } else if (target[j] == 0 && static_cast<int>(j) < rank) {   // copies the data's dim
        const auto d = known.Dim(n.input(0), static_cast<int64_t>(j));
        if (!d) {
          ok = false;
          break;
        }
        dims[j] = *d;
        if (d->constant) {
          known_count *= d->value;
        } else {
          auto it = std::find(params.begin(), params.end(), d->param);
          if (it == params.end()) ok = false; else params.erase(it);
        }
      } else {
        ok = false;
      }
    }
    if (!ok) continue;
    if (infer_at >= 0) {
      // What -1 stands for: the count left over, exactly one input dim or a constant.
      if (known_count <= 0 || count % known_count != 0) continue;
      const int64_t rest = count / known_count;
      if (params.empty()) {
        dims[static_cast<size_t>(infer_at)] = KnownSize{true, rest, {}};
      } else if (params.size() == 1 && rest == 1) {
        dims[static_cast<size_t>(infer_at)] = KnownSize{false, 0, params[0]};
      } else {
        continue;
      }
    } else if (!params.empty()) {
      continue;   // the target's constants stand for an input dim: nothing to say about it
    }
    onnx::ValueInfoProto vi;
    vi.set_name(n.output(0));
    auto* t = vi.mutable_type()->mutable_tensor_type();
    t->set_elem_type(data->tensor_type().elem_type());
    for (const auto& d : dims) {
      if (d.constant) t->mutable_shape()->add_dim()->set_dim_value(d.value);
      else t->mutable_shape()->add_dim()->set_dim_param(d.param);
    }
    out.push_back(std::move(vi));
  }
  return out;
}

int AnnotateRangeLengths(onnx::GraphProto* graph) {
  // Only the graph inputs' dims are known here (dims read from other values were pointed at the
  // inputs by ReplaceKnownDimReads).
  std::unordered_map<std::string, const onnx::TypeProto*> input_types;
  for (const auto& v : graph->input()) input_types.emplace(v.name(), &v.type());
  const KnownDims known(*graph, [&](const std::string& name) -> const onnx::TypeProto* {
    auto it = input_types.find(name);
    return it == input_types.end() ? nullptr : it->second;
  });
  std::unordered_set<std::string> typed;
  for (const auto& v : graph->value_info()) typed.insert(v.name());
  std::vector<int64_t> start, delta;
  std::vector<std::pair<std::string, std::string>> declared;  // Range output, its length's dim_param
  for (const auto& n : graph->node()) {
    if (n.op_type() != "Range" || !n.domain().empty() || n.input_size() != 3 || n.output_size() != 1) continue;
    if (!known.Ints(n.input(0), &start, 0) || !known.Ints(n.input(2), &delta, 0) || start[0] != 0 ||
        delta[0] != 1 || typed.count(n.output(0))) {
      continue;
    }
    const auto limit = known.Scalar(n.input(1));
    if (!limit || limit->constant) continue;
    declared.emplace_back(n.output(0), limit->param);
  }
  for (const auto& [name, param] : declared) {
    auto* vi = graph->add_value_info();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::INT64);
    t->mutable_shape()->add_dim()->set_dim_param(param);
  }
  return static_cast<int>(declared.size());
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
  std::unordered_set<std::string_view> existing_reads;             // dim.<param> of earlier calls
  for (const auto& n : graph->node()) {
    if (n.op_type() == "Gather" && n.output_size() == 1 && n.output(0).rfind("dim.", 0) == 0) {
      existing_reads.insert(n.output(0));
    }
  }
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
      const std::string base = "dim." + dim.dim_param();
      if (fresh && existing_reads.count(base)) {  // made by an earlier round
        it->second = base;
      } else if (fresh) {
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

namespace ivytrace {
namespace onnx_export {

namespace {

// The int value of a 0-d or one-element int64/int32 initializer, or nullopt.
std::optional<int64_t> IntInitializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& t : graph.initializer()) {
    if (t.name() != name) continue;
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (n != 1) return std::nullopt;
    if (t.data_type() == onnx::TensorProto::INT64) {
      if (t.int64_data_size() == 1) return t.int64_data(0);
      if (t.raw_data().size() == 8) {
        int64_t v;
        std::memcpy(&v, t.raw_data().data(), 8);
        return v;
      }
    } else if (t.data_type() == onnx::TensorProto::INT32) {
      if (t.int32_data_size() == 1) return t.int32_data(0);
      if (t.raw_data().size() == 4) {
        int32_t v;
        std::memcpy(&v, t.raw_data().data(), 4);
        return v;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

int ProtectRangeGathers(onnx::GraphProto* graph) {
  std::unordered_map<std::string, int> range_of;  // Range output -> node index
  for (int i = 0; i < graph->node_size(); ++i) {
    const auto& n = graph->node(i);
    if (n.op_type() == "Range" && n.output_size() == 1 && n.input_size() == 3) range_of[n.output(0)] = i;
  }
  // Indices that never count from the end (a start >= 0 and a positive step): a Slice is the
  // same, leave it to onnxruntime.
  auto needs_protection = [&](const onnx::NodeProto& n) {
    auto r = n.op_type() == "Gather" && n.input_size() == 2 ? range_of.find(n.input(1)) : range_of.end();
    if (r == range_of.end()) return false;
    const auto& range = graph->node(r->second);
    const auto start = IntInitializer(*graph, range.input(0)), delta = IntInitializer(*graph, range.input(2));
    return !(start && delta && *start >= 0 && *delta > 0);
  };
  // Nearly every model has no such Gather: it is left as it is, without the table of every name
  // and the copy of every node below (at a million nodes they were a tenth of an export's time
  // and more than half a gigabyte).
  if (range_of.empty() || std::none_of(graph->node().begin(), graph->node().end(), needs_protection)) return 0;
  std::unordered_set<std::string> names;
  for (const auto& n : graph->node()) {
    for (const auto& o : n.output()) names.insert(o);
    if (n.name().size()) names.insert(n.name());
  }
  for (const auto& t : graph->initializer()) names.insert(t.name());
  for (const auto& v : graph->input()) names.insert(v.name());
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; names.count(name); ++k) name = base + "." + std::to_string(k);
    names.insert(name);
    return name;
  };
  std::vector<onnx::NodeProto> out;
  out.reserve(graph->node_size());
  int protected_gathers = 0;
  std::string zero;
  for (int i = 0; i < graph->node_size(); ++i) {
    onnx::NodeProto n = graph->node(i);
    if (!needs_protection(n)) {
      out.push_back(std::move(n));
      continue;
    }
    int64_t axis = 0;
    for (const auto& a : n.attribute()) {
      if (a.name() == "axis") axis = a.i();
    }
    if (zero.empty()) {
      zero = fresh("ivytrace.range_gather.zero");
      auto* t = graph->add_initializer();
      t->set_name(zero);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_int64_data(0);
    }
    const std::string axis_name = fresh("ivytrace.range_gather.axis");
    {
      auto* t = graph->add_initializer();
      t->set_name(axis_name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_int64_data(axis);
    }
    const std::string base = n.name().empty() ? "range_gather" : n.name();
    auto emit = [&](const std::string& op, std::vector<std::string> ins, const std::string& hint) {
      onnx::NodeProto m;
      m.set_op_type(op);
      m.set_name(fresh(base + "." + hint));
      for (auto& s : ins) m.add_input(s);
      const std::string o = fresh(base + "." + hint + ".out");
      m.add_output(o);
      out.push_back(std::move(m));
      return o;
    };
    std::string idx = emit("Cast", {n.input(1)}, "Cast");
    {
      auto* a = out.back().add_attribute();
      a->set_name("to");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(onnx::TensorProto::INT64);
    }
    const std::string negative = emit("Less", {idx, zero}, "Less");
    const std::string dim = emit("Gather", {emit("Shape", {n.input(0)}, "Shape"), axis_name}, "Dim");
    const std::string wrapped = emit("Add", {idx, dim}, "Add");
    n.set_input(1, emit("Where", {negative, wrapped, idx}, "Where"));
    out.push_back(std::move(n));
    ++protected_gathers;
  }
  if (protected_gathers) {
    graph->clear_node();
    for (auto& n : out) *graph->add_node() = std::move(n);
  }
  return protected_gathers;
}

}  // namespace onnx_export
}  // namespace ivytrace

namespace ivytrace {
namespace onnx_export {

int FoldEmptyExpands(onnx::GraphProto* graph, const InferredTypes& inferred) {
  std::unordered_set<std::string> names;
  for (const auto& n : graph->node()) names.insert(n.output().begin(), n.output().end());
  for (const auto& t : graph->initializer()) names.insert(t.name());
  for (const auto& in : graph->input()) names.insert(in.name());
  std::unordered_set<std::string> outputs;
  for (const auto& o : graph->output()) outputs.insert(o.name());
  auto* nodes = graph->mutable_node();
  std::vector<bool> dead(nodes->size(), false);
  std::unordered_map<std::string, std::string> renamed;
  int folded = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    onnx::NodeProto& n = *nodes->Mutable(i);
    for (auto& in : *n.mutable_input()) {
      auto it = renamed.find(in);
      if (it != renamed.end()) in = it->second;
    }
    if (n.op_type() != "Expand" || !n.domain().empty() || n.output_size() != 1 || outputs.count(n.output(0))) continue;
    const onnx::TypeProto* t = inferred(n.output(0));
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) continue;
    const auto& shape = t->tensor_type().shape();
    bool all_known = true, empty = false;
    for (const auto& d : shape.dim()) {
      all_known = all_known && d.has_dim_value();
      empty = empty || (d.has_dim_value() && d.dim_value() == 0);
    }
    if (!all_known || !empty || t->tensor_type().elem_type() == 0) continue;
    std::string name = n.output(0) + ".empty";
    for (int k = 1; names.count(name); ++k) name = n.output(0) + ".empty." + std::to_string(k);
    names.insert(name);
    auto* init = graph->add_initializer();
    init->set_name(name);
    init->set_data_type(t->tensor_type().elem_type());
    for (const auto& d : shape.dim()) init->add_dims(d.dim_value());
    init->set_raw_data("");
    renamed[n.output(0)] = name;
    dead[i] = true;
    ++folded;
  }
  if (!folded) return 0;
  DropNodes(nodes, dead);
  return folded;
}

}  // namespace onnx_export
}  // namespace ivytrace

namespace ivytrace {
namespace onnx_export {

int DropHeldLengthGuards(onnx::GraphProto* graph) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < graph->node_size(); ++i) {
    for (const auto& o : graph->node(i).output()) producer[o] = i;
  }
  std::unordered_set<std::string> outputs;
  for (const auto& o : graph->output()) outputs.insert(o.name());
  auto node_of = [&](const std::string& name) -> const onnx::NodeProto* {
    auto it = producer.find(name);
    return it == producer.end() ? nullptr : &graph->node(it->second);
  };
  std::unordered_map<std::string, std::string> renamed;
  std::vector<bool> dead(graph->node_size(), false);
  int dropped = 0;
  for (int i = 0; i < graph->node_size(); ++i) {
    onnx::NodeProto& n = *graph->mutable_node(i);
    for (auto& in : *n.mutable_input()) {
      auto it = renamed.find(in);
      if (it != renamed.end()) in = it->second;
    }
    if (n.op_type() != "Reshape" || n.input_size() != 2 || n.output_size() != 1 ||
        n.name().rfind("ivytrace guard (", 0) != 0 || outputs.count(n.output(0))) {
      continue;
    }
    const onnx::NodeProto* where = node_of(n.input(1));
    if (!where || where->op_type() != "Where" || where->input_size() != 3) continue;
    const onnx::NodeProto* equal = node_of(where->input(0));
    if (!equal || equal->op_type() != "Equal" || equal->input_size() != 2) continue;
    const auto a = IntInitializer(*graph, equal->input(0)), b = IntInitializer(*graph, equal->input(1));
    if (!a || !b || *a != *b) continue;   // not known to hold
    renamed[n.output(0)] = n.input(0);
    dead[i] = true;
    ++dropped;
  }
  if (!dropped) return 0;
  DropNodes(graph->mutable_node(), dead);
  return dropped;
}

}  // namespace onnx_export
}  // namespace ivytrace
