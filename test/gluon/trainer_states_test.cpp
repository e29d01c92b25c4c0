// Trainer::save_states / load_states: training N steps, saving, and going on from the files with a
// new net and Trainer equals N + M steps without a pause, bit for bit, for every optimizer of
// kOptimizers, with an lr_scheduler, a loss scaler, float16 weights with float32 master copies and
// on every context; the file's key layout; and the files refused, each with the Trainer unchanged.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gluon/amp.hpp>
#include <gluon/loss.hpp>
#include <gluon/lr_scheduler.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/io/ndarray_file.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;

namespace {

// The optimizers whose state save_states must carry, each with hyper-parameters that give it
// state arrays. An optimizer added to the library is covered by every resume case below once its
// name is added here.
struct OptimizerCase {
  std::string name;
  gluon::HyperParams params;
};
const std::vector<OptimizerCase> kOptimizers = {
    {"sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"wd", 0.001}}},
    {"adam", {{"learning_rate", 0.01}, {"wd", 0.001}}},
    {"nag", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"wd", 0.001}}},
    {"signum", {{"learning_rate", 0.01}, {"momentum", 0.9}}},
    {"adagrad", {{"learning_rate", 0.1}}},
    {"rmsprop", {{"learning_rate", 0.01}, {"centered", 1}}},
    {"adadelta", {{"wd", 0.001}}},
    {"adamax", {{"learning_rate", 0.01}}},
    {"nadam", {{"learning_rate", 0.01}}},
    {"adamw", {{"learning_rate", 0.01}, {"wd", 0.01}}},
    {"ftrl", {{"learning_rate", 0.1}}},
    {"ftml", {{"learning_rate", 0.01}}},
    {"lamb", {{"learning_rate", 0.01}, {"wd", 0.01}}},
    {"lars", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"eta", 0.01}}},
};

// The steps before the pause and after it.
constexpr int kStepsBefore = 3, kStepsAfter = 4;

// A small classifier, 4 -> 8 -> 3, with the same values every time, on ctxs in dtype.
nn::Sequential make_net(const std::vector<mx::Context>& ctxs, DType dtype = DType::float32, std::int64_t hidden = 8) {
  nn::Sequential net;
  net.add(nn::Dense(hidden, "tanh", true, 4), nn::Dense(3, "", true, hidden));
  net.initialize(mx::init::Zero(), ctxs);
  unsigned seed = 1;
  for (auto& [name, param] : net.collect_params()) {
    param.set_data(nd::array(ndg_test::uniform_values(static_cast<std::size_t>(param.shape().numel()), seed++),
                             param.shape(), mx::cpu(), DType::float32));
  }
  if (dtype != DType::float32) net.cast(dtype);
  return net;
}

// One training step on batch number `step` (6 samples), split over the net's contexts; the loss is
// scaled when the trainer has a loss scaler.
void train_step(nn::Sequential& net, gluon::Trainer& trainer, const std::vector<mx::Context>& ctxs, DType dtype,
                int step) {
  constexpr std::int64_t batch = 6;
  const nd::NDArray x = nd::array(ndg_test::uniform_values(batch * 4, 100 + static_cast<unsigned>(step)), {batch, 4},
                                  mx::cpu(), dtype) * 2.0;
  std::vector<double> labels;
  for (std::int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<double>((i + step) % 3));
  const nd::NDArray y = nd::array(labels, {batch}, mx::cpu(), DType::float32);
  const std::vector<nd::NDArray> xs = gluon::utils::split_and_load(x, ctxs), ys = gluon::utils::split_and_load(y, ctxs);
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  std::vector<nd::NDArray> heads;
  {
    auto recording = ag::record();
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const nd::NDArray l = loss(net(xs[k]).astype(DType::float32), ys[k]);
      heads.push_back(trainer.loss_scaler() ? mx::amp::scale_loss(l, trainer) : l);
    }
  }
  for (const nd::NDArray& h : heads) h.backward();
  trainer.step(batch);
}

// How a resume case trains besides its optimizer.
struct Variant {
  std::string name;
  DType dtype = DType::float32;
  bool multi_precision = false;
  std::function<std::shared_ptr<mx::lr_scheduler::LRScheduler>()> scheduler = nullptr;
  std::function<std::shared_ptr<mx::amp::LossScaler>()> scaler = nullptr;
};

