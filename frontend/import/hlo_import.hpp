// HLO text import: an HLO module (XLA's text dump, or JAX's
// lower(...).as_text(dialect="hlo")) becomes an IR Graph that runs as written.
//
// Mapping (docs/frontend.md, "HLO text import"): every ENTRY parameter is a
// graph input named after its instruction (a tuple parameter gives one input
// per element, "name.0", "name.1", ...); constants become constants whose
// values the reference executor uses; the ROOT's array elements (every leaf
// of a tuple ROOT) are the graph's outputs. Each instruction's result tensor
// carries the instruction's name. Called computations are inlined (fusion,
// call) or read as a reduction kind (the to_apply of reduce and all-reduce).
#pragma once

#include <string>

#include "frontend/import/onnx_import.hpp"

namespace tpusim {

// The opcodes the importer understands, for error messages and docs.
const char* supportedHloOps();

// Reads and imports a file; every problem is an Error that names the file,
// the line:column and the instruction.
ImportedModel importHloFile(const std::string& path);
ImportedModel importHloText(const std::string& text, const std::string& file);

// True when a model path or its first bytes say HLO text: a name ending in
// .hlo or .hlo.txt, or text that starts with "HloModule". StableHLO/MLIR text
// (.mlir, module @..., func.func) also counts, so that importHloFile can
// reject it with the hint to pass dialect="hlo".
bool isHloPath(const std::string& path);

}  // namespace tpusim
