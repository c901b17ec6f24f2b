// Text formatting shared by the printed tables, progress lines and HTML pages.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim {

// 1234567 -> "1,234,567".
std::string withCommas(uint64_t value);

// `text` with <, >, & and " escaped for HTML.
std::string escapeHtml(const std::string& text);

}  // namespace tpusim
