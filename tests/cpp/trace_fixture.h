// Builds small synthetic traces for the C++ tests (recorded programs are tested end to end in
// tests/e2e; these pin down the reader and builder on exact, hand-chosen records).
#pragma once

#include <string>

#include "core/io/trace_writer.h"

namespace ivytrace::testing {

namespace v1 = ::ivytrace::v1;

inline v1::TensorRef Ref(uint64_t id, uint32_t version, std::vector<int64_t> shape = {3}) {
  v1::TensorRef r;
  r.set_id(id);
  r.set_version(version);
  r.set_storage(id);
  r.set_dtype(v1::FLOAT32);
  for (auto d : shape) r.add_shape(d);
  return r;
}

inline v1::Arg TensorArg(const v1::TensorRef& r) {
  v1::Arg a;
  *a.mutable_tensor() = r;
  return a;
}

inline v1::Arg IntArg(int64_t i) {
  v1::Arg a;
  a.set_i(i);
  return a;
}

// Writes records for one op call.
inline void WriteOp(TraceWriter& w, const std::string& op, std::vector<v1::Arg> args, v1::Arg result,
                    std::vector<v1::TensorRef> mutated = {}, int line = 1) {
  v1::Record r;
  auto* e = r.mutable_op();
  e->set_op(w.Intern(op));
  for (auto& a : args) *e->add_args() = a;
  *e->mutable_result() = result;
  for (auto& m : mutated) *e->add_mutated() = m;
  e->set_file(w.Intern("prog.py"));
  e->set_line(line);
  w.Write(r);
}

inline void WriteConstant(TraceWriter& w, const v1::TensorRef& ref, const std::string& name,
                          std::vector<float> values) {
  v1::Record r;
  auto* td = r.mutable_tensor();
  *td->mutable_ref() = ref;
  auto* t = td->mutable_value();
  t->set_dtype(v1::FLOAT32);
  t->add_shape(static_cast<int64_t>(values.size()));
  t->set_name(name);
  t->set_role(name.empty() ? v1::CONSTANT : v1::PARAMETER);
  t->set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  td->set_total_bytes(t->data().size());
  w.Write(r);
}

// The seeds' first example: z = x**y; k = x*y; j = cat([x, z, y]); s = sum(j); return z.
// x = t1, y = t2, z = t3, k = t4, j = t5, s = t6. Returns the path.
inline std::string WriteSeedsTrace(const std::string& path) {
  TraceWriter w;
  v1::Header h;
  h.set_producer("test");
  w.Open(path, h);
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("fn");
  auto* in_x = rb.mutable_region_begin()->add_inputs();
  in_x->set_name("x");
  *in_x->mutable_value() = TensorArg(Ref(1, 0));
  auto* in_y = rb.mutable_region_begin()->add_inputs();
  in_y->set_name("y");
  *in_y->mutable_value() = TensorArg(Ref(2, 0));
  w.Write(rb);
  WriteOp(w, "torch.Tensor.__pow__", {TensorArg(Ref(1, 0)), TensorArg(Ref(2, 0))}, TensorArg(Ref(3, 0)), {}, 2);
  WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(1, 0)), TensorArg(Ref(2, 0))}, TensorArg(Ref(4, 0)), {}, 3);
  v1::Arg list;
  *list.mutable_list()->add_items() = TensorArg(Ref(1, 0));
  *list.mutable_list()->add_items() = TensorArg(Ref(3, 0));
  *list.mutable_list()->add_items() = TensorArg(Ref(2, 0));
  WriteOp(w, "torch.cat", {list}, TensorArg(Ref(5, 0, {9})), {}, 4);
  WriteOp(w, "torch.sum", {TensorArg(Ref(5, 0, {9}))}, TensorArg(Ref(6, 0, {})), {}, 5);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  *re.mutable_region_end()->mutable_result() = TensorArg(Ref(3, 0));
  w.Write(re);
  w.Close();
  return path;
}

}  // namespace ivytrace::testing
