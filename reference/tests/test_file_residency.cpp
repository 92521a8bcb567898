// Where a checkpoint's bytes live (base/mmap_file.h): mapped from the page
// cache, or copied onto 2 MiB pages. Either way every byte is the file's (read
// back independently with std::ifstream), every forward bit is the same, the
// automatic rule picks what docs/performance.md says, and $ORACLE_WEIGHTS is
// read with the spellings docs/cli.md gives.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "base/errors.h"
#include "base/huge_pages.h"
#include "base/memory_budget.h"
#include "base/mmap_file.h"
#include "forward_test_util.h"
#include "loader_fixtures.h"

using namespace oracle;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

bool aligned_2mib(const void* p) { return reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0; }

// The file's bytes equal what std::ifstream reads, and survive drop_resident.
void check_bytes(const MappedFile& f, const std::string& path) {
  const std::vector<uint8_t> want = test::read_bytes(path);
  REQUIRE(f.size() == want.size());
  CHECK(std::memcmp(f.data(), want.data(), want.size()) == 0);
  f.drop_resident();  // a copy is kept; a mapping reads the file again
  CHECK(std::memcmp(f.data(), want.data(), want.size()) == 0);
}

// Sets $ORACLE_WEIGHTS for one scope (null: unset), restoring it after.
struct EnvWeights {
  std::string saved;
  bool had;
  explicit EnvWeights(const char* v) : had(std::getenv("ORACLE_WEIGHTS") != nullptr) {
    if (had) saved = std::getenv("ORACLE_WEIGHTS");
    v ? ::setenv("ORACLE_WEIGHTS", v, 1) : ::unsetenv("ORACLE_WEIGHTS");
  }
  ~EnvWeights() { had ? ::setenv("ORACLE_WEIGHTS", saved.c_str(), 1) : ::unsetenv("ORACLE_WEIGHTS"); }
};

Model load_with(const std::string& path, FileResidency r) {
  LoadOptions lo;
  lo.compute_sha256 = false;
  lo.residency = r;
  return load_model(path, lo);
}

}  // namespace

TEST_CASE("choose_residency: huge pages from 2 MiB to the cap, within half of what is available", "[residency]") {
  const uint64_t plenty = uint64_t{1} << 40, cap = kAutoHugePagesMaxBytes;
  CHECK(choose_residency(0, plenty) == FileResidency::mapped);
  CHECK(choose_residency(2 * kMiB - 1, plenty) == FileResidency::mapped);
  CHECK(choose_residency(2 * kMiB, plenty) == FileResidency::huge_pages);
  CHECK(choose_residency(105 * kMiB, plenty) == FileResidency::huge_pages);
  CHECK(choose_residency(cap, plenty) == FileResidency::huge_pages);
  CHECK(choose_residency(cap + 1, plenty) == FileResidency::mapped);
  CHECK(choose_residency(100 * kMiB, 200 * kMiB) == FileResidency::huge_pages);
  CHECK(choose_residency(100 * kMiB + 1, 200 * kMiB) == FileResidency::mapped);
  CHECK(choose_residency(100 * kMiB, UINT64_MAX) == FileResidency::huge_pages);  // no /proc: unknown
}

TEST_CASE("residency_from_env: auto, mapped, huge_pages; anything else names ORACLE_WEIGHTS", "[residency]") {
  CHECK(residency_from_env(nullptr) == FileResidency::automatic);
  CHECK(residency_from_env("") == FileResidency::automatic);
  CHECK(residency_from_env("auto") == FileResidency::automatic);
  CHECK(residency_from_env("mapped") == FileResidency::mapped);
  CHECK(residency_from_env("huge_pages") == FileResidency::huge_pages);
  for (const char* bad : {"huge", "mmap", "Mapped", "huge_pages ", "1"}) {
    INFO(bad);
    try {
      residency_from_env(bad);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == "ORACLE_WEIGHTS");
    }
  }
}

TEST_CASE("MappedFile: a huge-page copy holds the file's bytes, 2 MiB-aligned, kept by drop_resident", "[residency]") {
  test::ScratchDir dir("residency");
  // Sizes around the page and 64 MiB read-chunk boundaries, random bytes.
  std::mt19937_64 rng(42);
  for (uint64_t n : {uint64_t{1}, 4095 + uint64_t{0}, 2 * kMiB, 2 * kMiB + 4097, 64 * kMiB + 12345}) {
    INFO("size " << n);
    std::vector<uint8_t> bytes(n);
    for (uint8_t& b : bytes) b = (uint8_t)rng();
    const std::string path = dir.file("f" + std::to_string(n));
    test::write_bytes(path, bytes.data(), bytes.size());
    const MappedFile copy(path, FileResidency::huge_pages);
    CHECK(copy.residency() == FileResidency::huge_pages);
    CHECK(aligned_2mib(copy.data()));
    check_bytes(copy, path);
    const MappedFile mapped(path, FileResidency::mapped);
    CHECK(mapped.residency() == FileResidency::mapped);
    check_bytes(mapped, path);
  }
}

