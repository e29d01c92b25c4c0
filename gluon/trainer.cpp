#include "gluon/trainer.hpp"

#include "ndarray/elementwise.hpp"

namespace mx::gluon {

Trainer::Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params)
    : params_(std::move(params)), optimizer_(Optimizer::create(optimizer, optimizer_params)) {
  const auto it = optimizer_params.find("rescale_grad");
  if (it != optimizer_params.end()) rescale_grad_ = it->second;
}

void Trainer::allreduce_grads() {
  for (auto& [name, param] : params_) {
    if (param.grad_req() == "null") continue;
    std::vector<nd::NDArray> grads = param.list_grad();
    if (grads.size() < 2) continue;
    // Sum on the first context (peer copies between GPUs), then give every copy the sum.
    nd::NDArray total = grads[0].copy();
    for (std::size_t i = 1; i < grads.size(); ++i) total += grads[i].copyto(total.context());
    for (nd::NDArray& g : grads) total.copyto(g);
  }
}

void Trainer::update(std::int64_t batch_size) {
  if (batch_size <= 0) throw ValueError("Trainer::step: batch_size must be positive, got " + std::to_string(batch_size));
  optimizer_->set_rescale_grad(rescale_grad_ / static_cast<double>(batch_size));
  std::size_t key = 0;
  for (auto& [name, param] : params_) {
    if (param.grad_req() == "null") continue;
    std::vector<nd::NDArray> data = param.list_data();
    const std::vector<nd::NDArray> grads = param.list_grad();
    for (std::size_t i = 0; i < data.size(); ++i) optimizer_->update(key++, data[i], grads[i]);
  }
}

void Trainer::step(std::int64_t batch_size) {
  allreduce_grads();
  update(batch_size);
}

}  // namespace mx::gluon
