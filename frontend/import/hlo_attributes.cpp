#include "frontend/import/hlo_attributes.hpp"

#include <algorithm>
#include <charconv>

#include "sim/common/error.hpp"

namespace tpusim::hlo {

namespace {

[[noreturn]] void bad(const HloAttribute& attribute, const std::string& expected) {
  std::string written;
  for (const Token& token : attribute.value) written += token.text;
  throw Error(ErrorKind::kInvalidInput,
              "attribute '" + attribute.key + "': expected " + expected + ", got '" + written + "'");
}

bool toInt(const std::string& text, int64_t& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool isPunct(const Token& token, const char* text) {
  return token.kind == TokenKind::kPunct && token.text == text;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return parts;
}

// "3x3" -> {3, 3}
bool splitInts(const std::string& text, char separator, std::vector<int64_t>& out) {
  out.clear();
  for (const std::string& part : split(text, separator)) {
    int64_t value = 0;
    if (!toInt(part, value)) return false;
    out.push_back(value);
  }
  return true;
}

}  // namespace

std::vector<int64_t> readIntList(const HloAttribute& attribute) {
  const std::vector<Token>& v = attribute.value;
  if (v.size() < 2 || !isPunct(v.front(), "{") || !isPunct(v.back(), "}")) bad(attribute, "a list such as {0,1}");
  std::vector<int64_t> values;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    if (i % 2 == 0) {
      if (!isPunct(v[i], ",")) bad(attribute, "a list such as {0,1}");
      continue;
    }
    int64_t value = 0;
    if (v[i].kind != TokenKind::kWord || !toInt(v[i].text, value)) bad(attribute, "a list of integers");
    values.push_back(value);
  }
  if (v.size() > 2 && v.size() % 2 != 1) bad(attribute, "a list such as {0,1}");
  return values;
}

std::string readWord(const HloAttribute& attribute) {
  if (attribute.value.size() != 1 || attribute.value[0].kind != TokenKind::kWord) bad(attribute, "a name");
  return attribute.value[0].text;
}

int64_t readInt(const HloAttribute& attribute) {
  int64_t value = 0;
  if (attribute.value.size() != 1 || !toInt(attribute.value[0].text, value)) bad(attribute, "an integer");
  return value;
}

std::vector<SliceRange> readSlices(const HloAttribute& attribute) {
  const std::vector<Token>& v = attribute.value;
  const char* form = "ranges such as {[0:4], [1:8:2]}";
  if (v.size() < 2 || !isPunct(v.front(), "{") || !isPunct(v.back(), "}")) bad(attribute, form);
  std::vector<SliceRange> ranges;
  size_t i = 1;
  while (i + 1 < v.size()) {
    if (!ranges.empty()) {
      if (!isPunct(v[i], ",")) bad(attribute, form);
      ++i;
    }
    if (i + 1 >= v.size() || !isPunct(v[i], "[")) bad(attribute, form);
    ++i;
    std::vector<int64_t> numbers;
    while (i + 1 < v.size() && !isPunct(v[i], "]")) {
      if (!numbers.empty()) {
        if (!isPunct(v[i], ":")) bad(attribute, form);
        ++i;
      }
      int64_t value = 0;
      if (i + 1 >= v.size() || !toInt(v[i].text, value)) bad(attribute, form);
      numbers.push_back(value);
      ++i;
    }
    if (i + 1 >= v.size() || (numbers.size() != 2 && numbers.size() != 3)) bad(attribute, form);
    ++i;  // ]
    ranges.push_back({numbers[0], numbers[1], numbers.size() == 3 ? numbers[2] : 1});
  }
  return ranges;
}

Window readWindow(const HloAttribute& attribute, size_t rank) {
  const char* form = "a window such as {size=3x3 stride=2x2 pad=1_1x1_1}";
  Window window;
  window.size.assign(rank, 1);
  window.stride.assign(rank, 1);
  window.pad_low.assign(rank, 0);
  window.pad_high.assign(rank, 0);
  window.lhs_dilate.assign(rank, 1);
  window.rhs_dilate.assign(rank, 1);
  window.reversal.assign(rank, 0);
  const std::vector<Token>& v = attribute.value;
  if (v.size() < 2 || !isPunct(v.front(), "{") || !isPunct(v.back(), "}")) bad(attribute, form);
  for (size_t i = 1; i + 1 < v.size(); i += 3) {
    if (i + 3 > v.size() - 1 || v[i].kind != TokenKind::kWord || !isPunct(v[i + 1], "=") ||
        v[i + 2].kind != TokenKind::kWord) {
      bad(attribute, form);
    }
    const std::string& key = v[i].text;
    const std::string& text = v[i + 2].text;
    std::vector<int64_t> values;
    if (key == "pad") {
      const std::vector<std::string> dims = split(text, 'x');
      if (dims.size() != rank) bad(attribute, std::to_string(rank) + " pad pairs low_high");
      for (size_t d = 0; d < rank; ++d) {
        if (!splitInts(dims[d], '_', values) || values.size() != 2) bad(attribute, "pad pairs low_high");
        window.pad_low[d] = values[0];
        window.pad_high[d] = values[1];
      }
      continue;
    }
    if (!splitInts(text, 'x', values) || values.size() != rank)
      bad(attribute, std::to_string(rank) + " values for '" + key + "'");
    if (key == "size") {
      window.size = values;
    } else if (key == "stride") {
      window.stride = values;
    } else if (key == "lhs_dilate") {
      window.lhs_dilate = values;
    } else if (key == "rhs_dilate") {
      window.rhs_dilate = values;
    } else if (key == "rhs_reversal" || key == "window_reversal") {
      window.reversal = values;
    } else {
      bad(attribute, "window fields size, stride, pad, lhs_dilate, rhs_dilate (not '" + key + "')");
    }
  }
  return window;
}

std::vector<PadDim> readPadding(const HloAttribute& attribute, size_t rank) {
  const std::string form = std::to_string(rank) + " entries low_high or low_high_interior such as 1_2x0_0_1";
  if (attribute.value.size() != 1 || attribute.value[0].kind != TokenKind::kWord) bad(attribute, form);
  const std::vector<std::string> dims = split(attribute.value[0].text, 'x');
  if (dims.size() != rank) bad(attribute, form);
  std::vector<PadDim> padding;
  for (const std::string& dim : dims) {
    std::vector<int64_t> values;
    if (!splitInts(dim, '_', values) || (values.size() != 2 && values.size() != 3)) bad(attribute, form);
    padding.push_back({values[0], values[1], values.size() == 3 ? values[2] : 0});
  }
  return padding;
}

DimLabels readDimLabels(const HloAttribute& attribute) {
  const std::vector<Token>& v = attribute.value;
  const char* form = "labels such as b01f_01io->b01f";
  if (v.size() != 3 || v[0].kind != TokenKind::kWord || !isPunct(v[1], "->") || v[2].kind != TokenKind::kWord)
    bad(attribute, form);
  const std::vector<std::string> parts = split(v[0].text, '_');
  if (parts.size() != 2) bad(attribute, form);
  return {parts[0], parts[1], v[2].text};
}

int64_t readReplicaGroupSize(const HloAttribute& attribute) {
  const std::vector<Token>& v = attribute.value;
  const char* form = "replica groups such as {}, {{0},{1}} or [2,4]<=[8]";
  if (v.empty()) bad(attribute, form);
  if (isPunct(v[0], "[")) {  // iota form [groups,size]<=[devices]
    int64_t groups = 0;
    int64_t size = 0;
    if (v.size() < 6 || !toInt(v[1].text, groups) || !isPunct(v[2], ",") || !toInt(v[3].text, size) ||
        !isPunct(v[4], "]")) {
      bad(attribute, form);
    }
    return size;
  }
  if (!isPunct(v[0], "{") || !isPunct(v.back(), "}")) bad(attribute, form);
  if (v.size() == 2) return 1;  // {}: every replica, and the simulator runs one
  int64_t largest = 0;
  int64_t current = 0;
  int depth = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (isPunct(v[i], "{")) {
      ++depth;
      if (depth == 2) current = 0;
    } else if (isPunct(v[i], "}")) {
      if (depth == 2) largest = std::max(largest, current);
      --depth;
    } else if (v[i].kind == TokenKind::kWord) {
      int64_t id = 0;
      if (depth != 2 || !toInt(v[i].text, id)) bad(attribute, form);
      ++current;
    } else if (!isPunct(v[i], ",")) {
      bad(attribute, form);
    }
  }
  return largest;
}

}  // namespace tpusim::hlo
