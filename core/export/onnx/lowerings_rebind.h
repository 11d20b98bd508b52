// Reusing a lowering on rewritten operands (issue 11): a lowering reads a value through
// LoweringContext::In, so a caller that wants, say, np.nansum to be np.sum of the input with its
// NaN zeroed emits the Where, binds the input's value to the Where's output while the sum's
// lowering runs, and restores the binding after. A result can be bound the same way to a
// temporary, which the caller then post-processes into the real result.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/export/onnx/lowering_context.h"

namespace ivytrace {
namespace onnx_export {

class Rebinding {
 public:
  explicit Rebinding(LoweringContext& ctx) : ctx_(ctx) {}
  Rebinding(const Rebinding&) = delete;
  Rebinding& operator=(const Rebinding&) = delete;
  ~Rebinding() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) ctx_.BindValue(it->first, it->second);
  }
  // Reads of `v` give `name` until this object goes.
  void Bind(ValueId v, const std::string& name) {
    saved_.emplace_back(v, ctx_.IsDefined(v) ? ctx_.In(v) : std::string());
    ctx_.BindValue(v, name);
  }
  // The result `v` is written to a fresh temporary (returned); after Run, `v` is undefined again
  // and the caller defines it with ctx.Out(v).
  std::string BindResult(ValueId v, const char* hint) {
    const std::string t = ctx_.Temp(hint);
    Bind(v, t);
    return t;
  }
  // Runs another lowering as canonical op `canonical`.
  Status Run(LoweringFn fn, const Node& node, const BoundCall& call, const std::string& canonical) {
    const std::string before = ctx_.canonical();
    ctx_.SetCanonical(canonical);
    Status s = fn(node, call, ctx_);
    ctx_.SetCanonical(before);
    return s;
  }
  // Restores the bindings now (the destructor does nothing more).
  void Restore() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) ctx_.BindValue(it->first, it->second);
    saved_.clear();
  }

 private:
  LoweringContext& ctx_;
  std::vector<std::pair<ValueId, std::string>> saved_;
};

}  // namespace onnx_export
}  // namespace ivytrace
