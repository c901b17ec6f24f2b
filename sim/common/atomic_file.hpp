// Output files written whole or not at all. A file goes to a temporary name beside it and is
// renamed over its final name once complete (rename is atomic within a file system), so a
// reader, or a run killed mid-write, sees the previous file or the new one, never a part.
// While a temporary exists its name is registered, so a signal handler can remove it
// (removePendingAtomicWrite, async-signal-safe).
#pragma once

#include <string>

namespace tpusim {

// Writes `contents` to `path` (bytes as given). An Error (kInvalidConfig) naming `path` when
// the file cannot be written; `path` is then as it was, and no temporary is left.
void writeFileAtomically(const std::string& path, const std::string& contents);

// Removes the temporary file being written now, if any. Async-signal-safe (unlink only).
void removePendingAtomicWrite();

}  // namespace tpusim
