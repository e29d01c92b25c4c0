// Creation: array from lists, vectors and xtensor; empty/zeros/ones/full/arange; *_like; astype;
// reading values back (asscalar, asvector, asxtensor). Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::dtype_of;
using ndg_test::kAllDTypes;
using ndg_test::values;

namespace {


}  // namespace

BOOST_AUTO_TEST_SUITE(creation)

BOOST_AUTO_TEST_CASE(array_from_a_1d_list) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2.5, -3}, ctx);
    BOOST_TEST(x.shape() == (mx::Shape{3}));
    BOOST_TEST(x.ndim() == 1);
    BOOST_TEST(x.size() == 3);
    BOOST_TEST(dtype_of(x) == "float32");
    BOOST_TEST(x.context() == ctx);
    BOOST_TEST(values(x) == (Values{1, 2.5, -3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(array_from_a_2d_list_is_row_major) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    BOOST_TEST(x.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(x.context() == ctx);
    BOOST_TEST(values(x) == (Values{1, 2, 3, 4, 5, 6}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(array_from_a_list_with_a_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray i = nd::array({1, -2, 3}, ctx, DType::int32);
    BOOST_TEST(dtype_of(i) == "int32");
    BOOST_TEST(i.asvector<std::int32_t>() == (std::vector<std::int32_t>{1, -2, 3}), tt::per_element());

    // float64 keeps the double exactly; float32 rounds it.
    const nd::NDArray d = nd::array({0.1}, ctx, DType::float64);
    BOOST_TEST(dtype_of(d) == "float64");
    BOOST_TEST(d.asscalar<double>() == 0.1);
    BOOST_TEST(nd::array({0.1}, ctx).asscalar<double>() == static_cast<double>(0.1f));

    const nd::NDArray u = nd::array({{0, 255}, {7, 128}}, ctx, DType::uint8);
    BOOST_TEST(dtype_of(u) == "uint8");
    BOOST_TEST(u.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(u) == (Values{0, 255, 7, 128}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(array_from_a_vector_and_shape) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray f = nd::array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, ctx);
    BOOST_TEST(f.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(dtype_of(f) == "float32");
    BOOST_TEST(f.context() == ctx);
    BOOST_TEST(values(f) == (Values{1, 2, 3, 4, 5, 6}), tt::per_element());

    // The dtype defaults to the element type of the vector.
    const nd::NDArray i = nd::array(std::vector<std::int64_t>{10000000000, -1, 2, 3}, {2, 1, 2}, ctx);
    BOOST_TEST(dtype_of(i) == "int64");
    BOOST_TEST(i.shape() == (mx::Shape{2, 1, 2}));
    BOOST_TEST(i.asvector<std::int64_t>() == (std::vector<std::int64_t>{10000000000, -1, 2, 3}),
               tt::per_element());

    const nd::NDArray u = nd::array(std::vector<std::uint8_t>{0, 200, 255}, {3}, ctx);
    BOOST_TEST(dtype_of(u) == "uint8");
    BOOST_TEST(values(u) == (Values{0, 200, 255}), tt::per_element());

    // With a dtype, the values are converted (1.75 -> 1: truncation, as NumPy's astype).
    const nd::NDArray c = nd::array(std::vector<double>{1.75, -2, 3}, {3}, ctx, DType::int32);
    BOOST_TEST(dtype_of(c) == "int32");
    BOOST_TEST(values(c) == (Values{1, -2, 3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(array_from_an_xtensor) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const xt::xarray<double> m = {{1.5, 2, 3}, {4, 5, 6.25}};
    const nd::NDArray x = nd::array(m, ctx);
    BOOST_TEST(x.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(dtype_of(x) == "float64");
    BOOST_TEST(x.context() == ctx);
    BOOST_TEST(values(x) == (Values{1.5, 2, 3, 4, 5, 6.25}), tt::per_element());

    const nd::NDArray f = nd::array(m, ctx, DType::float32);
    BOOST_TEST(dtype_of(f) == "float32");
    BOOST_TEST(values(f) == (Values{1.5, 2, 3, 4, 5, 6.25}), tt::per_element());

    xt::xarray<std::int32_t> cube = xt::arange<std::int32_t>(24);
    cube.reshape({2, 3, 4});
    const nd::NDArray c = nd::array(cube, ctx);
    BOOST_TEST(c.shape() == (mx::Shape{2, 3, 4}));
    BOOST_TEST(dtype_of(c) == "int32");
    BOOST_TEST(c.asxtensor<std::int32_t>() == cube);
  });
}

BOOST_AUTO_TEST_CASE(zeros_ones_full_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray z = nd::zeros({2, 3}, ctx, dt);
        const nd::NDArray o = nd::ones({4}, ctx, dt);
        const nd::NDArray f = nd::full({3, 1, 2}, 7, ctx, dt);
        BOOST_TEST(z.shape() == (mx::Shape{2, 3}));
        BOOST_TEST(o.shape() == (mx::Shape{4}));
        BOOST_TEST(f.shape() == (mx::Shape{3, 1, 2}));
        for (const nd::NDArray* x : {&z, &o, &f}) {
          BOOST_TEST(dtype_of(*x) == mx::dtype_name(dt));
          BOOST_TEST(x->context() == ctx);
        }
        BOOST_TEST(values(z) == Values(6, 0.0), tt::per_element());
        BOOST_TEST(values(o) == Values(4, 1.0), tt::per_element());
        BOOST_TEST(values(f) == Values(6, 7.0), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(creation_defaults_to_float32_on_the_current_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::ContextGuard guard(ctx);
    const nd::NDArray z = nd::zeros({2});
    BOOST_TEST(z.context() == ctx);
    BOOST_TEST(dtype_of(z) == "float32");
    BOOST_TEST(nd::ones({2}).context() == ctx);
    BOOST_TEST(nd::full({2}, 3.5).context() == ctx);
    BOOST_TEST(nd::arange(3).context() == ctx);
    BOOST_TEST(nd::array({1, 2}).context() == ctx);
    BOOST_TEST(nd::empty({2}).context() == ctx);
  });
  BOOST_TEST(nd::zeros({1}).context() == mx::cpu());  // the guard restored cpu(0)
}

BOOST_AUTO_TEST_CASE(full_converts_the_value_to_the_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(values(nd::full({2}, 2.5, ctx)) == (Values{2.5, 2.5}), tt::per_element());
    BOOST_TEST(values(nd::full({2}, -2.5, ctx, DType::int32)) == (Values{-2, -2}), tt::per_element());
    BOOST_TEST(nd::full({1}, 0.1, ctx, DType::float64).asscalar<double>() == 0.1);
    BOOST_TEST(values(nd::full({2}, 255, ctx, DType::uint8)) == (Values{255, 255}), tt::per_element());
    BOOST_TEST(nd::full({1}, 3e10, ctx, DType::int64).asscalar<std::int64_t>() == 30000000000);
  });
}

BOOST_AUTO_TEST_CASE(empty_has_shape_dtype_and_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      const nd::NDArray x = nd::empty({3, 4}, ctx, dt);
      BOOST_TEST(x.shape() == (mx::Shape{3, 4}));
      BOOST_TEST(dtype_of(x) == mx::dtype_name(dt));
      BOOST_TEST(x.context() == ctx);
      BOOST_TEST(!x.is_none());
    }
    const nd::NDArray constructed(mx::Shape{5}, ctx, DType::int64);
    BOOST_TEST(constructed.size() == 5);
    BOOST_TEST(constructed.context() == ctx);
  });
}

BOOST_AUTO_TEST_CASE(zero_size_arrays) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::zeros({0}, ctx);
    const nd::NDArray b = nd::ones({2, 0, 3}, ctx, DType::int32);
    BOOST_TEST(a.size() == 0);
    BOOST_TEST(b.size() == 0);
    BOOST_TEST(b.shape() == (mx::Shape{2, 0, 3}));
    BOOST_TEST(values(a).empty());
    BOOST_TEST(b.asxtensor<float>().size() == 0u);
    BOOST_TEST(nd::array(std::vector<float>{}, {0, 4}, ctx).shape() == (mx::Shape{0, 4}));
  });
}

// Shape is a container of extents: size() counts the axes (as std::vector and MXNet's
// TShape::ndim()), iteration and indexing agree with it, numel() multiplies the extents.
BOOST_AUTO_TEST_CASE(shape_is_a_container_of_extents) {
  const mx::Shape s{2, 3, 4};
  BOOST_TEST(s.size() == 3u);
  BOOST_TEST(s.ndim() == 3);
  BOOST_TEST(static_cast<std::size_t>(std::distance(s.begin(), s.end())) == s.size());
  std::size_t i = 0;
  for (const std::int64_t extent : s) BOOST_TEST(extent == s[static_cast<int>(i++)]);
  BOOST_TEST(i == s.size());
  BOOST_TEST(s.numel() == 24);
  BOOST_TEST(!s.empty());
  const mx::Shape scalar;
  BOOST_TEST(scalar.size() == 0u);
  BOOST_TEST(scalar.empty());
  BOOST_TEST(scalar.numel() == 1);
  BOOST_TEST((mx::Shape{5, 0}).numel() == 0);
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray c = nd::dot(nd::ones({2, 3}, ctx), nd::ones({3, 2}, ctx));
    BOOST_TEST(c.shape().size() == 2u);  // a 2x2 product has two axes ...
    BOOST_TEST(c.size() == 4);           // ... and four elements (NDArray::size, as MXNet's)
  });
}

