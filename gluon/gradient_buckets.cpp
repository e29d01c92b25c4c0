#include "gluon/gradient_buckets.hpp"

#include <algorithm>
#include <utility>

#include "ndarray/collective.hpp"
#include "ndarray/dist.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/profiler.hpp"

namespace mx::gluon {

std::shared_ptr<GradientBuckets> GradientBuckets::make(std::vector<Param> params, std::vector<Context> contexts,
                                                       std::size_t cap_bytes, bool dist) {
  std::shared_ptr<GradientBuckets> buckets(new GradientBuckets(std::move(params), std::move(contexts), cap_bytes, dist));
  buckets->listen();
  return buckets;
}

GradientBuckets::GradientBuckets(std::vector<Param> params, std::vector<Context> contexts, std::size_t cap_bytes,
                                 bool dist)
    : contexts_(std::move(contexts)), dist_(dist) {
  for (Param& p : params) entries_.push_back({std::move(p), {}});
  // Reverse order, blocks in row order; a bucket closes once it holds its cap (the first: at most
  // kFirstBucketBytes), and after a block.
  const std::size_t first_cap = std::min(cap_bytes, kFirstBucketBytes);
  std::size_t bytes = 0;
  bool closed = true;
  for (std::size_t i = entries_.size(); i-- > 0;) {
    const nd::NDArray& g = entries_[i].param.grads[0];
    const std::vector<std::int64_t> rows = op::gradient_row_blocks(g.shape(), g.dtype(), g.context());
    const std::size_t row_bytes = rows.back() > 0 ? static_cast<std::size_t>(g.size() / rows.back()) * dtype_size(g.dtype()) : 0;
    for (std::size_t b = 0; b + 1 < rows.size(); ++b) {
      if (closed) {
        buckets_.push_back({{}, std::vector<std::size_t>(contexts_.size(), 0), 0});
        bytes = 0;
      }
      const bool block = rows.size() > 2;
      units_.push_back({i, rows[b], rows[b + 1], block, buckets_.size() - 1, std::vector<char>(contexts_.size(), 0),
                        std::vector<char>(contexts_.size(), 0), false});
      entries_[i].units.push_back(units_.size() - 1);
      buckets_.back().units.push_back(units_.size() - 1);
      bytes += block ? static_cast<std::size_t>(rows[b + 1] - rows[b]) * row_bytes
                     : static_cast<std::size_t>(g.size()) * dtype_size(g.dtype());
      closed = block || bytes >= (buckets_.size() == 1 ? first_cap : cap_bytes);
    }
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
    for (std::size_t u : b.units) {
      const Unit& unit = units_[u];
      const std::string& name = entries_[unit.entry].param.name;
      out.back().push_back(unit.block ? name + "[" + std::to_string(unit.begin) + ":" + std::to_string(unit.end) + "]"
                                      : name);
    }
  }
  return out;
}

bool GradientBuckets::holds_param(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.param.name == name; });
}

void GradientBuckets::gradient_ready(std::int64_t tag) {
  const auto n = static_cast<std::int64_t>(contexts_.size());
  for (std::size_t u : entries_[static_cast<std::size_t>(tag / n)].units) unit_written(u, static_cast<std::size_t>(tag % n));
}

void GradientBuckets::gradient_rows_ready(std::int64_t tag, std::int64_t begin, std::int64_t end) {
  const auto n = static_cast<std::int64_t>(contexts_.size());
  for (std::size_t u : entries_[static_cast<std::size_t>(tag / n)].units) {
    if (units_[u].begin >= begin && units_[u].end <= end) unit_written(u, static_cast<std::size_t>(tag % n));
  }
}

void GradientBuckets::unit_written(std::size_t unit, std::size_t c) {
  Unit& u = units_[unit];
  if (u.told[c]) return;  // its block was told of already, in this backward
  u.told[c] = 1;
  u.summed = false;  // holds this context's own gradient again
  if (u.written[c]) return;
  u.written[c] = 1;
  Bucket& b = buckets_[u.bucket];
  if (++b.written[c] < b.units.size()) return;
  // The bucket's last gradient on this GPU is queued: its sum may start from here.
  nd::overlap::mark(contexts_[c], static_cast<int>(u.bucket));
  if (++b.complete_contexts == contexts_.size()) launch(u.bucket);
}

void GradientBuckets::launch(std::size_t bucket) {
  Bucket& b = buckets_[bucket];
  sum(b.units, static_cast<int>(bucket));
  for (std::size_t u : b.units) {
    units_[u].summed = true;
    std::fill(units_[u].written.begin(), units_[u].written.end(), 0);
  }
  std::fill(b.written.begin(), b.written.end(), 0);
  b.complete_contexts = 0;
}

void GradientBuckets::sum(const std::vector<std::size_t>& units, int slot) {
  const profiler::Range range("gradient bucket all_reduce");
  std::vector<std::vector<nd::NDArray>> groups;
  for (std::size_t u : units) {
    const Unit& unit = units_[u];
    groups.push_back(entries_[unit.entry].param.grads);
    if (unit.block) {
      for (nd::NDArray& g : groups.back()) g = g.slice(unit.begin, unit.end);
    }
  }
  if (dist_) dist::all_reduce_overlapped(groups, slot);
  else nd::overlap::all_reduce(groups, slot);
  launched_ = true;
}

void GradientBuckets::backward_end() {
  for (Unit& u : units_) std::fill(u.told.begin(), u.told.end(), 0);
  if (launched_) join();
}

void GradientBuckets::join() {
  for (Context ctx : contexts_) nd::overlap::join(ctx);
  launched_ = false;
}

void GradientBuckets::finish() {
  std::vector<std::size_t> rest;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (!units_[u].summed) rest.push_back(u);
  }
  if (!rest.empty()) {
    const int slot = static_cast<int>(buckets_.size());  // after everything queued now
    for (Context ctx : contexts_) nd::overlap::mark(ctx, slot);
    sum(rest, slot);
  }
  join();
  reset();
}

void GradientBuckets::reset() {
  for (Unit& u : units_) {
    u.summed = false;
    std::fill(u.written.begin(), u.written.end(), 0);
    std::fill(u.told.begin(), u.told.end(), 0);
  }
  for (Bucket& b : buckets_) {
    std::fill(b.written.begin(), b.written.end(), 0);
    b.complete_contexts = 0;
  }
}

}  // namespace mx::gluon