const std::vector<Variant> kVariants = {
    {"plain"},
    {"FactorScheduler", DType::float32, false,
     [] { return std::make_shared<mx::lr_scheduler::FactorScheduler>(2, 0.5, 1e-8, 0.1); }},
    {"MultiFactorScheduler with a warm-up", DType::float32, false,
     [] { return std::make_shared<mx::lr_scheduler::MultiFactorScheduler>(std::vector<std::int64_t>{2, 5}, 0.5, 0.1, 1); }},
    {"CosineScheduler", DType::float32, false,
     [] { return std::make_shared<mx::lr_scheduler::CosineScheduler>(6, 0.1, 0.001); }},
    // A window of 2: the scale doubles every second step, so the count at the pause matters.
    {"loss scaler", DType::float32, false, nullptr, [] { return std::make_shared<mx::amp::LossScaler>(1024.0, 2.0, 2); }},
    // float16 weights, float32 masters, and a scale large enough for float16 gradients to overflow.
    {"float16 with multi_precision and a loss scaler", DType::float16, true, nullptr,
     [] { return std::make_shared<mx::amp::LossScaler>(65536.0 * 4, 2.0, 2); }},
};

// A Trainer of `optimizer` on net, as the variant says.
std::unique_ptr<gluon::Trainer> make_trainer(nn::Sequential& net, const OptimizerCase& optimizer, const Variant& v) {
  gluon::HyperParams params = optimizer.params;
  if (v.multi_precision) params["multi_precision"] = 1;
  auto trainer = std::make_unique<gluon::Trainer>(net.collect_params(), optimizer.name, params,
                                                  v.scheduler ? v.scheduler() : nullptr);
  if (v.scaler) mx::amp::init_trainer(*trainer, v.scaler());
  return trainer;
}

// The entries of a states file but the parameters' names (which differ between nets made one after
// the other: dense0_weight, dense2_weight).
std::map<std::string, nd::NDArray> entries_but_names(const std::string& bytes) {
  const nd::LoadedArrays loaded = nd::load_frombuffer(bytes);
  std::map<std::string, nd::NDArray> entries;
  for (std::size_t i = 0; i < loaded.names.size(); ++i) {
    const std::string& key = loaded.names[i];
    if (key.size() < 5 || key.compare(key.size() - 5, 5, ".name") != 0) entries[key] = loaded.arrays[i];
  }
  return entries;
}

// Both nets' parameters, every copy, bit for bit.
void check_same_parameters(const nn::Sequential& got, const nn::Sequential& want) {
  const gluon::ParameterDict a = got.collect_params(), b = want.collect_params();
  BOOST_TEST_REQUIRE(a.size() == b.size());
  auto it = b.begin();
  for (const auto& [name, param] : a) {
    BOOST_TEST_CONTEXT(name) {
      const std::vector<nd::NDArray> x = param.list_data(), y = it->second.list_data();
      BOOST_TEST_REQUIRE(x.size() == y.size());
      for (std::size_t c = 0; c < x.size(); ++c) {
        BOOST_TEST(x[c].context() == y[c].context());
        BOOST_TEST(ndg_test::values(x[c]) == ndg_test::values(y[c]), tt::per_element());
      }
    }
    ++it;
  }
}

