// file_io: see file_io.h.
#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/errors.h"

namespace oracle {

// ---- FileHandle ------------------------------------------------------------------------
FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

FileHandle& FileHandle::operator=(FileHandle&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

std::string non_regular_reason(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a directory, not a regular file";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  return "is not a regular file";
}

static std::string errno_text(int e) { return std::strerror(e); }

// ---- input -------------------------------------------------------------------------------
FileHandle open_regular_file(const std::string& path, const std::string& field) {
  require_input(!path.empty(), "(empty path)", field, "no file name given");
  struct stat st {};
  require_input(::stat(path.c_str(), &st) == 0, path, field, "cannot open: " + errno_text(errno));
  const std::string why = non_regular_reason(st.st_mode);
  require_input(why.empty(), path, field, why);
  // O_NONBLOCK: a path swapped for a FIFO after the stat still cannot block the open.
  FileHandle f(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  require_input(f.fd() >= 0, path, field, "cannot open: " + errno_text(errno));
  require_input(::fstat(f.fd(), &st) == 0 && S_ISREG(st.st_mode), path, field,
                non_regular_reason(st.st_mode).empty() ? "cannot stat" : non_regular_reason(st.st_mode));
  const int flags = ::fcntl(f.fd(), F_GETFL);
  require_input(flags >= 0 && ::fcntl(f.fd(), F_SETFL, flags & ~O_NONBLOCK) == 0, path, field,
                "cannot open: " + errno_text(errno));
  return f;
}

uint64_t file_size(const FileHandle& f) {
  struct stat st {};
  return ::fstat(f.fd(), &st) == 0 ? (uint64_t)st.st_size : 0;
}

static std::string read_up_to(const FileHandle& f, const std::string& path, const std::string& field,
                              uint64_t limit) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    require_input(n >= 0, path, field, "read failed: " + errno_text(errno));
    if (n == 0) return out;
    require_input(out.size() + (uint64_t)n <= limit || limit == 0, path, field,
                  "file larger than " + std::to_string(limit) + " bytes");
    out.append(buf, (size_t)n);
  }
}

std::string read_regular_file(const std::string& path, const std::string& field, uint64_t max_bytes) {
  const FileHandle f = open_regular_file(path, field);
  require_input(file_size(f) <= max_bytes, path, field,
                "file of " + std::to_string(file_size(f)) + " bytes is larger than the limit of " +
                    std::to_string(max_bytes));
  return read_up_to(f, path, field, max_bytes);
}

size_t read_into(const FileHandle& f, void* to, size_t n, const std::string& path, const std::string& field) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(f.fd(), static_cast<char*>(to) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    require_input(r >= 0, path, field, "read failed: " + errno_text(errno));
    if (r == 0) break;
    got += (size_t)r;
  }
  return got;
}

std::string read_file_prefix(const std::string& path, const std::string& field, size_t n) {
  const FileHandle f = open_regular_file(path, field);
  std::string out(n, '\0');
  out.resize(read_into(f, out.data(), n, path, field));
  return out;
}

// ---- output ------------------------------------------------------------------------------
namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The target, if it exists, must be a regular file; its directory must exist.
void check_target(const std::string& path, const std::string& field, struct stat* existing, bool* exists) {
  require_input(!path.empty() && path.back() != '/', path.empty() ? "(empty path)" : path, field,
                "not a file name");
  struct stat st {};
  *exists = ::stat(path.c_str(), &st) == 0;
  if (*exists) {
    const std::string why = non_regular_reason(st.st_mode);
    require_input(why.empty(), path, field, why + "; refusing to write to it");
    *existing = st;
  }
  const std::string dir = dir_of(path);
  struct stat ds {};
  require_input(::stat(dir.c_str(), &ds) == 0, path, field,
                "cannot write: directory " + dir + ": " + errno_text(errno));
  require_input(S_ISDIR(ds.st_mode), path, field, "cannot write: " + dir + " is not a directory");
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself succeeded
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicWriter::AtomicWriter(const std::string& path, const std::string& field) : path_(path), field_(field) {
  struct stat existing {};
  bool exists = false;
  check_target(path, field, &existing, &exists);
  const std::string stem = dir_of(path) + "/." + base_of(path) + ".tmp.";
  const long long salt = (long long)std::chrono::steady_clock::now().time_since_epoch().count();
  for (int attempt = 0; attempt < 100 && fd_ < 0; attempt++) {
    tmp_ = stem + std::to_string(::getpid()) + "." + std::to_string((salt + attempt) % 1000000007LL);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // umask applies
    if (fd_ < 0 && errno != EEXIST) break;
  }
  require_input(fd_ >= 0, path, field, "cannot write: " + errno_text(errno));
  if (exists) ::fchmod(fd_, existing.st_mode & 07777);  // keep the previous file's mode
}

AtomicWriter::~AtomicWriter() {
  if (!committed_) discard();
}

void AtomicWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicWriter::write(const void* data, size_t n) {
  require_input(fd_ >= 0, path_, field_, "write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = w < 0 ? errno : EIO;
      discard();
      throw InputError(path_, field_, "write failed after " + std::to_string(written_) + " bytes: " +
                                          errno_text(e) + " (the previous file, if any, is unchanged)");
    }
    p += w;
    n -= (size_t)w;
    written_ += (uint64_t)w;
  }
}

void AtomicWriter::commit() {
  require_input(fd_ >= 0 && !committed_, path_, field_, "commit after failure");
  const int sync_err = ::fsync(fd_) == 0 ? 0 : errno;  // EINVAL: a file system without fsync
  const int close_err = ::close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  const int err = sync_err != 0 && sync_err != EINVAL ? sync_err : close_err;
  if (err != 0) {
    discard();
    throw InputError(path_, field_, "write failed: " + errno_text(err) + " (the previous file, if any, is unchanged)");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int re = errno;
    discard();
    throw InputError(path_, field_, "cannot replace the file: " + errno_text(re));
  }
  committed_ = true;
  fsync_dir(dir_of(path_));
}

void write_file_atomic(const std::string& path, const std::string& field, std::string_view content) {
  AtomicWriter w(path, field);
  w.write(content);
  w.commit();
}

void append_file_atomic(const std::string& path, const std::string& field, std::string_view content) {
  struct stat st {};
  std::string old;
  if (::stat(path.c_str(), &st) == 0) old = read_regular_file(path, field, uint64_t(1) << 34);
  AtomicWriter w(path, field);
  w.write(old);
  w.write(content);
  w.commit();
}

void check_output_path(const std::string& path, const std::string& field) {
  AtomicWriter probe(path, field);  // creates, then (not committed) removes the temporary file
}

}  // namespace oracle