TEST_CASE("MappedFile: automatic takes choose_residency's answer; SmolLM2's 98 MB file is copied whole", "[residency]") {
  const std::string path = test::fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
  const MappedFile f(path, FileResidency::automatic);
  CHECK(f.residency() == choose_residency(f.size(), memory_available().bytes));
  const MappedFile copy(path, FileResidency::huge_pages);
  check_bytes(copy, path);
  // The kernel may decline the hint; where it grants any, it is within the copy.
  const uint64_t granted = anon_huge_bytes(copy.data(), copy.size());
  CHECK(granted <= (copy.size() + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
  CHECK(granted % kHugePageBytes == 0);
  CHECK(anon_huge_bytes(f.data(), 0) == 0);
  const MappedFile tiny(test::fixture("gguf/llama2xs.gguf"), FileResidency::automatic);
  CHECK(tiny.residency() == FileResidency::mapped);  // 1.2 MB: under one huge page
}

namespace {

// The residency MappedFile takes for `path`, or the InputError's field, with
// the address space limited to what the process maps now plus `extra` bytes.
std::string residency_within(const std::string& path, FileResidency r, uint64_t extra, std::string* message) {
  std::ifstream in("/proc/self/status");
  std::string key;
  uint64_t kib = 0;
  while (in >> key)
    if (key == "VmSize:" && (in >> kib)) break;
  REQUIRE(kib > 0);
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_AS, &old) == 0);
  struct rlimit tight = old;
  tight.rlim_cur = (rlim_t)(kib * 1024 + extra);
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < tight.rlim_cur) tight.rlim_cur = old.rlim_cur;
  REQUIRE(::setrlimit(RLIMIT_AS, &tight) == 0);
  std::string out;
  try {
    out = residency_name(MappedFile(path, r).residency());
  } catch (const InputError& e) {
    out = e.field(), *message = e.what();
  }
  ::setrlimit(RLIMIT_AS, &old);
  return out;
}

}  // namespace

TEST_CASE("MappedFile: a forced copy that does not fit is refused naming ORACLE_WEIGHTS; auto maps", "[residency]") {
  const std::string path = test::fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");  // 98 MB
  std::string message;
  CHECK(residency_within(path, FileResidency::huge_pages, 32 * kMiB, &message) == "ORACLE_WEIGHTS");
  CHECK(message.find("ORACLE_WEIGHTS=mapped") != std::string::npos);
  // Room for the mapping but not for twice the file: auto maps.
  CHECK(residency_within(path, FileResidency::automatic, 160 * kMiB, &message) == "mapped");
}

TEST_CASE("load_model: every loader honours the residency, and the logits' bits do not depend on it", "[residency]") {
  const std::vector<int> tokens = {1, 15, 300, 7, 42, 99, 5};
  for (const char* rel : {"gguf/llama2xs.gguf", "gguf/llama2xs-q4_0.gguf", "stories260K/stories260K.bin"}) {
    INFO(rel);
    const Model mapped = load_with(test::fixture(rel), FileResidency::mapped);
    const Model copy = load_with(test::fixture(rel), FileResidency::huge_pages);
    CHECK(mapped.file->residency() == FileResidency::mapped);
    CHECK(copy.file->residency() == FileResidency::huge_pages);
    std::vector<int> t = tokens;
    for (int& x : t) x %= mapped.config.vocab_size;
    const std::vector<float> a = test::run_fresh(mapped, t, 3), b = test::run_fresh(copy, t, 3);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
  test::ScratchDir dir("residency_st");
  const Model src = load_with(test::fixture("stories260K/stories260K.bin"), FileResidency::mapped);
  test::write_hf_model(dir.path.string(), src, "F32", true);
  const Model st = load_with(dir.path.string(), FileResidency::huge_pages);
  REQUIRE(!st.extra_files.empty());
  for (const auto& shard : st.extra_files) CHECK(shard->residency() == FileResidency::huge_pages);
}

TEST_CASE("load_model: $ORACLE_WEIGHTS decides when the caller leaves it automatic", "[residency]") {
  const std::string path = test::fixture("gguf/llama2xs.gguf");
  {
    EnvWeights env("huge_pages");
    CHECK(load_with(path, FileResidency::automatic).file->residency() == FileResidency::huge_pages);
    CHECK(load_with(path, FileResidency::mapped).file->residency() == FileResidency::mapped);  // the caller's word wins
  }
  {
    EnvWeights env("mapped");
    CHECK(load_with(path, FileResidency::automatic).file->residency() == FileResidency::mapped);
  }
  {
    EnvWeights env("yes");
    try {
      load_with(path, FileResidency::automatic);
      FAIL("accepted ORACLE_WEIGHTS=yes");
    } catch (const InputError& e) {
      CHECK(e.file() == "ORACLE_WEIGHTS");
      CHECK(std::string(e.what()).find("huge_pages") != std::string::npos);
    }
  }
}
