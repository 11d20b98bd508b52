// Graph files written and read in streaming form (core/io/graph_file.h): the bytes are one
// v1::Graph holding what Graph::ToProto() makes, reading gives what Graph::FromProto() builds, and
// a cut or damaged file is an error that names the byte offset.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/message_differencer.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sealed_bytes.h"
#include "temp_path.h"
#include "core/io/graph_file.h"
#include "core/ir/graph_builder.h"
#include "core/util/atomic_file.h"
#include "graph_fixture.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using google::protobuf::util::MessageDifferencer;

using testing::TempPath;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// The seeds example built from its trace, then the parts that trace lacks added by hand:
// a constant with data and a name, a parameter value with a recorded value, kwargs, an in-place
// node (mutated), scope, flags, negative and large numbers, a guard, pass names, an erased node.
Graph RichGraph() {
  namespace tg = testing_graph;
  Graph g;
  Status st = BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds.ivt")), {}, &g);
  EXPECT_TRUE(st.ok()) << st.ToString();
  g.source.set_producer("graph_file_test");
  const ValueId w = g.AddConstant(tg::Floats({1, 2, 3}, {3}, "layer.weight"));
  const ValueId x = g.InputValues().at(0);
  const ValueId y = tg::AddNode(&g, "torch.Tensor.mul", {tg::Ref(g, x), tg::Ref(g, w)}, {-1, 3});
  g.values[y].tensor_id = (uint64_t{1} << 63) + 5;  // a ten-byte varint
  g.values[y].tensor_version = 7;
  g.values[y].name = "y";
  g.values[y].recorded = 0;
  {  // y.add_(w, alpha=2): reads y, defines y', marks it mutated
    Value after = g.values[y];
    after.tensor_version = 8;
    after.producer = static_cast<int32_t>(g.nodes.size());
    after.recorded = -1;
    const ValueId y2 = g.AddValue(after);
    Node n;
    n.op = "torch.Tensor.add_";
    n.schema = SchemaRegistry::Default().Find(n.op);
    n.args = {tg::Ref(g, y), tg::Ref(g, w)};
    v1::KwArg alpha;
    alpha.set_name("alpha");
    alpha.mutable_value()->set_i(-2);
    n.kwargs.push_back(alpha);
    n.result = tg::Ref(g, y2);
    n.mutated.push_back(tg::Ref(g, y2).tensor());
    n.loc.set_file("prog.py");
    n.loc.set_line(42);
    n.scope = "model.block";
    n.flags = v1::INPLACE;
    Graph::IndexNode(&n);
    g.nodes.push_back(std::move(n));
    // A node a pass erased and nobody compacted away: not written.
    tg::AddNode(&g, "torch.Tensor.neg", {tg::Ref(g, y2)}, {3});
    g.nodes.back().erased = true;
    auto* outs = g.outputs.mutable_tuple();
    *outs->add_items() = tg::Ref(g, y2);
  }
  v1::Guard guard;
  guard.mutable_tensor()->set_value(x);
  guard.set_op("torch.Tensor.item");
  guard.mutable_observed()->set_f(0.5);
  g.guards.push_back(guard);
  g.passes_applied = {"constant-fold", "dce"};
  return g;
}

void ExpectSameGraph(const Graph& got, const Graph& want) {
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(got.ToProto(), want.ToProto())) << diff;
  ASSERT_EQ(got.values.size(), want.values.size());
  for (size_t i = 0; i < got.values.size(); ++i) {
    SCOPED_TRACE("value " + std::to_string(i));
    EXPECT_EQ(got.values[i].producer, want.values[i].producer);
    EXPECT_EQ(got.values[i].constant, want.values[i].constant);
    EXPECT_EQ(got.values[i].recorded, want.values[i].recorded);
  }
  ASSERT_EQ(got.nodes.size(), want.nodes.size());
  for (size_t i = 0; i < got.nodes.size(); ++i) {
    SCOPED_TRACE("node " + std::to_string(i));
    EXPECT_EQ(got.nodes[i].schema, want.nodes[i].schema);
    EXPECT_EQ(got.nodes[i].inputs, want.nodes[i].inputs);
    EXPECT_EQ(got.nodes[i].outputs, want.nodes[i].outputs);
    EXPECT_FALSE(got.nodes[i].erased);
  }
}

TEST(GraphFile, BytesAreOneGraphMessageHoldingWhatToProtoMakes) {
  const Graph g = RichGraph();
  const std::string path = TempPath("rich.ivg");
  ASSERT_TRUE(WriteGraphFile(path, g).ok());
  const std::string data = ReadBytes(path);
  ASSERT_GT(data.size(), 8u);
  EXPECT_EQ(data.substr(0, 8), "IVYGRF01");
  v1::Graph parsed;
  ASSERT_TRUE(parsed.ParseFromString(data.substr(8)));
  EXPECT_TRUE(parsed.crc32() != 0);
  parsed.clear_crc32();
  const v1::Graph want = g.ToProto();
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(parsed, want)) << diff;
  EXPECT_EQ(parsed.nodes_size(), static_cast<int>(g.LiveNodeCount()));
  EXPECT_TRUE(std::any_of(parsed.values().begin(), parsed.values().end(),
                          [](const v1::ValueInfo& v) { return v.tensor_id() == (uint64_t{1} << 63) + 5; }));

  // Byte for byte: protobuf's own encoding of those fields in field-number order, with the
  // outputs moved to the end.
  v1::Graph without_outputs = want;
  without_outputs.clear_outputs();
  v1::Graph only_outputs;
  *only_outputs.mutable_outputs() = g.outputs;
  EXPECT_EQ(data, testing::Sealed("IVYGRF01" + without_outputs.SerializeAsString() +
                                   only_outputs.SerializeAsString()));
}

