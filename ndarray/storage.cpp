#include "ndarray/storage.hpp"

#include "ndarray/backend.hpp"

namespace mx {

Storage::Storage(Context ctx, std::size_t bytes)
    : ctx_(ctx), bytes_(bytes), backend_(&backend(ctx)), data_(backend_->allocate(ctx, bytes)) {}

Storage::~Storage() { backend_->deallocate(ctx_, data_, bytes_); }

}  // namespace mx