BOOST_AUTO_TEST_CASE(default_handle_is_none) {
  const nd::NDArray x;
  BOOST_TEST(x.is_none());
  BOOST_TEST(!nd::zeros({1}).is_none());
}

BOOST_AUTO_TEST_CASE(arange_counts_from_start_to_stop) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::arange(5, ctx);
    BOOST_TEST(a.shape() == (mx::Shape{5}));
    BOOST_TEST(dtype_of(a) == "float32");
    BOOST_TEST(a.context() == ctx);
    BOOST_TEST(values(a) == (Values{0, 1, 2, 3, 4}), tt::per_element());

    BOOST_TEST(values(nd::arange(2, 6, 1, ctx)) == (Values{2, 3, 4, 5}), tt::per_element());
    BOOST_TEST(values(nd::arange(1, 2, 0.25, ctx)) == (Values{1, 1.25, 1.5, 1.75}), tt::per_element());
    // ceil((1 - 0) / 0.3) = 4 elements; the last is below stop.
    BOOST_TEST(values(nd::arange(0, 1, 0.3, ctx, DType::float64)) == (Values{0, 0.3, 0.6, 0.9}),
               tt::tolerance(1e-15) << tt::per_element());
    BOOST_TEST(values(nd::arange(5, 0, -2, ctx)) == (Values{5, 3, 1}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(arange_with_a_dtype_and_empty_ranges) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray i = nd::arange(-2, 3, 1, ctx, DType::int32);
    BOOST_TEST(dtype_of(i) == "int32");
    BOOST_TEST(i.asvector<std::int32_t>() == (std::vector<std::int32_t>{-2, -1, 0, 1, 2}), tt::per_element());
    const nd::NDArray u = nd::arange(4, ctx, DType::uint8);
    BOOST_TEST(dtype_of(u) == "uint8");
    BOOST_TEST(values(u) == (Values{0, 1, 2, 3}), tt::per_element());

    BOOST_TEST(nd::arange(3, 3, 1, ctx).size() == 0);
    BOOST_TEST(nd::arange(3, 0, 1, ctx).size() == 0);   // wrong direction: empty, as NumPy
    BOOST_TEST(nd::arange(0, 3, -1, ctx).size() == 0);
  });
  NDG_CHECK_THROWS_WITH(nd::arange(0, 3, 0), mx::ValueError, "arange", "step");
}

