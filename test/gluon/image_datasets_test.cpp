// vision::ImageFolderDataset, ImageListDataset and ImageRecordDataset, and the DataLoader over a
// Dataset: folders of PNG files, an im2rec .lst and an im2rec-style .rec/.idx written here, their samples decoded to the pixels
// written, batches made by worker threads and stacked (labels (B,) or (B, k)), a sample
// transform, and the typed errors of corrupt images, mixed sizes, empty class folders and bad
// arguments. The ndgluon-im2rec program's lists and records, read back by ImageListDataset and
// ImageRecordDataset, and its errors.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
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

// The ndgluon-im2rec program, which meson test names in $NDG_IM2REC.
boost::test_tools::assertion_result has_im2rec(boost::unit_test::test_unit_id) {
  const char* program = std::getenv("NDG_IM2REC");
  boost::test_tools::assertion_result r(program != nullptr && std::filesystem::exists(program));
  r.message() << "$NDG_IM2REC does not name the ndgluon-im2rec program (meson test sets it)";
  return r;
}

struct Run {
  int status;
  std::string output;  // stdout and stderr
};

// Runs ndgluon-im2rec with `args` (paths single-quoted by the caller), its output kept in dir.
Run im2rec(const std::string& args, const ndg_test::TempDir& dir) {
  const std::string log = dir.file("im2rec.log");
  const int raw = std::system(("'" + std::string(std::getenv("NDG_IM2REC")) + "' " + args + " > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, ndg_test::read_bytes(log)};
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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

// The folder listed with --recursive and packed by two threads into PNG records: ImageListDataset
// and ImageRecordDataset give the same samples, with each class folder's label, in the list's
// order, with the pixels written.
BOOST_AUTO_TEST_CASE(im2rec_lists_and_records_read_back, *boost::unit_test::precondition(has_im2rec)) {
  const ndg_test::TempDir root, out;
  write_folder(root);
  const std::string data = quoted(out.file("data")), images = quoted(root.str());
  Run run = im2rec("--list --recursive --no-shuffle " + data + " " + images, out);
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  BOOST_TEST(contains(run.output, "cat 0\ndog 1\n"), run.output);
  BOOST_TEST(ndg_test::read_bytes(out.file("data.lst")) == "0\t0.000000\tcat/a.PNG\n1\t0.000000\tcat/b.png\n2\t1.000000\tdog/c.png\n");
  run = im2rec("--num-thread 2 --encoding .png " + data + " " + images, out);
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  BOOST_TEST(contains(run.output, "3 images packed, 0 skipped"), run.output);
  const vision::ImageListDataset list(root.str(), out.file("data.lst"));
  const vision::ImageRecordDataset records(out.file("data.rec"));
  BOOST_TEST_REQUIRE(records.size() == 3);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST_CONTEXT("sample " << i) {
      const gdata::Sample s = records.get(i);
      BOOST_TEST(s.data.asvector<std::uint8_t>() == pixels(i, 6, 5), boost::test_tools::per_element());
      BOOST_TEST(s.data.asvector<std::uint8_t>() == list.get(i).data.asvector<std::uint8_t>(), boost::test_tools::per_element());
      BOOST_TEST(s.label.asvector<float>() == std::vector<float>{i == 2 ? 1.0f : 0.0f}, boost::test_tools::per_element());
    }
  }
  // Shuffled by default (Python's order for 3 items after random.seed(100): 2, 1, 0), then packed
  // as the files are: the record order follows the list, each key its index.
  BOOST_TEST_REQUIRE(im2rec("--list --recursive " + quoted(out.file("shuffled")) + " " + images, out).status == 0);
  BOOST_TEST_REQUIRE(im2rec("--pass-through " + quoted(out.file("shuffled")) + " " + images, out).status == 0);
  const mx::recordio::MXIndexedRecordIO shuffled(out.file("shuffled.idx"), out.file("shuffled.rec"), 'r');
  BOOST_TEST(shuffled.keys() == (std::vector<std::int64_t>{2, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(mx::recordio::unpack(shuffled.read_idx(2)).second == ndg_test::read_bytes(root.file("dog/c.png")));
}

BOOST_AUTO_TEST_CASE(im2rec_errors_name_the_file_and_line, *boost::unit_test::precondition(has_im2rec)) {
  const ndg_test::TempDir root, out;
  write_folder(root);
  const std::string images = quoted(root.str());
  // A missing root, a malformed line, an output that cannot be written: exit 1, named.
  ndg_test::write_bytes(out.file("data.lst"), "0\t0\tcat/a.PNG\n");
  Run run = im2rec(quoted(out.file("data")) + " " + quoted(root.file("none")), out);
  BOOST_TEST(run.status == 1);
  BOOST_TEST(contains(run.output, "error: im2rec: the image root '" + root.file("none") + "' is missing"), run.output);
  ndg_test::write_bytes(out.file("bad.lst"), "0\t0\tcat/a.PNG\nx\t1\tdog/c.png\n");
  run = im2rec(quoted(out.file("bad")) + " " + images, out);
  BOOST_TEST(run.status == 1);
  BOOST_TEST(contains(run.output, out.file("bad.lst") + "', line 2"), run.output);
  BOOST_TEST(contains(run.output, "index 'x' is not an integer"), run.output);
  BOOST_TEST(!std::filesystem::exists(out.file("bad.rec")));
  ndg_test::write_bytes(out.file("locked.lst"), "0\t0\tcat/a.PNG\n");
  std::filesystem::create_directories(out.file("locked.rec"));
  run = im2rec(quoted(out.file("locked")) + " " + images, out);
  BOOST_TEST(run.status == 1);
  BOOST_TEST(contains(run.output, "cannot open '" + out.file("locked.rec") + "' to write"), run.output);
  // Images that cannot be read are skipped, each named with its list line; the others packed.
  ndg_test::write_bytes(out.file("skip.lst"), "0\t0\tcat/gone.png\n1\t1\tdog/notes.txt\n2\t1\tdog/c.png\n");
  // Stored as PNG, so that the case holds in builds without a JPEG codec too.
  run = im2rec(quoted(out.file("skip")) + " " + images + " --encoding .png", out);
  BOOST_TEST(run.status == 0, run.output);
  BOOST_TEST(contains(run.output, "skipped cat/gone.png (" + out.file("skip.lst") + ", line 1): "), run.output);
  BOOST_TEST(contains(run.output, "skipped dog/notes.txt (" + out.file("skip.lst") + ", line 2): "), run.output);
  BOOST_TEST(contains(run.output, "1 images packed, 2 skipped"), run.output);
  BOOST_TEST(vision::ImageRecordDataset(out.file("skip.rec")).size() == 1);
  // None packed, or no list: exit 1. A bad command line: exit 2.
  ndg_test::write_bytes(out.file("none.lst"), "0\t0\tcat/gone.png\n");
  run = im2rec(quoted(out.file("none")) + " " + images, out);
  BOOST_TEST(run.status == 1);
  BOOST_TEST(contains(run.output, "none of the 1 images listed could be packed"), run.output);
  run = im2rec(quoted(out.file("nothing")) + " " + images, out);
  BOOST_TEST(run.status == 1);
  BOOST_TEST(contains(run.output, "no list file"), run.output);
  BOOST_TEST(im2rec("--quality 0 " + quoted(out.file("data")) + " " + images, out).status == 2);
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
