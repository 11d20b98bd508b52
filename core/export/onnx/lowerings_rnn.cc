// torch's recurrent layers (nn.LSTM, nn.GRU, nn.RNN call torch.lstm / gru / rnn_tanh / rnn_relu
// through torch._VF) as ONNX LSTM / GRU / RNN nodes, one per layer (issue 11).
//
// What differs between the two, and is mapped here:
// - Gate order. torch stacks an LSTM's gates i, f, g, o and ONNX i, o, f, c (g is ONNX's c); a
//   GRU's r, z, n against ONNX's z, r, h. The weights and biases are reordered with a Gather
//   of row blocks (on initializers it folds; on weights that are model inputs it runs).
// - torch's GRU applies the reset gate after the hidden state's matmul: ONNX's
//   linear_before_reset=1.
// - Layers: torch runs them inside one call. Each layer here is one ONNX node whose input is
//   the previous layer's output, its directions side by side ([seq, batch, dirs * hidden]); the
//   final states of all layers are concatenated as torch returns them.
// - batch_first: transposed in and out (the nodes use layout 0).
// Refused: the PackedSequence form (data, batch_sizes), projections (LSTM proj_size: five weights
// per layer), and dropout between layers in training mode (random).
#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

// The tensors of a list/tuple argument, in order; nullopt when an item is not a tensor.
std::optional<std::vector<ValueId>> TensorItems(const BoundCall& call, const char* param) {
  const v1::Arg* a = call.Get(param);
  if (!a) return std::nullopt;
  auto items = SequenceItems(*a);
  if (!items) return std::nullopt;
  std::vector<ValueId> out;
  for (const v1::Arg* it : *items) {
    if (!it->has_tensor()) return std::nullopt;
    out.push_back(it->tensor().value());
  }
  return out;
}

// `w` ([gates * hidden, ...]) with its gate blocks in ONNX's order: block order[k] of torch's
// becomes block k.
std::string ReorderGates(LoweringContext& ctx, const std::string& w, int64_t hidden, const std::vector<int64_t>& order) {
  std::vector<int64_t> rows;
  for (int64_t block : order) {
    for (int64_t i = 0; i < hidden; ++i) rows.push_back(block * hidden + i);
  }
  onnx::NodeProto* g = nullptr;
  const std::string out = ctx.EmitTemp("Gather", {w, ctx.Int64s(rows)}, &g);
  SetAttr(g, "axis", int64_t{0});
  return out;
}

// Concatenation along axis 0 of each name unsqueezed at 0 (one per direction).
std::string StackDirs(LoweringContext& ctx, const std::vector<std::string>& parts) {
  std::vector<std::string> u;
  for (const auto& p : parts) u.push_back(ctx.Unsqueeze(p, {0}));
  if (u.size() == 1) return u[0];
  onnx::NodeProto* c = nullptr;
  const std::string out = ctx.EmitTemp("Concat", u, &c);
  SetAttr(c, "axis", int64_t{0});
  return out;
}

// Rows [begin, end) of `x` along axis 0.
std::string Rows(LoweringContext& ctx, const std::string& x, int64_t begin, int64_t end) {
  return ctx.EmitTemp("Slice", {x, ctx.Int64s({begin}), ctx.Int64s({end}), ctx.Int64s({0})});
}

}  // namespace

