// Mixed precision: the multi-precision updates (mp_sgd_update, mp_sgd_mom_update, mp_adam_update and
// the multi-tensor ones) against float32 steps, amp::autocast's cast lists, Block::cast, a
// multi_precision Trainer, and the float16 loss scaler skipping and recovering; on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <gluon/amp.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/ops/op.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;

namespace {

// `v` rounded to dt, on ctx.
nd::NDArray typed(const Values& v, const mx::Shape& shape, mx::Context ctx, DType dt) {
  return nd::array(v.data(), DType::float64, shape, ctx, dt);
}

Values rounded(const Values& v, DType dt) { return ndg_test::values(typed(v, {static_cast<std::int64_t>(v.size())}, mx::cpu(), dt)); }

// A small classifier: Dense(16, relu) -> BatchNorm -> Dense(4).
nn::Sequential small_net() {
  nn::Sequential net;
  net.add(nn::Dense(16, "relu"), nn::BatchNorm(), nn::Dense(4));
  return net;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(amp)

// The master copy holds exactly what float32 steps on the same (16-bit) gradients give, and the
// 16-bit weight is its rounding.
BOOST_AUTO_TEST_CASE(multi_precision_steps_equal_float32_steps) {
  const Values w0 = ndg_test::uniform_values(40, 1);
  for (const DType dt : ndg_test::kHalfDTypes) {
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        nd::NDArray w = typed(w0, {40}, ctx, dt), master = w.astype(DType::float32);
        nd::NDArray mom = nd::zeros({40}, ctx), mean = nd::zeros({40}, ctx), var = nd::zeros({40}, ctx);
        nd::NDArray w32 = master.copy(), mom32 = nd::zeros({40}, ctx);
        nd::NDArray wa = typed(w0, {40}, ctx, dt), master_a = wa.astype(DType::float32);
        nd::NDArray wa32 = master_a.copy(), mean32 = nd::zeros({40}, ctx), var32 = nd::zeros({40}, ctx);
        for (int step = 0; step < 5; ++step) {
          const nd::NDArray g = typed(ndg_test::uniform_values(40, 10 + step), {40}, ctx, dt);
          const nd::NDArray g32 = g.astype(DType::float32);
          nd::mp_sgd_mom_update(w, g, mom, master, 0.1, 0.9, 0.01, 0.5, 0.4);
          nd::sgd_mom_update(w32, g32, mom32, 0.1, 0.9, 0.01, 0.5, 0.4);
          nd::mp_adam_update(wa, g, mean, var, master_a, 0.01, 0.9, 0.99, 1e-6, 0.01);
          nd::adam_update(wa32, g32, mean32, var32, 0.01, 0.9, 0.99, 1e-6, 0.01);
        }
        BOOST_TEST(ndg_test::values(master) == ndg_test::values(w32), tt::per_element());
        BOOST_TEST(ndg_test::values(mom) == ndg_test::values(mom32), tt::per_element());
        BOOST_TEST(ndg_test::values(w) == rounded(ndg_test::values(w32), dt), tt::per_element());
        ndg_test::check_close(master_a, ndg_test::values(wa32), 1e-6, 1e-7);
        ndg_test::check_close(var, ndg_test::values(var32), 1e-6, 1e-9);
        BOOST_TEST(ndg_test::values(wa) == rounded(ndg_test::values(master_a), dt), tt::per_element());
      }
    });
  }
}

