#pragma once
// Progress of a long subcommand (certify, replay, golden, bench) on stderr:
//   * stderr a terminal: one bar redrawn in place, with rate and ETA;
//   * otherwise: one line at most every ORACLE_PROGRESS_SECONDS (default 10)
//     seconds, and one when done, so CI logs show a run is alive;
//   * nothing when disabled (--quiet, --json).
#include <chrono>
#include <exception>
#include <cstdint>
#include <string>

namespace oracle::tools {

class Progress {
 public:
  Progress(std::string label, int64_t total, bool enabled);  // total 0: given by update()
  ~Progress();
  void update(int64_t done);  // done of total (monotone; thread-compatible, not thread-safe)
  void update(int64_t done, int64_t total);  // when the total is known only as work starts
  void finish();              // the final line (also from the destructor)

 private:
  double elapsed() const;
  void draw(int64_t done, bool final);

  std::string label_;
  int64_t total_;
  bool enabled_, tty_, finished_ = false;
  double interval_s_ = 10.0, last_s_ = -1.0;
  int64_t done_ = 0;
  int uncaught_at_start_ = std::uncaught_exceptions();
  std::chrono::steady_clock::time_point start_;
};

}  // namespace oracle::tools
