#include "base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errors.h"
#include "base/file_io.h"
#include "base/huge_pages.h"
#include "base/memory_budget.h"

namespace oracle {

const char* residency_name(FileResidency r) {
  switch (r) {
    case FileResidency::automatic: return "auto";
    case FileResidency::mapped: return "mapped";
    case FileResidency::huge_pages: return "huge_pages";
  }
  return "?";
}

FileResidency residency_from_env(const char* env) {
  if (env == nullptr || *env == '\0') return FileResidency::automatic;
  for (FileResidency r : {FileResidency::automatic, FileResidency::mapped, FileResidency::huge_pages})
    if (std::strcmp(env, residency_name(r)) == 0) return r;
  throw InputError("ORACLE_WEIGHTS", env, "unknown weight residency (expected auto, mapped or huge_pages)");
}

FileResidency choose_residency(uint64_t file_bytes, uint64_t available_bytes) {
  const bool sized = file_bytes >= kHugePageBytes && file_bytes <= kAutoHugePagesMaxBytes;
  return sized && file_bytes <= available_bytes / 2 ? FileResidency::huge_pages : FileResidency::mapped;
}

namespace {

// Every byte of the file into `to` (n bytes), or InputError naming the file.
void read_exactly(const FileHandle& f, uint8_t* to, size_t n, const std::string& path) {
  constexpr size_t kChunk = size_t{64} << 20;  // bounded syscalls, any file size
  size_t got = 0;
  while (got < n) {
    const size_t want = n - got < kChunk ? n - got : kChunk;
    const ssize_t r = ::pread(f.fd(), to + got, want, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    require_input(r >= 0, path, "file", std::string("read failed: ") + std::strerror(errno));
    require_input(r > 0, path, "file",
                  "truncated while reading: " + std::to_string(got) + " of " + std::to_string(n) + " bytes");
    got += (size_t)r;
  }
}

}  // namespace

MappedFile::MappedFile(const std::string& path, FileResidency residency) : path_(path) {
  const FileHandle f = open_regular_file(path, "file");  // refuses FIFOs, directories, devices
  size_ = static_cast<size_t>(file_size(f));
  if (size_ == 0) return;
  const bool forced = residency == FileResidency::huge_pages;
  if (residency == FileResidency::automatic) residency = choose_residency(size_, memory_available().bytes);
  if (forced)  // a copy larger than memory is refused here, not met by the OOM killer
    admit_allocation(size_, path, "ORACLE_WEIGHTS", "a copy of the file on 2 MiB pages",
                     "ORACLE_WEIGHTS=mapped maps the file instead");
  if (residency == FileResidency::huge_pages) {
    uint8_t* p = map_huge_region(size_);
    require_input(p != nullptr || !forced, path, "file",
                  "weights on huge pages: no anonymous memory for a copy of " + std::to_string(size_) +
                      " bytes (" + std::strerror(errno) + "); ORACLE_WEIGHTS=mapped maps the file instead");
    if (p != nullptr) {
      try {
        read_exactly(f, p, size_, path);
      } catch (...) {
        unmap_huge_region(p, size_);
        throw;
      }
      ::mprotect(p, size_, PROT_READ);  // read-only like the mapping
      data_ = p;
      residency_ = FileResidency::huge_pages;
      return;
    }
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd(), 0);
  require_input(p != MAP_FAILED, path, "file", std::string("mmap failed: ") + std::strerror(errno));
  data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_ == nullptr) return;
  if (residency_ == FileResidency::huge_pages)
    unmap_huge_region(const_cast<uint8_t*>(data_), size_);
  else
    ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::drop_resident() const {
  if (data_ && residency_ == FileResidency::mapped) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

const uint8_t* MappedFile::at(uint64_t offset, uint64_t n, const std::string& field) const {
  if (offset > size_ || n > size_ - offset)
    throw InputError(path_, field,
                     "truncated: needs bytes [" + std::to_string(offset) + ", " +
                         (n > UINT64_MAX - offset ? std::string("2^64+") : std::to_string(offset + n)) + ") but the file has " + std::to_string(size_));
  return data_ + offset;
}

}  // namespace oracle
