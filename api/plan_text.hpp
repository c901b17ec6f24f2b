// How AutoDistribute (api/auto_distribute.hpp) writes a plan's figures in its reasons and
// its table.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tpusim::plan_text {

std::string value(const nlohmann::json& value);  // a string as it is, anything else as JSON
std::string bytes(uint64_t bytes);               // "2.01 MiB": 3 significant digits, binary units
std::string time(double seconds);                // "26.5 us"
std::string bubble(double bubble);               // "bubble 27%"

}  // namespace tpusim::plan_text