// Training kStepsBefore steps, saving, loading into a new net and Trainer and training kStepsAfter
// more gives what kStepsBefore + kStepsAfter steps without a pause give.
void check_resume(const std::vector<mx::Context>& ctxs, const OptimizerCase& optimizer, const Variant& v) {
  const ndg_test::TempDir dir;
  nn::Sequential net = make_net(ctxs, v.dtype);
  std::unique_ptr<gluon::Trainer> trainer = make_trainer(net, optimizer, v);
  for (int s = 0; s < kStepsBefore; ++s) train_step(net, *trainer, ctxs, v.dtype, s);
  net.save_parameters(dir.file("net.params"));
  trainer->save_states(dir.file("net.states"));

  nn::Sequential resumed = make_net(ctxs, v.dtype);
  std::unique_ptr<gluon::Trainer> resumed_trainer = make_trainer(resumed, optimizer, v);
  resumed.load_parameters(dir.file("net.params"), ctxs);
  resumed_trainer->load_states(dir.file("net.states"));
  BOOST_TEST(resumed_trainer->num_update() == trainer->num_update());
  BOOST_TEST(resumed_trainer->optimizer().learning_rate() == trainer->optimizer().learning_rate());
  // What the file holds is what the first Trainer has.
  BOOST_TEST((entries_but_names(resumed_trainer->save_states_tobuffer()).size() ==
              entries_but_names(trainer->save_states_tobuffer()).size()));
  for (int s = kStepsBefore; s < kStepsBefore + kStepsAfter; ++s) {
    train_step(net, *trainer, ctxs, v.dtype, s);
    train_step(resumed, *resumed_trainer, ctxs, v.dtype, s);
  }

  nn::Sequential straight = make_net(ctxs, v.dtype);
  std::unique_ptr<gluon::Trainer> straight_trainer = make_trainer(straight, optimizer, v);
  for (int s = 0; s < kStepsBefore + kStepsAfter; ++s) train_step(straight, *straight_trainer, ctxs, v.dtype, s);

  check_same_parameters(resumed, straight);
  check_same_parameters(net, straight);
  BOOST_TEST(resumed_trainer->num_update() == straight_trainer->num_update());
  BOOST_TEST(resumed_trainer->learning_rate() == straight_trainer->learning_rate());
  if (v.scaler) {
    BOOST_TEST(resumed_trainer->loss_scaler()->loss_scale() == straight_trainer->loss_scaler()->loss_scale());
    BOOST_TEST(resumed_trainer->loss_scaler()->unskipped() == straight_trainer->loss_scaler()->unskipped());
    BOOST_TEST(resumed_trainer->loss_scaler()->skipped_steps() == straight_trainer->loss_scaler()->skipped_steps());
    // float16 at this scale overflows: the skipped steps are part of what is resumed.
    if (v.dtype == DType::float16) BOOST_TEST(straight_trainer->loss_scaler()->skipped_steps() > 0);
  }
  // Every state, count and scalar equal (the saved files but the names).
  const auto got = entries_but_names(resumed_trainer->save_states_tobuffer());
  const auto want = entries_but_names(straight_trainer->save_states_tobuffer());
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (const auto& [key, array] : want) {
    BOOST_TEST_CONTEXT(key) {
      BOOST_TEST_REQUIRE(got.count(key) == 1u);
      BOOST_TEST(ndg_test::dtype_of(got.at(key)) == ndg_test::dtype_of(array));
      BOOST_TEST(ndg_test::values(got.at(key)) == ndg_test::values(array), tt::per_element());
    }
  }
}

// What "unchanged" compares: everything save_states writes (states, counts, rate, scheduler,
// scaler), as bytes.
std::string snapshot(const gluon::Trainer& t) { return t.save_states_tobuffer(); }

// A net and an SGD-with-momentum Trainer trained two steps on ctx.
struct Trained {
  std::vector<mx::Context> ctxs;
  nn::Sequential net;
  gluon::Trainer trainer;
  Trained(mx::Context ctx, const std::string& optimizer = "sgd", const gluon::HyperParams& params = {{"momentum", 0.9}},
          std::int64_t hidden = 8, DType dtype = DType::float32,
          std::shared_ptr<mx::lr_scheduler::LRScheduler> scheduler = nullptr)
      : ctxs{ctx}, net(make_net(ctxs, dtype, hidden)), trainer(net.collect_params(), optimizer, params, scheduler) {
    for (int s = 0; s < 2; ++s) train_step(net, trainer, ctxs, dtype, s);
  }
};

// load_states of path into t throws E naming every part, and leaves t as it was.
template <class E>
void check_refused(gluon::Trainer& t, const std::string& path, const std::vector<std::string>& parts) {
  const std::string before = snapshot(t);
  bool thrown = false;
  try {
    t.load_states(path);
  } catch (const E& error) {
    thrown = true;
    const std::string message = error.what();
    for (const std::string& part : parts) {
      BOOST_TEST(message.find(part) != std::string::npos, "message \"" << message << "\" lacks \"" << part << "\"");
    }
  } catch (const std::exception& error) {
    BOOST_TEST(false, "load_states threw another type than expected: " << error.what());
  }
  BOOST_TEST(thrown, "load_states of " << path << " did not throw");
  BOOST_TEST((snapshot(t) == before), "load_states changed the Trainer before it threw");
}

