// libFuzzer target: Trainer::load_states_frombuffer, the reader of Trainer::save_states' files
// (MXNet's NDArray file under the keys of Note [trainer states]).
//
// Every input goes to two Trainers made once: SGD with momentum over a float32 weight and bias and
// a frozen parameter, and Adam with multi_precision over a float16 weight and a float32 bias, with a
// FactorScheduler and a loss scaler (test/fuzz/make_seeds.py writes a file of each). Each Trainer
// starts from its own saved states. An input a Trainer refuses must throw an mx::Error and leave
// it as it was (what save_states writes is unchanged); an input it accepts must survive a round
// trip: saved and loaded again, it saves the same bytes. Anything else escaping, a crash, a leak or
// an allocation beyond -rss_limit_mb is a finding.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "context/error.hpp"
#include "gluon/amp.hpp"
#include "gluon/lr_scheduler.hpp"
#include "gluon/parameter_dict.hpp"
#include "gluon/trainer.hpp"
#include "ndarray/ops/creation.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

namespace gluon = mx::gluon;

gluon::Parameter parameter(const std::string& name, const mx::Shape& shape, mx::DType dtype,
                           const std::string& grad_req = "write") {
  gluon::Parameter p(name, shape, dtype, grad_req);
  p.initialize(mx::init::Zero(), {mx::cpu()});
  return p;
}

struct Subject {
  gluon::ParameterDict params;
  std::unique_ptr<gluon::Trainer> trainer;
  std::string start;  // its states before any input
};

Subject sgd() {
  Subject s;
  s.params.add(parameter("w", {3, 2}, mx::DType::float32));
  s.params.add(parameter("b", {2}, mx::DType::float32));
  s.params.add(parameter("frozen", {2}, mx::DType::float32, "null"));
  s.trainer = std::make_unique<gluon::Trainer>(s.params, "sgd", gluon::HyperParams{{"momentum", 0.9}});
  s.start = s.trainer->save_states_tobuffer();
  return s;
}

Subject adam() {
  Subject s;
  s.params.add(parameter("h", {2, 2}, mx::DType::float16));
  s.params.add(parameter("c", {2}, mx::DType::float32));
  s.trainer = std::make_unique<gluon::Trainer>(s.params, "adam", gluon::HyperParams{{"multi_precision", 1}},
                                               std::make_shared<mx::lr_scheduler::FactorScheduler>(2, 0.5));
  mx::amp::init_trainer(*s.trainer);
  s.start = s.trainer->save_states_tobuffer();
  return s;
}

void check(Subject& s, std::string_view bytes) {
  s.trainer->load_states_frombuffer(s.start, "start");
  try {
    s.trainer->load_states_frombuffer(bytes, "fuzz.states");
  } catch (const mx::Error&) {
    ndg_fuzz::expect(s.trainer->save_states_tobuffer() == s.start, "a refused file leaves the Trainer as it was");
    return;
  }
  const std::string once = s.trainer->save_states_tobuffer();
  s.trainer->load_states_frombuffer(once, "saved again");
  ndg_fuzz::expect(s.trainer->save_states_tobuffer() == once, "accepted states survive a round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Subject subjects[] = {sgd(), adam()};
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (Subject& s : subjects) check(s, bytes);
  return 0;
}
