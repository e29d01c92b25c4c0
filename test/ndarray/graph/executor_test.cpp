// graph::Executor, the replay of a traced graph over planned buffers, and graph::gradient, its
// backward graph: the same values as the op-by-op run, buffers shared by liveness, bound arrays
// read in place, feeds checked, and gradients equal to autograd's, on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ndarray/autograd/autograd.hpp>
#include <ndarray/graph/executor.hpp>
#include <ndarray/graph/graph.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/ops/elementwise_kernels.hpp>

namespace nd = mx::nd;
namespace graph = mx::graph;
using ndg_test::check_close;
using ndg_test::random_array;

namespace {

// y = tanh(relu(x · wᵀ) * 2 + 1) - 0.5, then ten more elementwise steps: a chain whose
// intermediates can share two buffers.
std::shared_ptr<const graph::Graph> chain(const nd::NDArray& x, const nd::NDArray& w) {
  const graph::NameOf name_of = [&](const nd::NDArray& a) -> std::optional<graph::Named> {
    if (a.is(w)) return graph::Named{"w", w};
    return std::nullopt;
  };
  return std::make_shared<const graph::Graph>(graph::trace(
      [&](const std::vector<nd::NDArray>& in) {
        nd::NDArray y = (nd::dot(in[0], w, false, true).relu() * 2.0 + 1.0).tanh() - 0.5;
        for (int i = 0; i < 10; ++i) y = y.sigmoid() * 1.5;
        return std::vector{y};
      },
      {x}, {"x"}, name_of));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(executor)

BOOST_AUTO_TEST_CASE(replays_the_op_by_op_values_over_shared_buffers) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray w = random_array({16, 8}, ctx, 1);
    const auto g = chain(random_array({4, 8}, ctx, 2), w);
    graph::Executor planned(g, false, {"x"}, {random_array({4, 8}, ctx, 3)}, {"w"}, {w},
                            {.reuse_memory = true, .keep = {}, .capture = true, .read_feeds_in_place = true});
    graph::Executor unplanned(g, false, {"x"}, {random_array({4, 8}, ctx, 3)}, {"w"}, {w}, {.reuse_memory = false, .keep = {}, .capture = true, .read_feeds_in_place = false});
    for (unsigned run = 0; run < 4; ++run) {  // on a GPU the second run captures and the later ones replay
      BOOST_TEST_CONTEXT("run " << run) {
        const nd::NDArray x = random_array({4, 8}, ctx, 10 + run);
        const std::vector<double> want = graph::run(*g, {{"x", x}, {"w", w}}).at(0).asvector<double>();
        check_close(planned.run({x}, {w}).at(0), want, 0, 0);
        check_close(unplanned.run({x}, {w}).at(0), want, 0, 0);
      }
    }
    // 24 op outputs of 4×16 floats: by liveness, the input and two alternating buffers.
    const std::size_t buffer = 4 * 16 * sizeof(float);
    BOOST_TEST(unplanned.planned_bytes() >= 23 * buffer);
    BOOST_TEST(planned.planned_bytes() <= 4 * buffer);
  });
}

BOOST_AUTO_TEST_CASE(bound_arrays_are_read_at_each_run) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray w = random_array({16, 8}, ctx, 1);
    const auto g = chain(random_array({2, 8}, ctx, 2), w);
    graph::Executor exec(g, false, {"x"}, {random_array({2, 8}, ctx, 3)}, {"w"}, {w}, {});
    const nd::NDArray x = random_array({2, 8}, ctx, 4);
    exec.run({x}, {w});
    exec.run({x}, {w});
    // Written in place (as an optimizer does): the next run sees it.
    random_array({16, 8}, ctx, 5).copyto(w);
    check_close(exec.run({x}, {w}).at(0), graph::run(*g, {{"x", x}, {"w", w}}).at(0).asvector<double>(), 0, 0);
    // A new array in its place: read instead of the old one (op by op), or planned and captured
    // again (a GPU).
    const nd::NDArray w2 = random_array({16, 8}, ctx, 6);
    BOOST_TEST(exec.plans() == 1u);
    check_close(exec.run({x}, {w2}).at(0), graph::run(*g, {{"x", x}, {"w", w2}}).at(0).asvector<double>(), 0, 0);
    BOOST_TEST(exec.plans() == (ctx.is_cpu() ? 1u : 2u));
    check_close(exec.run({x}, {w2}).at(0), graph::run(*g, {{"x", x}, {"w", w2}}).at(0).asvector<double>(), 0, 0);
    // w written afterwards is not read: the plan reads w2.
    random_array({16, 8}, ctx, 7).copyto(w);
    check_close(exec.run({x}, {w2}).at(0), graph::run(*g, {{"x", x}, {"w", w2}}).at(0).asvector<double>(), 0, 0);
  });
}