BOOST_AUTO_TEST_CASE(zeros_like_and_ones_like_keep_shape_dtype_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::full({2, 3}, 5, ctx, DType::int64);
    const nd::NDArray z = nd::zeros_like(x);
    const nd::NDArray o = nd::ones_like(x);
    for (const nd::NDArray* y : {&z, &o}) {
      BOOST_TEST(y->shape() == x.shape());
      BOOST_TEST(dtype_of(*y) == "int64");
      BOOST_TEST(y->context() == ctx);
      BOOST_TEST(!y->is(x));
    }
    BOOST_TEST(values(z) == Values(6, 0.0), tt::per_element());
    BOOST_TEST(values(o) == Values(6, 1.0), tt::per_element());
    BOOST_TEST(values(x) == Values(6, 5.0), tt::per_element());  // x is untouched
  });
}

BOOST_AUTO_TEST_CASE(astype_between_every_pair_of_dtypes) {
  // Values that every dtype represents exactly.
  const Values source{0, 1, 2, 100, 127, 255};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType from : kAllDTypes) {
      for (const DType to : kAllDTypes) {
        BOOST_TEST_CONTEXT(mx::dtype_name(from) << " -> " << mx::dtype_name(to)) {
          const nd::NDArray x = nd::array(source, {2, 3}, ctx, from);
          const nd::NDArray y = x.astype(to);
          BOOST_TEST(dtype_of(y) == mx::dtype_name(to));
          BOOST_TEST(y.shape() == (mx::Shape{2, 3}));
          BOOST_TEST(y.context() == ctx);
          BOOST_TEST(!y.is(x));
          BOOST_TEST(values(y) == source, tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(astype_truncates_and_wraps_as_a_cast) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // float -> integer truncates toward zero.
    const nd::NDArray f = nd::array({2.7, -2.7, 0.5, -0.5}, ctx);
    BOOST_TEST(values(f.astype(DType::int32)) == (Values{2, -2, 0, 0}), tt::per_element());
    BOOST_TEST(values(f.astype(DType::int64)) == (Values{2, -2, 0, 0}), tt::per_element());
    BOOST_TEST(values(nd::array({3.9, 254.5}, ctx).astype(DType::uint8)) == (Values{3, 254}),
               tt::per_element());
    // int32 -> uint8 keeps the value modulo 256 (300 -> 44, -1 -> 255).
    const nd::NDArray i = nd::array({300, -1, 7}, ctx, DType::int32);
    BOOST_TEST(values(i.astype(DType::uint8)) == (Values{44, 255, 7}), tt::per_element());
    // float64 -> float32 rounds; int64 -> float64 is exact below 2^53.
    BOOST_TEST(nd::array({0.1}, ctx, DType::float64).astype(DType::float32).asscalar<double>() ==
               static_cast<double>(0.1f));
    const std::int64_t big = (std::int64_t{1} << 52) + 1;
    const nd::NDArray b = nd::array(std::vector<std::int64_t>{big}, {1}, ctx).astype(DType::float64);
    BOOST_TEST(b.asscalar<double>() == static_cast<double>(big));
  });
}

BOOST_AUTO_TEST_CASE(astype_to_the_same_dtype_is_a_copy) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2}, ctx);
    const nd::NDArray y = x.astype(DType::float32);
    BOOST_TEST(!y.is(x));
    x += 10;
    BOOST_TEST(values(y) == (Values{1, 2}), tt::per_element());
    BOOST_TEST(values(x) == (Values{11, 12}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(asscalar_reads_one_element_in_any_type) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({2.75}, ctx);
    BOOST_TEST(x.asscalar<float>() == 2.75f);
    BOOST_TEST(x.asscalar<double>() == 2.75);
    BOOST_TEST(x.asscalar<std::int32_t>() == 2);  // converted as astype does
    BOOST_TEST(nd::full({1, 1, 1}, 9, ctx, DType::int64).asscalar<std::int64_t>() == 9);
    BOOST_TEST(nd::full({1}, 200, ctx, DType::uint8).asscalar<std::uint8_t>() == 200);
    BOOST_TEST(nd::full({1}, 200, ctx, DType::uint8).asscalar<float>() == 200.0f);
    NDG_CHECK_THROWS_WITH(nd::zeros({2}, ctx).asscalar<float>(), mx::ShapeError, "asscalar", "(2,)");
  });
}

