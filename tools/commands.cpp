#include "tools/commands.h"

namespace oracle::tools {

// One line per subcommand; each is defined in tools/cmd_<name>.cpp.
Command setup_version(CLI::App& app);
Command setup_run(CLI::App& app);
Command setup_synth(CLI::App& app);
Command setup_bench(CLI::App& app);
Command setup_certify(CLI::App& app);
Command setup_quantize(CLI::App& app);
Command setup_replay(CLI::App& app);
Command setup_golden(CLI::App& app);
Command setup_diff(CLI::App& app);
Command setup_compare(CLI::App& app);
Command setup_completion(CLI::App& app);
Command setup_perplexity(CLI::App& app);
Command setup_tokenize(CLI::App& app);
Command setup_merge(CLI::App& app);
Command setup_kernels(CLI::App& app);

std::vector<Command> setup_all(CLI::App& app) {
  return {
      setup_version(app),
      setup_run(app),
      setup_synth(app),
      setup_bench(app),
      setup_certify(app),
      setup_quantize(app),
      setup_replay(app),
      setup_golden(app),
      setup_diff(app),
      setup_compare(app),
      setup_perplexity(app),
      setup_tokenize(app),
      setup_merge(app),
      setup_kernels(app),
      setup_completion(app),
  };
}

}  // namespace oracle::tools
