// nd::all_reduce: sums against values computed here, through NCCL and through peer copies, on
// every GPU subset the machine has (2 and 4 GPUs), with a cpu(0) copy, and with several dtypes;
// the errors, which leave every array as it was.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
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

// The copy-engine sums (kvstore "device" over GPUs with peer access, 1 MiB a call or more): groups
// of odd sizes whose chunks cut through them, in each floating dtype (small integers, exact in
// all of them), on the streams and overlapped (after a mark, joined), in two GPU orders, then
// random float32 values, which over two GPUs must be NCCL's sums to the bit (a + b either way).
void check_copy_engine_sums(const std::vector<mx::Context>& ctxs) {
  const auto value = [](std::size_t r, std::int64_t i) { return static_cast<double>(r + 1 + i % 8); };
  for (const DType dtype : {DType::float32, DType::float16, DType::bfloat16, DType::float64}) {
    for (const bool overlapped : {false, true}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype) << (overlapped ? ", overlapped" : "") << " on " << mx::to_string(ctxs)) {
        const std::vector<std::int64_t> sizes = {5, 700001, 77, 130};
        std::vector<std::vector<nd::NDArray>> groups;
        for (const std::int64_t n : sizes) {
          groups.emplace_back();
          for (std::size_t r = 0; r < ctxs.size(); ++r) {
            std::vector<double> v(static_cast<std::size_t>(n));
            for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(r, i);
            groups.back().push_back(nd::array(v, {n}, ctxs[r], dtype));
          }
        }
        if (overlapped) {
          for (mx::Context ctx : ctxs) nd::overlap::mark(ctx, 2);
          nd::overlap::all_reduce(groups, 2);
          for (mx::Context ctx : ctxs) nd::overlap::join(ctx);
        } else {
          nd::all_reduce(groups);
        }
        for (std::size_t g = 0; g < groups.size(); ++g) {
          std::vector<double> want(static_cast<std::size_t>(sizes[g]), 0.0);
          for (std::size_t r = 0; r < ctxs.size(); ++r) {
            for (std::int64_t i = 0; i < sizes[g]; ++i) want[static_cast<std::size_t>(i)] += value(r, i);
          }
          for (std::size_t r = 0; r < ctxs.size(); ++r) {
            BOOST_TEST_CONTEXT("group " << g << " on " << ctxs[r].str()) {
              BOOST_TEST(groups[g][r].asvector<double>() == want, tt::per_element());
            }
          }
        }
      }
    }
  }
  // Random values: every copy ends the same, and over two GPUs equal to NCCL's sums.
  std::vector<std::vector<nd::NDArray>> mine(1), nccl(1);
  for (std::size_t r = 0; r < ctxs.size(); ++r) {
    mine[0].push_back(ndg_test::random_array({1 << 19}, ctxs[r], static_cast<unsigned>(10 + r)));
    nccl[0].push_back(mine[0].back().copy());
  }
  nd::all_reduce(mine);
  nd::all_reduce(nccl, nd::ReduceAlgo::nccl);
  const std::vector<float> first = mine[0][0].asvector<float>();
  for (std::size_t r = 0; r < ctxs.size(); ++r) {
    BOOST_TEST_CONTEXT("random values on " << ctxs[r].str()) {
      BOOST_TEST(mine[0][r].asvector<float>() == first, tt::per_element());
      const std::vector<float> theirs = nccl[0][r].asvector<float>();
      if (ctxs.size() == 2) {
        BOOST_TEST(theirs == first, tt::per_element());
      } else {
        for (std::size_t i = 0; i < first.size(); i += 997) BOOST_TEST(theirs[i] == first[i], tt::tolerance(1e-5f));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(copy_engine_all_reduce_over_two_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{2}) *
                                                               boost::unit_test::precondition(needs_nccl{})) {
  if (!nd::overlap::copy_engines(first_gpus(2))) BOOST_TEST_MESSAGE("gpu(0) and gpu(1) lack peer access: NCCL sums");
  check_copy_engine_sums(first_gpus(2));
  check_copy_engine_sums({mx::gpu(1), mx::gpu(0)});
}

BOOST_AUTO_TEST_CASE(copy_engine_all_reduce_over_four_gpus, *boost::unit_test::precondition(ndg_test::needs_gpus{4}) *
                                                                boost::unit_test::precondition(needs_nccl{})) {
  check_copy_engine_sums(first_gpus(4));
  check_copy_engine_sums({mx::gpu(3), mx::gpu(1), mx::gpu(0), mx::gpu(2)});
}

// Two overlapped sums in slots 0 and 1: after join(ctx, 0), work queued on ctx sees slot 0's sums;
// after defer_join(ctx), the next op queued on ctx sees every sum (the join happens then). The
// groups are 16 MiB a copy, so that slot 1's sum still runs while slot 0's results are copied.
BOOST_AUTO_TEST_CASE(overlapped_sums_are_joined_slot_by_slot_or_at_the_next_op,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2}) *
                         boost::unit_test::precondition(needs_nccl{})) {
  for (const std::vector<mx::Context>& ctxs : {first_gpus(2), std::vector{mx::gpu(1), mx::gpu(0)}}) {
    BOOST_TEST_CONTEXT("on " << mx::to_string(ctxs)) {
      const std::int64_t n = std::int64_t{1} << 22;
      std::vector<std::vector<nd::NDArray>> slot0(1), slot1(1);
      for (std::size_t r = 0; r < ctxs.size(); ++r) {
        slot0[0].push_back(nd::full({n}, static_cast<double>(r + 1), ctxs[r]));
        slot1[0].push_back(nd::full({n}, static_cast<double>(10 * (r + 1)), ctxs[r]));
      }
      for (mx::Context ctx : ctxs) nd::overlap::mark(ctx, 0);
      nd::overlap::all_reduce(slot0, 0);
      for (mx::Context ctx : ctxs) nd::overlap::mark(ctx, 1);
      nd::overlap::all_reduce(slot1, 1);
      std::vector<nd::NDArray> first;  // slot 0's sums, copied on each GPU's stream
      for (std::size_t r = 0; r < ctxs.size(); ++r) {
        nd::overlap::join(ctxs[r], 0);
        first.push_back(slot0[0][r].copy());
      }
      for (mx::Context ctx : ctxs) nd::overlap::defer_join(ctx);
      std::vector<nd::NDArray> second;  // queued after the deferred join: slot 1's sums
      for (std::size_t r = 0; r < ctxs.size(); ++r) second.push_back(slot1[0][r].copy());
      for (std::size_t r = 0; r < ctxs.size(); ++r) {
        BOOST_TEST_CONTEXT("on " << ctxs[r].str()) {
          const std::vector<float> a = first[r].asvector<float>(), b = second[r].asvector<float>();
          BOOST_TEST(std::count(a.begin(), a.end(), 3.0f) == n);
          BOOST_TEST(std::count(b.begin(), b.end(), 30.0f) == n);
        }
      }
    }
  }
  NDG_CHECK_THROWS_WITH(nd::overlap::join(mx::gpu(0), -2), mx::ValueError, "overlap::join", "slot -2");
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
  // Sums beside the GPUs' work take NCCL or the copy engines, not the peer algorithm.
  NDG_CHECK_THROWS_WITH(nd::overlap::all_reduce({valid}, 0, nd::ReduceAlgo::peer), mx::ValueError,
                        "overlap::all_reduce", "peer algorithm");
  unchanged();
}

BOOST_AUTO_TEST_SUITE_END()
