#pragma once
// ============================================================================
// Stream-style front end of the one atomic writer (base/file_io.h
// AtomicWriter: temp file in the same directory, checked writes, fsync,
// rename). `fill` writes the content; any exception it throws aborts the
// write and leaves a previous <path> intact. Errors: InputError(path, "output", ...).
// ============================================================================
#include <functional>
#include <ostream>
#include <string>

namespace oracle {

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace oracle