// read_feeds_in_place: op by op on cpu(0) every run reads the input where it is; on a GPU, once
// captured, a run given the input at the address of the run before captures a graph that reads
// it there, and later runs at that address replay it, while inputs elsewhere are copied in. The
// values are the op-by-op run's either way, the input's new contents included.
BOOST_AUTO_TEST_CASE(inputs_are_read_where_they_are) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray w = random_array({16, 8}, ctx, 1);
    const auto g = chain(random_array({2, 8}, ctx, 2), w);
    graph::Executor exec(g, false, {"x"}, {random_array({2, 8}, ctx, 3)}, {"w"}, {w},
                         {.reuse_memory = true, .keep = {}, .capture = true, .read_feeds_in_place = true});
    nd::NDArray x = random_array({2, 8}, ctx, 4);
    const nd::NDArray other = random_array({2, 8}, ctx, 5);
    const auto want = [&](const nd::NDArray& in) { return graph::run(*g, {{"x", in}, {"w", w}}).at(0).asvector<double>(); };
    for (unsigned run = 0; run < 5; ++run) {  // a GPU: op by op and capture, then a graph at x's address
      BOOST_TEST_CONTEXT("run " << run) {
        random_array({2, 8}, ctx, 10 + run).copyto(x);  // new contents at the same address
        check_close(exec.run({x}, {w}).at(0), want(x), 0, 0);
        BOOST_TEST(exec.read_feeds_in_place() == (ctx.is_cpu() || run >= 1));
        BOOST_TEST(exec.variable("x").is(x) == exec.read_feeds_in_place());
      }
    }
    check_close(exec.run({other}, {w}).at(0), want(other), 0, 0);  // elsewhere: copied in on a GPU
    BOOST_TEST(exec.read_feeds_in_place() == ctx.is_cpu());
    check_close(exec.variable("x"), other.asvector<double>(), 0, 0);
    check_close(exec.run({x}, {w}).at(0), want(x), 0, 0);  // x's graph again
    BOOST_TEST(exec.read_feeds_in_place());
    // A kept input (a backward graph reads it) is copied on a GPU: no graph per input address.
    const auto ids = g->arg_nodes();
    const auto x_node = *std::find_if(ids.begin(), ids.end(), [&](std::uint32_t id) { return g->nodes[id].name == "x"; });
    graph::Executor keeping(g, false, {"x"}, {x}, {"w"}, {w},
                            {.reuse_memory = true, .keep = {{x_node, 0}}, .capture = true, .read_feeds_in_place = true});
    for (unsigned run = 0; run < 5; ++run) check_close(keeping.run({x}, {w}).at(0), want(x), 0, 0);
    BOOST_TEST(keeping.read_feeds_in_place() == ctx.is_cpu());
  });
}

