// Graph files: what `ivytrace optimize` writes and every command reads back.
//
// On disk: the 8 bytes "IVYGRF01", then the bytes of one serialized ivytrace.v1.Graph
// (proto/ivytrace/v1/graph.proto), so any protobuf reader can read it (Python:
// graph_pb2.Graph.FromString(data[8:])). It holds what Graph::ToProto() would make, but the
// writer never builds a v1::Graph: it encodes the in-memory Graph field by field into a buffered
// file stream (the outputs last, as an end marker). A million-node graph is never copied whole,
// and no protobuf message bigger than one node or constant is built, so the file is not bound by
// protobuf's 2 GB message limit either.
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// Writes `graph` (its live nodes) to `path` atomically: a temporary file beside it, renamed over
// it on success; on failure nothing is left behind and an existing file keeps its contents.
Status WriteGraphFile(const std::string& path, const Graph& graph);

}  // namespace ivytrace
