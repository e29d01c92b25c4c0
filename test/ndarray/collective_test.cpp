// nd::all_reduce: sums against values computed here, through NCCL and through peer copies, on
// every GPU subset the machine has (2 and 4 GPUs), with a cpu(0) copy, and with several dtypes;
// the errors, which leave every array as it was.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;

namespace {

// Copy r of a group: element i holds (r + 1) * 1000 + i % 1000 (exact in every dtype tested).
std::vector<double> copy_values(std::size_t r, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>((r + 1) * 1000 + i % 1000);
  return v;
}

std::vector<nd::NDArray> make_group(const std::vector<mx::Context>& ctxs, std::int64_t n, DType dtype) {
  std::vector<nd::NDArray> group;
  for (std::size_t r = 0; r < ctxs.size(); ++r) group.push_back(nd::array(copy_values(r, n), {n}, ctxs[r], dtype));
  return group;
}

// The sum every copy must hold afterwards.
std::vector<double> group_sum(std::size_t copies, std::int64_t n) {
  std::vector<double> sum(static_cast<std::size_t>(n), 0.0);
  for (std::size_t r = 0; r < copies; ++r) {
    const std::vector<double> v = copy_values(r, n);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  return sum;
}

// All-reduces three groups of different sizes and dtypes over ctxs and checks every copy.
void check_all_reduce(const std::vector<mx::Context>& ctxs, nd::ReduceAlgo algo) {
  const std::vector<std::pair<std::int64_t, DType>> tensors = {
      {3, DType::float32}, {1 << 20, DType::float32}, {1000, DType::float64}, {17, DType::int32}};
  std::vector<std::vector<nd::NDArray>> groups;
  for (auto [n, dtype] : tensors) groups.push_back(make_group(ctxs, n, dtype));
  const std::vector<std::vector<nd::NDArray>> handles = groups;  // other handles see the sums too
  nd::all_reduce(groups, algo);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::vector<double> want = group_sum(ctxs.size(), tensors[g].first);
    for (std::size_t r = 0; r < ctxs.size(); ++r) {
      BOOST_TEST_CONTEXT("group " << g << " copy on " << ctxs[r].str()) {
        BOOST_TEST(handles[g][r].context() == ctxs[r]);
        BOOST_TEST(handles[g][r].dtype() == tensors[g].second);
        BOOST_TEST(handles[g][r].asvector<double>() == want, tt::per_element());
      }
    }
  }
}

std::vector<mx::Context> first_gpus(int n) {
  std::vector<mx::Context> out;
  for (int i = 0; i < n; ++i) out.push_back(mx::gpu(i));
  return out;
}

struct needs_nccl {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result result(nd::built_with_nccl());
    result.message() << "needs a build with NCCL (this one has none)";
    return result;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(collective)

BOOST_AUTO_TEST_CASE(peer_all_reduce_over_two_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  check_all_reduce(first_gpus(2), nd::ReduceAlgo::peer);
  check_all_reduce({mx::gpu(1), mx::gpu(0)}, nd::ReduceAlgo::peer);
}

BOOST_AUTO_TEST_CASE(nccl_all_reduce_over_two_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2}) *
                                                        boost::unit_test::precondition(needs_nccl{})) {
  check_all_reduce(first_gpus(2), nd::ReduceAlgo::nccl);
  check_all_reduce({mx::gpu(1), mx::gpu(0)}, nd::ReduceAlgo::nccl);  // another rank order, another clique
  check_all_reduce(first_gpus(2), nd::ReduceAlgo::automatic);
}

BOOST_AUTO_TEST_CASE(peer_all_reduce_over_four_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{4})) {
  check_all_reduce(first_gpus(4), nd::ReduceAlgo::peer);
}

BOOST_AUTO_TEST_CASE(nccl_all_reduce_over_four_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{4}) *
                                                         boost::unit_test::precondition(needs_nccl{})) {
  check_all_reduce(first_gpus(4), nd::ReduceAlgo::nccl);
  check_all_reduce({mx::gpu(2), mx::gpu(3)}, nd::ReduceAlgo::nccl);  // a subset of the GPUs
}

BOOST_AUTO_TEST_CASE(all_reduce_over_every_gpu_and_the_cpu_uses_peer_copies,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  check_all_reduce(ndg_test::all_contexts(), nd::ReduceAlgo::automatic);
  check_all_reduce(ndg_test::all_contexts(), nd::ReduceAlgo::peer);
}

BOOST_AUTO_TEST_CASE(a_group_with_one_copy_is_left_as_it_is) {
  ndg_test::for_each_context([](mx::Context ctx) {
    std::vector<std::vector<nd::NDArray>> groups = {make_group({ctx}, 5, DType::float32)};
    nd::all_reduce(groups);
    BOOST_TEST(groups[0][0].asvector<double>() == copy_values(0, 5), tt::per_element());
    nd::all_reduce({});
  });
}

BOOST_AUTO_TEST_CASE(bad_groups_throw_before_any_array_changes) {
  // The first group is valid: it must still hold its own values after the call throws.
  const std::vector<mx::Context> two = mx::num_gpus() > 0 ? std::vector{mx::cpu(), mx::gpu(0)}
                                                          : std::vector{mx::cpu()};
  std::vector<nd::NDArray> valid = make_group(two, 4, DType::float32);
  auto unchanged = [&] {
    for (std::size_t r = 0; r < valid.size(); ++r) {
      BOOST_TEST(valid[r].asvector<double>() == copy_values(r, 4), tt::per_element());
    }
  };
  const nd::NDArray a = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(nd::all_reduce({valid, {a, nd::ones({3, 2})}}), mx::ShapeError,
                        "all_reduce", "group 1", "(2, 3) float32 @cpu(0)", "(3, 2) float32 @cpu(0)");
  unchanged();
  NDG_CHECK_THROWS_WITH(nd::all_reduce({valid, {a, nd::ones({2, 3}, mx::cpu(), DType::float64)}}), mx::DTypeError,
                        "all_reduce", "float64");
  unchanged();
  NDG_CHECK_THROWS_WITH(nd::all_reduce({valid, {a, nd::ones({2, 3})}}), mx::ContextMismatch, "all_reduce",
                        "two copies on cpu(0)");
  unchanged();
  if (nd::built_with_nccl()) {
    NDG_CHECK_THROWS_WITH(nd::all_reduce({valid}, nd::ReduceAlgo::nccl), mx::ContextMismatch,
                          "NCCL reduces GPU arrays only", "@cpu(0)");
  } else {
    NDG_CHECK_THROWS_WITH(nd::all_reduce({valid}, nd::ReduceAlgo::nccl), mx::ValueError, "this build has none");
  }
  unchanged();
}

BOOST_AUTO_TEST_SUITE_END()
