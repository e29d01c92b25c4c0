// vision::ImageFolderDataset, ImageListDataset and ImageRecordDataset, and the DataLoader over a
// Dataset: folders of PNG files, an im2rec .lst and an im2rec-style .rec/.idx written here, their samples decoded to the pixels
// written, batches made by worker threads and stacked (labels (B,) or (B, k)), a sample
// transform, and the typed errors of corrupt images, mixed sizes, empty class folders and bad
// arguments.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gluon/data.hpp>
#include <ndarray/io/image.hpp>
#include <ndarray/io/recordio.hpp>

namespace nd = mx::nd;
namespace gdata = mx::gluon::data;
namespace vision = mx::gluon::data::vision;
using Bytes = std::vector<std::uint8_t>;

namespace {

// An h x w RGB image whose pixels name `seed`, y, x and the channel.
Bytes pixels(int seed, int h, int w) {
  Bytes p;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) p.push_back(static_cast<std::uint8_t>(seed * 40 + y * 5 + x * 3 + c));
    }
  }
  return p;
}

std::string png(const Bytes& p, int h, int w) {
  return mx::image::imencode(nd::array(p.data(), mx::DType::uint8, {h, w, 3}, mx::cpu(), mx::DType::uint8), ".png");
}

// root/cat/a.PNG, root/cat/b.png, root/dog/c.png (6 x 5 each, seeds 0, 1, 2), and files that are
// not samples: root/dog/notes.txt, root/readme.txt.
void write_folder(const ndg_test::TempDir& root) {
  std::filesystem::create_directories(root.file("cat"));
  std::filesystem::create_directories(root.file("dog"));
  ndg_test::write_bytes(root.file("cat/b.png"), png(pixels(1, 6, 5), 6, 5));
  ndg_test::write_bytes(root.file("cat/a.PNG"), png(pixels(0, 6, 5), 6, 5));
  ndg_test::write_bytes(root.file("dog/c.png"), png(pixels(2, 6, 5), 6, 5));
  ndg_test::write_bytes(root.file("dog/notes.txt"), "not an image");
  ndg_test::write_bytes(root.file("readme.txt"), "not a class");
}

