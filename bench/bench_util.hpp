#pragma once
// Timing and reporting helpers shared by the benchmark programs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// Median seconds per call of fn() over `trials` trials of `reps` calls each, after one warm-up
// trial. `sync` waits for queued GPU work and runs before every clock read.
template <class Fn, class Sync>
double median_seconds(Fn&& fn, Sync&& sync, int reps, int trials = 5) {
  std::vector<double> times;
  for (int t = 0; t <= trials; ++t) {
    sync();
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) fn();
    sync();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    if (t > 0) times.push_back(s);  // trial 0 warms up
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Two ways of doing one thing, their trials interleaved (a, b, b, a, a, b, ...), so that a drift
// of the machine's speed during the run (other tenants, clocks) moves both alike instead of the one
// measured second, and neither is always the one that runs right after the other. `warm` untimed
// calls open every trial (for two modes of one object that must settle after each switch).
struct Paired {
  double a = 0, b = 0;  // median seconds per call of each
  // a's time over b's in each pair of trials run back to back: their median and quartiles. Slow
  // drifts cancel within a pair, so this resolves smaller differences than a / b does.
  double ratio = 0, ratio_low = 0, ratio_high = 0;
  int pairs = 0;
};

template <class FnA, class FnB, class Sync>
Paired paired_seconds(FnA&& a, FnB&& b, Sync&& sync, int reps, int trials = 9, int warm = 0) {
  std::vector<double> times_a, times_b, ratios;
  const auto trial = [&](auto& fn) {
    for (int w = 0; w < warm; ++w) fn();
    sync();
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) fn();
    sync();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
  };
  for (int t = 0; t <= trials; ++t) {  // trial 0 warms both up
    double ta = 0, tb = 0;
    if (t % 2 == 0) {
      ta = trial(a);
      tb = trial(b);
    } else {
      tb = trial(b);
      ta = trial(a);
    }
    if (t == 0) continue;
    times_a.push_back(ta);
    times_b.push_back(tb);
    ratios.push_back(ta / tb);
  }
  const auto at = [](std::vector<double>& v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  Paired out;
  out.a = at(times_a, 0.5);
  out.b = at(times_b, 0.5);
  out.ratio = at(ratios, 0.5);
  out.ratio_low = at(ratios, 0.25);
  out.ratio_high = at(ratios, 0.75);
  out.pairs = static_cast<int>(ratios.size());
  return out;
}

// The two medians of paired_seconds.
template <class FnA, class FnB, class Sync>
std::pair<double, double> paired_median_seconds(FnA&& a, FnB&& b, Sync&& sync, int reps, int trials = 9,
                                                int warm = 0) {
  const Paired p = paired_seconds(a, b, sync, reps, trials, warm);
  return {p.a, p.b};
}

// Runs `python3 SCRIPT ARGS` and reads lines "case seconds" (the PyTorch peer). Empty when python3
// or torch is missing.
inline std::map<std::string, double> run_peer(const std::string& command) {
  std::map<std::string, double> out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>/dev/null").c_str(), "r"), pclose);
  if (!pipe) return out;
  char name[256];
  double seconds = 0;
  while (std::fscanf(pipe.get(), "%255s %lf", name, &seconds) == 2) out[name] = seconds;
  return out;
}

struct Row {
  std::string name;
  std::string peer_key;   // the case's name in the peer's output
  std::string metric;     // what the numbers are, e.g. "GB/s"
  double ndgluon = 0;     // in `metric`
  double raw = 0;         // in `metric`, 0 if not applicable
  double target = 0;      // minimum ndgluon/raw ratio, 0 if none
  double limit = 0;       // target for ndgluon itself, in `metric`: at most (times) or at least, 0 if none
  double peer_target = 0; // minimum "ndgluon vs PyTorch" ratio, 0 if none
  double peer = 0;        // PyTorch, in `metric`, 0 if not measured
  bool higher_is_better = true;
  double work = 0;        // bytes, flop or values per op: metric = work / seconds / unit
  double unit = 1e9;      // 0 means the metric is microseconds per op
  double from_seconds(double s) const { return unit > 0 ? work / s / unit : s * 1e6; }
};

// Fills Row::peer from the peer's seconds-per-op.
inline void attach_peer(std::vector<Row>& rows, const std::map<std::string, double>& peer) {
  for (Row& row : rows) {
    const auto it = peer.find(row.peer_key);
    if (it != peer.end()) row.peer = row.from_seconds(it->second);
  }
}

// The target column: ">= 0.95" (ndgluon/raw), "<= 6 us/forward" (limit), ">= 3.00x PyTorch"
// (peer_target), joined by "; ", or "-". A target missed is marked beside its figure.
inline std::string target_text(const Row& r) {
  std::string text;
  char buffer[128];
  const auto add = [&](const char* part) { text += (text.empty() ? "" : "; ") + std::string(part); };
  if (r.target > 0) {
    std::snprintf(buffer, sizeof buffer, ">= %.2f", r.target);
    add(buffer);
  }
  if (r.limit > 0) {
    std::snprintf(buffer, sizeof buffer, "%s %g %s", r.higher_is_better ? ">=" : "<=", r.limit, r.metric.c_str());
    add(buffer);
  }
  if (r.peer_target > 0) {
    std::snprintf(buffer, sizeof buffer, ">= %.2fx PyTorch", r.peer_target);
    add(buffer);
  }
  return text.empty() ? "-" : text;
}

inline void print_table(const std::vector<Row>& rows, FILE* out = stdout) {
  std::fprintf(out, "| case | metric | ndgluon | raw | ndgluon/raw | target | PyTorch | ndgluon vs PyTorch |\n");
  std::fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double ratio = r.raw > 0 ? (r.higher_is_better ? r.ndgluon / r.raw : r.raw / r.ndgluon) : 0;
    const double vs_peer = r.peer > 0 ? (r.higher_is_better ? r.ndgluon / r.peer : r.peer / r.ndgluon) : 0;
    const bool missed_limit = r.limit > 0 && (r.higher_is_better ? r.ndgluon < r.limit : r.ndgluon > r.limit);
    std::fprintf(out, "| %s | %s | %.4g%s | ", r.name.c_str(), r.metric.c_str(), r.ndgluon, missed_limit ? " (missed)" : "");
    if (r.raw > 0) std::fprintf(out, "%.4g | %.3f%s | ", r.raw, ratio, r.target > 0 && ratio < r.target ? " (below)" : "");
    else std::fprintf(out, "- | - | ");
    std::fprintf(out, "%s | ", target_text(r).c_str());
    if (r.peer > 0) {
      std::fprintf(out, "%.4g | %.2fx%s |\n", r.peer, vs_peer, r.peer_target > 0 && vs_peer < r.peer_target ? " (below)" : "");
    } else {
      std::fprintf(out, "n/a | - |\n");
    }
  }
}

}  // namespace bench
