#pragma once
// Read-only memory-mapped file with bounds-checked views.
#include <cstddef>
#include <cstdint>
#include <string>

namespace oracle {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws InputError
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Pointer to [offset, offset+n) or InputError(path, field, "truncated ...").
  const uint8_t* at(uint64_t offset, uint64_t n, const std::string& field) const;
  // Drops the mapped pages from this process's resident set (madvise
  // MADV_DONTNEED; the file's bytes come back on the next read, unchanged): a
  // tensor-parallel rank then holds only the rows it reads (docs/scale.md).
  void drop_resident() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace oracle
