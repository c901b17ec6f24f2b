// A section of a doc that code writes: the text between the lines "<!-- NAME: begin -->" and
// "<!-- NAME: end -->". expectDocSection fails when it is not `generated`; with
// TPUSIM_UPDATE_GOLDEN set (scripts/update-golden.sh) it writes `generated` there instead.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace tpusim::testing {

inline void expectDocSection(const std::string& path, const std::string& name, const std::string& generated) {
  std::ifstream file(path);
  ASSERT_TRUE(file) << path;
  std::stringstream text;
  text << file.rdbuf();
  std::string doc = text.str();
  const std::string begin = "<!-- " + name + ": begin -->\n", end = "<!-- " + name + ": end -->\n";
  const size_t from = doc.find(begin), to = doc.find(end);
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos && from < to) << path << " lacks " << begin;
  const size_t start = from + begin.size();
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) {
    doc.replace(start, to - start, generated);
    std::ofstream(path) << doc;
    return;
  }
  EXPECT_EQ(doc.substr(start, to - start), generated) << "regenerate with scripts/update-golden.sh";
}

}  // namespace tpusim::testing
