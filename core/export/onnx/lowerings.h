// The named lowering functions (see FindLowering in lowering_context.h) and helpers they share.
// Each returns Unsupported with a one-line reason when a call cannot be expressed in ONNX.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/export/onnx/lowering_context.h"

namespace ivytrace {
namespace onnx_export {

#define IVY_LOWERING(name) Status name(const Node& node, const BoundCall& call, LoweringContext& ctx)
// lowerings.cc: arithmetic, gelu, softmax, identity, dropout, constant data.
IVY_LOWERING(LowerBinary);
IVY_LOWERING(LowerGelu);
IVY_LOWERING(LowerSoftmax);
IVY_LOWERING(LowerIdentity);
IVY_LOWERING(LowerDropout);
IVY_LOWERING(LowerFactory);
// lowerings_elementwise.cc
IVY_LOWERING(LowerUnary);
IVY_LOWERING(LowerActivation);
IVY_LOWERING(LowerElementwiseBinary);
IVY_LOWERING(LowerClip);
IVY_LOWERING(LowerWhere);
IVY_LOWERING(LowerSelectN);
IVY_LOWERING(LowerCast);
IVY_LOWERING(LowerMinMaxOverload);
// lowerings_nn.cc
IVY_LOWERING(LowerLinear);
IVY_LOWERING(LowerAdaptiveAvgPool1d);
IVY_LOWERING(LowerScatterElements);
IVY_LOWERING(LowerBucketize);
IVY_LOWERING(LowerGridSample);
IVY_LOWERING(LowerLogSumExp);
IVY_LOWERING(LowerAdaptiveAvgPool2d);
IVY_LOWERING(LowerBatchNorm);
IVY_LOWERING(LowerLayerNorm);
// lowerings_layers.cc
IVY_LOWERING(LowerMatmul);
IVY_LOWERING(LowerAddmm);
IVY_LOWERING(LowerEinsum);
IVY_LOWERING(LowerDotGeneral);
IVY_LOWERING(LowerConv);
IVY_LOWERING(LowerPool);
IVY_LOWERING(LowerReduceWindow);
IVY_LOWERING(LowerConvGeneralDilated);
IVY_LOWERING(LowerGroupNorm);
IVY_LOWERING(LowerInstanceNorm);
IVY_LOWERING(LowerRmsNorm);
IVY_LOWERING(LowerNormalize);
IVY_LOWERING(LowerPad);
IVY_LOWERING(LowerInterpolate);
IVY_LOWERING(LowerScaledDotProductAttention);
// lowerings_tensor.cc
IVY_LOWERING(LowerFlatten);
IVY_LOWERING(LowerReshape);
IVY_LOWERING(LowerTranspose);
IVY_LOWERING(LowerPermute);
IVY_LOWERING(LowerConcat);
IVY_LOWERING(LowerGetitem);
IVY_LOWERING(LowerMaskedFill);
IVY_LOWERING(LowerSetitem);
// lowerings_views.cc
IVY_LOWERING(LowerMoveaxis);
IVY_LOWERING(LowerNarrow);
IVY_LOWERING(LowerSelect);
IVY_LOWERING(LowerUnflatten);
IVY_LOWERING(LowerLerp);
IVY_LOWERING(LowerCumprod);
IVY_LOWERING(LowerDynamicSlice);
IVY_LOWERING(LowerDynamicUpdateSlice);
IVY_LOWERING(LowerDiagonal);
IVY_LOWERING(LowerTrace);
// lowerings_shape.cc
IVY_LOWERING(LowerReduce);
IVY_LOWERING(LowerVariance);
IVY_LOWERING(LowerArgReduce);
IVY_LOWERING(LowerVectorNorm);
IVY_LOWERING(LowerMeshgrid);
IVY_LOWERING(LowerWeightNorm);
IVY_LOWERING(LowerCumsum);
IVY_LOWERING(LowerTopK);
IVY_LOWERING(LowerStack);
IVY_LOWERING(LowerSplit);
IVY_LOWERING(LowerSqueeze);
IVY_LOWERING(LowerExpandDims);
IVY_LOWERING(LowerBroadcastTo);
IVY_LOWERING(LowerBroadcastInDim);
IVY_LOWERING(LowerTile);
IVY_LOWERING(LowerFlip);
IVY_LOWERING(LowerSlice);
IVY_LOWERING(LowerTake);
IVY_LOWERING(LowerGather);
IVY_LOWERING(LowerEmbedding);
IVY_LOWERING(LowerTriangle);
IVY_LOWERING(LowerFull);
IVY_LOWERING(LowerEye);
IVY_LOWERING(LowerIm2col);
IVY_LOWERING(LowerRepeatInterleave);
IVY_LOWERING(LowerArange);
IVY_LOWERING(LowerIota);
IVY_LOWERING(LowerOneHot);
IVY_LOWERING(LowerDiff);
// lowerings_numpy.cc
IVY_LOWERING(LowerAtan2);
IVY_LOWERING(LowerRoll);
IVY_LOWERING(LowerSearchsorted);
IVY_LOWERING(LowerBincount);
IVY_LOWERING(LowerHistc);
IVY_LOWERING(LowerHistogram);
IVY_LOWERING(LowerGroupedMm);
IVY_LOWERING(LowerNonzero);
IVY_LOWERING(LowerIndexAdd);
IVY_LOWERING(LowerCdist);
IVY_LOWERING(LowerTorchVariance);
IVY_LOWERING(LowerUnfoldWindows);
IVY_LOWERING(LowerTakeAlongAxis);
IVY_LOWERING(LowerPtp);
IVY_LOWERING(LowerNanToNum);
IVY_LOWERING(LowerLinspace);
IVY_LOWERING(LowerNumpyStacks);
IVY_LOWERING(LowerIsclose);
IVY_LOWERING(LowerPutAlongAxis);
// lowerings_special.cc
IVY_LOWERING(LowerSpecialUnary);
IVY_LOWERING(LowerGlu);
IVY_LOWERING(LowerPrelu);
IVY_LOWERING(LowerSpecialBinary);
IVY_LOWERING(LowerAddcmul);
IVY_LOWERING(LowerCosineSimilarity);
IVY_LOWERING(LowerPairwiseDistance);
IVY_LOWERING(LowerPixelShuffle);
// lowerings_specfn.cc
IVY_LOWERING(LowerSpecFnUnary);
IVY_LOWERING(LowerSpecFnBinary);
IVY_LOWERING(LowerGcd);
IVY_LOWERING(LowerComplexPart);
IVY_LOWERING(LowerOrthoPoly);
IVY_LOWERING(LowerFrexp);
IVY_LOWERING(LowerLdexpExact);
IVY_LOWERING(LowerReducePrecision);
// lowerings_losses.cc: torch.nn.functional's losses
IVY_LOWERING(LowerLoss);
IVY_LOWERING(LowerNllLoss);
IVY_LOWERING(LowerEmbeddingLoss);
// lowerings_torch_extra.cc
IVY_LOWERING(LowerRsub);
IVY_LOWERING(LowerAngleUnits);
IVY_LOWERING(LowerSignedInf);
IVY_LOWERING(LowerLdexp);
IVY_LOWERING(LowerNanReduce);
IVY_LOWERING(LowerInner);
IVY_LOWERING(LowerAddr);
IVY_LOWERING(LowerDist);
IVY_LOWERING(LowerKron);
IVY_LOWERING(LowerCross);
IVY_LOWERING(LowerRot90);
IVY_LOWERING(LowerDiag);
IVY_LOWERING(LowerMaskedSelect);
IVY_LOWERING(LowerIsin);
IVY_LOWERING(LowerChannelShuffle);
IVY_LOWERING(LowerLocalResponseNorm);
IVY_LOWERING(LowerLpPool);
IVY_LOWERING(LowerCountNonzero);
IVY_LOWERING(LowerAminmax);
IVY_LOWERING(LowerVarMean);
IVY_LOWERING(LowerLogcumsumexp);
IVY_LOWERING(LowerIndexFill);
IVY_LOWERING(LowerIndexCopy);
IVY_LOWERING(LowerSelectScatter);
IVY_LOWERING(LowerSliceScatter);
IVY_LOWERING(LowerCumExtreme);
IVY_LOWERING(LowerCummaxCummin);
IVY_LOWERING(LowerLaxSort);  // lowerings_jax_extra.cc
IVY_LOWERING(LowerBilinear);
IVY_LOWERING(LowerInnerTorch);
IVY_LOWERING(LowerInnerByFramework);
IVY_LOWERING(LowerCrossTorch);
IVY_LOWERING(LowerCrossByFramework);
IVY_LOWERING(LowerDiagTorch);
IVY_LOWERING(LowerDiagByFramework);
IVY_LOWERING(LowerIsinTorch);
IVY_LOWERING(LowerIsinByFramework);
IVY_LOWERING(LowerTensordotTorch);
IVY_LOWERING(LowerTensordotByFramework);
IVY_LOWERING(LowerColumnStackTorch);
IVY_LOWERING(LowerColumnStackByFramework);
IVY_LOWERING(LowerTrapezoidTorch);
IVY_LOWERING(LowerTrapezoidByFramework);
IVY_LOWERING(LowerNewFull);
IVY_LOWERING(LowerBroadcastTensors);
IVY_LOWERING(LowerTensordot);
IVY_LOWERING(LowerColumnStack);
IVY_LOWERING(LowerChainMatmul);
IVY_LOWERING(LowerAddbmm);
IVY_LOWERING(LowerAdaptivePool);
IVY_LOWERING(LowerTrapezoid);
// lowerings_rnn.cc: torch.lstm / gru / rnn_tanh / rnn_relu as ONNX LSTM / GRU / RNN
IVY_LOWERING(LowerRecurrent);
IVY_LOWERING(LowerRecurrentCell);
// lowerings_ufunc_methods.cc: np.<ufunc>.outer / .accumulate, lax.cummax/cummin
IVY_LOWERING(LowerUfuncOuter);
IVY_LOWERING(LowerUfuncAccumulate);
IVY_LOWERING(LowerCumLogSumExp);
// lowerings_numpy_extra.cc
IVY_LOWERING(LowerNanReduce);
IVY_LOWERING(LowerNanVariance);
IVY_LOWERING(LowerCountNonzero);
IVY_LOWERING(LowerAngleUnits);
IVY_LOWERING(LowerSignedInf);
IVY_LOWERING(LowerSignbit);
IVY_LOWERING(LowerCbrt);
IVY_LOWERING(LowerRot90);
IVY_LOWERING(LowerTensordot);
IVY_LOWERING(LowerInner);
IVY_LOWERING(LowerVdot);
IVY_LOWERING(LowerVecdot);
IVY_LOWERING(LowerCross);
IVY_LOWERING(LowerDiag);
IVY_LOWERING(LowerAtleastNd);
IVY_LOWERING(LowerColumnStack);
IVY_LOWERING(LowerAppend);
IVY_LOWERING(LowerMatvec);
IVY_LOWERING(LowerMultiDot);
IVY_LOWERING(LowerRollaxis);
IVY_LOWERING(LowerAverage);
IVY_LOWERING(LowerFftShift);
IVY_LOWERING(LowerKron);
IVY_LOWERING(LowerTri);
IVY_LOWERING(LowerSelectChoices);
IVY_LOWERING(LowerIsin);
IVY_LOWERING(LowerEdiff1d);
IVY_LOWERING(LowerTrapezoid);
IVY_LOWERING(LowerPolyval);
IVY_LOWERING(LowerMedian);
IVY_LOWERING(LowerDivmod);
IVY_LOWERING(LowerModf);
IVY_LOWERING(LowerVander);
IVY_LOWERING(LowerFftFreq);
IVY_LOWERING(LowerBroadcastArrays);
IVY_LOWERING(LowerResize);
IVY_LOWERING(LowerWindow);
IVY_LOWERING(LowerQuantile);
IVY_LOWERING(LowerDigitize);
IVY_LOWERING(LowerPolyder);
IVY_LOWERING(LowerNanQuantile);
IVY_LOWERING(LowerUnique);
IVY_LOWERING(LowerCompress);
IVY_LOWERING(LowerCov);
IVY_LOWERING(LowerMatrixNorm);
IVY_LOWERING(LowerMatrixPower);
IVY_LOWERING(LowerInterp);
IVY_LOWERING(LowerGradient);
IVY_LOWERING(LowerDelete);
IVY_LOWERING(LowerChoose);
IVY_LOWERING(LowerLogspace);
// lowerings_jax_extra.cc
IVY_LOWERING(LowerShift);
IVY_LOWERING(LowerBitCount);
IVY_LOWERING(LowerReduceXor);
IVY_LOWERING(LowerLaxScatter);
// lowerings_sym.cc: ivytrace.sym.* shape arithmetic
IVY_LOWERING(LowerSymSize);
IVY_LOWERING(LowerSymNumel);
IVY_LOWERING(LowerSymArith);
// lowerings_scatter.cc: writes into tensors (copy_, put, index_put, masked_scatter, scatter_reduce,
// index_reduce, fill_diagonal, diagonal_scatter, NumPy's in-place writes) and torch's ATen spellings
IVY_LOWERING(LowerAtenLoss);
IVY_LOWERING(LowerRrelu);
IVY_LOWERING(LowerAtenDropout);
IVY_LOWERING(LowerAtenEmbedding);
IVY_LOWERING(LowerAtenConvolution);
IVY_LOWERING(LowerAtenGridSampler);
IVY_LOWERING(LowerConstantPadNd);
IVY_LOWERING(LowerAtenCopyOf);
IVY_LOWERING(LowerSliceCopy);
IVY_LOWERING(LowerSumToSize);
IVY_LOWERING(LowerTorchLinspace);
IVY_LOWERING(LowerCopy);
IVY_LOWERING(LowerPut);
IVY_LOWERING(LowerIndexPut);
IVY_LOWERING(LowerMaskedScatter);
IVY_LOWERING(LowerScatterReduce);
IVY_LOWERING(LowerIndexReduce);
IVY_LOWERING(LowerFillDiagonal);
IVY_LOWERING(LowerDiagonalScatter);
// in[mask] = values in mask order (lowerings_scatter.cc; LowerSetitem's x[mask] = tensor).
void EmitMaskedPut(LoweringContext& ctx, const std::string& in, const std::string& mask, const std::string& values,
                   v1::DType d, bool accumulate, const std::string& out);
// lowerings_pool_extra.cc: max pooling with indices, max_unpool, fold, embedding_bag, affine_grid,
// pdist, unravel_index, multi_margin_loss, multilabel_margin_loss
IVY_LOWERING(LowerMaxPoolWithIndices);
IVY_LOWERING(LowerMaxPoolMaybeIndices);
IVY_LOWERING(LowerMaxUnpool);
IVY_LOWERING(LowerCol2im);
IVY_LOWERING(LowerUnravelIndex);
IVY_LOWERING(LowerPdist);
IVY_LOWERING(LowerMultiMarginLoss);
IVY_LOWERING(LowerMultilabelMarginLoss);
IVY_LOWERING(LowerAffineGrid);
IVY_LOWERING(LowerEmbeddingBag);
// lowerings_linalg.cc: det / slogdet / logdet, linalg.norm, torch's linalg spellings
IVY_LOWERING(LowerDet);
IVY_LOWERING(LowerLinalgNorm);
IVY_LOWERING(LowerMatrixNormByFramework);
IVY_LOWERING(LowerMultiDotByFramework);
IVY_LOWERING(LowerVanderByFramework);
IVY_LOWERING(LowerMatrixPowerByFramework);
IVY_LOWERING(LowerMsort);
IVY_LOWERING(LowerBlockDiag);
IVY_LOWERING(LowerCartesianProd);
IVY_LOWERING(LowerCombinations);
IVY_LOWERING(LowerDiagEmbed);
IVY_LOWERING(LowerRenorm);
IVY_LOWERING(LowerCorrelate);
IVY_LOWERING(LowerUnwrap);
IVY_LOWERING(LowerGeomspace);
IVY_LOWERING(LowerGradientByFramework);
IVY_LOWERING(LowerTrimZeros);
IVY_LOWERING(LowerPoly);
IVY_LOWERING(LowerBlock);
// lowerings_stats.cc: torch's order statistics, quantiles, mode, searchsorted, cov
IVY_LOWERING(LowerMedianByFramework);
IVY_LOWERING(LowerNanQuantileByFramework);
IVY_LOWERING(LowerQuantileByFramework);
IVY_LOWERING(LowerKthvalue);
IVY_LOWERING(LowerModeStat);
IVY_LOWERING(LowerSearchsortedByFramework);
IVY_LOWERING(LowerCovByFramework);
IVY_LOWERING(LowerUniqueByFramework);
IVY_LOWERING(LowerUniqueAll);
IVY_LOWERING(LowerUniqueConsecutive);
IVY_LOWERING(LowerLexsort);
// lowerings_numpy.cc: atan2(y, x) of float tensors of dtype d (IEEE's signed zeros and
// infinities), into `out` or, when it is empty, a new temporary; returns its name.
std::string EmitAtan2(LoweringContext& ctx, const std::string& y, const std::string& x, v1::DType d,
                      const std::string& out = "");

// lowerings_complex.cc: complex values as float pairs [..., 2] (FFTs, stft, complex parts and
// arithmetic); FindComplexLowering is the row for a node that reads or defines a complex value
// (null: refused, its lowering does not handle pairs).
IVY_LOWERING(LowerFft);
IVY_LOWERING(LowerStft);
IVY_LOWERING(LowerIstft);
IVY_LOWERING(LowerComplexUnary);
IVY_LOWERING(LowerComplexBinary);
IVY_LOWERING(LowerComplexShape);
IVY_LOWERING(LowerLaxFft);
IVY_LOWERING(LowerComplexGetitem);
IVY_LOWERING(LowerComplexConcat);
IVY_LOWERING(LowerComplexProduct);
// lowerings_rest.cc: norm_except_dim, torch and NumPy histograms, np.insert, np.kaiser,
// lax.select_and_scatter_add
IVY_LOWERING(LowerNewTensor);
IVY_LOWERING(LowerNormExceptDim);
IVY_LOWERING(LowerTorchHistogram);
IVY_LOWERING(LowerNumpyHistogramdd);
IVY_LOWERING(LowerInsert);
IVY_LOWERING(LowerKaiser);
IVY_LOWERING(LowerSelectAndScatterAdd);
IVY_LOWERING(LowerCompareFold);
IVY_LOWERING(LowerLuPivotsToPermutation);
#undef IVY_LOWERING

// normalize.cc: a framework's arguments as the canonical op's parameters; `canonical` gets the
// canonical op the lowering table is keyed by.
Status NormalizeCall(const Node& node, BoundCall* call, std::string* canonical);

bool IsComplexDType(v1::DType d);
struct CanonicalLowering;
const CanonicalLowering* FindComplexLowering(std::string_view canonical);

// --- shared helpers ------------------------------------------------------------------------------
// The node's single tensor result, or Unsupported.
Status SingleResult(const Node& node, ValueId* out);
// Every result tensor of a node, in ForEachTensor order.
std::vector<ValueId> ResultTensors(const Node& node);
// A torch call (for lowerings shared by frameworks that read torch's own spellings).
bool FromTorch(const Node& node);
// The tensor bound to `param`, or Unsupported naming the parameter.
Status TensorParam(const BoundCall& call, const char* param, ValueId* out);
// Maps a negative axis into [0, rank); Unsupported when out of range.
Status NormalizeAxis(int64_t axis, int rank, int64_t* out);
// A dtype argument (torch.float32 as a dtype or a symbol); nullopt for None or anything else.
std::optional<v1::DType> ArgDType(const v1::Arg& arg);
// The dtype torch/NumPy promote tensor and number operands to.
v1::DType PromotedDType(const LoweringContext& ctx, const std::vector<const v1::Arg*>& operands);
// A tensor or Python-number operand as an ONNX value of `dtype`.
Status OperandAs(LoweringContext& ctx, const v1::Arg& arg, v1::DType dtype, std::string* out);
// lowerings_rest.cc: the combine step of lax.scatter_max/min (target [L..., W...], idx [b..., q],
// upd [b..., W...]; `window_rank` W dims).
Status EmitScatterExtreme(LoweringContext& ctx, const std::string& target, const std::string& idx, const std::string& upd,
                          int64_t q, int nb, int window_rank, bool is_max, v1::DType d, std::string* out);
// lowerings_rest.cc: torch's polygamma(n, x) for n >= 2 (x and the result in `d`).
Status EmitPolygammaHigh(LoweringContext& ctx, const std::string& x, v1::DType d, int64_t n, std::string* out);
// A 1-D initializer of `n` copies of `value`.
std::string Filled(LoweringContext& ctx, int64_t n, double value, v1::DType dtype, const char* hint);
// lowerings_sym.cc: whether `arg` holds a shape-derived (ivytrace.sym) value, and an int, list or
// tuple of ints whose items may be such values as a 1-D int64 ONNX value (computed at run time
// when an item is symbolic).
bool IsSymbolicArg(const LoweringContext& ctx, const v1::Arg& arg);
Status DynamicInts(LoweringContext& ctx, const v1::Arg& arg, std::string* out);
// The items of a list or tuple argument; nullopt for any other kind.
std::optional<std::vector<const v1::Arg*>> SequenceItems(const v1::Arg& arg);
// Guards compiled into the model. A guard is checkable when the graph holds its value and it
// recorded a bool, int or float. EmitGuardCheck emits its check: a Reshape named
// "ivytrace guard <i>: <op> at <file>:<line>: recorded <value>" that onnxruntime fails (naming it)
// when the input breaks the guard, and returns its output: a [0] (int64, shape [1]).
// CombineGuardChecks makes of such outputs a 0-d bool gate; GateOn returns `value` unchanged but
// readable only after the gate's checks ran. The exporter reads every value defined before a
// check through that check's gate, so no node recorded after a guard runs (and trips over the
// path the input does not take) before the guard is checked.
bool IsSymbolicValue(const Graph& graph, ValueId v);
bool GuardCheckable(const Graph& graph, const v1::Guard& guard);
std::string EmitGuardCheck(LoweringContext& ctx, const v1::Guard& guard, size_t index);
std::string CombineGuardChecks(LoweringContext& ctx, const std::vector<std::string>& checks);
std::string GateOn(LoweringContext& ctx, const std::string& value, v1::DType dtype, const std::string& gate);
// Where(cond, a, b) of `dtype` values into `out`, through a type onnxruntime's CPU Where has a
// kernel for (bool, 8/16-bit ints, bfloat16 and uint64 have none) and back, bit-exact.
void EmitWhere(LoweringContext& ctx, const std::string& cond, const std::string& a, const std::string& b,
               v1::DType dtype, const std::string& out);

}  // namespace onnx_export
}  // namespace ivytrace