BOOST_AUTO_TEST_CASE(asvector_round_trips_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::vector<float> f{0.1f, -1e30f, 3.5f, 1e-30f};
    BOOST_TEST(nd::array(f, {2, 2}, ctx).asvector<float>() == f, tt::per_element());
    const std::vector<double> d{0.1, 1.0 / 3, -1e300, 5e-310};
    BOOST_TEST(nd::array(d, {4}, ctx).asvector<double>() == d, tt::per_element());
    const std::vector<std::int32_t> i{-2147483647 - 1, 0, 2147483647};
    BOOST_TEST(nd::array(i, {3}, ctx).asvector<std::int32_t>() == i, tt::per_element());
    const std::vector<std::int64_t> l{(std::int64_t{1} << 62) + 1, -3};
    BOOST_TEST(nd::array(l, {2}, ctx).asvector<std::int64_t>() == l, tt::per_element());
    const std::vector<std::uint8_t> u{0, 1, 254, 255};
    BOOST_TEST(nd::array(u, {2, 2}, ctx).asvector<std::uint8_t>() == u, tt::per_element());
    // Reading as another type converts: float32 -> int64, int32 -> float.
    BOOST_TEST(nd::array({-1.5, 7}, ctx).asvector<std::int64_t>() == (std::vector<std::int64_t>{-1, 7}),
               tt::per_element());
    BOOST_TEST(nd::array(i, {3}, ctx).asvector<double>() == (Values{-2147483648.0, 0, 2147483647.0}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(asxtensor_round_trips_with_its_shape) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const xt::xarray<float> m = {{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12.5f}}};
    const xt::xarray<float> back = nd::array(m, ctx).asxtensor<float>();
    BOOST_TEST(back.dimension() == 3u);
    BOOST_TEST((std::vector<std::size_t>(back.shape().begin(), back.shape().end()) ==
                std::vector<std::size_t>{2, 3, 2}));
    BOOST_TEST(back == m);
    // Default element type float, converted from int32.
    const xt::xarray<float> converted = nd::arange(6, ctx, DType::int32).reshape({3, 2}).asxtensor();
    BOOST_TEST(converted == (xt::xarray<float>{{0, 1}, {2, 3}, {4, 5}}));
    const xt::xarray<double> d = nd::array(std::vector<double>{1.0 / 3}, {1}, ctx).asxtensor<double>();
    BOOST_TEST(d(0) == 1.0 / 3);
  });
}

BOOST_AUTO_TEST_SUITE_END()
