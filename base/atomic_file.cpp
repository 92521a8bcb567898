#include "base/atomic_file.h"

#include <sstream>

#include "base/file_io.h"

namespace oracle {

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  std::ostringstream content;
  fill(content);  // throws before anything touches the disk
  write_file_atomic(path, "output", content.str());
}

}  // namespace oracle