// Inputs used in turn (a few buffers, as a server or a loader keeps them) are read in place on a
// GPU from their second round on; inputs that do not come back within 16 runs are copied in; and
// addresses that come back only once stop being captured after 16 captures, until graphs kept are
// replayed 64 times.
BOOST_AUTO_TEST_CASE(inputs_used_in_turn_are_read_in_place_from_their_second_round) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray w = random_array({16, 8}, ctx, 1);
    const auto g = chain(random_array({2, 8}, ctx, 2), w);
    const auto want = [&](const nd::NDArray& in) { return graph::run(*g, {{"x", in}, {"w", w}}).at(0).asvector<double>(); };
    const graph::Executor::Options options{.reuse_memory = true, .keep = {}, .capture = true, .read_feeds_in_place = true};
    std::vector<nd::NDArray> inputs;
    for (unsigned i = 0; i < 40; ++i) inputs.push_back(random_array({2, 8}, ctx, 100 + i));
    {
      graph::Executor exec(g, false, {"x"}, {inputs[0]}, {"w"}, {w}, options);
      for (unsigned round = 0; round < 3; ++round) {
        for (unsigned i = 0; i < 8; ++i) {
          BOOST_TEST_CONTEXT("8 in turn, round " << round << ", input " << i) {
            check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
            BOOST_TEST(exec.read_feeds_in_place() == (ctx.is_cpu() || round >= 1));
          }
        }
      }
    }
    {
      graph::Executor exec(g, false, {"x"}, {inputs[0]}, {"w"}, {w}, options);
      for (unsigned round = 0; round < 2; ++round) {
        for (unsigned i = 0; i < 20; ++i) {
          BOOST_TEST_CONTEXT("20 in turn, round " << round << ", input " << i) {
            check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
            BOOST_TEST(exec.read_feeds_in_place() == ctx.is_cpu());
          }
        }
      }
    }
    {
      graph::Executor exec(g, false, {"x"}, {inputs[0]}, {"w"}, {w}, options);
      check_close(exec.run({inputs[39]}, {w}).at(0), want(inputs[39]), 0, 0);  // the first run, op by op
      for (unsigned i = 0; i < 30; ++i) {  // each input twice in a row, then never again
        BOOST_TEST_CONTEXT("twice each, input " << i) {
          check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
          check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
          BOOST_TEST(exec.read_feeds_in_place() == (ctx.is_cpu() || i < 16));
        }
      }
      // Past 16 captures, one more is paid for by 64 replays of kept graphs since the one before.
      for (unsigned hit = 0; hit < 64; ++hit) exec.run({inputs[15]}, {w});  // its graph, kept
      for (unsigned i : {30u, 31u}) {
        BOOST_TEST_CONTEXT("twice each after 64 replays, input " << i) {
          check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
          check_close(exec.run({inputs[i]}, {w}).at(0), want(inputs[i]), 0, 0);
          BOOST_TEST(exec.read_feeds_in_place() == (ctx.is_cpu() || i == 30));
        }
      }
    }
  });
}

// New bound arrays given together are read where the old ones were, all at once: two arrays that
// swap places, and an array with its reshape beside it, give the op-by-op values.
BOOST_AUTO_TEST_CASE(bound_arrays_swapped_or_aliased_are_read_right) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = random_array({3, 4}, ctx, 70), b = random_array({3, 4}, ctx, 71);
    const nd::NDArray x = random_array({3, 4}, ctx, 72);
    const graph::NameOf name_of = [&](const nd::NDArray& v) -> std::optional<graph::Named> {
      if (v.is(a)) return graph::Named{"a", a};
      if (v.is(b)) return graph::Named{"b", b};
      return std::nullopt;
    };
    const auto g = std::make_shared<const graph::Graph>(graph::trace(
        [&](const std::vector<nd::NDArray>& in) { return std::vector{in[0] * a - b}; }, {x}, {"x"}, name_of));
    const auto want = [&](const nd::NDArray& first, const nd::NDArray& second) {
      return graph::run(*g, {{"x", x}, {"a", first}, {"b", second}}).at(0).asvector<double>();
    };
    graph::Executor exec(g, false, {"x"}, {x}, {"a", "b"}, {a, b}, {});
    check_close(exec.run({x}, {a, b}).at(0), want(a, b), 0, 0);
    check_close(exec.run({x}, {b, a}).at(0), want(b, a), 0, 0);  // swapped
    check_close(exec.run({x}, {a, b}).at(0), want(a, b), 0, 0);  // and back
    BOOST_TEST(exec.plans() == (ctx.is_cpu() ? 1u : 3u));         // rebound op by op, planned again on a GPU
    const nd::NDArray c = random_array({3, 4}, ctx, 73);
    check_close(exec.run({x}, {c, c.reshape({3, 4})}).at(0), want(c, c), 0, 0);  // one array twice
    check_close(exec.run({x}, {a, b}).at(0), want(a, b), 0, 0);
    BOOST_TEST(exec.variable("a").is(a));
    BOOST_TEST(exec.variable("b").is(b));
  });
}

