#include "reference/base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "reference/base/errors.h"

namespace oracle {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  require_input(fd >= 0, path, "file", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "file", "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw InputError(path, "file", std::string("mmap failed: ") + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

const uint8_t* MappedFile::at(uint64_t offset, uint64_t n, const std::string& field) const {
  if (offset > size_ || n > size_ - offset)
    throw InputError(path_, field,
                     "truncated: needs bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + n) + ") but the file has " + std::to_string(size_));
  return data_ + offset;
}

}  // namespace oracle
