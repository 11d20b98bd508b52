// Names in a trace come from the user's program (parameter names, file names, module scopes) and
// may hold anything: quotes, control characters, NUL, bytes that are not UTF-8. These make them
// safe in each output format, keeping them readable (a control character shows as \xNN).
#pragma once

#include <string>
#include <string_view>

namespace ivytrace {

// `s` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);
// A JSON string literal (quoted) that is also safe inside an HTML <script> element: '<', '>',
// '&', U+2028/U+2029 and control characters are \u escapes; invalid UTF-8 becomes U+FFFD.
void AppendJsonString(std::string_view s, std::string* out);
// Text for HTML element content or a quoted attribute.
std::string HtmlText(std::string_view s);
// The inside of a DOT "quoted string": quotes and backslashes escaped, newlines as \n line
// breaks, other control characters (NUL included) as the visible text \xNN.
std::string DotText(std::string_view s);

}  // namespace ivytrace
