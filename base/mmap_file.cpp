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

// The file's n bytes in a read-only region on 2 MiB pages (base/huge_pages.h);
// nullptr when the region is refused. InputError naming the file when the
// read fails or comes up short (the region is released first).
const uint8_t* copy_to_huge_pages(const FileHandle& f, size_t n, const std::string& path) {
  uint8_t* p = map_huge_region(n);
  if (p == nullptr) return nullptr;
  size_t got = 0;
  try {
    got = read_into(f, p, n, path, "file");
  } catch (...) {
    unmap_huge_region(p, n);
    throw;
  }
  if (got != n) {
    unmap_huge_region(p, n);
    throw InputError(path, "file", "truncated while reading: " + std::to_string(got) + " of " + std::to_string(n) + " bytes");
  }
  ::mprotect(p, n, PROT_READ);  // read-only like the mapping
  return p;
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
    data_ = copy_to_huge_pages(f, size_, path);
    require_input(data_ != nullptr || !forced, path, "file",
                  "weights on huge pages: no anonymous memory for a copy of " + std::to_string(size_) +
                      " bytes (" + std::strerror(errno) + "); ORACLE_WEIGHTS=mapped maps the file instead");
    if (data_ != nullptr) {
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
