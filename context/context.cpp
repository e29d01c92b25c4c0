#include "context/context.hpp"
#include "context/fast_tls.hpp"

#include <ostream>

namespace mx {

std::string Context::str() const {
  return (is_gpu() ? "gpu(" : "cpu(") + std::to_string(id_) + ")";
}

std::ostream& operator<<(std::ostream& os, Context ctx) { return os << ctx.str(); }

namespace {
NDG_FAST_TLS thread_local Context current = cpu(0);
}

Context current_context() { return current; }

ContextGuard::ContextGuard(Context ctx) : previous_(current) { current = ctx; }
ContextGuard::~ContextGuard() { current = previous_; }

std::string to_string(const std::vector<Context>& contexts) {
  std::string out = "[";
  for (size_t i = 0; i < contexts.size(); ++i) out += (i ? ", " : "") + contexts[i].str();
  return out + "]";
}

}  // namespace mx
