#pragma once
// contrib::nn::SyncBatchNorm, as mx.gluon.contrib.nn.SyncBatchNorm: BatchNorm (channels on axis 1)
// whose batch statistics in training are those of the whole batch that the GPUs of a data-parallel
// step share, so that training on n GPUs normalises as one GPU does on the whole batch, and every
// GPU's running statistics are the same. Each GPU's copy runs the op _contrib_SyncBatchNorm with
// the layer's prefix as key (ndarray/ops/nn.hpp): every one of the num_devices GPUs must run the
// layer in each training step, forward and backward, as split_and_load's loop does; their streams
// wait for each other, the host does not.
//
//   contrib::nn::SyncBatchNorm()                          // ndev: the contexts it was initialised on
//   contrib::nn::SyncBatchNorm({.in_channels = 16}, 2)
//
// Status (2 H200, 2026-11-28): the op's float64 steps over uneven slices and the layer's
// data-parallel steps match one context on the whole batch, in fresh processes, with CUDA's lazy
// loading (ndgluon's kernels are loaded when a GPU first joins a group: Note [lazy loading and the
// exchange], cuda/module_preload.hpp). BN-LeNet of tutorials/lenet with this layer on 2 GPUs still
// stalls in its first step (a GPU's exchange times out, NDG_EXCHANGE_TIMEOUT, and the next step
// throws naming the layer), with lazy or eager loading alike: something in that first step makes
// the host wait for a GPU whose exchange waits (deferred initialisation of the parameters and
// cuDNN's first use of a shape are the candidates; not established). Until then, initialise the
// parameters with their shapes (or by one forward per context outside record()) before the first
// data-parallel step.
//
// num_devices 0 (MXNet's None) takes the number of contexts the parameters live on, where MXNet
// takes every GPU of the machine. In prediction (outside record() / train_mode) it normalises by
// the running statistics, like BatchNorm, and runs on any context; in training on a CPU context
// it needs num_devices = 1. options.axis must be 1, as MXNet's has no axis.
#include "gluon/nn/batch_norm.hpp"

namespace mx::gluon::contrib::nn {

class SyncBatchNorm : public gluon::nn::BatchNorm {
 public:
  explicit SyncBatchNorm(const gluon::nn::BatchNormOptions& options = {}, int num_devices = 0);
  nd::NDArray forward(const nd::NDArray& x) override;
  int num_devices() const { return num_devices_; }  // 0: the parameters' contexts

 private:
  int num_devices_;
};

}  // namespace mx::gluon::contrib::nn
