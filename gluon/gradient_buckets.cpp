#include "gluon/gradient_buckets.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "ndarray/dist/collective.hpp"
#include "ndarray/dist/dist.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::gluon {

std::shared_ptr<GradientBuckets> GradientBuckets::make(std::vector<Param> params, std::vector<Context> contexts,
                                                       std::size_t cap_bytes, bool dist, nd::ReduceAlgo algo) {
  std::shared_ptr<GradientBuckets> buckets(
      new GradientBuckets(std::move(params), std::move(contexts), cap_bytes, dist, algo));
  buckets->listen();
  return buckets;
}

GradientBuckets::GradientBuckets(std::vector<Param> params, std::vector<Context> contexts, std::size_t cap_bytes,
                                 bool dist, nd::ReduceAlgo algo)
    : contexts_(std::move(contexts)), dist_(dist), algo_(algo),
      on_copy_engines_((!dist || dist::world_size() == 1) && algo == nd::ReduceAlgo::automatic &&
                       nd::overlap::copy_engines(contexts_)) {
  for (Param& p : params) {
    names_.insert(p.name);
    entries_.push_back({std::move(p), 0, std::vector<char>(contexts_.size(), 0), false});
  }
  // Reverse order; a bucket closes once it holds its cap (the first: at most kFirstBucketBytes).
  const std::size_t first_cap = std::min(cap_bytes, kFirstBucketBytes);
  std::size_t bytes = 0;
  for (std::size_t i = entries_.size(); i-- > 0;) {
    if (buckets_.empty() || bytes >= (buckets_.size() == 1 ? first_cap : cap_bytes)) {
      buckets_.push_back({{}, std::vector<std::size_t>(contexts_.size(), 0), 0});
      bytes = 0;
    }
    const nd::NDArray& g = entries_[i].param.grads[0];
    bytes += static_cast<std::size_t>(g.size()) * dtype_size(g.dtype());
    entries_[i].bucket = buckets_.size() - 1;
    buckets_.back().entries.push_back(i);
  }
}

bool GradientBuckets::holds(const std::vector<Param>& params) const {
  if (params.size() != entries_.size()) return false;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Param& mine = entries_[i].param;
    if (params[i].name != mine.name || params[i].data.size() != mine.data.size()) return false;
    for (std::size_t c = 0; c < mine.data.size(); ++c) {
      if (!params[i].data[c].is(mine.data[c]) || !params[i].grads[c].is(mine.grads[c]) ||
          params[i].data[c].autograd_node() != mine.data[c].autograd_node()) {
        return false;
      }
    }
  }
  return true;
}

void GradientBuckets::listen() {
  const std::shared_ptr<GradientBuckets> self = shared_from_this();
  const auto n = static_cast<std::int64_t>(contexts_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    for (std::size_t c = 0; c < contexts_.size(); ++c) {
      autograd::add_gradient_listener(entries_[i].param.data[c], self, static_cast<std::int64_t>(i) * n +
                                                                           static_cast<std::int64_t>(c));
    }
  }
}

std::vector<std::vector<std::string>> GradientBuckets::layout() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    out.emplace_back();
    for (std::size_t i : b.entries) out.back().push_back(entries_[i].param.name);
  }
  return out;
}

bool GradientBuckets::holds_param(const std::string& name) const {
  return names_.count(name) > 0;
}

void GradientBuckets::gradient_ready(std::int64_t tag) {
  const auto n = static_cast<std::int64_t>(contexts_.size());
  Entry& e = entries_[static_cast<std::size_t>(tag / n)];
  const auto c = static_cast<std::size_t>(tag % n);
  e.summed = false;  // holds this context's own gradient again
  if (e.written[c]) return;
  e.written[c] = 1;
  Bucket& b = buckets_[e.bucket];
  if (++b.written[c] < b.entries.size()) return;
  // The bucket's last gradient on this GPU is queued: its sum may start from here.
  nd::overlap::mark(contexts_[c], static_cast<int>(e.bucket));
  if (++b.complete_contexts == contexts_.size()) launch(e.bucket);
}

void GradientBuckets::launch(std::size_t bucket) {
  Bucket& b = buckets_[bucket];
  sum(b.entries, static_cast<int>(bucket));
  for (std::size_t i : b.entries) {
    entries_[i].summed = true;
    std::fill(entries_[i].written.begin(), entries_[i].written.end(), 0);
  }
  std::fill(b.written.begin(), b.written.end(), 0);
  b.complete_contexts = 0;
}

void GradientBuckets::sum(const std::vector<std::size_t>& entries, int slot) {
  const profiler::Range range("gradient bucket all_reduce");
  std::vector<std::vector<nd::NDArray>> groups;
  for (std::size_t i : entries) groups.push_back(entries_[i].param.grads);
  if (dist_) dist::all_reduce_overlapped(groups, slot);
  else nd::overlap::all_reduce(groups, slot, algo_);
  // A slot summed again: its join waits for this sum, which comes after the earlier one.
  std::erase_if(started_, [&](const Started& s) { return s.slot == slot; });
  started_.push_back({slot, entries});
}

void GradientBuckets::backward_end() {
  defer_join();
}

void GradientBuckets::defer_join() {
  if (started_.empty()) return;
  for (Context ctx : contexts_) nd::overlap::defer_join(ctx);
}

void GradientBuckets::join() {
  for (Context ctx : contexts_) nd::overlap::join(ctx);
  started_.clear();
}

void GradientBuckets::finish() {
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].summed) rest.push_back(i);
  }
  if (!rest.empty()) {
    const int slot = static_cast<int>(buckets_.size());  // after everything queued now
    for (Context ctx : contexts_) nd::overlap::mark(ctx, slot);
    sum(rest, slot);
  }
  defer_join();
  reset();
}

bool GradientBuckets::join_in_turn(const std::function<void(const std::unordered_set<std::string>&)>& update) {
  if (started_.empty()) return false;
  for (Context ctx : contexts_) nd::overlap::cancel_deferred_join(ctx);
  // Each parameter with the last sum that holds it (a gradient summed twice: the later sum).
  std::vector<std::size_t> last(entries_.size(), started_.size());
  for (std::size_t s = 0; s < started_.size(); ++s) {
    for (std::size_t i : started_[s].entries) last[i] = s;
  }
  try {
    for (std::size_t s = 0; s < started_.size(); ++s) {
      std::unordered_set<std::string> names;
      for (std::size_t i : started_[s].entries) {
        if (last[i] == s) names.insert(entries_[i].param.name);
      }
      for (Context ctx : contexts_) nd::overlap::join(ctx, started_[s].slot);
      update(names);
    }
  } catch (...) {
    join();
    throw;
  }
  join();
  return true;
}

void GradientBuckets::reset() {
  for (Entry& e : entries_) {
    e.summed = false;
    std::fill(e.written.begin(), e.written.end(), 0);
  }
  for (Bucket& b : buckets_) {
    std::fill(b.written.begin(), b.written.end(), 0);
    b.complete_contexts = 0;
  }
}

}  // namespace mx::gluon
