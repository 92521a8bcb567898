#pragma once
// ============================================================================
// Whole-file writes that never leave a half-written file: the bytes go to
// "<path>.tmp.<pid>" in the same directory, are flushed, and the temp file is
// renamed over <path> (rename is atomic on POSIX). On failure the temp file is
// removed and InputError(path, "output", ...) is thrown.
// (A local copy until reference/base's atomic writer of issue 15 lands.)
// ============================================================================
#include <functional>
#include <ostream>
#include <string>

namespace oracle {

// `fill` writes the content to the stream; any exception it throws aborts the write.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace oracle