TEST(GraphFile, ReadsBackWhatFromProtoBuilds) {
  const Graph g = RichGraph();
  const std::string path = TempPath("roundtrip.ivg");
  ASSERT_TRUE(WriteGraphFile(path, g).ok());
  Graph back;
  back.name = "stale";  // replaced, not merged into
  const Status st = ReadGraphFile(path, &back);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSameGraph(back, Graph::FromProto(g.ToProto()));
  EXPECT_EQ(back.name, g.name);
  EXPECT_EQ(back.passes_applied, g.passes_applied);
  EXPECT_EQ(back.constants.size(), g.constants.size());
  // Written again, the graph read gives the bytes FromProto's graph gives (not those of `g`: the
  // erased node's output keeps its producer index in `g`; reading compacts it away).
  const std::string again = TempPath("roundtrip2.ivg");
  const std::string via_proto = TempPath("roundtrip3.ivg");
  ASSERT_TRUE(WriteGraphFile(again, back).ok());
  ASSERT_TRUE(WriteGraphFile(via_proto, Graph::FromProto(g.ToProto())).ok());
  EXPECT_EQ(ReadBytes(again), ReadBytes(via_proto));
}

TEST(GraphFile, ReadsFilesInFieldNumberOrder) {
  // What the writer before streaming made: "IVYGRF01" + ToProto().SerializeAsString().
  const Graph g = RichGraph();
  const std::string path = TempPath("old_order.ivg");
  WriteBytes(path, testing::Sealed("IVYGRF01" + g.ToProto().SerializeAsString()));
  Graph back;
  const Status st = ReadGraphFile(path, &back);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSameGraph(back, Graph::FromProto(g.ToProto()));
}

TEST(GraphFile, ReadsTheSameWithAFreshCodedStreamPerElement) {
  // The reader switches to a new CodedInputStream every 256 MB (protobuf's total-bytes limit);
  // switching after every element, or every few bytes, must not change what is read.
  const Graph g = RichGraph();
  const std::string path = TempPath("fresh.ivg");
  ASSERT_TRUE(WriteGraphFile(path, g).ok());
  for (int64_t after : {int64_t{0}, int64_t{1}, int64_t{40}}) {
    SCOPED_TRACE("fresh stream after " + std::to_string(after));
    Graph back;
    const Status st = graph_file_internal::ReadGraphFile(path, &back, after);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectSameGraph(back, Graph::FromProto(g.ToProto()));
  }
}

TEST(GraphFile, EveryTruncationIsCorruptionNamingTheOffset) {
  const std::string path = TempPath("whole.ivg");
  ASSERT_TRUE(WriteGraphFile(path, RichGraph()).ok());
  const std::string data = ReadBytes(path);
  const std::string cut = TempPath("cut.ivg");
  const std::regex byte_re("byte ([0-9]+)");
  for (size_t n = 0; n < data.size(); ++n) {
    SCOPED_TRACE("cut at " + std::to_string(n) + " of " + std::to_string(data.size()));
    WriteBytes(cut, data.substr(0, n));
    Graph g;
    const Status st = ReadGraphFile(cut, &g);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.kind(), Status::Kind::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("'" + cut + "'"), std::string::npos) << st.message();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(st.message(), m, byte_re)) << st.message();
    EXPECT_LE(std::stoul(m[1]), n) << st.message();  // where the reader was, not past the end
    if (n >= 8) EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
    EXPECT_TRUE(g.nodes.empty() && g.values.empty());  // nothing half-read is left
  }
}

TEST(GraphFile, WrongMagicIsCorruption) {
  const std::string path = TempPath("magic.ivg");
  ASSERT_TRUE(WriteGraphFile(path, RichGraph()).ok());
  std::string data = ReadBytes(path);
  const std::string zeros(8, '\0');
  for (const std::string& magic : {std::string("IVYGRF02"), std::string("IVYPLN01"), zeros}) {
    WriteBytes(path, magic + data.substr(8));
    Graph g;
    const Status st = ReadGraphFile(path, &g);
    EXPECT_EQ(st.kind(), Status::Kind::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("expected \"IVYGRF01\" at byte 0"), std::string::npos) << st.message();
  }
  Graph g;
  EXPECT_EQ(ReadGraphFile(TempPath("no_such_file.ivg"), &g).kind(), Status::Kind::kNotFound);
}

