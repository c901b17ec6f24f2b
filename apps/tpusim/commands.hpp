// The subcommands of the tpusim CLI; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace tpusim::cli {

int runCommand(const std::vector<std::string>& args);
int compileCommand(const std::vector<std::string>& args);
int hwCommand(const std::vector<std::string>& args);
int referenceCommand(const std::vector<std::string>& args);
int compareCommand(const std::vector<std::string>& args);
int reportCommand(const std::vector<std::string>& args);
int autodistributeCommand(const std::vector<std::string>& args);
int validateCommand(const std::vector<std::string>& args);
int sweepCommand(const std::vector<std::string>& args);

}  // namespace tpusim::cli
