#pragma once
// Storage: one allocation on one context, freed through its backend when the last NDArray that
// shares it goes away. Move-only; NDArray holds it through a shared_ptr.
#include <cstddef>

#include "context/context.hpp"

namespace mx {

class Backend;

class Storage {
 public:
  Storage(Context ctx, std::size_t bytes);  // throws mx::OutOfMemory / mx::DeviceError
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Context context() const { return ctx_; }

 private:
  Context ctx_;
  std::size_t bytes_;
  Backend* backend_;
  void* data_;
};

}  // namespace mx