// The file at path with its entries changed by edit (nd::load, edit, nd::save).
void rewrite(const std::string& path, const std::function<void(std::vector<std::string>&, std::vector<nd::NDArray>&)>& edit) {
  nd::LoadedArrays loaded = nd::load(path);
  edit(loaded.names, loaded.arrays);
  nd::save(path, loaded.names, loaded.arrays);
}

std::size_t index_of(const std::vector<std::string>& names, const std::string& key) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == key) return i;
  }
  BOOST_FAIL("no entry " << key);
  return 0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trainer_states)

BOOST_AUTO_TEST_CASE(resuming_from_saved_states_equals_training_without_a_pause) {
  for (const OptimizerCase& optimizer : kOptimizers) {
    for (const Variant& v : kVariants) {
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST_CONTEXT(optimizer.name << ", " << v.name) { check_resume({ctx}, optimizer, v); }
      });
    }
  }
}

// Resuming in a fresh process: this test case runs itself again as a child (NDG_RESUME_CHILD names
// the folder and the optimizer), which loads the files, trains kStepsAfter steps on every context
// and saves what it has; the parent trains kStepsBefore + kStepsAfter steps without a pause and
// compares, bit for bit: nothing the resume needs lives only in the first process (the block
// names, the generators, Nadam's schedule, the loss scaler's and scheduler's positions).
const Variant kResumeVariant = {"FactorScheduler and a loss scaler", DType::float32, false,
                                [] { return std::make_shared<mx::lr_scheduler::FactorScheduler>(2, 0.5, 1e-8, 0.1); },
                                [] { return std::make_shared<mx::amp::LossScaler>(1024.0, 2.0, 2); }};

const OptimizerCase& optimizer_named(const std::string& name) {
  for (const OptimizerCase& c : kOptimizers) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no optimizer case " + name);
}

BOOST_AUTO_TEST_CASE(resuming_in_a_fresh_process) {
  const std::vector<mx::Context> ctxs = ndg_test::all_contexts();
  if (const char* child = std::getenv("NDG_RESUME_CHILD")) {  // the child: "<folder>:<optimizer>"
    const std::string spec = child;
    const std::string folder = spec.substr(0, spec.rfind(':')), name = spec.substr(spec.rfind(':') + 1);
    nn::Sequential net = make_net(ctxs);
    std::unique_ptr<gluon::Trainer> trainer = make_trainer(net, optimizer_named(name), kResumeVariant);
    net.load_parameters(folder + "/net.params", ctxs);
    trainer->load_states(folder + "/net.states");
    for (int s = kStepsBefore; s < kStepsBefore + kStepsAfter; ++s) train_step(net, *trainer, ctxs, DType::float32, s);
    net.save_parameters(folder + "/after.params");
    trainer->save_states(folder + "/after.states");
    return;
  }
  for (const OptimizerCase& optimizer : kOptimizers) {
    BOOST_TEST_CONTEXT(optimizer.name << " on " << mx::to_string(ctxs)) {
      const ndg_test::TempDir dir;
      {
        nn::Sequential net = make_net(ctxs);
        std::unique_ptr<gluon::Trainer> trainer = make_trainer(net, optimizer, kResumeVariant);
        for (int s = 0; s < kStepsBefore; ++s) train_step(net, *trainer, ctxs, DType::float32, s);
        net.save_parameters(dir.file("net.params"));
        trainer->save_states(dir.file("net.states"));
      }
      const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();  // this test program
      const std::string command = "NDG_RESUME_CHILD='" + dir.str() + ":" + optimizer.name + "' '" + self +
                                  "' --run_test=trainer_states/resuming_in_a_fresh_process --report_level=no > '" +
                                  dir.file("child.log") + "' 2>&1";
      BOOST_TEST_REQUIRE(std::system(command.c_str()) == 0, "the child failed: " << ndg_test::read_bytes(dir.file("child.log")));
      nn::Sequential straight = make_net(ctxs);
      std::unique_ptr<gluon::Trainer> straight_trainer = make_trainer(straight, optimizer, kResumeVariant);
      for (int s = 0; s < kStepsBefore + kStepsAfter; ++s) train_step(straight, *straight_trainer, ctxs, DType::float32, s);
      // The child's parameters (copy 0's, as save_parameters writes them) and every state and count.
      nn::Sequential resumed = make_net(ctxs);
      resumed.load_parameters(dir.file("after.params"), ctxs);
      check_same_parameters(resumed, straight);
      const auto got = entries_but_names(ndg_test::read_bytes(dir.file("after.states")));
      const auto want = entries_but_names(straight_trainer->save_states_tobuffer());
      BOOST_TEST_REQUIRE(got.size() == want.size());
      for (const auto& [key, array] : want) {
        BOOST_TEST_CONTEXT(key) {
          BOOST_TEST_REQUIRE(got.count(key) == 1u);
          BOOST_TEST(ndg_test::values(got.at(key)) == ndg_test::values(array), tt::per_element());
        }
      }
    }
  }
}

