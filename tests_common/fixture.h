#pragma once
// Catch2 helper: the path of a ../shared model fixture. A missing fixture fails
// the test with its path (never a skip; CI always has ../shared).
#include <catch2/catch.hpp>
#include <string>

#include "test_support.h"

namespace oracle::test {

inline std::string fixture(const std::string& rel) {
  std::string path = models(rel);
  INFO("fixture " << path << " is missing (tests need ../shared)");
  REQUIRE(have(path));
  return path;
}

}  // namespace oracle::test
