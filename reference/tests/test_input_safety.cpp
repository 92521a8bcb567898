// The shared bad-input mechanisms of issue 15, each tested where it lives:
// the checked-integer reader, the error-byte formatter, the regular-file
// opener (FIFO / directory / device refused without blocking), the atomic
// writer (a failed write leaves the old file and no temporary), the finite-
// weights check, admission control and the per-step finite check of forward().
// End to end through the CLI: tools/tests/bad_inputs (ctest bad_input_corpus).
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/checked_int.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/memory_budget.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "base/json_util.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/finite_check.h"
#include "reference/model/synthetic.h"

using namespace oracle;
namespace fs = std::filesystem;

namespace {

// A scratch directory removed at the end of the test.
struct Scratch {
  fs::path dir;
  Scratch() {
    char tmpl[] = "/tmp/oracle_input_safety_XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
  size_t entries() const { return (size_t)std::distance(fs::directory_iterator(dir), fs::directory_iterator()); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The error's what() text as a std::string.
struct Caught {
  std::string file_, field_, what_;
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& what_str() const { return what_; }
};

template <class F>
Caught error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return {e.file(), e.field(), e.what()};
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

// ---- checked integers ----------------------------------------------------------------------
TEST_CASE("checked_int: text past the type's range is an error, never saturation") {
  CHECK(checked_int<uint64_t>("18446744073709551615", "f", "seed") == UINT64_MAX);
  CHECK(error_of([] { checked_int<uint64_t>("18446744073709551616", "f", "seed"); }).field() == "seed");
  CHECK(error_of([] { checked_int<uint64_t>("-1", "f", "seed"); }).what_str().find("negative") != std::string::npos);
  CHECK_THROWS_AS(checked_int<int>("2147483648", "f", "n"), InputError);
  CHECK(checked_int<int>("-2147483648", "f", "n") == std::numeric_limits<int>::min());
  for (const char* bad : {"", " 5", "5 ", "+5", "1e3", "0x10", "5.0", "--5"})
    CHECK_THROWS_AS(checked_int<int>(bad, "f", "n"), InputError);
  CHECK(checked_int<int>("7", "f", "n", 0, 10) == 7);
  CHECK_THROWS_AS(checked_int<int>("11", "f", "n", 0, 10), InputError);
  CHECK_THROWS_AS(checked_int<int>("-1", "f", "n", 0, 10), InputError);
}

TEST_CASE("int_from_json: 4294967302 is refused for an int, not read as 6") {
  const nlohmann::json j = nlohmann::json::parse(R"({"a": 4294967302, "b": -1, "c": 1e46, "d": 7})");
  const Caught e = error_of([&] { int_from_json<int>(j["a"], "log.jsonl:2", "stop.max_tokens"); });
  CHECK(e.file() == "log.jsonl:2");
  CHECK(e.field() == "stop.max_tokens");
  CHECK_THROWS_AS(int_from_json<uint64_t>(j["b"], "f", "seed"), InputError);
  CHECK_THROWS_AS(int_from_json<int>(j["c"], "f", "id"), InputError);
  CHECK(int_from_json<int>(j["d"], "f", "x") == 7);
  CHECK_THROWS_AS(ints_from_json(nlohmann::json::parse("[1, 4294967296]"), "f", "ids"), InputError);
}

// ---- the error formatter -----------------------------------------------------------------------
TEST_CASE("escape_bytes: control characters, ANSI escapes and invalid UTF-8 are escaped") {
  CHECK(escape_bytes("plain text") == "plain text");
  CHECK(escape_bytes("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(escape_bytes("\x1b[31mred") == "\\x1b[31mred");
  CHECK(escape_bytes(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(escape_bytes("caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x99\x82") == "caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x99\x82");
  CHECK(escape_bytes("\xff\xfe") == "\\xff\\xfe");
  CHECK(escape_bytes("\xC2\x9B" "2J") == "\\xc2\\x9b2J");  // C1 CSI
  CHECK(escape_bytes("\xC0\xAF") == "\\xc0\\xaf");          // overlong '/'
  CHECK(escape_bytes("\xED\xA0\x80") == "\\xed\\xa0\\x80"); // surrogate
  CHECK(escape_bytes("\xE6\x97") == "\\xe6\\x97");          // cut sequence
  const InputError e("m\x1b.gguf", "general.architecture", "unsupported 'l\x1b[2J\n'");
  CHECK(input_error_message(e) == "unsupported 'l\x1b[2J\n'");
  CHECK(escape_bytes(e.what()) == "m\\x1b.gguf: general.architecture: unsupported 'l\\x1b[2J\\n'");
}

// ---- the regular-file opener ---------------------------------------------------------------------
TEST_CASE("open_regular_file refuses a FIFO, a directory and a device without blocking") {
  Scratch s;
  const std::string fifo = s / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] { open_regular_file(fifo, "model"); }).what_str().find("FIFO") != std::string::npos);
  CHECK(error_of([&] { read_regular_file(fifo, "corpus"); }).field() == "corpus");
  CHECK(error_of([&] { MappedFile m(fifo); }).file() == fifo);
  CHECK(error_of([&] { open_regular_file(s.dir.string(), "tokenizer"); }).what_str().find("directory") !=
        std::string::npos);
  CHECK(error_of([] { open_regular_file("/dev/zero", "model"); }).what_str().find("character device") !=
        std::string::npos);
  CHECK(error_of([&] { open_regular_file(s / "missing", "model"); }).what_str().find("cannot open") !=
        std::string::npos);
  std::ofstream(s / "ok.txt") << "hello";
  CHECK(read_regular_file(s / "ok.txt", "f") == "hello");
  CHECK(read_file_prefix(s / "ok.txt", "f", 4) == "hell");
  CHECK(read_file_prefix(s / "ok.txt", "f", 100) == "hello");
}

// ---- the atomic writer -------------------------------------------------------------------------------
TEST_CASE("AtomicWriter: commit replaces the file; anything else leaves the old one and no temporary") {
  Scratch s;
  const std::string path = s / "out.gguf";
  write_file_atomic(path, "output", "old");
  CHECK(slurp(path) == "old");
  {
    AtomicWriter w(path, "output");
    w.write("new content");
    CHECK(slurp(path) == "old");  // not visible before commit
    CHECK(s.entries() == 2);       // the target and the temporary beside it
  }                                // destroyed without commit (an exception in real code)
  CHECK(slurp(path) == "old");
  CHECK(s.entries() == 1);
  write_file_atomic(path, "output", "new");
  CHECK(slurp(path) == "new");
  append_file_atomic(path, "log", "+line\n");
  CHECK(slurp(path) == "new+line\n");
  CHECK(s.entries() == 1);
}

TEST_CASE("AtomicWriter: a missing directory, a device, a FIFO or a directory target is refused") {
  Scratch s;
  CHECK(error_of([&] { AtomicWriter w(s / "no/such/dir/x.gguf", "output"); }).field() == "output");
  CHECK(error_of([] { AtomicWriter w("/dev/full", "output"); }).what_str().find("device") != std::string::npos);
  const std::string fifo = s / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] { AtomicWriter w(fifo, "output"); }).what_str().find("FIFO") != std::string::npos);
  CHECK(error_of([&] { AtomicWriter w(s.dir.string(), "output"); }).what_str().find("directory") != std::string::npos);
  CHECK_THROWS_AS(check_output_path(s / "no/x.jsonl", "--log"), InputError);
  check_output_path(s / "x.jsonl", "--log");
  CHECK(s.entries() == 1);  // only the FIFO: the probe left nothing
}

TEST_CASE("AtomicWriter: a write error (file size limit, like a full disk) keeps the old file") {
  Scratch s;
  const std::string path = s / "big.bin";
  write_file_atomic(path, "output", "previous");
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  struct rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string big(100000, 'x');
  Caught e = error_of([&] { write_file_atomic(path, "output", big); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(e.file() == path);
  CHECK(e.what_str().find("write failed") != std::string::npos);
  CHECK(slurp(path) == "previous");
  CHECK(s.entries() == 1);
}

// ---- finite weights ------------------------------------------------------------------------------------
TEST_CASE("check_tensor_finite names the tensor and the element or block") {
  std::vector<uint8_t> f32(4 * 8, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(f32.data() + 4 * 5, &nan, 4);
  TensorInfo t{"output.weight", DType::F32, {4, 2}, f32.data(), f32.size()};
  Caught e = error_of([&] { check_tensor_finite(t, "m.gguf"); });
  CHECK(e.field() == "tensor 'output.weight'");
  CHECK(e.what_str().find("element 5 (row 1, column 1) is NaN") != std::string::npos);

  std::vector<uint8_t> f16(2 * 4, 0);
  f16[2 * 3 + 1] = 0x7c;  // +inf
  TensorInfo h{"tok.weight", DType::F16, {4}, f16.data(), f16.size()};
  CHECK(error_of([&] { check_tensor_finite(h, "m.gguf"); }).what_str().find("infinite") != std::string::npos);

  std::vector<uint8_t> q8(34 * 4, 0);  // 4 Q8_0 blocks = 2 rows of 64
  q8[34 * 3 + 1] = 0x7e;               // block 3's d = NaN
  TensorInfo q{"blk.0.attn_q.weight", DType::Q8_0, {64, 2}, q8.data(), q8.size()};
  e = error_of([&] { check_tensor_finite(q, "m.gguf"); });
  CHECK(e.what_str().find("block 3 (row 1, elements 32..63): Q8_0 scale d is NaN") != std::string::npos);

  std::vector<uint8_t> q4k(144, 0);  // Q4_K: d at 0, dmin at 2
  q4k[3] = 0x7c;
  TensorInfo k{"blk.1.ffn_up.weight", DType::Q4_K, {256}, q4k.data(), q4k.size()};
  CHECK(error_of([&] { check_tensor_finite(k, "m.gguf"); }).what_str().find("scale dmin is infinite") !=
        std::string::npos);

  q8[34 * 3 + 1] = 0x3c;  // d = 1.0: every block finite
  CHECK_NOTHROW(check_tensor_finite(q, "m.gguf"));
}

// ---- admission control --------------------------------------------------------------------------------
TEST_CASE("admission control: a KV cache larger than memory is refused before allocating") {
  Config c = synthetic_preset(kDefaultPreset).config;
  c.seq_len = 1 << 24;
  c.n_layers = 4096;  // 2 * 4096 layers * 2^24 positions * kv_dim floats: far past any machine
  Caught e = error_of([&] { KvCache kv(c, {}); });
  CHECK(e.field() == "context_length");
  CHECK(e.what_str().find("bytes") != std::string::npos);
  CHECK(e.what_str().find("available") != std::string::npos);
  KvCacheOptions paged;
  paged.paged = true;
  CHECK(error_of([&] { KvCache kv(c, paged); }).field() == "context_length");
  CHECK_THROWS_AS(admit_allocation(UINT64_MAX, "f", "x", "a request", ""), InputError);
  CHECK_NOTHROW(admit_allocation(1024, "f", "x", "a request", ""));
  CHECK(mul_sat(uint64_t(1) << 40, uint64_t(1) << 40) == UINT64_MAX);
}

// ---- per-step finite check ----------------------------------------------------------------------------
TEST_CASE("forward: a non-finite activation names the op and layer, and leaves the cache unchanged") {
  const SyntheticPreset& p = synthetic_preset(kDefaultPreset);
  Model m = synthetic_model(p, kDefaultSeed, synthetic_byte_vocab(p.config.vocab_size));
  // An in-memory model is not load-checked: plant +inf in token 5's embedding row.
  const size_t n_emb = (size_t)m.config.vocab_size * m.config.dim;
  std::vector<float> classifier(m.weights.token_embedding.f32(), m.weights.token_embedding.f32() + n_emb);  // untie first
  m.weights.classifier = classifier.data();
  float* emb = const_cast<float*>(m.weights.token_embedding.f32());
  emb[(size_t)5 * m.config.dim] = std::numeric_limits<float>::infinity();
  KvCache kv(m.config, {});
  REQUIRE_NOTHROW(forward(m, kv, 0, std::vector<int>{1, 9}));
  REQUIRE(kv.length(0) == 2);
  Caught e = error_of([&] { forward(m, kv, 0, std::vector<int>{5, 9}); });
  CHECK(e.field() == "blk.0.attn_out");
  CHECK(e.what_str().find("position 2") != std::string::npos);
  CHECK(kv.length(0) == 2);  // the failed call appended nothing
  CHECK_NOTHROW(forward(m, kv, 0, std::vector<int>{9}));
}
