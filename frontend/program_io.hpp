// Reading and writing Program files: binary protobuf (.tpuprog) or protobuf
// text (.tpuprog.txt / .pbtxt), chosen by extension.
#pragma once

#include <string>

#include "traces/program.pb.h"

namespace tpusim {

void writeProgram(const program::Program& program, const std::string& path);
// Checks the format marker and schema version; the content is checked by the simulator.
program::Program readProgram(const std::string& path);

bool isProgramPath(const std::string& path);

}  // namespace tpusim