bool has_png(boost::unit_test::test_unit_id) { return mx::image::has_png(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(image_datasets, *boost::unit_test::precondition([](boost::unit_test::test_unit_id id) {
                        boost::test_tools::assertion_result r(has_png(id));
                        r.message() << "this build has no PNG codec";
                        return r;
                      }))

BOOST_AUTO_TEST_CASE(image_folder_samples_and_batches) {
  const ndg_test::TempDir root;
  write_folder(root);
  const auto images = std::make_shared<vision::ImageFolderDataset>(root.str());
  BOOST_TEST(images->synsets() == (std::vector<std::string>{"cat", "dog"}), boost::test_tools::per_element());
  BOOST_TEST(images->size() == 3);
  BOOST_TEST(images->items()[0].first == root.file("cat/a.PNG"));
  const gdata::Sample s = images->get(2);
  BOOST_TEST(s.data.shape() == mx::Shape({6, 5, 3}));
  BOOST_TEST(s.data.asvector<std::uint8_t>() == pixels(2, 6, 5), boost::test_tools::per_element());
  BOOST_TEST(s.label.asvector<std::int32_t>() == std::vector<std::int32_t>{1}, boost::test_tools::per_element());
  BOOST_TEST(vision::ImageFolderDataset(root.str(), 0).get(0).data.shape() == mx::Shape({6, 5, 1}));
  // Batches made by two workers, in order; then as tensors.
  for (const int workers : {0, 2}) {
    BOOST_TEST_CONTEXT(workers << " workers") {
      gdata::DataLoader loader(images, 2, false, "keep", {}, workers);
      std::vector<gdata::Batch> batches;
      for (auto& batch : loader) batches.push_back(batch);
      BOOST_TEST_REQUIRE(batches.size() == 2u);
      BOOST_TEST(batches[0].data.shape() == mx::Shape({2, 6, 5, 3}));
      Bytes want = pixels(0, 6, 5), second = pixels(1, 6, 5);
      want.insert(want.end(), second.begin(), second.end());
      BOOST_TEST(batches[0].data.asvector<std::uint8_t>() == want, boost::test_tools::per_element());
      BOOST_TEST(batches[0].label.shape() == mx::Shape({2}));
      BOOST_TEST(batches[1].label.asvector<std::int32_t>() == std::vector<std::int32_t>{1}, boost::test_tools::per_element());
    }
  }
  // A sample transform (the top-left 4 x 4) and a batch transform (to tensors).
  gdata::DataLoader cropped(
      images, 3, false, "keep",
      [](const nd::NDArray& x) { return nd::slice_axis(nd::slice_axis(x, 0, 0, 4), 1, 0, 4); }, 2, gdata::to_tensor);
  const gdata::Batch batch = *cropped.begin();
  BOOST_TEST(batch.data.shape() == mx::Shape({3, 3, 4, 4}));
  BOOST_TEST(batch.data.asvector<float>()[static_cast<std::size_t>(((2 * 3 + 1) * 4 + 3) * 4 + 2)] ==
             pixels(2, 6, 5)[static_cast<std::size_t>((3 * 5 + 2) * 3 + 1)] / 255.0f);
}

BOOST_AUTO_TEST_CASE(image_record_samples_and_batches) {
  const ndg_test::TempDir dir;
  {
    mx::recordio::MXIndexedRecordIO out(dir.file("train.idx"), dir.file("train.rec"), 'w');
    for (int k = 0; k < 3; ++k) out.write_idx(k, mx::recordio::pack({.label = {static_cast<float>(k) + 0.5f}, .id = 0}, png(pixels(k, 4, 3), 4, 3)));
    out.close();
    mx::recordio::MXIndexedRecordIO multi(dir.file("multi.idx"), dir.file("multi.rec"), 'w');
    multi.write_idx(7, mx::recordio::pack({.label = {1, 0, 1}}, png(pixels(5, 4, 3), 4, 3)));
    multi.write_idx(8, mx::recordio::pack({.label = {0, 1, 1}}, "not an image"));
    multi.close();
  }
  const auto records = std::make_shared<vision::ImageRecordDataset>(dir.file("train.rec"));
  BOOST_TEST(records->size() == 3);
  BOOST_TEST(records->get(1).data.asvector<std::uint8_t>() == pixels(1, 4, 3), boost::test_tools::per_element());
  BOOST_TEST(records->get(2).label.asvector<float>() == std::vector<float>{2.5f}, boost::test_tools::per_element());
  gdata::DataLoader loader(records, 3, false, "keep", {}, 2);
  const gdata::Batch batch = *loader.begin();
  BOOST_TEST(batch.data.shape() == mx::Shape({3, 4, 3, 3}));
  BOOST_TEST(batch.label.asvector<float>() == (std::vector<float>{0.5f, 1.5f, 2.5f}), boost::test_tools::per_element());
  // Several labels per record: (k,) per sample.
  const vision::ImageRecordDataset multi(dir.file("multi.rec"));
  BOOST_TEST(multi.get(0).label.asvector<float>() == (std::vector<float>{1, 0, 1}), boost::test_tools::per_element());
  NDG_CHECK_THROWS_WITH(multi.get(1), mx::FileError, "multi.rec", "record 8", "neither a JPEG nor a PNG");
  NDG_CHECK_THROWS_WITH(multi.get(2), mx::IndexError, "ImageRecordDataset[2]", "2 samples");
  NDG_CHECK_THROWS_WITH(vision::ImageRecordDataset(dir.file("none.rec")), mx::FileError, "none.rec", "cannot open");
}

BOOST_AUTO_TEST_CASE(image_list_samples) {
  const ndg_test::TempDir root;
  write_folder(root);
  ndg_test::write_bytes(root.file("train.lst"), "0\t1\tdog/c.png\n5\t0.5\t2\tcat/a.PNG\r\n\n");
  const auto list = std::make_shared<vision::ImageListDataset>(root.str(), root.file("train.lst"));
  BOOST_TEST(list->size() == 2);
  BOOST_TEST(list->get(0).data.asvector<std::uint8_t>() == pixels(2, 6, 5), boost::test_tools::per_element());
  BOOST_TEST(list->get(1).label.asvector<float>() == (std::vector<float>{0.5f, 2.0f}), boost::test_tools::per_element());
  ndg_test::write_bytes(root.file("bad.lst"), "0\t1\tdog/c.png\n1\tdog/c.png\n");
  NDG_CHECK_THROWS_WITH(vision::ImageListDataset(root.str(), root.file("bad.lst")), mx::FileError, "bad.lst", "line 2",
                        "no label or no path");
  ndg_test::write_bytes(root.file("nan.lst"), "0\tdog\tdog/c.png\n");
  NDG_CHECK_THROWS_WITH(vision::ImageListDataset(root.str(), root.file("nan.lst")), mx::FileError, "line 1",
                        "label 'dog' is not a number");
  ndg_test::write_bytes(root.file("gone.lst"), "0\t1\tdog/none.png\n");
  NDG_CHECK_THROWS_WITH(vision::ImageListDataset(root.str(), root.file("gone.lst")).get(0), mx::FileError, "none.png");
  ndg_test::write_bytes(root.file("empty.lst"), "\n");
  NDG_CHECK_THROWS_WITH(vision::ImageListDataset(root.str(), root.file("empty.lst")), mx::FileError, "lists no image");
}

BOOST_AUTO_TEST_CASE(bad_images_folders_and_arguments_are_typed_errors) {
  const ndg_test::TempDir root;
  write_folder(root);
  // Mixed sizes cannot be stacked; the samples and shapes are named.
  ndg_test::write_bytes(root.file("dog/c.png"), png(pixels(2, 7, 5), 7, 5));
  gdata::DataLoader mixed(std::make_shared<vision::ImageFolderDataset>(root.str()), 3, false, "keep", {}, 2);
  NDG_CHECK_THROWS_WITH(mixed.begin(), mx::ShapeError, "sample 2", "(7, 5, 3)", "sample 0", "(6, 5, 3)");
  // A corrupt image fails its batch with the file named, raised in the loop with its type.
  ndg_test::write_bytes(root.file("dog/c.png"), png(pixels(2, 6, 5), 6, 5).substr(0, 40));
  gdata::DataLoader corrupt(std::make_shared<vision::ImageFolderDataset>(root.str()), 2, false, "keep", {}, 2);
  auto it = corrupt.begin();
  BOOST_TEST(it->data.shape()[0] == 2);
  NDG_CHECK_THROWS_WITH(++it, mx::FileError, root.file("dog/c.png"), "corrupt or truncated PNG");
  // Folders.
  std::filesystem::create_directories(root.file("empty"));
  NDG_CHECK_THROWS_WITH(vision::ImageFolderDataset(root.str()), mx::FileError, root.file("empty"), "holds no image");
  NDG_CHECK_THROWS_WITH(vision::ImageFolderDataset(root.file("none")), mx::FileError, "none", "not a folder");
  const ndg_test::TempDir bare;
  NDG_CHECK_THROWS_WITH(vision::ImageFolderDataset(bare.str()), mx::FileError, "has no class folder");
  std::filesystem::remove(root.file("empty"));
  const auto images = std::make_shared<vision::ImageFolderDataset>(root.str());
  NDG_CHECK_THROWS_WITH(images->get(3), mx::IndexError, "ImageFolderDataset[3]");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(images, 2, false, "keep", {}, -1), mx::ValueError, "num_workers", "-1");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(std::shared_ptr<const gdata::Dataset>(), 2), mx::ValueError, "null");
  NDG_CHECK_THROWS_WITH(gdata::DataLoader(images, 0), mx::ValueError, "batch_size");
}

BOOST_AUTO_TEST_SUITE_END()
