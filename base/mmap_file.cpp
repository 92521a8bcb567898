#include "base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errors.h"
#include "base/file_io.h"

namespace oracle {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const FileHandle f = open_regular_file(path, "file");  // refuses FIFOs, directories, devices
  size_ = static_cast<size_t>(file_size(f));
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd(), 0);
    require_input(p != MAP_FAILED, path, "file", std::string("mmap failed: ") + std::strerror(errno));
    data_ = static_cast<const uint8_t*>(p);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::drop_resident() const {
  if (data_) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

const uint8_t* MappedFile::at(uint64_t offset, uint64_t n, const std::string& field) const {
  if (offset > size_ || n > size_ - offset)
    throw InputError(path_, field,
                     "truncated: needs bytes [" + std::to_string(offset) + ", " +
                         (n > UINT64_MAX - offset ? std::string("2^64+") : std::to_string(offset + n)) + ") but the file has " + std::to_string(size_));
  return data_ + offset;
}

}  // namespace oracle