// A parameter on every context (data parallelism): each copy's states go to cpu(0) in the file and
// back to their copy's context.
BOOST_AUTO_TEST_CASE(resuming_data_parallel_training_on_every_context) {
  const std::vector<mx::Context> ctxs = ndg_test::all_contexts();
  for (const OptimizerCase& optimizer : kOptimizers) {
    BOOST_TEST_CONTEXT(optimizer.name << " on " << mx::to_string(ctxs)) { check_resume(ctxs, optimizer, kVariants[0]); }
  }
  nn::Sequential net = make_net(ctxs);
  gluon::Trainer trainer(net.collect_params(), "adam", {});
  train_step(net, trainer, ctxs, DType::float32, 0);
  const nd::LoadedArrays file = nd::load_frombuffer(trainer.save_states_tobuffer());
  for (const nd::NDArray& a : file.arrays) BOOST_TEST(a.context() == mx::cpu());
  trainer.load_states_frombuffer(trainer.save_states_tobuffer());
  for (const auto& [key, state] : trainer.optimizer().states()) {
    for (const nd::NDArray& s : state.states) BOOST_TEST(s.context() == ctxs[key.copy]);
  }
}

// The keys docs/FILE_FORMATS.md lists, for SGD with momentum after two steps, with a scheduler.
BOOST_AUTO_TEST_CASE(the_file_holds_mxnet_arrays_under_the_documented_keys) {
  const ndg_test::TempDir dir;
  Trained t(mx::cpu(), "sgd", {{"momentum", 0.9}, {"learning_rate", 0.2}}, 8, DType::float32,
            std::make_shared<mx::lr_scheduler::FactorScheduler>(1, 0.5));
  t.trainer.save_states(dir.file("t.states"));
  const nd::LoadedArrays loaded = nd::load(dir.file("t.states"));
  const std::map<std::string, nd::NDArray> entries = loaded.as_map();
  std::set<std::string> keys;
  for (const auto& [key, array] : entries) keys.insert(key);
  std::set<std::string> want = {"trainer_states_version", "optimizer", "num_states", "num_update", "learning_rate",
                                "lr_scheduler", "lr_scheduler_base_lr", "lr_scheduler_position"};
  for (int p = 0; p < 4; ++p) {
    const std::string prefix = "params." + std::to_string(p);
    want.insert({prefix + ".name", prefix + ".0.state.mom", prefix + ".0.count", prefix + ".0.num_update"});
  }
  BOOST_TEST(keys == want, tt::per_element());
  const auto text = [&](const std::string& key) {
    const std::vector<std::uint8_t> bytes = entries.at(key).asvector<std::uint8_t>();
    return std::string(bytes.begin(), bytes.end());
  };
  BOOST_TEST(text("optimizer") == "sgd");
  BOOST_TEST(text("lr_scheduler") == "FactorScheduler");
  BOOST_TEST(text("params.0.name") == t.net.collect_params().keys()[0]);
  BOOST_TEST(entries.at("trainer_states_version").asvector<std::int64_t>() == std::vector<std::int64_t>{1});
  BOOST_TEST(entries.at("num_update").asvector<std::int64_t>() == std::vector<std::int64_t>{2});
  BOOST_TEST(entries.at("num_states").asvector<std::int64_t>() == std::vector<std::int64_t>{1});
  BOOST_TEST(ndg_test::dtype_of(entries.at("learning_rate")) == "float64");
  BOOST_TEST(entries.at("learning_rate").asscalar<double>() == 0.1);  // 0.2, halved after update 1
  BOOST_TEST(entries.at("lr_scheduler_base_lr").asscalar<double>() == 0.1);
  BOOST_TEST(entries.at("lr_scheduler_position").asvector<std::int64_t>() == std::vector<std::int64_t>{1});
  BOOST_TEST(entries.at("params.1.0.num_update").asvector<std::int64_t>() == std::vector<std::int64_t>{2});
  // Every optimizer counts each copy's updates (MXNet's _index_update_count; Adam's t).
  BOOST_TEST(entries.at("params.1.0.count").asvector<std::int64_t>() == std::vector<std::int64_t>{2});
  const nd::NDArray mom = entries.at("params.0.0.state.mom");
  BOOST_TEST(mom.shape() == t.net.collect_params()[t.net.collect_params().keys()[0]].shape());
  BOOST_TEST(ndg_test::values(mom) == ndg_test::values(t.trainer.optimizer().states().at({0, 0}).states[0]),
             tt::per_element());
}