// Steps below half a 16-bit ulp vanish without a master copy and add up with one.
BOOST_AUTO_TEST_CASE(small_updates_accumulate_in_the_master_copy) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray plain = nd::ones({4}, ctx, DType::float16), w = nd::ones({4}, ctx, DType::float16);
    nd::NDArray master = w.astype(DType::float32);
    const nd::NDArray g = nd::ones({4}, ctx, DType::float16);
    for (int step = 0; step < 10; ++step) {
      nd::sgd_update(plain, g, 1e-4);  // 1 - 1e-4 rounds back to 1 in float16 (ulp 2^-11 below 1)
      nd::mp_sgd_update(w, g, master, 1e-4);
    }
    BOOST_TEST(ndg_test::values(plain) == Values(4, 1.0), tt::per_element());
    ndg_test::check_close(master, Values(4, 1 - 1e-3), 1e-6, 1e-7);
    BOOST_TEST(ndg_test::values(w) == rounded(Values(4, static_cast<float>(1 - 1e-3)), DType::float16), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(multi_tensor_mp_updates_equal_one_update_per_weight) {
  ndg_test::for_each_context([](mx::Context ctx) {
    std::vector<nd::NDArray> ws, gs, moms, masters;
    std::vector<nd::NDArray> ws1, moms1, masters1;
    for (int i = 0; i < 3; ++i) {
      const mx::Shape shape{5 + i};
      ws.push_back(typed(ndg_test::uniform_values(5 + i, 20 + i), shape, ctx, DType::bfloat16));
      gs.push_back(typed(ndg_test::uniform_values(5 + i, 30 + i), shape, ctx, DType::bfloat16));
      moms.push_back(nd::zeros(shape, ctx));
      masters.push_back(ws.back().astype(DType::float32));
      ws1.push_back(ws.back().copy());
      moms1.push_back(nd::zeros(shape, ctx));
      masters1.push_back(masters.back().copy());
    }
    nd::multi_mp_sgd_mom_update(ws, gs, moms, masters, 0.05, 0.9, 0.001);
    for (int i = 0; i < 3; ++i) nd::mp_sgd_mom_update(ws1[i], gs[i], moms1[i], masters1[i], 0.05, 0.9, 0.001);
    for (int i = 0; i < 3; ++i) {
      BOOST_TEST(ndg_test::values(ws[i]) == ndg_test::values(ws1[i]), tt::per_element());
      BOOST_TEST(ndg_test::values(masters[i]) == ndg_test::values(masters1[i]), tt::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE(mp_updates_refuse_16_bit_states_naming_them) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray w = nd::ones({3}, ctx, DType::float16), g = nd::ones({3}, ctx, DType::float16);
    nd::NDArray half_master = nd::ones({3}, ctx, DType::float16), mom = nd::zeros({3}, ctx, DType::float16);
    nd::NDArray master = nd::ones({3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::mp_sgd_update(w, g, half_master, 0.1), mx::DTypeError, "mp_sgd_update", "weight32",
                          "float32");
    NDG_CHECK_THROWS_WITH(nd::mp_sgd_mom_update(w, g, mom, master, 0.1), mx::DTypeError, "mp_sgd_mom_update", "mom",
                          "float32");
    BOOST_TEST(ndg_test::values(master) == Values(3, 1.0), tt::per_element());  // nothing changed
  });
}

BOOST_AUTO_TEST_CASE(all_finite_sees_inf_and_nan_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64, DType::float16, DType::bfloat16}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        const nd::NDArray fine = typed({1, -2, 65504}, {3}, ctx, dt), big = typed({1e6, 0}, {2}, ctx, DType::float32);
        BOOST_TEST(nd::multi_all_finite({fine, big}).asscalar<float>() == 1.0f);
        BOOST_TEST(nd::multi_all_finite({fine, typed({0, INFINITY}, {2}, ctx, dt)}).asscalar<float>() == 0.0f);
        BOOST_TEST(nd::multi_all_finite({typed({NAN}, {1}, ctx, dt), fine}).asscalar<float>() == 0.0f);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(autocast_follows_mxnets_lists) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType low : ndg_test::kHalfDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(low)) {
        const nd::NDArray x = nd::ones({2, 3}, ctx), w = nd::ones({4, 3}, ctx), b = nd::zeros({4}, ctx);
        auto scope = mx::amp::autocast(low);
        const nd::NDArray y = nd::FullyConnected(x, w, b, 4);  // a product: low precision
        BOOST_TEST(y.dtype() == low);
        BOOST_TEST(ndg_test::values(y) == Values(8, 3.0), tt::per_element());
        BOOST_TEST(nd::dot(x, w, false, true).dtype() == low);
        BOOST_TEST(nd::relu(y).dtype() == low);                // any precision: as given
        BOOST_TEST(nd::softmax(y).dtype() == DType::float32);  // float32
        BOOST_TEST(nd::exp(y).dtype() == DType::float32);
        BOOST_TEST(nd::sum(y).dtype() == DType::float32);
        BOOST_TEST((y + b.reshape({1, 4})).dtype() == DType::float32);  // widest
        BOOST_TEST((y + y).dtype() == low);
        BOOST_TEST(nd::stack({y, nd::ones({2, 4}, ctx)}).dtype() == DType::float32);  // widest, as MXNet's lists
        BOOST_TEST(nd::where(y, y, y).dtype() == low);
        BOOST_TEST(nd::where(y, y, nd::ones({2, 4}, ctx)).dtype() == DType::float32);
        BOOST_TEST((y + x.astype(DType::float64).sum()).dtype() == DType::float64);
        {
          auto off = mx::amp::autocast(std::nullopt);  // nested: off, then back on
          BOOST_CHECK_THROW(y + b.reshape({1, 4}), mx::DTypeError);
        }
        BOOST_TEST(nd::dot(x, w, false, true).dtype() == low);
        // The attention products are low-precision, the norms keep the dtype the data has.
        const nd::NDArray qkv = nd::ones({3, 2, 12}, ctx);
        BOOST_TEST(nd::contrib::interleaved_matmul_selfatt_qk(qkv, 2).dtype() == low);
        BOOST_TEST(nd::LayerNorm(y, nd::ones({4}, ctx), nd::zeros({4}, ctx)).dtype() == low);
      }
    }
    BOOST_TEST(!mx::amp::autocast_dtype().has_value());
    NDG_CHECK_THROWS_WITH((void)mx::amp::autocast(DType::float32), mx::DTypeError, "autocast", "float32");
  });
  // Every listed op is a registered op: a typo in a list would silently turn it off.
  for (const auto policy : {mx::amp::CastPolicy::low_precision, mx::amp::CastPolicy::float32,
                            mx::amp::CastPolicy::widest}) {
    for (const char* name : mx::amp::ops_of(policy)) {
      mx::op::AttrPairs attrs;
      BOOST_TEST(mx::op::find_op(name, attrs) != nullptr, name << " is not a registered op");
    }
  }
}

