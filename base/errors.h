#pragma once
// One error type for bad input. Library code never exits the process: it throws
// InputError, and tools/ turns it into one line on stderr and exit code 2.
#include <stdexcept>
#include <string>

namespace oracle {

// what() reads "<file>: <field>: <message>" so a user can find the culprit.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& field, const std::string& message)
      : std::runtime_error(file + ": " + field + ": " + message), file_(file), field_(field) {}
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::string field_;
};

// A check whose failure is the caller's input, not our bug.
inline void require_input(bool ok, const std::string& file, const std::string& field,
                          const std::string& message) {
  if (!ok) throw InputError(file, field, message);
}

}  // namespace oracle
