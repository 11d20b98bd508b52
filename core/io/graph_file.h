// Graph files: what `ivytrace optimize` writes and every command reads back.
//
// On disk: the 8 bytes "IVYGRF01", then the bytes of one serialized ivytrace.v1.Graph
// (proto/ivytrace/v1/graph.proto), so any protobuf reader can read it (Python:
// graph_pb2.Graph.FromString(data[8:])). It holds what Graph::ToProto() would make, but neither
// side ever holds a v1::Graph: the writer encodes the in-memory Graph field by field into a
// buffered file stream (the outputs last, as an end marker), and the reader walks the Graph
// message's fields and turns each value, constant and node into its in-memory form as it comes.
// A million-node graph is never copied whole, and no protobuf message bigger than one node or
// constant is built or parsed, so the file is not bound by protobuf's 2 GB message limit either.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// Writes `graph` (its live nodes) to `path` atomically: a temporary file beside it, renamed over
// it on success; on failure nothing is left behind and an existing file keeps its contents.
Status WriteGraphFile(const std::string& path, const Graph& graph);

// Reads a graph file into `graph` (replacing what it held), as Graph::FromProto would build it.
// A missing file is NotFound; a wrong magic, truncated or damaged file is Corruption with a
// message naming the file, the byte offset and what was expected there.
Status ReadGraphFile(const std::string& path, Graph* graph);

// Writing other files the way graph files are written, one top-level field at a time (plan files
// use these too: core/export/plan_exporter.cc).
namespace streamed_file {

// The field every streamed file ends with: fixed32, the zlib CRC-32 of every byte of the file
// before its tag (magic included). Field 15 of both ivytrace.v1.Graph and ivytrace.v1.Plan, so a
// protobuf parser still reads the file; readers check it and that nothing follows it.
inline constexpr int kChecksumField = 15;
inline constexpr size_t kChecksumBytes = 5;  // tag (one byte) + fixed32

// Writes `path` atomically (WriteFileAtomically) through a CodedOutputStream over a file stream
// with a 1 MB buffer: `write` writes all of the contents, magic included; then the checksum field
// is appended. An error `write`
// returns is returned as it is; a failed write to the file is an IOError naming `path`.
Status Write(const std::string& path,
             const std::function<Status(google::protobuf::io::CodedOutputStream*)>& write);

// Writes `m` as field `field` of the message being written: tag, length, bytes. False, with nothing
// written, if `m` is over protobuf's 2 GB message limit.
template <typename M>
bool WriteMessageField(int field, const M& m, google::protobuf::io::CodedOutputStream* out) {
  using WFL = google::protobuf::internal::WireFormatLite;
  if (m.ByteSizeLong() > static_cast<size_t>(INT_MAX)) return false;
  WFL::WriteMessage(field, m, out);  // uses the size ByteSizeLong() just cached
  return true;
}

}  // namespace streamed_file

namespace graph_file_internal {
// ReadGraphFile, starting a fresh CodedInputStream once the current one has read
// `fresh_stream_after` bytes (the default is 256 MB; tests make it small to exercise the switch).
Status ReadGraphFile(const std::string& path, Graph* graph, int64_t fresh_stream_after);
}  // namespace graph_file_internal

}  // namespace ivytrace
