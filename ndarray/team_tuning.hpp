#pragma once
// How many threads a replayed graph runs its cpu(0) steps with (graph::Executor). The OpenMP team
// of ndgluon's loops and of OpenBLAS (its OpenMP build follows omp_get_max_threads()) is the
// whole machine by default; for small products on a many-core host most of that team's time goes
// to waking and joining threads. A replay runs the same steps every time, so it can measure: its
// first runs try the full team, then half of it, and so on down to 2 threads, kTrials runs each,
// and keep the fastest where it beats the full team by kMargin; eager calls keep the full team.
// The values do not depend on the team's size: the loops split their work per output element, and
// OpenBLAS splits a product's output, each element summed by one thread in one order. Internal.
#include <chrono>
#include <cstddef>
#include <exception>
#include <vector>

#include <omp.h>

namespace mx::graph {

class TeamTuning {
 public:
  static constexpr int kTrials = 3;
  static constexpr double kMargin = 0.95;

  // The team size for the next run: a candidate while tuning, then the one kept.
  int next() {
    if (candidates_.empty()) start();
    return chosen_ ? chosen_ : candidates_[runs_ / kTrials];
  }
  // The run with next()'s team took `seconds` (the first run after start() warms up: not counted).
  void ran(double seconds) {
    if (chosen_) return;
    if (!warm_) {
      warm_ = true;
      return;
    }
    const std::size_t c = runs_ / kTrials;
    if (best_[c] == 0 || seconds < best_[c]) best_[c] = seconds;
    if (++runs_ < candidates_.size() * kTrials) return;
    std::size_t fastest = 0;
    for (std::size_t i = 1; i < best_.size(); ++i) {
      if (best_[i] < best_[fastest]) fastest = i;
    }
    chosen_ = best_[fastest] < kMargin * best_[0] ? candidates_[fastest] : candidates_[0];
  }
  // The kept team size; 0 while tuning.
  int chosen() const { return chosen_; }

 private:
  void start() {
    for (int n = omp_get_max_threads();; n /= 2) {  // e.g. 16, 8, 4, 2; or the one team of 1 or 2 (3)
      candidates_.push_back(n);
      if (n / 2 < 2) break;
    }
    best_.assign(candidates_.size(), 0.0);
    if (candidates_.size() == 1) chosen_ = candidates_[0];
  }

  std::vector<int> candidates_;  // the full team first
  std::vector<double> best_;     // per candidate: its fastest run
  std::size_t runs_ = 0;
  bool warm_ = false;
  int chosen_ = 0;
};

// Runs the calling thread's OpenMP regions with `threads` threads for its lifetime and times it;
// tells `tuning` the time unless the scope ends by an exception.
class TunedTeam {
 public:
  explicit TunedTeam(TeamTuning& tuning)
      : tuning_(tuning), before_(omp_get_max_threads()), start_(std::chrono::steady_clock::now()) {
    const int threads = tuning.next();
    if (threads != before_) omp_set_num_threads(threads);
  }
  ~TunedTeam() {
    if (omp_get_max_threads() != before_) omp_set_num_threads(before_);
    if (std::uncaught_exceptions() == 0) {
      tuning_.ran(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
  }
  TunedTeam(const TunedTeam&) = delete;
  TunedTeam& operator=(const TunedTeam&) = delete;

 private:
  TeamTuning& tuning_;
  int before_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mx::graph
