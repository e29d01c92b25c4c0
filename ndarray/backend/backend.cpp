#include "ndarray/backend/backend.hpp"

#include "context/device.hpp"

namespace mx {

Backend& backend(Context ctx) {
  // Every op asks (for its outputs and its kernel): the valid contexts first, without
  // check_context's calls, which then only throws for the others.
  const int id = ctx.device_id();
  if (ctx.is_cpu() && id == 0) return cpu_backend();
  if (ctx.is_gpu() && id >= 0 && id < num_gpus()) return *gpu_backend();
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
