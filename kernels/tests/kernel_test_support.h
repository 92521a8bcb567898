#pragma once
// Helpers for the kernel op tests: the registry's seeded inputs, device buffers
// and bitwise compare (optimized/kernel_case_support.h), and check_registry_op,
// which runs every registry case of one op (optimized/kernel_cases.h) as Catch2
// checks, printing the first mismatches with both bit patterns.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "optimized/kernel_cases.h"

namespace oracle::kernels::test {

using optimized::cases::Dev;
using optimized::cases::Floats;
using optimized::cases::random_floats;
using optimized::cases::uniform;

// Number of elements whose bits differ; prints the first few with both patterns.
inline size_t count_bit_mismatches(const std::string& label, const Floats& want, const Floats& got) {
  std::vector<std::string> lines;
  const size_t bad = optimized::cases::bit_mismatches(label, want, got, &lines);
  for (const std::string& l : lines) std::printf("%s\n", l.c_str());
  if (bad) std::printf("%s: %zu of %zu elements differ\n", label.c_str(), bad, want.size());
  return bad;
}

// Every check case of `op` in the registry: tolerance 0 (or fast mode's bound)
// against each of its expectations.
inline void check_registry_op(const std::string& op) {
  const std::vector<optimized::cases::KernelCase> cases = optimized::cases::kernel_cases(optimized::cases::CaseSet::Check, op);
  REQUIRE(!cases.empty());
  for (const optimized::cases::KernelCase& c : cases) {
    const optimized::cases::CaseVerdict v = optimized::cases::check_case(c);
    for (const std::string& l : v.first) std::printf("%s\n", l.c_str());
    INFO(c.label << " seed " << c.seed << ": " << v.mismatches << " mismatches of " << v.elements);
    CHECK(v.pass());
  }
}

}  // namespace oracle::kernels::test
