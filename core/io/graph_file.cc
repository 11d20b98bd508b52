#include "core/io/graph_file.h"

#include <climits>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include "core/io/file_kind.h"
#include "core/util/atomic_file.h"

namespace ivytrace {
namespace {

namespace pb = ::google::protobuf;
using pb::io::CodedOutputStream;
using WFL = pb::internal::WireFormatLite;

constexpr auto kLengthDelimited = WFL::WIRETYPE_LENGTH_DELIMITED;
// Buffer of the file stream: big enough that writes are a few hundred syscalls for a
// million-node graph, small enough to stay in cache.
constexpr int kFileBlock = 1 << 20;

size_t TagSize(int field) { return WFL::TagSize(field, WFL::TYPE_BYTES); }

// ---------------------------------------------------------------------------------------------
// Writing
//
// The top-level v1::Graph is written by hand, field by field. Building the whole v1::Graph
// first, as optimize once did, copied every node's args into millions of small messages and then
// into one string the size of the file (1.9 GB peak for 1M ops, most of the write time spent
// zeroing fresh pages), and protobuf refuses to serialize a message over 2 GB. Each value and
// node is one length-delimited element whose size is computed from its parts; the messages the
// in-memory graph already holds (args, results, constants, ...) are sized and serialized by
// protobuf itself. (Copying each node into one reused v1::Node and letting protobuf serialize
// that measured ~40% slower: 350-384 ms against 215-277 ms for the nodes of a 1M-op trace.)
//
// Fields go in field-number order, as protobuf's serializer writes them, except `outputs` (7),
// which comes last, after the guards and pass names: protobuf parsers take fields in any order,
// and a last field that is always written is an end marker. A file cut short anywhere lacks it
// (or holds part of it), so the reader reports every truncation; in field-number order a cut just
// before the guards or pass names would read as a smaller, valid graph.

// A message field: tag, length, bytes. False if the message is over protobuf's 2 GB limit.
template <typename M>
bool WriteMessageField(int field, const M& m, CodedOutputStream* out) {
  if (m.ByteSizeLong() > static_cast<size_t>(INT_MAX)) return false;
  WFL::WriteMessage(field, m, out);  // uses the size ByteSizeLong() just cached
  return true;
}

template <typename M>
size_t MessageFieldSize(int field, const M& m) {
  return TagSize(field) + WFL::MessageSize(m);  // caches the size for WriteMessage
}

// A Value as the v1::ValueInfo Graph::ToProto makes of it (proto3: zero fields are not written).
struct ValueInfoFields {
  explicit ValueInfoFields(const Value& v)
      : constant(v.constant >= 0 ? static_cast<uint32_t>(v.constant) : 0),
        producer(v.producer >= 0 ? static_cast<uint32_t>(v.producer) : 0),
        recorded(v.recorded >= 0 ? static_cast<uint32_t>(v.recorded) + 1 : 0) {}
  uint32_t constant, producer, recorded;
};

using VI = v1::ValueInfo;

size_t ShapeBytes(const std::vector<int64_t>& shape) {
  size_t n = 0;
  for (int64_t d : shape) n += WFL::Int64Size(d);
  return n;
}

size_t ValueInfoSize(const Value& v, const ValueInfoFields& f, size_t shape_bytes) {
  size_t n = 0;
  if (v.kind != 0) n += TagSize(VI::kKindFieldNumber) + WFL::EnumSize(v.kind);
  if (v.dtype != 0) n += TagSize(VI::kDtypeFieldNumber) + WFL::EnumSize(v.dtype);
  if (!v.shape.empty()) n += TagSize(VI::kShapeFieldNumber) + WFL::LengthDelimitedSize(shape_bytes);
  if (!v.name.empty()) n += TagSize(VI::kNameFieldNumber) + WFL::StringSize(v.name);
  if (f.constant != 0) n += TagSize(VI::kConstantFieldNumber) + WFL::UInt32Size(f.constant);
  if (f.producer != 0) n += TagSize(VI::kProducerFieldNumber) + WFL::UInt32Size(f.producer);
  if (v.tensor_id != 0) n += TagSize(VI::kTensorIdFieldNumber) + WFL::UInt64Size(v.tensor_id);
  if (v.tensor_version != 0) {
    n += TagSize(VI::kTensorVersionFieldNumber) + WFL::UInt32Size(v.tensor_version);
  }
  if (v.storage != 0) n += TagSize(VI::kStorageFieldNumber) + WFL::UInt64Size(v.storage);
  if (f.recorded != 0) n += TagSize(VI::kRecordedFieldNumber) + WFL::UInt32Size(f.recorded);
  return n;
}

void WriteValue(const Value& v, CodedOutputStream* out) {
  const ValueInfoFields f(v);
  const size_t shape_bytes = ShapeBytes(v.shape);
  WFL::WriteTag(v1::Graph::kValuesFieldNumber, kLengthDelimited, out);
  out->WriteVarint32(static_cast<uint32_t>(ValueInfoSize(v, f, shape_bytes)));
  if (v.kind != 0) WFL::WriteEnum(VI::kKindFieldNumber, v.kind, out);
  if (v.dtype != 0) WFL::WriteEnum(VI::kDtypeFieldNumber, v.dtype, out);
  if (!v.shape.empty()) {  // packed, as proto3 repeated scalars are
    WFL::WriteTag(VI::kShapeFieldNumber, kLengthDelimited, out);
    out->WriteVarint32(static_cast<uint32_t>(shape_bytes));
    for (int64_t d : v.shape) WFL::WriteInt64NoTag(d, out);
  }
  if (!v.name.empty()) WFL::WriteString(VI::kNameFieldNumber, v.name, out);
  if (f.constant != 0) WFL::WriteUInt32(VI::kConstantFieldNumber, f.constant, out);
  if (f.producer != 0) WFL::WriteUInt32(VI::kProducerFieldNumber, f.producer, out);
  if (v.tensor_id != 0) WFL::WriteUInt64(VI::kTensorIdFieldNumber, v.tensor_id, out);
  if (v.tensor_version != 0) WFL::WriteUInt32(VI::kTensorVersionFieldNumber, v.tensor_version, out);
  if (v.storage != 0) WFL::WriteUInt64(VI::kStorageFieldNumber, v.storage, out);
  if (f.recorded != 0) WFL::WriteUInt32(VI::kRecordedFieldNumber, f.recorded, out);
}

using PN = v1::Node;

// A node as the v1::Node Graph::ToProto makes of it: result and loc are always set (present even
// when empty), the other fields only when not zero/empty. Sizing the sub-messages caches their
// sizes, which WriteNode's WFL::WriteMessage calls then use.
size_t NodeSize(const Node& n, const std::string& canonical) {
  size_t s = 0;
  if (!n.op.empty()) s += TagSize(PN::kOpFieldNumber) + WFL::StringSize(n.op);
  if (!canonical.empty()) s += TagSize(PN::kCanonicalFieldNumber) + WFL::StringSize(canonical);
  for (const auto& a : n.args) s += MessageFieldSize(PN::kArgsFieldNumber, a);
  for (const auto& k : n.kwargs) s += MessageFieldSize(PN::kKwargsFieldNumber, k);
  s += MessageFieldSize(PN::kResultFieldNumber, n.result);
  for (const auto& m : n.mutated) s += MessageFieldSize(PN::kMutatedFieldNumber, m);
  s += MessageFieldSize(PN::kLocFieldNumber, n.loc);
  if (!n.scope.empty()) s += TagSize(PN::kScopeFieldNumber) + WFL::StringSize(n.scope);
  if (n.flags != 0) s += TagSize(PN::kFlagsFieldNumber) + WFL::UInt32Size(n.flags);
  return s;
}

bool WriteNode(const Node& n, CodedOutputStream* out) {
  const std::string& canonical = n.canonical();
  const size_t size = NodeSize(n, canonical);
  if (size > static_cast<size_t>(INT_MAX)) return false;
  WFL::WriteTag(v1::Graph::kNodesFieldNumber, kLengthDelimited, out);
  out->WriteVarint32(static_cast<uint32_t>(size));
  if (!n.op.empty()) WFL::WriteString(PN::kOpFieldNumber, n.op, out);
  if (!canonical.empty()) WFL::WriteString(PN::kCanonicalFieldNumber, canonical, out);
  for (const auto& a : n.args) WFL::WriteMessage(PN::kArgsFieldNumber, a, out);
  for (const auto& k : n.kwargs) WFL::WriteMessage(PN::kKwargsFieldNumber, k, out);
  WFL::WriteMessage(PN::kResultFieldNumber, n.result, out);
  for (const auto& m : n.mutated) WFL::WriteMessage(PN::kMutatedFieldNumber, m, out);
  WFL::WriteMessage(PN::kLocFieldNumber, n.loc, out);
  if (!n.scope.empty()) WFL::WriteString(PN::kScopeFieldNumber, n.scope, out);
  if (n.flags != 0) WFL::WriteUInt32(PN::kFlagsFieldNumber, n.flags, out);
  return true;
}

using G = v1::Graph;

// Writes the magic and the Graph's fields. Returns an error for an element over 2 GB; stream
// errors show in out->HadError().
Status WriteGraph(const Graph& g, const std::string& path, CodedOutputStream* out) {
  auto too_big = [&](const std::string& what) {
    return Status::InvalidArgument("cannot write '" + path + "': " + what +
                                   " is over protobuf's 2 GB message limit");
  };
  out->WriteRaw(kGraphMagic, 8);
  if (!g.name.empty()) WFL::WriteString(G::kNameFieldNumber, g.name, out);
  if (!WriteMessageField(G::kSourceFieldNumber, g.source, out)) return too_big("the header");
  for (const Value& v : g.values) WriteValue(v, out);
  for (const auto& in : g.inputs) {
    if (!WriteMessageField(G::kInputsFieldNumber, in, out)) return too_big("input '" + in.name() + "'");
  }
  for (size_t i = 0; i < g.constants.size(); ++i) {
    if (!WriteMessageField(G::kConstantsFieldNumber, g.constants[i], out)) {
      return too_big("constant " + std::to_string(i) + " ('" + g.constants[i].name() + "')");
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.erased) continue;
    if (!WriteNode(n, out)) {
      return too_big("node " + std::to_string(i) + " (" + n.op + ")");
    }
  }
  for (const auto& gd : g.guards) {
    if (!WriteMessageField(G::kGuardsFieldNumber, gd, out)) return too_big("a guard");
  }
  for (const auto& p : g.passes_applied) WFL::WriteString(G::kPassesAppliedFieldNumber, p, out);
  // Last, always (even when empty): the end marker, see above.
  if (!WriteMessageField(G::kOutputsFieldNumber, g.outputs, out)) return too_big("the outputs");
  return Status::Ok();
}

}  // namespace

Status WriteGraphFile(const std::string& path, const Graph& graph) {
  return WriteFileAtomically(path, [&](int fd) {
    pb::io::FileOutputStream file(fd, kFileBlock);
    Status st;
    bool coded_error = false;
    {
      CodedOutputStream out(&file);
      st = WriteGraph(graph, path, &out);
      coded_error = out.HadError();
    }  // flushes what it buffered into `file`
    if (!st.ok()) return st;
    if (coded_error || !file.Flush()) {
      return Status::IOError("cannot write '" + path + "': " + std::strerror(file.GetErrno()));
    }
    return Status::Ok();
  });
}

}  // namespace ivytrace
