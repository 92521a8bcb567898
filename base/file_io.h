#pragma once
// ============================================================================
// The one way files come in and go out.
//  Input:  open_regular_file refuses a FIFO, directory, socket or device
//          *before* opening it for reading (stat, then open with O_NONBLOCK,
//          then fstat again), so no input path can block forever or read a
//          terminal. Every loader, tokenizer, corpus, replay log, golden
//          record, thresholds and config.json read goes through it.
//  Output: AtomicWriter writes <dir>/.<name>.tmp.<unique> in the target's own
//          directory, checks every write (ENOSPC, EFBIG, EIO), fsyncs, then
//          renames over the target and fsyncs the directory. Until commit()
//          the previous file is untouched; a failure (or an exception that
//          skips commit) removes the temporary file. A target that exists and
//          is not a regular file (/dev/full, a FIFO, a directory) is refused.
// Errors are InputError(path, field, reason) — the caller names the field.
// ============================================================================
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oracle {

// An owned file descriptor (closed on destruction; move-only).
class FileHandle {
 public:
  FileHandle() = default;
  explicit FileHandle(int fd) : fd_(fd) {}
  ~FileHandle();
  FileHandle(FileHandle&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileHandle& operator=(FileHandle&& o) noexcept;
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// "is a directory", "is a FIFO (named pipe)", ... or "" for a regular file.
std::string non_regular_reason(unsigned mode);

// Opens an existing regular file read-only (blocking reads); InputError otherwise.
FileHandle open_regular_file(const std::string& path, const std::string& field);
// Its size in bytes.
uint64_t file_size(const FileHandle& f);
// The whole file (at most max_bytes; larger is an InputError naming the field).
std::string read_regular_file(const std::string& path, const std::string& field,
                              uint64_t max_bytes = uint64_t(1) << 32);
// The first n bytes (fewer if the file is shorter).
std::string read_file_prefix(const std::string& path, const std::string& field, size_t n);
// Up to n bytes from f's current offset into `to` (fewer only at the end of
// the file); returns how many. InputError(path, field, "read failed: ...").
size_t read_into(const FileHandle& f, void* to, size_t n, const std::string& path, const std::string& field);

class AtomicWriter {
 public:
  AtomicWriter(const std::string& path, const std::string& field);  // creates the temporary file
  ~AtomicWriter();  // not committed: removes the temporary file
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, size_t n);  // every byte or InputError
  void write(std::string_view s) { write(s.data(), s.size()); }
  void commit();                           // fsync + rename + fsync(dir)
  uint64_t bytes_written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  void discard() noexcept;
  std::string path_, field_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// The whole file replaced atomically by `content`.
void write_file_atomic(const std::string& path, const std::string& field, std::string_view content);
// Appends `content` by writing old content + content to a temporary file and
// renaming it (logs: a failed append leaves the previous log intact).
void append_file_atomic(const std::string& path, const std::string& field, std::string_view content);
// Fails now (before any work) when `path` could not be written later: missing
// or unwritable directory, or an existing non-regular target. Leaves nothing.
void check_output_path(const std::string& path, const std::string& field);

}  // namespace oracle
