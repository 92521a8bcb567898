#pragma once
// Helpers shared by every test executable: where the ../shared fixtures live,
// and skipping (not passing) when a fixture is absent.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace oracle::test {

// $ORACLE_SHARED_DIR overrides the CMake option ORACLE_SHARED_DIR (default ../shared).
inline std::string shared_dir() {
  if (const char* env = std::getenv("ORACLE_SHARED_DIR"); env && *env) return env;
  return ORACLE_DEFAULT_SHARED_DIR;
}
inline std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }
inline std::string models(const std::string& rel) { return shared_path("models/" + rel); }
inline bool have(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace oracle::test
