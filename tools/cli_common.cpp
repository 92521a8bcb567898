#include "tools/cli_common.h"

#include <cstdio>
#include <exception>

#include "reference/base/errors.h"

namespace oracle::tools {

int guarded(const std::string& command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "oracle %s: error: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "oracle %s: error: out of memory\n", command.c_str());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle %s: error: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  }
}

}  // namespace oracle::tools
