#pragma once
// Fixtures shared by the device pipeline tests (optimized/tests).
#include <string>

#include <catch2/catch.hpp>

#include "reference/model/model.h"
#include "test_support.h"

namespace oracle::test {

// stories260K.bin from the shared fixtures (REQUIREs it; no SHA-256 pass).
inline Model stories260k() {
  const std::string path = models("stories260K/stories260K.bin");
  INFO("fixture " << path << " is missing (set ORACLE_SHARED_DIR)");
  REQUIRE(have(path));
  LoadOptions lo;
  lo.compute_sha256 = false;
  return load_model(path, lo);
}

}  // namespace oracle::test
