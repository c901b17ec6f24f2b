// HLO text to an HloModule: the syntax only (shapes, names, attributes as
// tokens). Every syntax error is an ErrorKind::kInvalidInput Error that reads
// "file:line:column: what was expected, what was found".
#pragma once

#include <string>

#include "frontend/import/hlo_module.hpp"

namespace tpusim::hlo {

HloModule parseHlo(const std::string& text, const std::string& file);

// True for text that is StableHLO or MLIR (module @..., func.func, stablehlo.),
// which tpusim does not read.
bool looksLikeMlir(const std::string& text);

}  // namespace tpusim::hlo