// Adam's state names and t; a loss scaler's scale and counts; a float16 weight's master copy.
BOOST_AUTO_TEST_CASE(adam_counts_loss_scalers_and_master_copies_are_saved) {
  Trained t(mx::cpu(), "adam", {{"multi_precision", 1}}, 8, DType::float16);
  mx::amp::init_trainer(t.trainer, std::make_shared<mx::amp::LossScaler>(8.0, 2.0, 5));
  {
    auto recording = ag::record();
    (t.net(nd::ones({2, 4}, mx::cpu(), DType::float16)).astype(DType::float32).sum() * 8.0).backward();
  }
  t.trainer.step(2);
  const auto entries = nd::load_frombuffer(t.trainer.save_states_tobuffer()).as_map();
  BOOST_TEST(entries.count("params.0.0.state.mean") == 1u);
  BOOST_TEST(entries.count("params.0.0.state.var") == 1u);
  BOOST_TEST(ndg_test::dtype_of(entries.at("params.0.0.state.mean")) == "float32");
  BOOST_TEST(ndg_test::dtype_of(entries.at("params.0.0.master")) == "float32");
  BOOST_TEST(entries.at("params.0.0.count").asvector<std::int64_t>() == std::vector<std::int64_t>{3});
  BOOST_TEST(entries.at("loss_scaler").asscalar<double>() == 8.0);
  BOOST_TEST(entries.at("loss_scaler_counts").asvector<std::int64_t>() == (std::vector<std::int64_t>{1, 0}));
}

// A parameter whose master copy the Trainer made again (new values from outside) is loaded with the
// file's master: load_states comes after load_parameters.
BOOST_AUTO_TEST_CASE(loaded_master_copies_are_kept_for_the_loaded_weights) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    Trained t(ctx, "sgd", {{"momentum", 0.9}, {"multi_precision", 1}}, 8, DType::float16);
    t.net.save_parameters(dir.file("w.params"));
    t.trainer.save_states(dir.file("w.states"));
    const nd::NDArray master = t.trainer.optimizer().states().at({0, 0}).master.copy();
    train_step(t.net, t.trainer, t.ctxs, DType::float16, 5);
    t.net.load_parameters(dir.file("w.params"), ctx);
    t.trainer.load_states(dir.file("w.states"));
    const gluon::CopyState loaded = t.trainer.optimizer().states().at({0, 0});
    BOOST_TEST(loaded.master.context() == ctx);
    BOOST_TEST(ndg_test::values(loaded.master) == ndg_test::values(master), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(a_file_of_another_optimizer_is_refused) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    Trained adam(ctx, "adam", {});
    adam.trainer.save_states(dir.file("adam.states"));
    Trained sgd(ctx);
    check_refused<mx::ValueError>(sgd.trainer, dir.file("adam.states"), {dir.file("adam.states"), "'adam'", "'sgd'"});
    // SGD without momentum keeps no state array: another count.
    Trained plain(ctx, "sgd", {});
    plain.trainer.save_states(dir.file("plain.states"));
    check_refused<mx::ValueError>(sgd.trainer, dir.file("plain.states"), {dir.file("plain.states"), "0 state arrays", "keeps 1"});
  });
}