BOOST_AUTO_TEST_CASE(feeds_of_another_signature_are_typed_errors) {
  const nd::NDArray w = random_array({16, 8}, mx::cpu(), 1);
  const auto g = chain(random_array({2, 8}, mx::cpu(), 2), w);
  graph::Executor exec(g, false, {"x"}, {random_array({2, 8}, mx::cpu(), 3)}, {"w"}, {w}, {});
  NDG_CHECK_THROWS_WITH(exec.run({nd::ones({3, 8})}, {w}), mx::ValueError, "'x'", "(2, 8)", "(3, 8)");
  NDG_CHECK_THROWS_WITH(exec.run({}, {w}), mx::ValueError, "1");
  NDG_CHECK_THROWS_WITH(graph::Executor(g, false, {"x"}, {nd::ones({2, 8})}, {}, {}, {}), mx::ValueError, "'w'");
  // Still usable after the errors.
  const nd::NDArray x = random_array({2, 8}, mx::cpu(), 4);
  check_close(exec.run({x}, {w}).at(0), graph::run(*g, {{"x", x}, {"w", w}}).at(0).asvector<double>(), 0, 0);
}

BOOST_AUTO_TEST_CASE(the_gradient_graph_gives_autograds_gradients) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray w = random_array({16, 8}, ctx, 1);
    w.attach_grad();  // traced as needing its gradient (the trace's dot then records it)
    const nd::NDArray x0 = random_array({3, 8}, ctx, 2);
    const auto g = chain(x0, w);
    const graph::GradientGraph grad = graph::gradient(*g, {{"x", x0}, {"w", w}}, {"x", "w"});
    BOOST_TEST(grad.head_of == (std::vector<int>{0, 1}), boost::test_tools::per_element());
    // The trace marked x as needing its gradient; a backward graph for w alone has no product for x.
    const graph::GradientGraph w_only = graph::gradient(*g, {{"x", x0}, {"w", w}}, {"w"});
    const auto dots = [](const graph::Graph& gg) {
      return std::count_if(gg.nodes.begin(), gg.nodes.end(),
                           [](const graph::Node& n) { return !n.is_variable() && std::string(n.op->name) == "dot"; });
    };
    BOOST_TEST(dots(*grad.graph) == 2);
    BOOST_TEST(dots(*w_only.graph) == 1);
    for (unsigned run = 0; run < 3; ++run) {
      BOOST_TEST_CONTEXT("run " << run) {
        const nd::NDArray x = random_array({3, 8}, ctx, 20 + run), head = random_array({3, 16}, ctx, 30 + run);
        // autograd's gradients of sum(y * head)
        nd::NDArray xv = x.copy(), wv = w.copy();
        xv.attach_grad();
        wv.attach_grad();
        {
          auto recording = mx::autograd::record();
          graph::run(*g, {{"x", xv}, {"w", wv}}).at(0).backward(head);
        }
        // The backward graph, fed the forward's values.
        std::vector<std::vector<nd::NDArray>> values;
        graph::run(*g, {{"x", x}, {"w", w}}, &values);
        std::map<std::string, nd::NDArray> fed{{"head_grad", head}, {"x", x}, {"w", w}};
        for (const graph::Entry& e : grad.forward_entries) fed.emplace(graph::forward_name(e), values[e.node][e.index]);
        std::map<std::string, nd::NDArray> used;
        for (const std::string& name : grad.graph->variable_names()) used.emplace(name, fed.at(name));
        const std::vector<nd::NDArray> got = graph::run(*grad.graph, used);
        check_close(got.at(0), xv.grad().asvector<double>(), 1e-6, 1e-7);
        check_close(got.at(1), wv.grad().asvector<double>(), 1e-6, 1e-7);
      }
    }
  });
}

// Fusion (ndarray/graph/fused.hpp): runs of elementwise steps replay as one step each, with values
// bit-identical to the op-by-op run, on every context (Fuse::always fuses on cpu(0) as well).
BOOST_AUTO_TEST_CASE(fused_elementwise_runs_replay_the_op_by_op_values) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray w = random_array({16, 8}, ctx, 1);
    const auto g = chain(random_array({4, 8}, ctx, 2), w);
    graph::Executor::Options fused;
    fused.fuse = graph::Executor::Options::Fuse::always;
    graph::Executor exec(g, false, {"x"}, {random_array({4, 8}, ctx, 3)}, {"w"}, {w}, fused);
    graph::Executor::Options unfused;
    unfused.fuse = graph::Executor::Options::Fuse::off;
    graph::Executor plain(g, false, {"x"}, {random_array({4, 8}, ctx, 3)}, {"w"}, {w}, unfused);
    for (unsigned run = 0; run < 3; ++run) {
      const nd::NDArray x = random_array({4, 8}, ctx, 10 + run);
      const std::vector<double> want = graph::run(*g, {{"x", x}, {"w", w}}).at(0).asvector<double>();
      check_close(exec.run({x}, {w}).at(0), want, 0, 0);
      check_close(plain.run({x}, {w}).at(0), want, 0, 0);
    }
    // dot, then 25 elementwise steps: two fused runs (at most 24 instructions each).
    BOOST_TEST(plain.steps() == 26u);
    BOOST_TEST(exec.steps() == 3u);
  });
}

