// Collects the ops an exporter cannot handle, so one error can list them all with counts and
// the source lines that called them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace ivytrace {

class UnsupportedOps {
 public:
  void Add(const Node& node, const std::string& reason);
  bool empty() const { return ops_.empty(); }
  // "cannot export to <target>: N ops ...\n  <op>  x<count>  (<reason>)  at a.py:3, a.py:9"
  std::string Message(const std::string& target) const;

 private:
  struct Entry {
    size_t count = 0;
    std::string reason;
    std::vector<std::string> sites;  // in order of appearance, without repeats
  };
  std::map<std::string, Entry> ops_;
};

}  // namespace ivytrace