// A net trained under autocast: float32 parameters get float32 gradients close to float32's, and
// a hybridized net gives the eager result, with a graph of its own for the autocast signature.
BOOST_AUTO_TEST_CASE(gradients_under_autocast_reach_float32_parameters) {
  const Values xv = ndg_test::uniform_values(8 * 6, 3);
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(5);
    nn::Sequential net = small_net();
    net.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = nd::array(xv, {8, 6}, ctx, DType::float32), label = nd::array({0, 1, 2, 3, 0, 1, 2, 3}, ctx);
    gluon::loss::SoftmaxCrossEntropyLoss loss_fn;
    const auto grads = [&](std::optional<DType> low) {
      std::vector<Values> out;
      {
        auto scope = mx::amp::autocast(low);
        auto record = ag::record();
        const nd::NDArray loss = loss_fn(net(x), label);
        BOOST_TEST(loss.dtype() == DType::float32);
        loss.backward();
      }
      for (const auto& [name, p] : net.collect_params()) {
        if (p.grad_req() == "null") continue;
        BOOST_TEST(p.grad(ctx).dtype() == DType::float32);
        out.push_back(ndg_test::values(p.grad(ctx)));
      }
      return out;
    };
    const std::vector<Values> want = grads(std::nullopt), got = grads(DType::bfloat16);
    BOOST_TEST_REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      double scale = 0;
      for (double v : want[i]) scale = std::max(scale, std::abs(v));
      for (std::size_t j = 0; j < got[i].size(); ++j) BOOST_TEST(std::abs(got[i][j] - want[i][j]) <= 0.05 * scale);
    }
    // Hybridized under autocast: the eager values, bit for bit.
    nd::NDArray eager, hybrid, plain;
    {
      auto scope = mx::amp::autocast(DType::float16);
      eager = net(x);
      net.hybridize();
      hybrid = net(x);
      BOOST_TEST(hybrid.dtype() == DType::float16);
    }
    plain = net(x);  // a new signature: traced without the casts
    BOOST_TEST(plain.dtype() == DType::float32);
    BOOST_TEST(ndg_test::values(hybrid) == ndg_test::values(eager), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(cast_converts_parameters_but_batch_norms) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : ndg_test::kHalfDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        mx::random::seed(2);
        nn::Sequential net = small_net();
        net.initialize(mx::init::Xavier(), ctx);
        const nd::NDArray x = nd::array(ndg_test::uniform_values(4 * 6, 9), {4, 6}, ctx, DType::float32);
        const Values y32 = ndg_test::values(net(x));
        const Values weight32 = ndg_test::values(net.at<nn::Dense>(0).weight().data(ctx));
        net.cast(dt);
        BOOST_TEST(net.at<nn::Dense>(0).weight().dtype() == dt);
        BOOST_TEST(net.at<nn::Dense>(0).weight().data(ctx).dtype() == dt);
        BOOST_TEST(net.at<nn::BatchNorm>(1).gamma().dtype() == DType::float32);
        BOOST_TEST(net.at<nn::BatchNorm>(1).running_var().data(ctx).dtype() == DType::float32);
        BOOST_TEST(ndg_test::values(net.at<nn::Dense>(0).weight().data(ctx)) == rounded(weight32, dt), tt::per_element());
        const nd::NDArray y = net(x.astype(dt));
        BOOST_TEST(y.dtype() == dt);
        const Values got = ndg_test::values(y);
        for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(std::abs(got[i] - y32[i]) <= 0.05 * (1 + std::abs(y32[i])));
        NDG_CHECK_THROWS_WITH(net.cast(DType::int32), mx::DTypeError, "int32");
      }
    }
  });
}

