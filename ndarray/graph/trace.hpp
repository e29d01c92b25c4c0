#pragma once
// Tracing: while a TraceScope is alive on a thread, every invocation that op::invoke and
// op::invoke_into run there is also handed to its sink after the kernel is queued. hybridize()
// builds its graph this way (ndarray/graph/graph.hpp). Internal header.
#include "ndarray/ops/op.hpp"

namespace mx::op {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // inv's inputs and outputs are the arrays the caller sees (not the detached copies autograd keeps).
  virtual void record(const Invocation& inv) = 0;
};

// The thread's sink, or null.
TraceSink* trace_sink();

// Sets the thread's sink for the scope's life; the previous one comes back after (scopes nest).
class TraceScope {
 public:
  explicit TraceScope(TraceSink* sink);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceSink* previous_;
};

}  // namespace mx::op
