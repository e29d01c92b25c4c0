#include "ndarray/backend/backend.hpp"

#include "context/device.hpp"

namespace mx {

Backend& backend(Context ctx) {
  check_context(ctx);
  return ctx.is_cpu() ? cpu_backend() : *gpu_backend();
}

void copy_across(Context dst_ctx, void* dst, Context src_ctx, const void* src, std::size_t bytes) {
  check_context(dst_ctx);
  check_context(src_ctx);
  Backend& via = dst_ctx.is_cpu() && src_ctx.is_cpu() ? cpu_backend() : *gpu_backend();
  via.copy_across(dst_ctx, dst, src_ctx, src, bytes);
}

UploadHint& upload_hint() {
  thread_local UploadHint hint;
  return hint;
}

UploadScope::UploadScope(Context from, Context to) {
  if (from.is_cpu() && to.is_gpu()) upload_hint() = {to.device_id(), nullptr};
}

UploadScope::~UploadScope() { upload_hint() = {}; }

void synchronize_all() {
  for (int i = 0; i < num_gpus(); ++i) gpu_backend()->synchronize(gpu(i));
}

}  // namespace mx