// A float16 net with multi_precision keeps float32 masters in the Trainer: its weights track a
// float32 net's trained on the same batches.
BOOST_AUTO_TEST_CASE(multi_precision_trainer_tracks_float32_training) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const auto train = [&](DType dt) {
      mx::random::seed(4);
      nn::Sequential net;
      net.add(nn::Dense(8, "tanh"), nn::Dense(3));
      net.initialize(mx::init::Xavier(), ctx);
      net.cast(dt);
      gluon::Trainer trainer(net.collect_params(), "sgd",
                             {{"learning_rate", 0.1}, {"momentum", 0.9}, {"multi_precision", 1}});
      gluon::loss::SoftmaxCrossEntropyLoss loss_fn;
      for (int step = 0; step < 20; ++step) {
        const nd::NDArray x = nd::array(ndg_test::uniform_values(16 * 5, 100 + step), {16, 5}, ctx, dt);
        nd::NDArray label = nd::array(std::vector<float>(16, static_cast<float>(step % 3)), {16}, ctx);
        {
          auto record = ag::record();
          loss_fn(net(x), label).backward();
        }
        trainer.step(16);
      }
      return ndg_test::values(net.at<nn::Dense>(0).weight().data(ctx));
    };
    const Values w32 = train(DType::float32), w16 = train(DType::float16);
    for (std::size_t i = 0; i < w32.size(); ++i) BOOST_TEST(std::abs(w16[i] - w32[i]) <= 0.02 * (1 + std::abs(w32[i])));
  });
}

// A multi_precision Trainer's float32 masters follow values given to the weights from outside:
// after set_data, and after load_parameters, a step with a zero gradient leaves exactly the new
// values (a stale master would put the trained ones back).
BOOST_AUTO_TEST_CASE(multi_precision_masters_follow_set_data_and_load_parameters) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    mx::random::seed(8);
    nn::Dense net(3, "", true, 4);
    net.initialize(mx::init::Xavier(), ctx);
    net.cast(DType::float16);
    gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.5}, {"multi_precision", 1}});
    const nd::NDArray x = nd::array(ndg_test::uniform_values(2 * 4, 9), {2, 4}, ctx, DType::float16);
    const auto step = [&](double loss_weight) {
      {
        auto record = ag::record();
        (net(x) * loss_weight).astype(DType::float32).sum().backward();
      }
      trainer.step(2);
    };
    step(1.0);  // the masters exist now
    const nd::NDArray given = nd::array(ndg_test::uniform_values(3 * 4, 10), {3, 4}, ctx, DType::float16);
    net.weight().set_data(given);
    step(0.0);
    BOOST_TEST(ndg_test::values(net.weight().data(ctx)) == ndg_test::values(given), tt::per_element());
    net.save_parameters(dir.file("given.params"));
    step(1.0);
    step(1.0);
    BOOST_TEST(ndg_test::values(net.weight().data(ctx)) != ndg_test::values(given));
    net.load_parameters(dir.file("given.params"), ctx);
    step(0.0);
    BOOST_TEST(ndg_test::values(net.weight().data(ctx)) == ndg_test::values(given), tt::per_element());
  });
}

