#include "core/ir/stable_graph.h"

#include <string>

namespace ivytrace {
namespace {

void Relativize(const std::string& cwd, v1::SourceLocation* loc) {
  const std::string& f = loc->file();
  if (f.size() > cwd.size() + 1 && f.compare(0, cwd.size(), cwd) == 0 && f[cwd.size()] == '/') {
    loc->set_file(f.substr(cwd.size() + 1));
  }
}

void Relativize(const std::string& cwd, SourceLoc* loc) {
  const std::string& f = loc->file();
  if (f.size() > cwd.size() + 1 && f.compare(0, cwd.size(), cwd) == 0 && f[cwd.size()] == '/') {
    loc->set_file(std::string_view(f).substr(cwd.size() + 1));
  }
}

}  // namespace

void StabilizeGraph(Graph* graph) {
  v1::Header& h = graph->source;
  h.clear_start_time_unix_ns();
  h.clear_pid();
  h.clear_hostname();
  std::string cwd = h.cwd();
  while (cwd.size() > 1 && cwd.back() == '/') cwd.pop_back();
  h.clear_cwd();
  if (cwd.empty() || cwd == "/") return;
  for (Node& n : graph->nodes) Relativize(cwd, &n.loc);
  for (v1::Guard& g : graph->guards) Relativize(cwd, g.mutable_loc());
}

}  // namespace ivytrace
