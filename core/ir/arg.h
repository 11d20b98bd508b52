// Helpers over v1::Arg, the tree of Python values (tensors as references) that ops take and return.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ivytrace/v1/common.pb.h"

namespace ivytrace {

// Calls `fn` on every tensor reference in `arg`, depth first, left to right.
void ForEachTensor(const v1::Arg& arg, const std::function<void(const v1::TensorRef&)>& fn);
void ForEachTensorMutable(v1::Arg* arg, const std::function<void(v1::TensorRef*)>& fn);

// True if the tree holds at least one tensor reference.
bool HasTensor(const v1::Arg& arg);

// Scalar accessors: nullopt when `arg` is not of that kind. Int accepts bools; Double accepts ints.
std::optional<int64_t> AsInt(const v1::Arg& arg);
std::optional<double> AsDouble(const v1::Arg& arg);
std::optional<bool> AsBool(const v1::Arg& arg);
// An int or a list/tuple of ints (torch's "int or tuple" parameters such as stride). A single int
// is repeated `broadcast` times when broadcast > 0.
std::optional<std::vector<int64_t>> AsIntList(const v1::Arg& arg, int broadcast = 0);
bool IsNone(const v1::Arg& arg);

// Short human-readable rendering, e.g. "%3", "[1, 2]", "slice(None, 2, None)". Tensor refs print
// as %<value> in graphs (where TensorRef.value is set) and as t<id>.v<version> in traces.
std::string ArgToString(const v1::Arg& arg, bool graph_refs);

const char* DTypeName(v1::DType d);  // "float32", ...
size_t DTypeSize(v1::DType d);       // bytes per element, 0 if unknown

}  // namespace ivytrace
