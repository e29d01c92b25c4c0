// vision::CIFAR10 and CIFAR100: batch files written here byte by byte in the binary versions'
// format (label byte(s), then 1024 red, 1024 green, 1024 blue bytes), read from the folder or from
// MXNet's download folder above it, in MXNet's (N, 32, 32, 3) layout; a DataLoader batch of them as
// tensors; num_samples across files; and the typed errors of missing, cut and mislabelled files.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <gluon/data.hpp>

namespace gdata = mx::gluon::data;
namespace vision = mx::gluon::data::vision;

namespace {

// Record `k`'s pixel (y, x) in channel c: a value that names all four.
std::uint8_t pixel(int k, int y, int x, int c) { return static_cast<std::uint8_t>((k * 31 + y * 7 + x * 3 + c * 85) % 256); }

std::string record(const std::vector<int>& label_bytes, int k) {
  std::string out;
  for (int b : label_bytes) out += static_cast<char>(b);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) out += static_cast<char>(pixel(k, y, x, c));
    }
  }
  return out;
}

// CIFAR-10's six files in root/cifar-10-batches-bin, two records each; record k has label k % 10.
void write_cifar10(const ndg_test::TempDir& root) {
  const std::string folder = root.file("cifar-10-batches-bin");
  std::filesystem::create_directories(folder);
  int k = 0;
  for (const std::string name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                 "data_batch_5.bin", "test_batch.bin"}) {
    std::string bytes;
    for (int i = 0; i < 2; ++i, ++k) bytes += record({k % 10}, k);
    ndg_test::write_bytes(folder + "/" + name, bytes);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cifar)

BOOST_AUTO_TEST_CASE(cifar10_reads_the_binary_batches) {
  const ndg_test::TempDir root;
  write_cifar10(root);
  const vision::CIFAR10 train(true, root.str());
  BOOST_TEST(train.root() == root.file("cifar-10-batches-bin"));
  BOOST_TEST(train.size() == 10);
  BOOST_TEST(train.data().shape() == mx::Shape({10, 32, 32, 3}));
  BOOST_TEST(train.data().dtype() == mx::DType::uint8);
  BOOST_TEST(train.label().dtype() == mx::DType::int32);
  const std::vector<std::int32_t> labels = train.label().asvector<std::int32_t>();
  for (int k = 0; k < 10; ++k) BOOST_TEST(labels[static_cast<std::size_t>(k)] == k % 10);
  const std::vector<std::uint8_t> data = train.data().asvector<std::uint8_t>();
  for (const auto& [k, y, x] : std::vector<std::tuple<int, int, int>>{{0, 0, 0}, {3, 5, 17}, {9, 31, 31}}) {
    for (int c = 0; c < 3; ++c) {
      BOOST_TEST(data[static_cast<std::size_t>(((k * 32 + y) * 32 + x) * 3 + c)] == pixel(k, y, x, c));
    }
  }
  const vision::CIFAR10 test(false, root.file("cifar-10-batches-bin"));  // the folder itself
  BOOST_TEST(test.size() == 2);
  BOOST_TEST(test.label().asvector<std::int32_t>() == (std::vector<std::int32_t>{0, 1}), boost::test_tools::per_element());
  // The first samples only, across files; from the environment variable.
  BOOST_TEST(vision::CIFAR10(true, root.str(), 3).label().asvector<std::int32_t>() == (std::vector<std::int32_t>{0, 1, 2}),
             boost::test_tools::per_element());
  ::setenv("CIFAR10_DIR", root.str().c_str(), 1);
  BOOST_TEST(vision::CIFAR10::default_root() == root.str());
  BOOST_TEST(vision::CIFAR10().size() == 10);
  ::unsetenv("CIFAR10_DIR");
  // A batch as a network takes it: (B, 3, 32, 32) float32 in [0, 1].
  gdata::DataLoader loader(train, 4, false, "keep", gdata::to_tensor);
  const gdata::Batch batch = *loader.begin();
  BOOST_TEST(batch.data.shape() == mx::Shape({4, 3, 32, 32}));
  const std::vector<float> tensor = batch.data.asvector<float>();
  BOOST_TEST(tensor[static_cast<std::size_t>(((1 * 3 + 2) * 32 + 4) * 32 + 6)] == pixel(1, 4, 6, 2) / 255.0f);
}

BOOST_AUTO_TEST_CASE(cifar100_coarse_and_fine_labels) {
  const ndg_test::TempDir root;
  const std::string folder = root.file("cifar-100-binary");
  std::filesystem::create_directories(folder);
  ndg_test::write_bytes(folder + "/train.bin", record({3, 77}, 0) + record({19, 99}, 1) + record({0, 5}, 2));
  ndg_test::write_bytes(folder + "/test.bin", record({4, 40}, 3));
  const vision::CIFAR100 coarse(true, root.str());
  BOOST_TEST(coarse.label().asvector<std::int32_t>() == (std::vector<std::int32_t>{3, 19, 0}), boost::test_tools::per_element());
  const vision::CIFAR100 fine(true, root.str(), true);
  BOOST_TEST(fine.label().asvector<std::int32_t>() == (std::vector<std::int32_t>{77, 99, 5}), boost::test_tools::per_element());
  BOOST_TEST(fine.data().asvector<std::uint8_t>()[3 * (32 * 32) + 1] == pixel(1, 0, 0, 1));
  BOOST_TEST(vision::CIFAR100(false, root.str(), true).label().asvector<std::int32_t>() == std::vector<std::int32_t>{40},
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_files_are_file_errors) {
  const ndg_test::TempDir root;
  NDG_CHECK_THROWS_WITH(vision::CIFAR10(true, root.str()), mx::FileError, "data_batch_1.bin", root.str(),
                        root.str() + "/cifar-10-batches-bin", "CIFAR10_DIR");
  write_cifar10(root);
  const std::string folder = root.file("cifar-10-batches-bin");
  ndg_test::write_bytes(folder + "/data_batch_3.bin", record({1}, 0) + record({2}, 1).substr(0, 100));
  NDG_CHECK_THROWS_WITH(vision::CIFAR10(true, root.str()), mx::FileError, "data_batch_3.bin", "3173 bytes",
                        "3073-byte records");
  ndg_test::write_bytes(folder + "/data_batch_3.bin", record({1}, 0) + record({10}, 1));
  NDG_CHECK_THROWS_WITH(vision::CIFAR10(true, root.str()), mx::FileError, "data_batch_3.bin", "record 1", "label 10",
                        "[0, 10)");
  BOOST_TEST(vision::CIFAR10(true, root.str(), 4).size() == 4);  // the bad file is never read
  std::filesystem::create_directories(root.file("c100"));
  ndg_test::write_bytes(root.file("c100/train.bin"), record({20, 3}, 0));
  NDG_CHECK_THROWS_WITH(vision::CIFAR100(true, root.file("c100")), mx::FileError, "record 0", "label 20", "[0, 20)");
  BOOST_TEST(vision::CIFAR100(true, root.file("c100"), true).size() == 1);  // its fine label is fine
}

BOOST_AUTO_TEST_SUITE_END()