BOOST_AUTO_TEST_CASE(a_file_of_another_parameter_set_is_refused) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    Trained t(ctx);
    const std::string path = dir.file("t.states");
    t.trainer.save_states(path);
    const std::vector<std::string> names = t.net.collect_params().keys();

    // A parameter missing from the file: a net of three Dense layers.
    nn::Sequential bigger;
    bigger.add(nn::Dense(8, "tanh", true, 4), nn::Dense(3, "", true, 8), nn::Dense(2, "", true, 3));
    bigger.initialize(mx::init::Xavier(), ctx);
    gluon::Trainer more(bigger.collect_params(), "sgd", {{"momentum", 0.9}});
    check_refused<mx::ValueError>(more, path, {path, "4 parameters", "has 6", bigger.collect_params().keys()[4], "missing"});

    // A parameter extra in the file: one Dense layer.
    nn::Sequential smaller;
    smaller.add(nn::Dense(8, "tanh", true, 4));
    smaller.initialize(mx::init::Xavier(), ctx);
    gluon::Trainer fewer(smaller.collect_params(), "sgd", {{"momentum", 0.9}});
    check_refused<mx::ValueError>(fewer, path, {path, "has 2", names[2], "extra"});

    // Another shape: 5 hidden units.
    Trained other(ctx, "sgd", {{"momentum", 0.9}}, 5);
    check_refused<mx::ShapeError>(other.trainer, path, {path, "parameter 0", names[0], "'mom'", "(8, 4)", "(5, 4)"});

    // Another dtype: float64 weights and states.
    Trained wide(ctx, "sgd", {{"momentum", 0.9}}, 8, DType::float64);
    wide.trainer.save_states(dir.file("wide.states"));
    check_refused<mx::DTypeError>(t.trainer, dir.file("wide.states"), {dir.file("wide.states"), "float64", "'mom'"});
  });
}

BOOST_AUTO_TEST_CASE(truncated_corrupt_and_foreign_files_are_file_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    Trained t(ctx);
    const std::string path = dir.file("t.states");
    t.trainer.save_states(path);
    const std::string bytes = ndg_test::read_bytes(path);

    check_refused<mx::FileError>(t.trainer, dir.file("missing.states"), {dir.file("missing.states")});
    for (const std::size_t keep : {std::size_t{0}, std::size_t{7}, std::size_t{40}, bytes.size() / 2, bytes.size() - 1}) {
      BOOST_TEST_CONTEXT("the first " << keep << " bytes") {
        ndg_test::write_bytes(dir.file("cut.states"), bytes.substr(0, keep));
        check_refused<mx::FileError>(t.trainer, dir.file("cut.states"), {dir.file("cut.states")});
      }
    }
    std::string flipped = bytes;
    flipped[0] ^= 0x5a;  // the list magic
    ndg_test::write_bytes(dir.file("flipped.states"), flipped);
    check_refused<mx::FileError>(t.trainer, dir.file("flipped.states"), {dir.file("flipped.states"), "magic"});

    // A parameter file is an NDArray file too, but not a Trainer's states.
    t.net.save_parameters(dir.file("net.params"));
    check_refused<mx::FileError>(t.trainer, dir.file("net.params"), {dir.file("net.params"), "trainer_states_version"});

    // Entries changed by hand.
    const auto edited = [&](const std::string& name,
                            const std::function<void(std::vector<std::string>&, std::vector<nd::NDArray>&)>& edit) {
      const std::string file = dir.file(name);
      ndg_test::write_bytes(file, bytes);
      rewrite(file, edit);
      return file;
    };
    std::string file = edited("version.states", [](auto& names, auto& arrays) {
      arrays[index_of(names, "trainer_states_version")] = nd::array({2}, mx::cpu(), DType::int64);
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "version 2"});
    file = edited("negative.states", [](auto& names, auto& arrays) {
      arrays[index_of(names, "params.1.0.num_update")] = nd::array({-3}, mx::cpu(), DType::int64);
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "params.1.0.num_update", "-3"});
    file = edited("float_count.states", [](auto& names, auto& arrays) {
      arrays[index_of(names, "num_update")] = nd::array({2}, mx::cpu(), DType::float32);
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "'num_update'", "int64"});
    file = edited("unknown.states", [](auto& names, auto& arrays) {
      names.push_back("params.0.0.state.velocity");
      arrays.push_back(nd::zeros({8, 4}, mx::cpu()));
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "'velocity'", "keeps mom"});
    file = edited("stray.states", [](auto& names, auto& arrays) {
      names.push_back("momentum");
      arrays.push_back(nd::zeros({1}, mx::cpu()));
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "'momentum'"});
    file = edited("unnamed.states", [](auto& names, auto&) {
      names[index_of(names, "params.2.name")] = "params.2.nome";
    });
    check_refused<mx::FileError>(t.trainer, file, {file});
    file = edited("nan_rate.states", [](auto& names, auto& arrays) {
      arrays[index_of(names, "learning_rate")] = nd::array({std::nan("")}, mx::cpu(), DType::float64);
    });
    check_refused<mx::FileError>(t.trainer, file, {file, "learning rate nan"});
  });
}

