// THE table of ONNX lowerings, keyed by canonical op. One row per canonical op, alphabetical.
//
// A framework op exports when its schema (schemas/<framework>.textproto) names a canonical op
// that has a row here: torch, NumPy and JAX share every row, so a new framework op that maps onto
// an existing canonical op needs no C++. Before the row's function runs, normalize.cc renames the
// framework's arguments into the canonical op's parameters (NumPy's axis/keepdims, JAX's axes,
// ...). To find how `foo` lowers: search this file for `{"foo"`, or run `ivytrace ops --json`.
//
// `onnx` says which ONNX ops the lowering emits, for people and for `ivytrace ops`; the function
// is the truth. Canonical ops that are deliberately absent (random ops, in-place index writes,
// ops ONNX opset 17 cannot express) are refused by the exporter with the reason in `kRefused`.
#include "core/export/onnx/lowering_table.h"

#include <algorithm>

#include "core/export/onnx/lowerings.h"

namespace ivytrace {
namespace onnx_export {

namespace {

// clang-format off
const CanonicalLowering kTable[] = {
    {"abs",                          "Abs",                          LowerUnary},
    {"acos",                         "Acos",                         LowerUnary},
    {"acosh",                        "Acosh",                        LowerUnary},
    {"adaptive_avg_pool2d",          "GlobalAveragePool|AveragePool", LowerAdaptiveAvgPool2d},
    {"add",                          "Add",                          LowerBinary},
    {"addmm",                        "Gemm|MatMul+Mul+Add",          LowerAddmm},
    {"all",                          "ReduceMin",                    LowerReduce},
    {"any",                          "ReduceMax",                    LowerReduce},
    {"arange",                       "Range",                        LowerArange},
    {"argmax",                       "ArgMax",                       LowerArgReduce},
    {"argmin",                       "ArgMin",                       LowerArgReduce},
    {"argsort",                      "TopK",                         LowerTopK},
    {"asarray",                      "Constant|Identity",            LowerFactory},
    {"asin",                         "Asin",                         LowerUnary},
    {"asinh",                        "Asinh",                        LowerUnary},
    {"atan",                         "Atan",                         LowerUnary},
    {"atan2",                        "Atan+Div+Where",               LowerAtan2},
    {"atanh",                        "Atanh",                        LowerUnary},
    {"avg_pool1d",                   "AveragePool",                  LowerPool},
    {"avg_pool2d",                   "AveragePool",                  LowerPool},
    {"avg_pool3d",                   "AveragePool",                  LowerPool},
    {"batch_norm",                   "BatchNormalization",           LowerBatchNorm},
    {"bitwise_and",                  "And (bool)",                   LowerElementwiseBinary},
    {"bitwise_not",                  "Not (bool)",                   LowerUnary},
    {"bitwise_or",                   "Or (bool)",                    LowerElementwiseBinary},
    {"bitwise_xor",                  "Xor (bool)",                   LowerElementwiseBinary},
    {"broadcast_in_dim",             "Unsqueeze+Expand",             LowerBroadcastInDim},
    {"broadcast_to",                 "Expand",                       LowerBroadcastTo},
    {"cast",                         "Cast",                         LowerCast},
    {"ceil",                         "Ceil",                         LowerUnary},
    {"chunk",                        "Split",                        LowerSplit},
    {"clip",                         "Max+Min",                      LowerClip},
    {"concat",                       "Concat",                       LowerConcat},
    {"contiguous",                   "Identity",                     LowerUnary},
    {"conv1d",                       "Conv",                         LowerConv},
    {"conv2d",                       "Conv",                         LowerConv},
    {"conv3d",                       "Conv",                         LowerConv},
    {"conv_general_dilated",         "Transpose+Conv",               LowerConvGeneralDilated},
    {"conv_transpose1d",             "ConvTranspose",                LowerConv},
    {"conv_transpose2d",             "ConvTranspose",                LowerConv},
    {"conv_transpose3d",             "ConvTranspose",                LowerConv},
    {"cos",                          "Cos",                          LowerUnary},
    {"cosh",                         "Cosh",                         LowerUnary},
    {"cumsum",                       "CumSum",                       LowerCumsum},
    {"diff",                         "Concat+Slice+Sub",             LowerDiff},
    {"div",                          "Div",                          LowerBinary},
    {"dot",                          "MatMul",                       LowerMatmul},
    {"dot_general",                  "Einsum",                       LowerDotGeneral},
    {"dropout",                      "Identity (inference)",         LowerDropout},
    {"dstack",                       "Unsqueeze+Concat",             LowerNumpyStacks},
    {"einsum",                       "Einsum",                       LowerEinsum},
    {"elu",                          "Elu",                          LowerActivation},
    {"embedding",                    "Gather",                       LowerEmbedding},
    {"equal",                        "Equal",                        LowerElementwiseBinary},
    {"erf",                          "Erf",                          LowerUnary},
    {"exp",                          "Exp",                          LowerUnary},
    {"exp2",                         "Pow",                          LowerUnary},
    {"expand_dims",                  "Unsqueeze",                    LowerExpandDims},
    {"expm1",                        "Exp+Sub",                      LowerUnary},
    {"eye",                          "ConstantOfShape+EyeLike",      LowerEye},
    {"flatten",                      "Flatten|Reshape",              LowerFlatten},
    {"flip",                         "Slice",                        LowerFlip},
    {"floor",                        "Floor",                        LowerUnary},
    {"fmax",                         "Max",                          LowerElementwiseBinary},
    {"fmin",                         "Min",                          LowerElementwiseBinary},
    {"fmod",                         "Mod(fmod=1)",                  LowerElementwiseBinary},
    {"frac",                         "Sub(x, trunc x)",              LowerUnary},
    {"full",                         "ConstantOfShape",              LowerFull},
    {"full_like",                    "Shape+ConstantOfShape",        LowerFull},
    {"gather",                       "GatherElements",               LowerGather},
    {"gelu",                         "Erf|Tanh decomposition",       LowerGelu},
    {"getitem",                      "Slice+Squeeze+Unsqueeze|Gather", LowerGetitem},
    {"greater",                      "Greater",                      LowerElementwiseBinary},
    {"greater_equal",                "GreaterOrEqual",               LowerElementwiseBinary},
    {"group_norm",                   "Reshape+ReduceMean decomposition", LowerGroupNorm},
    {"hardsigmoid",                  "HardSigmoid",                  LowerUnary},
    {"hardswish",                    "HardSwish",                    LowerUnary},
    {"hardtanh",                     "Clip|Max+Min",                 LowerActivation},
    {"hstack",                       "Concat|Unsqueeze+Concat",      LowerNumpyStacks},
    {"hypot",                        "Sqrt(a*a+b*b)",                LowerElementwiseBinary},
    {"identity",                     "Identity",                     LowerUnary},
    {"im2col",                       "Pad+Slice+Concat+Reshape",     LowerIm2col},
    {"instance_norm",                "InstanceNormalization",        LowerInstanceNorm},
    {"interpolate",                  "Resize",                       LowerInterpolate},
    {"iota",                         "Range+Expand",                 LowerIota},
    {"isclose",                      "Abs+Sub+LessOrEqual+Equal",    LowerIsclose},
    {"isfinite",                     "Not(IsNaN or IsInf)",          LowerUnary},
    {"isinf",                        "IsInf",                        LowerUnary},
    {"isnan",                        "IsNaN",                        LowerUnary},
    {"layer_norm",                   "LayerNormalization",           LowerLayerNorm},
    {"leaky_relu",                   "LeakyRelu",                    LowerActivation},
    {"less",                         "Less",                         LowerElementwiseBinary},
    {"less_equal",                   "LessOrEqual",                  LowerElementwiseBinary},
    {"linear",                       "Gemm|MatMul+Add",              LowerLinear},
    {"log",                          "Log",                          LowerUnary},
    {"log10",                        "Log+Div",                      LowerUnary},
    {"log1p",                        "Add+Log",                      LowerUnary},
    {"log2",                         "Log+Div",                      LowerUnary},
    {"log_sigmoid",                  "Neg+Softplus+Neg",             LowerUnary},
    {"log_softmax",                  "LogSoftmax",                   LowerSoftmax},
    {"logical_and",                  "And",                          LowerElementwiseBinary},
    {"logical_not",                  "Not",                          LowerUnary},
    {"logical_or",                   "Or",                           LowerElementwiseBinary},
    {"logical_xor",                  "Xor",                          LowerElementwiseBinary},
    {"masked_fill",                  "Where",                        LowerMaskedFill},
    {"matmul",                       "MatMul",                       LowerMatmul},
    {"max",                          "ReduceMax",                    LowerReduce},
    {"max_or_maximum",               "Max|ReduceMax",                LowerMinMaxOverload},
    {"max_pool1d",                   "MaxPool",                      LowerPool},
    {"max_pool2d",                   "MaxPool",                      LowerPool},
    {"max_pool3d",                   "MaxPool",                      LowerPool},
    {"maximum",                      "Max",                          LowerElementwiseBinary},
    {"mean",                         "ReduceMean",                   LowerReduce},
    {"meshgrid",                     "Shape+Concat+Reshape+Expand",  LowerMeshgrid},
    {"min",                          "ReduceMin",                    LowerReduce},
    {"min_or_minimum",               "Min|ReduceMin",                LowerMinMaxOverload},
    {"minimum",                      "Min",                          LowerElementwiseBinary},
    {"mish",                         "Softplus+Tanh+Mul",            LowerUnary},
    {"mul",                          "Mul",                          LowerBinary},
    {"nan_to_num",                   "IsNaN+IsInf+Where",            LowerNanToNum},
    {"negative",                     "Neg",                          LowerUnary},
    {"new_ones",                     "ConstantOfShape",              LowerFull},
    {"new_zeros",                    "ConstantOfShape",              LowerFull},
    {"norm",                         "ReduceL2|ReduceL1|ReduceMax(Abs)|Pow+ReduceSum", LowerVectorNorm},
    {"normalize",                    "ReduceL1|ReduceL2+Max+Div",    LowerNormalize},
    {"not_equal",                    "Not(Equal)",                   LowerElementwiseBinary},
    {"numpy_linspace",               "Range+Mul+Add+Where",          LowerLinspace},
    {"one_hot",                      "OneHot",                       LowerOneHot},
    {"ones",                         "ConstantOfShape",              LowerFactory},
    {"ones_like",                    "Shape+ConstantOfShape",        LowerFull},
    {"outer",                        "Reshape+Mul",                  LowerMatmul},
    {"pad",                          "Pad|Slice+Concat (circular)",  LowerPad},
    {"permute_dims",                 "Transpose",                    LowerPermute},
    {"positive",                     "Identity",                     LowerUnary},
    {"pow",                          "Pow",                          LowerBinary},
    {"prod",                         "ReduceProd",                   LowerReduce},
    {"ptp",                          "ReduceMax-ReduceMin",          LowerPtp},
    {"put_along_axis",               "Expand+ScatterElements",       LowerPutAlongAxis},
    {"reciprocal",                   "Reciprocal",                   LowerUnary},
    {"reduce_window_max",            "Transpose+MaxPool",            LowerReduceWindow},
    {"reduce_window_sum",            "Transpose+AveragePool*n",      LowerReduceWindow},
    {"relu",                         "Relu",                         LowerUnary},
    {"relu6",                        "Clip|Max+Min",                 LowerUnary},
    {"remainder",                    "Mod|Floor decomposition",      LowerElementwiseBinary},
    {"repeat_interleave",            "Unsqueeze+Expand+Reshape",     LowerRepeatInterleave},
    {"reshape",                      "Reshape",                      LowerReshape},
    {"rms_norm",                     "ReduceMean+Sqrt decomposition", LowerRmsNorm},
    {"roll",                         "Slice+Concat",                 LowerRoll},
    {"round",                        "Round",                        LowerUnary},
    {"rsqrt",                        "Sqrt+Reciprocal",              LowerUnary},
    {"scaled_dot_product_attention", "MatMul+Softmax+MatMul (+Trilu mask)", LowerScaledDotProductAttention},
    {"select_n",                     "Where",                        LowerSelectN},
    {"setitem",                      "ScatterND|Where (mask)",       LowerSetitem},
    {"sigmoid",                      "Sigmoid",                      LowerUnary},
    {"sign",                         "Sign",                         LowerUnary},
    {"silu",                         "Sigmoid+Mul",                  LowerUnary},
    {"sin",                          "Sin",                          LowerUnary},
    {"sinh",                         "Sinh",                         LowerUnary},
    {"slice",                        "Slice",                        LowerSlice},
    {"softmax",                      "Softmax",                      LowerSoftmax},
    {"softplus",                     "Softplus+Where",               LowerActivation},
    {"sort",                         "TopK",                         LowerTopK},
    {"split",                        "Split",                        LowerSplit},
    {"sqrt",                         "Sqrt",                         LowerUnary},
    {"square",                       "Mul",                          LowerUnary},
    {"squeeze",                      "Squeeze",                      LowerSqueeze},
    {"stack",                        "Unsqueeze+Concat",             LowerStack},
    {"std",                          "ReduceMean+ReduceSum+Sqrt",    LowerVariance},
    {"sub",                          "Sub",                          LowerBinary},
    {"sum",                          "ReduceSum",                    LowerReduce},
    {"sym_abs",                     "Abs",                          LowerSymArith},
    {"sym_add",                     "Add",                          LowerSymArith},
    {"sym_and",                    "And",                          LowerSymArith},
    {"sym_eq",                      "Equal",                        LowerSymArith},
    {"sym_floordiv",                "Mod+Sub+Div",                  LowerSymArith},
    {"sym_ge",                      "GreaterOrEqual",               LowerSymArith},
    {"sym_gt",                      "Greater",                      LowerSymArith},
    {"sym_le",                      "LessOrEqual",                  LowerSymArith},
    {"sym_lt",                      "Less",                         LowerSymArith},
    {"sym_max",                     "Max",                          LowerSymArith},
    {"sym_min",                     "Min",                          LowerSymArith},
    {"sym_mod",                     "Mod",                          LowerSymArith},
    {"sym_mul",                     "Mul",                          LowerSymArith},
    {"sym_ne",                      "Equal+Not",                    LowerSymArith},
    {"sym_neg",                     "Neg",                          LowerSymArith},
    {"sym_not",                    "Not",                          LowerSymArith},
    {"sym_numel",                   "Size",                         LowerSymNumel},
    {"sym_or",                     "Or",                           LowerSymArith},
    {"sym_pow",                     "Pow",                          LowerSymArith},
    {"sym_size",                    "Shape+Gather",                 LowerSymSize},
    {"sym_sub",                     "Sub",                          LowerSymArith},
    {"sym_truediv",                 "Div",                          LowerSymArith},
    {"take",                         "Gather",                       LowerTake},
    {"take_along_axis",              "Expand+GatherElements",        LowerTakeAlongAxis},
    {"tan",                          "Tan",                          LowerUnary},
    {"tanh",                         "Tanh",                         LowerUnary},
    {"tile",                         "Tile",                         LowerTile},
    {"top_k",                        "TopK",                         LowerTopK},
    {"transpose",                    "Transpose",                    LowerTranspose},
    {"tril",                         "Trilu",                        LowerTriangle},
    {"triu",                         "Trilu",                        LowerTriangle},
    {"trunc",                        "Sign*Floor(Abs)",              LowerUnary},
    {"unbind",                       "Split+Squeeze",                LowerSplit},
    {"var",                          "ReduceMean+ReduceSum",         LowerVariance},
    {"vector_norm",                  "ReduceL2|ReduceL1|ReduceMax(Abs)|Pow+ReduceSum", LowerVectorNorm},
    {"vstack",                       "Unsqueeze+Concat",             LowerNumpyStacks},
    {"weight_norm",                  "ReduceL2+Div+Mul",             LowerWeightNorm},
    {"where",                        "Where",                        LowerWhere},
    {"zeros",                        "ConstantOfShape",              LowerFactory},
    {"zeros_like",                   "Shape+ConstantOfShape",        LowerFull},
};
// clang-format on

// Canonical ops with no row above, and why: shown by the exporter and `ivytrace ops`.
const std::pair<std::string_view, std::string_view> kRefused[] = {
    {"copy", "an in-place copy_ into an existing tensor is not lowered yet"},
    {"sym_dim", "the recorder keeps ranks plain ints (guarded on the inputs), so no trace holds it"},
    {"random_uniform", "a random op: bake its draws (optimize/export --bake-generators) to export"},
    {"random_normal", "a random op: bake its draws (optimize/export --bake-generators) to export"},
    {"random_integers", "a random op: bake its draws (optimize/export --bake-generators) to export"},
    {"scatter", "lax.scatter (general scatter dimension numbers) has no lowering yet"},
    {"scatter_add", "lax.scatter_add (general scatter dimension numbers) has no lowering yet"},
};

}  // namespace

const CanonicalLowering* FindCanonicalLowering(std::string_view canonical) {
  auto it = std::lower_bound(std::begin(kTable), std::end(kTable), canonical,
                             [](const CanonicalLowering& row, std::string_view c) { return row.canonical < c; });
  if (it == std::end(kTable) || it->canonical != canonical) return nullptr;
  return &*it;
}

std::span<const CanonicalLowering> AllCanonicalLowerings() { return kTable; }

std::string_view RefusalReason(std::string_view canonical) {
  for (const auto& [c, why] : kRefused) {
    if (c == canonical) return why;
  }
  return {};
}

bool TableIsSorted() {
  return std::is_sorted(std::begin(kTable), std::end(kTable),
                        [](const CanonicalLowering& a, const CanonicalLowering& b) { return a.canonical < b.canonical; }) &&
         std::adjacent_find(std::begin(kTable), std::end(kTable), [](const CanonicalLowering& a, const CanonicalLowering& b) {
           return a.canonical == b.canonical;
         }) == std::end(kTable);
}

}  // namespace onnx_export
}  // namespace ivytrace
