#pragma once
// The numerics contract version in the oracle's own records (docs/numerics.md
// "Versioning"): golden records, certificates, dumps, KLD-base sidecars, replay
// logs and the --json outputs carry "numerics_version"; a reader refuses a record
// of another version (exit 2) and says how to regenerate it. The number itself
// is numerics/contract_version.h's, nowhere else.
#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/json_util.h"
#include "numerics/contract_version.h"

namespace oracle {

inline constexpr const char* kNumericsVersionField = "numerics_version";
// What a record without the field is: every file written before the field existed
// was written under the first contract, the only one there was. (Not the current
// version: after a bump, such a file is refused like any older record.)
inline constexpr int kNumericsVersionWithoutField = 1;

// Adds "numerics_version" to a record about to be written.
inline void stamp_numerics_version(nlohmann::json& record) { record[kNumericsVersionField] = num::kNumericsContractVersion; }

// The record's version: the field (an integer, else InputError), or kNumericsVersionWithoutField.
inline int record_numerics_version(const nlohmann::json& record, const std::string& where) {
  if (!record.is_object() || !record.contains(kNumericsVersionField)) return kNumericsVersionWithoutField;
  return int_from_json<int>(record[kNumericsVersionField], where, kNumericsVersionField, 1);
}

// The refusal of a record written under another contract, as one message.
inline InputError numerics_version_error(const std::string& where, int found, int expected,
                                         const std::string& regenerate) {
  return InputError(where, kNumericsVersionField,
                    "found " + std::to_string(found) + ", this oracle reads " + std::to_string(expected) +
                        " (the numerics contract, docs/numerics.md \"Versioning\"): the file was written under "
                        "another contract; " + regenerate);
}

// Refuses (InputError naming `where`, the field and both values, exit 2 in the tools)
// a record whose version is not `expected`. `regenerate` says how, e.g.
// "regenerate it with `oracle golden update`".
inline void check_numerics_version(const nlohmann::json& record, const std::string& where,
                                   const std::string& regenerate, int expected = num::kNumericsContractVersion) {
  const int found = record_numerics_version(record, where);
  if (found != expected) throw numerics_version_error(where, found, expected, regenerate);
}

}  // namespace oracle
