// Text from a file is data: before it goes to a terminal, control characters in it (ESC, BEL, a
// NUL, C1 controls such as CSI) are shown escaped, so a trace cannot send escape codes to the
// user's terminal.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace ivytrace {

// `s` with every C0 control (but newline when `keep_newlines`), DEL and C1 control (U+0080 to
// U+009F, two bytes in UTF-8) written as \xNN or \u00NN. Other bytes pass unchanged.
inline std::string Printable(std::string_view s, bool keep_newlines = false) {
  std::string out;
  out.reserve(s.size());
  char buf[8];
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && !(keep_newlines && c == '\n')) || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[i + 1]));
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace ivytrace