// float16 with loss scaling: an overflowing step changes nothing and halves the scale; the next
// steps train; a clean window doubles it.
BOOST_AUTO_TEST_CASE(loss_scaler_skips_overflowing_steps_and_recovers) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(6);
    nn::Dense net(3, "", true, 4);
    net.initialize(mx::init::Xavier(), ctx);
    net.cast(DType::float16);
    gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}, {"multi_precision", 1}});
    NDG_CHECK_THROWS_WITH(mx::amp::scale_loss(nd::ones({1}, ctx), trainer), mx::ValueError, "init_trainer");
    mx::amp::init_trainer(trainer, std::make_shared<mx::amp::LossScaler>(65536.0, 2.0, 3));
    const nd::NDArray x = nd::ones({2, 4}, ctx, DType::float16);
    const auto step = [&](double loss_weight) {
      {
        auto record = ag::record();
        mx::amp::scale_loss((net(x) * loss_weight).astype(DType::float32).sum(), trainer).backward();
      }
      trainer.step(2);
    };
    const Values before = ndg_test::values(net.weight().data(ctx));
    step(1.0);  // 65536 * 2 rows in float16: the gradient overflows (> 65504)
    BOOST_TEST(ndg_test::values(net.weight().data(ctx)) == before, tt::per_element());
    BOOST_TEST(trainer.loss_scaler()->loss_scale() == 32768.0);
    BOOST_TEST(trainer.loss_scaler()->skipped_steps() == 1);
    BOOST_TEST(trainer.num_update() == 0);
    step(0.01);  // 32768 * 0.02 fits: trains, with the gradient unscaled
    const Values after = ndg_test::values(net.weight().data(ctx));
    for (std::size_t i = 0; i < after.size(); ++i) {
      BOOST_TEST(std::abs(after[i] - (before[i] - 0.1 * 0.01)) <= 2e-3);  // d(sum)/dw = 0.01 * rows / batch
    }
    step(0.01);
    step(0.01);  // three clean steps: the scale doubles back
    BOOST_TEST(trainer.loss_scaler()->loss_scale() == 65536.0);
    BOOST_TEST(trainer.num_update() == 3);
    NDG_CHECK_THROWS_WITH(mx::amp::LossScaler(0), mx::ValueError, "init_scale");
  });
}

// The state Trainer::save_states keeps: the scale, the clean steps since it last changed and the
// skipped steps, restored whole or not at all.
BOOST_AUTO_TEST_CASE(loss_scaler_state_is_read_and_restored) {
  mx::amp::LossScaler scaler(1024.0, 2.0, 3);
  BOOST_TEST(scaler.scale_factor() == 2.0);
  BOOST_TEST(scaler.scale_window() == 3);
  scaler.update_scale(false);
  scaler.update_scale(false);
  BOOST_TEST(scaler.unskipped() == 2);
  scaler.update_scale(true);
  BOOST_TEST(scaler.unskipped() == 0);
  BOOST_TEST(scaler.skipped_steps() == 1);
  mx::amp::LossScaler other;
  other.set_state(scaler.loss_scale(), 2, 1);
  BOOST_TEST(other.loss_scale() == 512.0);
  BOOST_TEST(other.unskipped() == 2);
  BOOST_TEST(other.skipped_steps() == 1);
  NDG_CHECK_THROWS_WITH(other.set_state(0, 0, 0), mx::ValueError, "scale");
  NDG_CHECK_THROWS_WITH(other.set_state(8, -1, 0), mx::ValueError, "-1");
  BOOST_TEST(other.loss_scale() == 512.0);  // unchanged
}

BOOST_AUTO_TEST_SUITE_END()