BOOST_AUTO_TEST_CASE(schedulers_and_loss_scalers_must_match) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    Trained plain(ctx);
    plain.trainer.save_states(dir.file("plain.states"));
    Trained scheduled(ctx, "sgd", {{"momentum", 0.9}}, 8, DType::float32,
                      std::make_shared<mx::lr_scheduler::FactorScheduler>(1, 0.5));
    scheduled.trainer.save_states(dir.file("factor.states"));
    check_refused<mx::ValueError>(plain.trainer, dir.file("factor.states"), {dir.file("factor.states"), "FactorScheduler", "no lr_scheduler"});
    check_refused<mx::ValueError>(scheduled.trainer, dir.file("plain.states"), {dir.file("plain.states"), "no lr_scheduler"});
    Trained cosine(ctx, "sgd", {{"momentum", 0.9}}, 8, DType::float32,
                   std::make_shared<mx::lr_scheduler::CosineScheduler>(10, 0.1));
    check_refused<mx::ValueError>(cosine.trainer, dir.file("factor.states"), {dir.file("factor.states"), "FactorScheduler", "CosineScheduler"});
    // A position the schedule cannot reach: a FactorScheduler of step 3 counts in threes.
    Trained factor3(ctx, "sgd", {{"momentum", 0.9}}, 8, DType::float32,
                    std::make_shared<mx::lr_scheduler::FactorScheduler>(3, 0.5));
    check_refused<mx::ValueError>(factor3.trainer, dir.file("factor.states"), {dir.file("factor.states"), "position", "step 3"});

    Trained scaled(ctx);
    mx::amp::init_trainer(scaled.trainer);
    scaled.trainer.save_states(dir.file("scaled.states"));
    check_refused<mx::ValueError>(plain.trainer, dir.file("scaled.states"), {dir.file("scaled.states"), "loss scaler", "init_trainer"});
    check_refused<mx::ValueError>(scaled.trainer, dir.file("plain.states"), {dir.file("plain.states"), "no loss scaler"});
  });
}

// A Trainer that has not stepped saves names and scalars only; loading it into a trained one
// drops that one's states, as a new Trainer has none.
BOOST_AUTO_TEST_CASE(states_of_a_trainer_that_never_stepped) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net = make_net({ctx});
    gluon::Trainer fresh(net.collect_params(), "sgd", {{"momentum", 0.9}});
    const std::string bytes = fresh.save_states_tobuffer();
    const auto entries = nd::load_frombuffer(bytes).as_map();
    BOOST_TEST(entries.count("params.0.name") == 1u);
    BOOST_TEST(entries.count("params.0.0.count") == 0u);
    Trained t(ctx);
    t.trainer.load_states_frombuffer(bytes, "fresh");
    BOOST_TEST(t.trainer.num_update() == 0);
    BOOST_TEST(t.trainer.optimizer().states().empty());
    NDG_CHECK_THROWS_WITH(t.trainer.load_states_frombuffer(bytes.substr(0, 30), "fresh"), mx::FileError, "'fresh'");
  });
}

BOOST_AUTO_TEST_CASE(save_states_to_a_folder_that_does_not_exist_is_a_file_error) {
  Trained t(mx::cpu());
  const ndg_test::TempDir dir;
  NDG_CHECK_THROWS_WITH(t.trainer.save_states(dir.file("no/such/folder/t.states")), mx::FileError,
                        "Trainer::save_states", dir.file("no/such/folder/t.states"));
}

BOOST_AUTO_TEST_SUITE_END()
