#include "core/io/graph_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include "core/io/crc_input_stream.h"
#include "core/io/crc_output_stream.h"
#include "core/io/file_kind.h"
#include "core/schema/schema_registry.h"
#include "core/util/atomic_file.h"

namespace ivytrace {
namespace {

namespace pb = ::google::protobuf;
using pb::io::CodedInputStream;
using pb::io::CodedOutputStream;
using WFL = pb::internal::WireFormatLite;
using streamed_file::WriteMessageField;

constexpr auto kLengthDelimited = WFL::WIRETYPE_LENGTH_DELIMITED;
// Buffer of the file streams: big enough that reads and writes are a few hundred syscalls for a
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
// A node's loc, a v1::SourceLocation message (file = 1, line = 2; proto3: a field at its default
// is not written), from the node's SourceLoc without making the message.
size_t LocSize(const SourceLoc& loc) {
  size_t s = 0;
  if (!loc.file().empty()) s += TagSize(v1::SourceLocation::kFileFieldNumber) + WFL::StringSize(loc.file());
  if (loc.line() != 0) s += TagSize(v1::SourceLocation::kLineFieldNumber) + WFL::UInt32Size(loc.line());
  return s;
}

void WriteLoc(const SourceLoc& loc, CodedOutputStream* out) {
  WFL::WriteTag(PN::kLocFieldNumber, kLengthDelimited, out);
  out->WriteVarint32(static_cast<uint32_t>(LocSize(loc)));
  if (!loc.file().empty()) WFL::WriteString(v1::SourceLocation::kFileFieldNumber, loc.file(), out);
  if (loc.line() != 0) WFL::WriteUInt32(v1::SourceLocation::kLineFieldNumber, loc.line(), out);
}

size_t NodeSize(const Node& n, const std::string& canonical) {
  size_t s = 0;
  if (!n.op.empty()) s += TagSize(PN::kOpFieldNumber) + WFL::StringSize(n.op);
  if (!canonical.empty()) s += TagSize(PN::kCanonicalFieldNumber) + WFL::StringSize(canonical);
  for (const auto& a : n.args) s += MessageFieldSize(PN::kArgsFieldNumber, a);
  for (const auto& k : n.kwargs) s += MessageFieldSize(PN::kKwargsFieldNumber, k);
  s += MessageFieldSize(PN::kResultFieldNumber, n.result);
  for (const auto& m : n.mutated) s += MessageFieldSize(PN::kMutatedFieldNumber, m);
  const size_t loc = LocSize(n.loc);
  s += TagSize(PN::kLocFieldNumber) + WFL::UInt32Size(static_cast<uint32_t>(loc)) + loc;
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
  WriteLoc(n.loc, out);
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

// ---------------------------------------------------------------------------------------------
// Reading

template <typename C>
int64_t Count(const C& c) {
  return static_cast<int64_t>(c.size());
}

// Walks the fields of the file's top-level Graph message with CodedInputStream and parses each
// value, constant and node on its own (into a reused message where the in-memory form differs),
// converting it at once as Graph::FromProto does. A CodedInputStream refuses to read past
// INT_MAX bytes in total (protobuf 3.21's total-bytes limit, a hard cap: SetTotalBytesLimit takes
// an int), so the reader starts a fresh one on the same file stream every `fresh_stream_after`
// bytes, between elements, and also before an element that would cross the cap; the byte
// offsets in messages are counted across streams.
class GraphFileReader {
 public:
  GraphFileReader(const std::string& path, int fd, int64_t file_size, int64_t fresh_stream_after)
      : path_(path), file_size_(file_size), fresh_after_(fresh_stream_after), file_(fd, kFileBlock), crc_(&file_) {
    coded_.emplace(&crc_);
  }

  Status Read(Graph* g);

 private:
  int64_t Offset() const { return base_ + coded_->CurrentPosition(); }
  void FreshStream() {
    base_ += coded_->CurrentPosition();
    coded_.reset();  // backs the unread part of its buffer up into file_
    coded_.emplace(&crc_);
  }
  // Reads the checksum field that ends the file (at byte `at`) and compares it with the CRC of
  // every byte before it.
  Status ReadChecksum(int64_t at);
  Status Damaged(int64_t at, const std::string& expected) const;
  // Reads the length and body of the length-delimited field whose tag (at byte `at`) was just
  // read, merging the body into `msg`. The element is named in messages as `what` followed by
  // `index` when that is not negative ("node 12"), a string made only when there is an error.
  Status ReadMessage(pb::MessageLite* msg, int64_t at, const char* what, int64_t index = -1);
  Status ReadString(std::string* s, int64_t at, const char* what);
  Status Truncated(int64_t at, const std::string& what, int length) const;
  Status ReadNode(Graph* g, int64_t at);
  Status ReadValue(Graph* g, int64_t at);

  const std::string& path_;
  const int64_t file_size_;
  const int64_t fresh_after_;
  pb::io::FileInputStream file_;
  internal::CrcInputStream crc_;  // over file_: the checksum of what was read
  std::optional<CodedInputStream> coded_;
  int64_t base_ = 0;  // file offset of coded_'s position 0
  v1::Node node_;     // scratch, reused for every node
  v1::ValueInfo value_;
};

Status GraphFileReader::Damaged(int64_t at, const std::string& expected) const {
  if (file_.GetErrno() != 0) {
    return Status::IOError("graph '" + path_ + "': read failed near byte " + std::to_string(at) + ": " +
                           std::strerror(file_.GetErrno()));
  }
  return Status::Corruption("graph '" + path_ + "': truncated or damaged at byte " + std::to_string(at) +
                            ": expected " + expected);
}

Status GraphFileReader::Truncated(int64_t at, const std::string& what, int length) const {
  return Status::Corruption("graph '" + path_ + "': truncated: " + what + " at byte " + std::to_string(at) +
                            " is " + std::to_string(length) + " bytes long but the file ends at byte " +
                            std::to_string(file_size_));
}

Status GraphFileReader::ReadMessage(pb::MessageLite* msg, int64_t at, const char* what, int64_t index) {
  auto name = [&] { return index < 0 ? std::string(what) : std::string(what) + " " + std::to_string(index); };
  int length = 0;
  if (!coded_->ReadVarintSizeAsInt(&length)) return Damaged(at, "the length of " + name());
  const int64_t body = Offset();
  if (body + length > file_size_) return Truncated(at, name(), length);
  if (length > INT_MAX - coded_->CurrentPosition()) FreshStream();
  const auto [limit, depth_left] = coded_->IncrementRecursionDepthAndPushLimit(length);
  // MergePartialFromCodedStream also stops, successfully, at a 0 or end-group tag, and
  // ConsumedEntireMessage() (which DecrementRecursionDepthAndPopLimit returns) stays true once an
  // earlier element ended well: only "the parse stopped exactly at the element's end" is proof.
  const bool parsed = depth_left >= 0 && msg->MergePartialFromCodedStream(&*coded_) &&
                      coded_->BytesUntilLimit() == 0;
  coded_->DecrementRecursionDepthAndPopLimit(limit);
  if (!parsed) {
    return Damaged(at, name() + " (" + std::to_string(length) + " bytes from byte " + std::to_string(body) +
                           ") to be a valid " + msg->GetTypeName());
  }
  return Status::Ok();
}

Status GraphFileReader::ReadString(std::string* s, int64_t at, const char* what) {
  const int64_t len_at = Offset();
  int length = 0;
  if (!coded_->ReadVarintSizeAsInt(&length)) return Damaged(at, std::string("the length of ") + what);
  if (Offset() + length > file_size_) return Truncated(at, what, length);
  if (length > INT_MAX - coded_->CurrentPosition()) FreshStream();
  if (!coded_->ReadString(s, length) ||
      !WFL::VerifyUtf8String(s->data(), length, WFL::PARSE, what)) {
    return Damaged(len_at, std::string(what) + " to be a UTF-8 string");
  }
  return Status::Ok();
}

Status GraphFileReader::ReadValue(Graph* g, int64_t at) {
  value_.Clear();
  IVY_RETURN_IF_ERROR(ReadMessage(&value_, at, "value", static_cast<int64_t>(g->values.size())));
  g->values.push_back(Graph::ValueFromProto(&value_));
  return Status::Ok();
}

Status GraphFileReader::ReadNode(Graph* g, int64_t at) {
  node_.Clear();
  IVY_RETURN_IF_ERROR(ReadMessage(&node_, at, "node", static_cast<int64_t>(g->nodes.size())));
  g->nodes.push_back(Graph::NodeFromProto(&node_));  // the parsed parts move into the node
  return Status::Ok();
}

Status GraphFileReader::Read(Graph* g) {
  char magic[8];
  if (file_size_ < 8 || !coded_->ReadRaw(magic, 8) || std::memcmp(magic, kGraphMagic, 8) != 0) {
    if (file_.GetErrno() != 0) return Damaged(0, "");
    return Status::Corruption("graph '" + path_ + "': expected \"" + std::string(kGraphMagic) + "\" at byte 0");
  }
  bool has_outputs = false;
  bool has_checksum = false;
  for (;;) {
    if (coded_->CurrentPosition() >= fresh_after_) FreshStream();
    const int64_t at = Offset();
    if (at == file_size_) break;
    if (at + static_cast<int64_t>(streamed_file::kChecksumBytes) == file_size_) {
      IVY_RETURN_IF_ERROR(ReadChecksum(at));
      has_checksum = true;
      break;
    }
    const uint32_t tag = coded_->ReadTag();
    if (tag == 0) return Damaged(at, "a field of ivytrace.v1.Graph");
    const int field = WFL::GetTagFieldNumber(tag);
    const auto wire = WFL::GetTagWireType(tag);
    if (field == streamed_file::kChecksumField) {
      return Damaged(at, "the checksum (field 15) only in the last " +
                             std::to_string(streamed_file::kChecksumBytes) + " bytes of the file");
    }
    if (field > G::kPassesAppliedFieldNumber) {  // a newer writer's field: skip it, as protobuf would
      if (!WFL::SkipField(&*coded_, tag)) {
        return Damaged(at, "a field of ivytrace.v1.Graph (found field number " + std::to_string(field) +
                               " with wire type " + std::to_string(wire) + ", which cannot be read or skipped)");
      }
      continue;
    }
    if (wire != kLengthDelimited) {
      return Damaged(at, "field " + std::to_string(field) + " of ivytrace.v1.Graph to be length-delimited");
    }
    switch (field) {
      case G::kNameFieldNumber: IVY_RETURN_IF_ERROR(ReadString(&g->name, at, "the graph's name")); break;
      case G::kSourceFieldNumber: IVY_RETURN_IF_ERROR(ReadMessage(&g->source, at, "the trace header")); break;
      case G::kValuesFieldNumber: IVY_RETURN_IF_ERROR(ReadValue(g, at)); break;
      case G::kInputsFieldNumber:
        IVY_RETURN_IF_ERROR(ReadMessage(&g->inputs.emplace_back(), at, "input", Count(g->inputs) - 1));
        break;
      case G::kConstantsFieldNumber:
        IVY_RETURN_IF_ERROR(ReadMessage(&g->constants.emplace_back(), at, "constant", Count(g->constants) - 1));
        break;
      case G::kNodesFieldNumber: IVY_RETURN_IF_ERROR(ReadNode(g, at)); break;
      case G::kOutputsFieldNumber:
        IVY_RETURN_IF_ERROR(ReadMessage(&g->outputs, at, "the graph's outputs"));
        has_outputs = true;
        break;
      case G::kGuardsFieldNumber:
        IVY_RETURN_IF_ERROR(ReadMessage(&g->guards.emplace_back(), at, "guard", Count(g->guards) - 1));
        break;
      case G::kPassesAppliedFieldNumber:
        IVY_RETURN_IF_ERROR(ReadString(&g->passes_applied.emplace_back(), at, "a pass name"));
        break;
      default: return Damaged(at, "a field of ivytrace.v1.Graph (field number " + std::to_string(field) + ")");
    }
  }
  // Every graph file holds the outputs (ToProto always set them; this writer puts them last): a
  // file that ends without them was cut short at an element boundary, which protobuf alone
  // cannot tell from a smaller graph.
  if (!has_outputs) {
    return Status::Corruption("graph '" + path_ + "': truncated: the file ends at byte " +
                              std::to_string(file_size_) + " before the graph's outputs (field 7), "
                              "which end every graph file");
  }
  if (!has_checksum) {
    return Status::Corruption("graph '" + path_ + "': truncated or damaged: the file ends at byte " +
                              std::to_string(file_size_) + " without the checksum that ends every "
                              "graph file (field 15)");
  }
  return Status::Ok();
}

Status GraphFileReader::ReadChecksum(int64_t at) {
  base_ += coded_->CurrentPosition();
  coded_.reset();  // returns its unread bytes to crc_, which then counts exactly [0, at)
  crc_.Mark();
  const uint32_t expected = crc_.CrcAtMark();
  coded_.emplace(&crc_);
  uint32_t stored = 0;
  if (coded_->ReadTag() != WFL::MakeTag(streamed_file::kChecksumField, WFL::WIRETYPE_FIXED32) ||
      !coded_->ReadLittleEndian32(&stored)) {
    return Damaged(at, "the checksum that ends every graph file (field 15, fixed32)");
  }
  if (stored != expected) {
    return Status::Corruption("graph '" + path_ + "': damaged: the checksum of bytes 0 to " + std::to_string(at) +
                              " does not match the one stored at byte " + std::to_string(at) +
                              ": bytes were changed after the file was written");
  }
  return Status::Ok();
}

// References between elements that Graph::Compact and the passes index with: checked once the
// whole file is read (fields may come in any order), so damage that protobuf cannot see (a
// changed index) is an error, not an out-of-range access.
Status CheckReferences(const std::string& path, const Graph& g) {
  auto damaged = [&](const std::string& what) {
    return Status::Corruption("graph '" + path + "': damaged: " + what);
  };
  const auto n_values = g.values.size();
  const auto n_constants = static_cast<int64_t>(g.constants.size());
  for (size_t i = 0; i < n_values; ++i) {
    const Value& v = g.values[i];
    if ((v.kind == v1::CONSTANT_VALUE && (v.constant < 0 || v.constant >= n_constants)) || v.recorded < -1 ||
        v.recorded >= n_constants) {
      return damaged("value " + std::to_string(i) + " refers to a constant past the " +
                     std::to_string(n_constants) + " the file holds");
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto* list : {&g.nodes[i].inputs, &g.nodes[i].outputs}) {
      for (ValueId v : *list) {
        if (v >= n_values) {
          return damaged("node " + std::to_string(i) + " (" + g.nodes[i].op + ") refers to value " +
                         std::to_string(v) + " but the file holds " + std::to_string(n_values));
        }
      }
    }
  }
  std::vector<ValueId> refs = g.OutputValues();
  for (ValueId v : g.InputValues()) refs.push_back(v);
  for (const auto& gd : g.guards) refs.push_back(gd.tensor().value());
  for (ValueId v : refs) {
    if (v >= n_values) {
      return damaged("an input, output or guard refers to value " + std::to_string(v) + " but the file holds " +
                     std::to_string(n_values));
    }
  }
  return Status::Ok();
}

constexpr int64_t kFreshStreamAfter = int64_t{256} << 20;

}  // namespace

namespace streamed_file {

Status Write(const std::string& path, const std::function<Status(CodedOutputStream*)>& write) {
  return WriteFileAtomically(path, [&](int fd) {
    pb::io::FileOutputStream file(fd, kFileBlock);
    Status st;
    bool coded_error = false;
    {
      internal::CrcOutputStream crc(&file);
      CodedOutputStream out(&crc);
      st = write(&out);
      if (st.ok()) {
        // The checksum of every byte before it, as the file's last field (see the header).
        out.Trim();
        WFL::WriteFixed32(kChecksumField, crc.Crc(), &out);
      }
      coded_error = out.HadError();
    }  // flushes what it buffered into `file`
    if (!st.ok()) return st;
    if (coded_error || !file.Flush()) {
      return Status::IOError("cannot write '" + path + "': " + std::strerror(file.GetErrno()));
    }
    return Status::Ok();
  });
}

}  // namespace streamed_file

Status WriteGraphFile(const std::string& path, const Graph& graph) {
  return streamed_file::Write(path, [&](CodedOutputStream* out) { return WriteGraph(graph, path, out); });
}

Status ReadGraphFile(const std::string& path, Graph* graph) {
  return graph_file_internal::ReadGraphFile(path, graph, kFreshStreamAfter);
}

namespace graph_file_internal {

Status ReadGraphFile(const std::string& path, Graph* graph, int64_t fresh_stream_after) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("graph '" + path + "': cannot open: " + std::strerror(errno));
  struct stat st_buf;
  if (fstat(fd, &st_buf) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError("graph '" + path + "': " + std::strerror(e));
  }
  *graph = Graph();
  Status st;
  {
    GraphFileReader reader(path, fd, st_buf.st_size, fresh_stream_after);
    st = reader.Read(graph);
  }
  close(fd);
  if (st.ok()) st = CheckReferences(path, *graph);
  if (!st.ok()) {
    *graph = Graph();
    return st;
  }
  graph->Compact();  // sets producers, as Graph::FromProto does
  return Status::Ok();
}

}  // namespace graph_file_internal
}  // namespace ivytrace
