// Atomic whole-file writes: temp file + rename (atomic_file.h).
#include "reference/base/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "reference/base/errors.h"

namespace oracle {

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  const std::string tmp = path + ".tmp." + std::to_string((long)getpid());
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    require_input(out.good(), path, "output", "cannot create " + tmp);
    fill(out);
    out.flush();
    require_input(out.good(), path, "output", "write failed (disk full?)");
    out.close();
    require_input(!out.fail(), path, "output", "close failed");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "output", "cannot rename " + tmp + " into place");
  }
}

}  // namespace oracle
