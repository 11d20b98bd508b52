// The whole of a graph, ONNX model or plan as one JSON document: what `inspect --json` prints for
// them and what `diff` compares. The schema is versioned ("schema": "ivytrace.inspect/1") and
// documented in the README ("inspect --json"); a change that removes or renames a key bumps it.
//
// Nothing in it depends on the machine or the run that made the file: value numbers, op names,
// argument signatures (tensors as dtype[shape]), shapes, modules, source lines as recorded.
#pragma once

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace::cli {

inline constexpr const char* kInspectSchema = "ivytrace.inspect/1";

// `kind` is "trace" (a region built from a trace, no passes) or "graph".
nlohmann::json DescribeGraph(const Graph& graph, const std::string& kind, const std::string& file);
nlohmann::json DescribeOnnx(const onnx::ModelProto& model, const std::string& file);
nlohmann::json DescribePlan(const v1::Plan& plan, const std::string& file);

// The description of any file ivytrace reads (a trace's `region`, built without passes), or a
// baseline JSON written by `inspect --json` (checked for the schema, returned as is).
Status DescribeFile(const std::string& path, const std::string& region, nlohmann::json* out);

}  // namespace ivytrace::cli
