// Layout and rendering of DOT text with Graphviz's library (libgvc), in process.
#pragma once

#include <string>

#include "core/util/status.h"

namespace ivytrace {

// Renders `dot` in `format` ("svg", "png", ...) with the "dot" layout engine.
Status RenderDot(const std::string& dot, const std::string& format, std::string* out);

}  // namespace ivytrace
