#include "core/export/unsupported_ops.h"

#include <algorithm>
#include <sstream>

namespace ivytrace {

void UnsupportedOps::Add(const Node& node, const std::string& reason) {
  Entry& e = ops_[node.op];
  ++e.count;
  if (e.reason.empty()) e.reason = reason;
  if (node.loc.file().empty()) return;
  std::string site = node.loc.file() + ":" + std::to_string(node.loc.line());
  if (std::find(e.sites.begin(), e.sites.end(), site) == e.sites.end()) e.sites.push_back(std::move(site));
}

std::string UnsupportedOps::Message(const std::string& target) const {
  size_t total = 0;
  for (const auto& [op, e] : ops_) total += e.count;
  std::ostringstream os;
  os << "cannot export to " << target << ": " << total << " call" << (total == 1 ? "" : "s") << " of "
     << ops_.size() << " op" << (ops_.size() == 1 ? "" : "s") << " cannot be lowered:";
  for (const auto& [op, e] : ops_) {
    os << "\n  " << op << "  x" << e.count << "  (" << e.reason << ")";
    size_t shown = 0;
    for (const auto& site : e.sites) {
      os << (shown == 0 ? "  at " : ", ") << site;
      if (++shown == 5) {
        if (e.sites.size() > 5) os << ", ...";
        break;
      }
    }
  }
  return os.str();
}

}  // namespace ivytrace