TEST(GraphFile, DamageProtobufCannotSeeIsCaughtByTheReferenceChecks) {
  const Graph g = RichGraph();
  auto read_proto = [](const v1::Graph& p) {
    const std::string path = TempPath("refs.ivg");
    WriteBytes(path, testing::Sealed("IVYGRF01" + p.SerializeAsString()));
    Graph back;
    return ReadGraphFile(path, &back);
  };
  v1::Graph bad_constant = g.ToProto();
  bad_constant.mutable_values(static_cast<int>(g.values.size()) - 3)->set_kind(v1::CONSTANT_VALUE);
  bad_constant.mutable_values(static_cast<int>(g.values.size()) - 3)->set_constant(99);
  Status st = read_proto(bad_constant);
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  EXPECT_NE(st.message().find("refers to a constant"), std::string::npos) << st.message();

  v1::Graph bad_value = g.ToProto();
  bad_value.mutable_nodes(0)->mutable_args(0)->mutable_tensor()->set_value(100000);
  st = read_proto(bad_value);
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  EXPECT_NE(st.message().find("node 0 (torch.Tensor.__pow__) refers to value 100000"), std::string::npos)
      << st.message();
}

TEST(GraphFile, ADamagedNodeIsCorruptionNamingItsOffset) {
  std::string data = "IVYGRF01" + RichGraph().ToProto().SerializeAsString();
  // Overwrite the first node's body with bytes that are no Node (field 0 is never valid).
  const size_t first_node = data.find("torch.Tensor.__pow__") - 2;  // tag 1 + length of op
  data[first_node] = 0;
  data[first_node + 1] = 0;
  const std::string path = TempPath("garbage.ivg");
  WriteBytes(path, data);
  Graph back;
  const Status st = ReadGraphFile(path, &back);
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  // The node's tag and length come just before its op's tag and length.
  const std::string where = "at byte " + std::to_string(first_node - 2) + ": expected node 0 (";
  EXPECT_NE(st.message().find(where), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(") to be a valid ivytrace.v1.Node"), std::string::npos) << st.message();
}

TEST(GraphFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string dir = TempPath("atomic_dir");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/g.ivg";
  WriteBytes(path, "old contents");
  const Status st = WriteFileAtomically(path, [](int fd) {
    EXPECT_EQ(write(fd, "partial", 7), 7);
    return Status::IOError("disk full (simulated)");
  });
  EXPECT_EQ(st.message(), "disk full (simulated)");
  EXPECT_EQ(ReadBytes(path), "old contents");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);

  const Status missing = WriteGraphFile(dir + "/no/such/dir/g.ivg", RichGraph());
  EXPECT_EQ(missing.kind(), Status::Kind::kIOError);
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos) << missing.message();
}

// Over 2 GB: three 800 MB constants. Needs ~6 GB of memory and disk, so it runs only when
// IVYTRACE_BIG_TESTS is set.
TEST(GraphFile, FilesOver2GBRoundTrip) {
  if (std::getenv("IVYTRACE_BIG_TESTS") == nullptr) GTEST_SKIP() << "set IVYTRACE_BIG_TESTS=1 to run";
  Graph g = RichGraph();
  constexpr size_t kBytes = size_t{800} << 20;
  for (int i = 0; i < 3; ++i) {
    v1::Tensor t;
    t.set_dtype(v1::UINT8);
    t.add_shape(static_cast<int64_t>(kBytes));
    t.set_name("big" + std::to_string(i));
    t.mutable_data()->assign(kBytes, static_cast<char>('a' + i));
    const ValueId v = g.AddConstant(std::move(t));
    *g.outputs.mutable_tuple()->add_items() = testing_graph::Ref(g, v);  // read, so kept
  }
  const std::string path = TempPath("big.ivg");
  ASSERT_TRUE(WriteGraphFile(path, g).ok());
  ASSERT_GT(std::filesystem::file_size(path), uint64_t{3} * kBytes);

  {  // Why the reader switches streams: one CodedInputStream stops at INT_MAX bytes.
    const int fd = open(path.c_str(), O_RDONLY);
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream coded(&file);
    EXPECT_TRUE(coded.Skip(1 << 30));
    EXPECT_TRUE(coded.Skip((1 << 30) - 1));
    EXPECT_FALSE(coded.Skip(2));  // would pass INT_MAX, though the file goes on
    close(fd);
  }
  // Default switching (between elements), and switching only where an element would cross
  // INT_MAX.
  for (int64_t after : {int64_t{256} << 20, int64_t{INT64_MAX}}) {
    Graph back;
    const Status st = graph_file_internal::ReadGraphFile(path, &back, after);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(back.nodes.size(), g.LiveNodeCount());
    ASSERT_EQ(back.constants.size(), g.constants.size());
    for (int i = 0; i < 3; ++i) {
      const auto& data = back.constants[back.constants.size() - 3 + i].data();
      ASSERT_EQ(data.size(), kBytes);
      EXPECT_EQ(data.front(), 'a' + i);
      EXPECT_EQ(data.back(), 'a' + i);
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ivytrace
