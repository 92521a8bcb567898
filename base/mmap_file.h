#pragma once
// A file's bytes, read-only, with bounds-checked views: mapped from the page
// cache (4 KiB pages, nothing copied), or read into anonymous memory on 2 MiB
// pages (base/huge_pages.h), where a decode step's weight stream takes
// 1/512 of the page walks: SmolLM2 Q4_K_M decode 87-88 -> 91 tok/s on one Zen 4
// core (docs/performance.md). Either way the bytes are the file's, unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

namespace oracle {

enum class FileResidency {
  automatic,   // huge_pages when choose_residency says so, else mapped
  mapped,      // mmap(MAP_PRIVATE, PROT_READ) of the file
  huge_pages,  // read into a 2 MiB-aligned anonymous region, then PROT_READ
};
const char* residency_name(FileResidency r);  // "auto", "mapped", "huge_pages"
// The residency for $ORACLE_WEIGHTS's value `env` (null or empty: automatic).
// Throws InputError naming ORACLE_WEIGHTS for any other spelling.
FileResidency residency_from_env(const char* env);
// automatic's rule: huge_pages for a file from 2 MiB to kAutoHugePagesMaxBytes
// that takes at most half of `available_bytes` (base/memory_budget.h); mapped
// otherwise, so a model larger than memory still pages in from the file.
// The cap, measured on a Zen 4 VM (docs/performance.md "Weights on huge
// pages"): the copy costs load time, 0.03-0.3 s at 100-540 MB but 5-10 s at
// 4.9 GB (the kernel compacts memory for each 2 MiB page), while decode gains
// 4 % on a 105 MB model and 1 % on the 4.9 GB llama3-8b.
constexpr uint64_t kAutoHugePagesMaxBytes = uint64_t{1} << 30;
FileResidency choose_residency(uint64_t file_bytes, uint64_t available_bytes);

class MappedFile {
 public:
  // Throws InputError naming the file on an open or read failure. automatic
  // resolves by choose_residency; where the huge-page region is refused
  // (mmap fails) automatic falls back to mapped, huge_pages throws.
  explicit MappedFile(const std::string& path, FileResidency residency = FileResidency::mapped);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  FileResidency residency() const { return residency_; }  // mapped or huge_pages
  // Pointer to [offset, offset+n) or InputError(path, field, "truncated ...").
  const uint8_t* at(uint64_t offset, uint64_t n, const std::string& field) const;
  // Drops the mapped pages from this process's resident set (madvise
  // MADV_DONTNEED; the file's bytes come back on the next read, unchanged): a
  // tensor-parallel rank then holds only the rows it reads (docs/scale.md).
  // A huge_pages copy is kept (dropping anonymous pages would zero them):
  // callers that drop load with FileResidency::mapped.
  void drop_resident() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  FileResidency residency_ = FileResidency::mapped;
};

}  // namespace oracle