Status LowerRecurrent(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  const bool lstm = c == "lstm", gru = c == "gru";
  ValueId x;
  if (!call.Tensor("input")) return Status::Unsupported(c + " of a PackedSequence (data, batch_sizes) has no lowering");
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  // torch.lstm(data, batch_sizes, hx, ...) is the PackedSequence form: its second argument is a
  // tensor where the padded form has the (h, c) tuple.
  std::vector<ValueId> hx;
  if (lstm) {
    auto items = TensorItems(call, "hx");
    if (!items || items->size() != 2) return Status::Unsupported("lstm of a PackedSequence, or hx not (h, c)");
    hx = *items;
  } else {
    auto h = call.Tensor("hx");
    if (!h) return Status::Unsupported(c + " without its initial state tensor");
    hx = {*h};
  }
  auto params = TensorItems(call, "params");
  if (!params) return Status::Unsupported(c + " of a PackedSequence (data, batch_sizes), or weights not a list of tensors");
  const auto has_biases = call.Bool("has_biases");
  const auto layers = call.Int("num_layers");
  const auto bidirectional = call.Bool("bidirectional");
  const auto batch_first = call.Bool("batch_first");
  const auto train = call.Bool("train");
  const v1::Arg* dropout = call.Get("dropout");
  if (!has_biases || !layers || !bidirectional || !batch_first || !train || !dropout || *layers < 1) {
    return Status::Unsupported(c + " with arguments that are not plain values");
  }
  const double p = dropout->kind_case() == v1::Arg::kF ? dropout->f() : static_cast<double>(AsInt(*dropout).value_or(0));
  if (*train && p > 0 && *layers > 1) return Status::Unsupported(c + " with dropout between layers in training mode (random)");
  const int64_t dirs = *bidirectional ? 2 : 1;
  const size_t per = *has_biases ? 4 : 2;
  if (params->size() != per * static_cast<size_t>(*layers * dirs)) {
    return Status::Unsupported(c + " with " + std::to_string(params->size()) + " weights for " +
                               std::to_string(*layers) + " layer(s) (an LSTM projection, proj_size, has no lowering)");
  }
  if (ctx.Rank(x) != 3) return Status::Unsupported(c + " of a rank-" + std::to_string(ctx.Rank(x)) + " input");
  const auto results = ResultTensors(node);
  if (results.size() != (lstm ? 3u : 2u)) return Status::Unsupported(c + " with an unexpected result");
  const auto& w_shape = ctx.Shape((*params)[1]);   // w_hh: [gates * hidden, hidden]
  if (w_shape.size() != 2 || w_shape[1] <= 0) return Status::Unsupported(c + " weights of an unexpected shape");
  const int64_t hidden = w_shape[1];
  const std::vector<int64_t> order = lstm ? std::vector<int64_t>{0, 3, 1, 2}   // i f g o -> i o f c
                                     : gru  ? std::vector<int64_t>{1, 0, 2}      // r z n -> z r h
                                            : std::vector<int64_t>{0};
  const v1::DType d = ctx.DType(x);
  if (d != v1::FLOAT32) return Status::Unsupported(c + " in " + DTypeName(d) + " (onnxruntime runs it in float32)");

  std::string seq = ctx.In(x);
  if (*batch_first) seq = [&] {
    onnx::NodeProto* t = nullptr;
    const std::string out = ctx.EmitTemp("Transpose", {seq}, &t);
    SetAttr(t, "perm", std::vector<int64_t>{1, 0, 2});
    return out;
  }();
  std::vector<std::string> h_n, c_n;
  const std::string h0 = ctx.In(hx[0]), c0 = lstm ? ctx.In(hx[1]) : "";
  for (int64_t l = 0; l < *layers; ++l) {
    std::vector<std::string> ws, rs, bs;
    for (int64_t k = 0; k < dirs; ++k) {
      const size_t base = per * static_cast<size_t>(l * dirs + k);
      ws.push_back(ReorderGates(ctx, ctx.In((*params)[base]), hidden, order));
      rs.push_back(ReorderGates(ctx, ctx.In((*params)[base + 1]), hidden, order));
      if (*has_biases) {
        onnx::NodeProto* cat = nullptr;
        bs.push_back(ctx.EmitTemp("Concat", {ReorderGates(ctx, ctx.In((*params)[base + 2]), hidden, order),
                                             ReorderGates(ctx, ctx.In((*params)[base + 3]), hidden, order)}, &cat));
        SetAttr(cat, "axis", int64_t{0});
      }
    }
    std::vector<std::string> ins = {seq, StackDirs(ctx, ws), StackDirs(ctx, rs), *has_biases ? StackDirs(ctx, bs) : "",
                                    "", Rows(ctx, h0, l * dirs, (l + 1) * dirs)};
    if (lstm) ins.push_back(Rows(ctx, c0, l * dirs, (l + 1) * dirs));
    const std::string y = ctx.Temp("y"), yh = ctx.Temp("y_h"), yc = ctx.Temp("y_c");
    std::vector<std::string> outs = {y, yh};
    if (lstm) outs.push_back(yc);
    auto* n = ctx.Emit(lstm ? "LSTM" : gru ? "GRU" : "RNN", ins, outs);
    SetAttr(n, "hidden_size", hidden);
    SetAttr(n, "direction", std::string(dirs == 2 ? "bidirectional" : "forward"));
    if (gru) SetAttr(n, "linear_before_reset", int64_t{1});
    if (c == "rnn_relu") {   // one activation per direction (ONNX's default is Tanh)
      auto* a = n->add_attribute();
      a->set_name("activations");
      a->set_type(onnx::AttributeProto::STRINGS);
      for (int64_t k = 0; k < dirs; ++k) a->add_strings("Relu");
    }
    h_n.push_back(yh);
    if (lstm) c_n.push_back(yc);
    // Y [seq, dirs, batch, hidden] -> [seq, batch, dirs * hidden]: the next layer's input.
    onnx::NodeProto* t = nullptr;
    const std::string yt = ctx.EmitTemp("Transpose", {y}, &t);
    SetAttr(t, "perm", std::vector<int64_t>{0, 2, 1, 3});
    seq = ctx.EmitTemp("Reshape", {yt, ctx.Int64s({0, 0, -1})});
  }
  if (*batch_first) {
    auto* t = ctx.Emit("Transpose", {seq}, {ctx.Out(results[0])});
    SetAttr(t, "perm", std::vector<int64_t>{1, 0, 2});
  } else {
    ctx.Emit("Identity", {seq}, {ctx.Out(results[0])});
  }
  auto concat_into = [&](const std::vector<std::string>& parts, ValueId out) {
    auto* cat = ctx.Emit(parts.size() == 1 ? "Identity" : "Concat", parts, {ctx.Out(out)});
    if (parts.size() > 1) SetAttr(cat, "axis", int64_t{0});
  };
  concat_into(h_n, results[1]);
  if (lstm) concat_into(c_n, results[2]);
  return Status::Ok();
}

// torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh): one
// step, as an ONNX LSTM / GRU / RNN over a sequence of length 1 (the decoder loop of a seq2seq
// model calls a cell per step).
Status LowerRecurrentCell(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  const bool lstm = c == "lstm_cell", gru = c == "gru_cell";
  ValueId x, w_ih, w_hh;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "w_ih", &w_ih));
  IVY_RETURN_IF_ERROR(TensorParam(call, "w_hh", &w_hh));
  std::vector<ValueId> hx;
  if (lstm) {
    auto items = TensorItems(call, "hx");
    if (!items || items->size() != 2) return Status::Unsupported("lstm_cell with hx not (h, c)");
    hx = *items;
  } else {
    auto h = call.Tensor("hx");
    if (!h) return Status::Unsupported(c + " without its state tensor (hx None)");
    hx = {*h};
  }
  const bool biased = !call.IsNone("b_ih") || !call.IsNone("b_hh");
  auto b_ih = call.Tensor("b_ih"), b_hh = call.Tensor("b_hh");
  if (biased && (!b_ih || !b_hh)) return Status::Unsupported(c + " with only one of b_ih, b_hh");
  if (ctx.Rank(x) != 2) return Status::Unsupported(c + " of a rank-" + std::to_string(ctx.Rank(x)) + " input");
  if (ctx.DType(x) != v1::FLOAT32) return Status::Unsupported(c + " in " + DTypeName(ctx.DType(x)));
  const auto results = ResultTensors(node);
  if (results.size() != (lstm ? 2u : 1u)) return Status::Unsupported(c + " with an unexpected result");
  const auto& w_shape = ctx.Shape(w_hh);
  if (w_shape.size() != 2 || w_shape[1] <= 0) return Status::Unsupported(c + " weights of an unexpected shape");
  const int64_t hidden = w_shape[1];
  const std::vector<int64_t> order = lstm ? std::vector<int64_t>{0, 3, 1, 2}
                                     : gru  ? std::vector<int64_t>{1, 0, 2}
                                            : std::vector<int64_t>{0};
  std::string b;
  if (biased) {
    onnx::NodeProto* cat = nullptr;
    b = ctx.Unsqueeze(ctx.EmitTemp("Concat", {ReorderGates(ctx, ctx.In(*b_ih), hidden, order),
                                              ReorderGates(ctx, ctx.In(*b_hh), hidden, order)}, &cat), {0});
    SetAttr(cat, "axis", int64_t{0});
  }
  std::vector<std::string> ins = {ctx.Unsqueeze(ctx.In(x), {0}),
                                  ctx.Unsqueeze(ReorderGates(ctx, ctx.In(w_ih), hidden, order), {0}),
                                  ctx.Unsqueeze(ReorderGates(ctx, ctx.In(w_hh), hidden, order), {0}), b, "",
                                  ctx.Unsqueeze(ctx.In(hx[0]), {0})};
  if (lstm) ins.push_back(ctx.Unsqueeze(ctx.In(hx[1]), {0}));
  const std::string yh = ctx.Temp("y_h"), yc = ctx.Temp("y_c");
  std::vector<std::string> outs = {"", yh};
  if (lstm) outs.push_back(yc);
  auto* n = ctx.Emit(lstm ? "LSTM" : gru ? "GRU" : "RNN", ins, outs);
  SetAttr(n, "hidden_size", hidden);
  if (gru) SetAttr(n, "linear_before_reset", int64_t{1});
  if (c == "rnn_relu_cell") {
    auto* a = n->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("Relu");
  }
  ctx.Emit("Squeeze", {yh, ctx.Int64s({0})}, {ctx.Out(results[0])});
  if (lstm) ctx.Emit("Squeeze", {yc, ctx.Int64s({0})}, {ctx.Out(results[1])});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
