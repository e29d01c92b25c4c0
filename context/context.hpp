#pragma once
// mx::Context: where an array lives. A small value type (device type + index), like c10::Device.
#include <iosfwd>
#include <string>
#include <vector>

namespace mx {

enum class DeviceType { cpu, gpu };

class Context {
 public:
  constexpr Context(DeviceType type = DeviceType::cpu, int id = 0) : type_(type), id_(id) {}

  constexpr DeviceType device_type() const { return type_; }
  constexpr int device_id() const { return id_; }
  constexpr bool is_gpu() const { return type_ == DeviceType::gpu; }
  constexpr bool is_cpu() const { return type_ == DeviceType::cpu; }
  std::string str() const;  // "cpu(0)", "gpu(1)"

  friend constexpr bool operator==(Context a, Context b) { return a.type_ == b.type_ && a.id_ == b.id_; }
  friend constexpr bool operator!=(Context a, Context b) { return !(a == b); }
  friend constexpr bool operator<(Context a, Context b) {
    return a.type_ != b.type_ ? a.type_ < b.type_ : a.id_ < b.id_;
  }

 private:
  DeviceType type_;
  int id_;
};

std::ostream& operator<<(std::ostream& os, Context ctx);

constexpr Context cpu(int id = 0) { return Context(DeviceType::cpu, id); }
constexpr Context gpu(int id = 0) { return Context(DeviceType::gpu, id); }

// The context that creation functions use when none is given: cpu(0) unless a ContextGuard changed
// it on this thread.
Context current_context();

// Scoped change of current_context() on this thread (like `with mx.gpu(0):` in MXNet).
class ContextGuard {
 public:
  explicit ContextGuard(Context ctx);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  Context previous_;
};

// "[gpu(0), gpu(1)]"
std::string to_string(const std::vector<Context>& contexts);

}  // namespace mx