// Every instruction kind and every op: the unary ops on a positive input, the binary ops, the
// scalar ops both ways, and the gradients of the unary and scalar ops, each a head (so that runs
// end at eight outputs and inputs are shared across runs), bit for bit as op by op, in each dtype
// that fuses (the 16-bit ones round every result as their kernels do).
BOOST_AUTO_TEST_CASE(every_fusable_op_matches_its_own_kernel_bit_for_bit) {
  namespace op = mx::op;
  for (const mx::DType dtype : {mx::DType::float32, mx::DType::float16, mx::DType::bfloat16}) {
    ndg_test::for_each_context([dtype](mx::Context ctx) {
      const auto input = [&](const mx::Shape& shape, unsigned seed) {
        return random_array(shape, ctx, seed).astype(dtype);
      };
      const auto body = [](const std::vector<nd::NDArray>& in) {
        const nd::NDArray x = in[0].abs() + 0.25, z = in[1];
        std::vector<nd::NDArray> out;
        for (std::uint8_t u = 0; u < static_cast<std::uint8_t>(mx::UnaryOp::count); ++u) {
          const nd::NDArray y = op::invoke1(op::unary_op(static_cast<mx::UnaryOp>(u)), {x});
          out.push_back(y);
          out.push_back(op::invoke1(op::unary_backward_op(static_cast<mx::UnaryOp>(u)), {z, x, y}));
        }
        for (std::uint8_t b = 0; b < static_cast<std::uint8_t>(mx::BinaryOp::count); ++b) {
          const auto kind = static_cast<mx::BinaryOp>(b);
          out.push_back(op::invoke1(op::binary_op(kind), {x, z}));
          for (const bool reverse : {false, true}) {
            const op::ScalarParams p{1.75, reverse};
            const nd::NDArray y = op::invoke1(op::scalar_op(kind), {x}, p);
            out.push_back(y);
            out.push_back(op::invoke1(op::scalar_backward_op(kind), {z, x, y}, p));
          }
        }
        return out;
      };
      // (5, 7): less than one of the CPU loop's blocks of 256; (61, 29): 6 blocks and 233 elements,
      // over several threads.
      for (const mx::Shape& shape : {mx::Shape{5, 7}, mx::Shape{61, 29}}) {
        const nd::NDArray x0 = input(shape, 1), z0 = input(shape, 2);
        const auto g = std::make_shared<const graph::Graph>(graph::trace(body, {x0, z0}, {"x", "z"}, {}));
        graph::Executor::Options fused;
        fused.fuse = graph::Executor::Options::Fuse::always;
        graph::Executor exec(g, false, {"x", "z"}, {x0, z0}, {}, {}, fused);
        for (unsigned run = 0; run < 2; ++run) {
          const nd::NDArray x = input(shape, 10 + run), z = input(shape, 20 + run);
          const std::vector<nd::NDArray> want = graph::run(*g, {{"x", x}, {"z", z}});
          const std::vector<nd::NDArray> got = exec.run({x, z}, {});
          BOOST_TEST_REQUIRE(got.size() == want.size());
          for (std::size_t h = 0; h < got.size(); ++h) {
            BOOST_TEST_CONTEXT(mx::dtype_name(dtype) << ", shape " << shape << ", run " << run << ", head " << h) {
              BOOST_TEST(got[h].dtype() == dtype);
              const std::vector<float> a = got[h].asvector<float>(), b = want[h].asvector<float>();
              // Bit patterns, so that NaN results (log of nothing here, but 0/0 may be) compare too.
              for (std::size_t i = 0; i < a.size(); ++i) {
                std::uint32_t ua, ub;
                std::memcpy(&ua, &a[i], 4);
                std::memcpy(&ub, &b[i], 4);
                BOOST_TEST(ua == ub, "element " << i << ": " << a[i] << " vs " << b[i]);
              }
            }
          }
        }
        BOOST_TEST(exec.steps() < g->nodes.size() / 4);  // fused, not op by op
      }
    });
  }
}

BOOST_AUTO_TEST_SUITE_END()
