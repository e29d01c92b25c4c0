// Host threads driving contexts at the same time: one thread per GPU (as a data-parallel program
// with a thread per device does), plus threads sharing cpu(0). Each thread runs 10,000 ops,
// recorded autograd included, and checks its own exact results; the main thread asserts.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;

namespace {

// What a worker found wrong, empty when nothing was.
struct Outcome {
  std::string failure;
};

// 10,000 ops on ctx: 2,000 rounds of five ops, each round adding exactly 1 to every element of a
// (64, 64) array, then a recorded product and its gradient. Integers stay exact in float32.
void drive(mx::Context ctx, Outcome& outcome) {
  try {
    mx::ContextGuard on(ctx);  // the thread's own default context
    nd::NDArray a = nd::zeros({64, 64});
    const nd::NDArray ones = nd::ones({64, 64});
    for (int round = 0; round < 2000; ++round) {
      nd::NDArray b = a + ones;       // a + 1
      nd::NDArray c = b * 2.0;        // 2a + 2
      nd::NDArray d = c - ones;       // 2a + 1
      nd::NDArray e = d + 1.0;        // 2a + 2
      a = e / 2.0;                    // a + 1
    }
    if (a.context() != ctx) outcome.failure = "result on " + a.context().str();
    for (double v : a.asvector<double>()) {
      if (v != 2000) { outcome.failure = "element " + std::to_string(v) + " instead of 2000"; break; }
    }
    // d sum(x·x) / dx = 1·xᵀ + xᵀ·1 (1 all ones): with x all 2, every element is 64·2 + 64·2.
    nd::NDArray x = nd::full({64, 64}, 2.0);
    x.attach_grad();
    {
      auto scope = ag::record();
      nd::NDArray y = nd::dot(x, x).sum();
      y.backward();
    }
    for (double g : x.grad().asvector<double>()) {
      if (g != 256) { outcome.failure = "gradient " + std::to_string(g) + " instead of 256"; break; }
    }
  } catch (const std::exception& e) {
    outcome.failure = std::string("threw: ") + e.what();
  }
}

void run_threads(const std::vector<mx::Context>& ctxs) {
  std::vector<Outcome> outcomes(ctxs.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < ctxs.size(); ++t) threads.emplace_back(drive, ctxs[t], std::ref(outcomes[t]));
  for (std::thread& t : threads) t.join();
  for (std::size_t t = 0; t < ctxs.size(); ++t) {
    BOOST_TEST(outcomes[t].failure.empty(), "thread " << t << " on " << ctxs[t].str() << ": " << outcomes[t].failure);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(threads)

BOOST_AUTO_TEST_CASE(one_thread_per_gpu_each_running_ten_thousand_ops,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  run_threads(mx::try_all_gpus());
}

BOOST_AUTO_TEST_CASE(threads_on_the_cpu_beside_threads_on_each_gpu) {
  std::vector<mx::Context> ctxs = {mx::cpu(), mx::cpu()};
  for (int i = 0; i < mx::num_gpus(); ++i) ctxs.push_back(mx::gpu(i));
  run_threads(ctxs);
}

BOOST_AUTO_TEST_SUITE_END()
