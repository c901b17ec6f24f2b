// Number formatting shared by the printed tables and progress lines.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim {

// 1234567 -> "1,234,567".
std::string withCommas(uint64_t value);

}  // namespace tpusim
