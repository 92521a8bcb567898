// Progress bars and periodic progress lines — see progress.h.
#include "tools/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace oracle::tools {

Progress::Progress(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), tty_(isatty(2) != 0),
      start_(std::chrono::steady_clock::now()) {
  if (const char* s = std::getenv("ORACLE_PROGRESS_SECONDS"); s != nullptr && *s) interval_s_ = std::atof(s);
}

// Unwinding (an error on its way to print_error): no "done" line; a bar on a
// terminal is ended so the error starts on its own line.
Progress::~Progress() {
  if (std::uncaught_exceptions() <= uncaught_at_start_) {
    finish();
    return;
  }
  if (enabled_ && tty_ && last_s_ >= 0 && !finished_) std::fputc('\n', stderr);
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

static std::string clock_text(double s) {
  char buf[32];
  const long t = (long)(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

void Progress::draw(int64_t done, bool final) {
  const double t = elapsed();
  const double eta = done > 0 ? t * (double)(total_ - done) / (double)done : 0.0;
  const int pct = (int)(100 * done / total_);
  if (tty_) {
    const int width = 30, filled = (int)(width * done / total_);
    std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld %3d%% %s%s%s", label_.c_str(), filled,
                 "##############################", width - filled, "", (long long)done, (long long)total_, pct,
                 clock_text(t).c_str(), final ? "" : " ETA ", final ? "\n" : clock_text(eta).c_str());
  } else if (final) {
    std::fprintf(stderr, "%s: %lld/%lld done in %s\n", label_.c_str(), (long long)done, (long long)total_,
                 clock_text(t).c_str());
  } else {
    std::fprintf(stderr, "%s: %lld/%lld (%d%%), %s elapsed, ETA %s\n", label_.c_str(), (long long)done,
                 (long long)total_, pct, clock_text(t).c_str(), clock_text(eta).c_str());
  }
  std::fflush(stderr);
}

void Progress::update(int64_t done, int64_t total) {
  total_ = total;
  update(done);
}

void Progress::update(int64_t done) {
  if (!enabled_ || finished_ || total_ <= 0) return;
  done_ = done < total_ ? done : total_;
  const double t = elapsed();
  const double every = tty_ ? 0.1 : interval_s_;
  if (last_s_ >= 0 && t - last_s_ < every && done_ < total_) return;
  if (last_s_ < 0 && !tty_ && t < every) return;  // no line in the first interval off a terminal
  last_s_ = t;
  if (done_ < total_) draw(done_, false);
}

void Progress::finish() {
  if (!enabled_ || finished_ || total_ <= 0) return;
  finished_ = true;
  draw(done_, true);
}

}  // namespace oracle::tools
