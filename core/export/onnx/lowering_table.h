// The ONNX lowerings, keyed by canonical op (lowering_table.cc holds the one table).
#pragma once

#include <span>
#include <string_view>

#include "core/export/onnx/lowering_context.h"

namespace ivytrace {
namespace onnx_export {

struct CanonicalLowering {
  std::string_view canonical;  // canonical op (schemas/ `canonical:`, after normalize.cc)
  std::string_view onnx;       // the ONNX ops it emits, for people and `ivytrace ops`
  LoweringFn fn;
};

// The row for `canonical`, or null when it has none.
const CanonicalLowering* FindCanonicalLowering(std::string_view canonical);
// Every row, sorted by canonical op.
std::span<const CanonicalLowering> AllCanonicalLowerings();
// Why a canonical op without a row is refused ("" when no reason is recorded).
std::string_view RefusalReason(std::string_view canonical);
// The table is sorted and has no duplicate rows (checked by the C++ tests).
bool TableIsSorted();
// The canonical op the table is consulted with for a node: its schema's canonical op after
// argument normalization; "" when it has none. A convenience for `ivytrace ops`.
std::string NormalizedCanonical(const std::string& framework_op, const std::string& canonical);

}  // namespace onnx_export
}  // namespace ivytrace
