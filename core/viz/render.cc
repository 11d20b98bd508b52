#include "core/viz/render.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <mutex>

namespace ivytrace {

Status RenderDot(const std::string& dot, const std::string& format, std::string* out) {
  // libgvc keeps global state; one render at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  GVC_t* gvc = gvContext();
  if (!gvc) return Status::Unsupported("Graphviz could not start");
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) {
    gvFreeContext(gvc);
    return Status::InvalidArgument("Graphviz could not parse the generated DOT");
  }
  Status st;
  if (gvLayout(gvc, g, "dot") != 0) {
    st = Status::Unsupported("Graphviz layout failed");
  } else {
    char* data = nullptr;
    unsigned int len = 0;
    if (gvRenderData(gvc, g, format.c_str(), &data, &len) != 0) {
      st = Status::Unsupported("Graphviz cannot render format '" + format + "'");
    } else {
      out->assign(data, len);
    }
    if (data) gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agclose(g);
  gvFreeContext(gvc);
  return st;
}

}  // namespace ivytrace
