// mx::im2rec (ndarray/io/im2rec.hpp), MXNet's tools/im2rec.py: .lst lines parsed and written as
// im2rec.py writes them; folders listed in its order, shuffled as Python's random.shuffle (the
// orders below are Python 3's own output), cut into chunks and train/val/test lists under its
// names; lists found for a prefix; images packed into a .rec and .idx read back with
// MXIndexedRecordIO (labels, ids, order, sizes, pixels; pass-through bytes identical), the same
// files with several threads, a .rec compared byte for byte with one built from MXNet's documented
// layout; and the typed errors of bad lines, missing roots, unwritable outputs and skipped images.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <ndarray/io/im2rec.hpp>
#include <ndarray/io/image.hpp>
#include <ndarray/io/recordio.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace im2rec = mx::im2rec;
namespace rio = mx::recordio;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

// An h x w RGB image whose pixels name `seed`, y, x and the channel.
nd::NDArray image(int seed, int h, int w) {
  Bytes p;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) p.push_back(static_cast<std::uint8_t>(seed * 40 + y * 5 + x * 3 + c * 60));
    }
  }
  return nd::array(p.data(), mx::DType::uint8, {h, w, 3}, mx::cpu(), mx::DType::uint8);
}

Bytes pixels(const nd::NDArray& a) { return a.asvector<std::uint8_t>(); }

std::vector<std::string> paths(const std::vector<im2rec::ListItem>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) out.push_back(item.path);
  return out;
}

std::vector<std::int64_t> indices(const std::vector<im2rec::ListItem>& items) {
  std::vector<std::int64_t> out;
  for (const auto& item : items) out.push_back(item.index);
  return out;
}

// root/cat/{a.png (6 x 8), b.JPG (10 x 4)}, root/dog/{c.png (5 x 5)}, root/dog/notes.txt,
// root/empty/, root/top.png (4 x 4), root/zoo/inner/d.jpeg (7 x 9): PNGs of image(seed, h, w), JPEGs at
// quality 95.
struct Folder {
  ndg_test::TempDir root;
  Folder() {
    fs::create_directories(root.file("cat"));
    fs::create_directories(root.file("dog"));
    fs::create_directories(root.file("empty"));
    fs::create_directories(root.file("zoo/inner"));
    ndg_test::write_bytes(root.file("cat/a.png"), mx::image::imencode(image(0, 6, 8), ".png"));
    ndg_test::write_bytes(root.file("cat/b.JPG"), mx::image::imencode(image(1, 10, 4), ".jpg", 95));
    ndg_test::write_bytes(root.file("dog/c.png"), mx::image::imencode(image(2, 5, 5), ".png"));
    ndg_test::write_bytes(root.file("dog/notes.txt"), "not an image");
    ndg_test::write_bytes(root.file("top.png"), mx::image::imencode(image(3, 4, 4), ".png"));
    ndg_test::write_bytes(root.file("zoo/inner/d.jpeg"), mx::image::imencode(image(4, 7, 9), ".jpg", 95));
  }
};

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// One RecordIO part as dmlc-core writes it: magic 0xced7230a, lrecord = cflag << 29 | length (the
// continuation flag in the top 3 bits, the length in the low 29), the bytes, zero padding to 4.
std::string part(std::uint32_t cflag, const std::string& bytes) {
  std::string out;
  put(out, std::uint32_t{0xced7230a});
  put(out, static_cast<std::uint32_t>(cflag << 29 | bytes.size()));
  out += bytes;
  out.append((4 - bytes.size() % 4) % 4, '\0');
  return out;
}

// IRHeader: uint32 flag, float32 label, uint64 id, uint64 id2, then the extra labels, then the image.
std::string header(std::uint32_t flag, float label, std::uint64_t id, std::uint64_t id2, const std::vector<float>& extra = {}) {
  std::string out;
  put(out, flag);
  put(out, label);
  put(out, id);
  put(out, id2);
  for (float v : extra) put(out, v);
  return out;
}

bool has_codecs(boost::unit_test::test_unit_id) { return mx::image::has_png() && mx::image::has_jpeg(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(im2rec_lists)

BOOST_AUTO_TEST_CASE(lines_parse_as_im2rec_reads_them) {
  // Fields stripped, CRLF and CR line ends, blank lines skipped (but counted), several labels.
  const auto items = im2rec::parse_list(" 3\t1.000000\t cat/a.png \r\n\n7\t0.5\t-2\t1e3\tdog/c d.png\r+9\tinf\tx.png\n", "t.lst");
  BOOST_TEST_REQUIRE(items.size() == 3u);
  BOOST_TEST(items[0].index == 3);
  BOOST_TEST(items[0].path == "cat/a.png");
  BOOST_TEST(items[0].labels == std::vector<float>{1.0f}, boost::test_tools::per_element());
  BOOST_TEST(items[0].line == 1);
  BOOST_TEST(items[1].labels == (std::vector<float>{0.5f, -2.0f, 1000.0f}), boost::test_tools::per_element());
  BOOST_TEST(items[1].path == "dog/c d.png");
  BOOST_TEST(items[1].line == 3);
  BOOST_TEST(items[2].index == 9);
  BOOST_TEST(std::isinf(items[2].labels[0]));
  BOOST_TEST(items[2].line == 4);
  BOOST_TEST(im2rec::parse_list("", "empty.lst").empty());
  // Each malformed line is an mx::FileError naming the file and the line.
  NDG_CHECK_THROWS_WITH(im2rec::parse_list("0\t1\ta.png\n1\ta.png\n", "two.lst"), mx::FileError, "'two.lst', line 2",
                        "no label or no path");
  NDG_CHECK_THROWS_WITH(im2rec::parse_list("1.5\t1\ta.png\n", "x.lst"), mx::FileError, "line 1", "index '1.5' is not an integer");
  NDG_CHECK_THROWS_WITH(im2rec::parse_list("\n\n0\tdog\ta.png\n", "x.lst"), mx::FileError, "line 3", "label 'dog' is not a number");
  NDG_CHECK_THROWS_WITH(im2rec::parse_list("0\t0x10\ta.png\n", "x.lst"), mx::FileError, "label '0x10'");
  NDG_CHECK_THROWS_WITH(im2rec::parse_list("99999999999999999999\t1\ta.png\n", "x.lst"), mx::FileError, "not an integer");
  const ndg_test::TempDir dir;
  NDG_CHECK_THROWS_WITH(im2rec::read_list(dir.file("none.lst")), mx::FileError, "none.lst");
}

BOOST_AUTO_TEST_CASE(lines_are_written_as_im2rec_writes_them) {
  const std::vector<im2rec::ListItem> items = {{4, {1.0f}, "dog/1.png", 0}, {0, {0.5f, 2.0f}, "cat/0.png", 0}};
  BOOST_TEST(im2rec::format_list(items) == "4\t1.000000\tdog/1.png\n0\t0.500000\t2.000000\tcat/0.png\n");
  const ndg_test::TempDir dir;
  im2rec::write_list(dir.file("a.lst"), items);
  const auto back = im2rec::read_list(dir.file("a.lst"));
  BOOST_TEST(indices(back) == (std::vector<std::int64_t>{4, 0}), boost::test_tools::per_element());
  BOOST_TEST(back[1].labels == (std::vector<float>{0.5f, 2.0f}), boost::test_tools::per_element());
  NDG_CHECK_THROWS_WITH(im2rec::write_list(dir.file("no/such/folder/a.lst"), items), mx::FileError, "a.lst");
}

// Python 3: random.seed(s); x = list(range(n)); random.shuffle(x); print(x).
BOOST_AUTO_TEST_CASE(shuffle_is_pythons) {
  const auto shuffled = [](std::size_t n, std::uint64_t seed) {
    std::vector<im2rec::ListItem> items;
    for (std::size_t i = 0; i < n; ++i) items.push_back({static_cast<std::int64_t>(i), {0.0f}, "", 0});
    im2rec::shuffle(items, seed);
    return indices(items);
  };
  BOOST_TEST(shuffled(10, 100) == (std::vector<std::int64_t>{4, 0, 5, 9, 3, 1, 6, 8, 7, 2}), boost::test_tools::per_element());
  BOOST_TEST(shuffled(50, 100) == (std::vector<std::int64_t>{39, 30, 35, 36, 38, 44, 43, 19, 0, 17, 1, 15, 10, 41, 2, 18, 8,
                                                            31, 12, 28, 33, 20, 23, 46, 42, 4, 37, 6, 24, 26, 49, 14, 21, 13,
                                                            3, 16, 47, 5, 40, 34, 7, 32, 27, 22, 25, 45, 11, 48, 29, 9}),
             boost::test_tools::per_element());
  BOOST_TEST(shuffled(12, 0) == (std::vector<std::int64_t>{1, 9, 8, 5, 10, 2, 3, 7, 4, 0, 11, 6}), boost::test_tools::per_element());
  BOOST_TEST(shuffled(12, (std::uint64_t{1} << 40) + 7) == (std::vector<std::int64_t>{0, 5, 2, 3, 6, 1, 8, 4, 7, 11, 10, 9}),
             boost::test_tools::per_element());
  BOOST_TEST(shuffled(1, 100) == std::vector<std::int64_t>{0}, boost::test_tools::per_element());
  BOOST_TEST(shuffled(0, 100).empty());
}

BOOST_AUTO_TEST_CASE(folders_are_listed_in_im2recs_order, *boost::unit_test::precondition(has_codecs)) {
  const Folder f;
  // Without --recursive: root's own images only, label 0.
  const auto flat = im2rec::list_images(f.root.str(), false, {".jpeg", ".jpg", ".png"});
  BOOST_TEST(paths(flat) == std::vector<std::string>{"top.png"}, boost::test_tools::per_element());
  BOOST_TEST(flat[0].labels == std::vector<float>{0.0f}, boost::test_tools::per_element());
  // Recursive: each folder's images (extensions in any case) before its sub-folders, sorted; a
  // label per folder that holds an image, root first; folders without images get none.
  std::vector<std::pair<std::string, int>> classes;
  const auto all = im2rec::list_images(f.root.str(), true, {".jpeg", ".jpg", ".png"}, &classes);
  BOOST_TEST(paths(all) == (std::vector<std::string>{"top.png", "cat/a.png", "cat/b.JPG", "dog/c.png", "zoo/inner/d.jpeg"}),
             boost::test_tools::per_element());
  BOOST_TEST(indices(all) == (std::vector<std::int64_t>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
  std::vector<float> labels;
  for (const auto& item : all) labels.push_back(item.labels.at(0));
  BOOST_TEST(labels == (std::vector<float>{0, 1, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(classes.size() == 4u);
  BOOST_TEST(classes[0].first == ".");
  BOOST_TEST(classes[3].first == "zoo/inner");
  BOOST_TEST(classes[3].second == 3);
  // Only the extensions asked for; a symbolic link to a folder is followed, one to an enclosing folder is not walked again.
  BOOST_TEST(paths(im2rec::list_images(f.root.str(), true, {".jpeg"})) == std::vector<std::string>{"zoo/inner/d.jpeg"},
             boost::test_tools::per_element());
  fs::create_directory_symlink(f.root.file("dog"), f.root.file("zoo/linked"));
  fs::create_directory_symlink(f.root.str(), f.root.file("zoo/loop"));
  const auto linked = im2rec::list_images(f.root.str(), true, {".png"});
  BOOST_TEST(paths(linked) == (std::vector<std::string>{"top.png", "cat/a.png", "dog/c.png", "zoo/linked/c.png"}),
             boost::test_tools::per_element());
  NDG_CHECK_THROWS_WITH(im2rec::list_images(f.root.file("none"), true, {".png"}), mx::FileError, "none", "missing");
  NDG_CHECK_THROWS_WITH(im2rec::list_images(f.root.file("top.png"), false, {".png"}), mx::FileError, "top.png", "not a folder");
}

BOOST_AUTO_TEST_CASE(make_list_writes_im2recs_files, *boost::unit_test::precondition(has_codecs)) {
  const Folder f;
  const ndg_test::TempDir out;
  im2rec::ListOptions o;
  o.recursive = true;
  o.shuffle = false;
  auto written = im2rec::make_list(out.file("data"), f.root.str(), o);
  BOOST_TEST_REQUIRE(written.size() == 1u);
  BOOST_TEST(written[0].path == out.file("data.lst"));
  BOOST_TEST(ndg_test::read_bytes(out.file("data.lst")) ==
             "0\t0.000000\ttop.png\n1\t1.000000\tcat/a.png\n2\t1.000000\tcat/b.JPG\n3\t2.000000\tdog/c.png\n"
             "4\t3.000000\tzoo/inner/d.jpeg\n");
  // Shuffled (the default) as Python 3 shuffles range(5) after random.seed(100).
  o.shuffle = true;
  im2rec::make_list(out.file("shuffled"), f.root.str(), o);
  BOOST_TEST(indices(im2rec::read_list(out.file("shuffled.lst"))) == (std::vector<std::int64_t>{2, 0, 4, 3, 1}),
             boost::test_tools::per_element());
  // Two chunks of ceil(5 / 2) = 3 (the second holds 2), each cut into test, val and train lists.
  o.shuffle = false;
  o.chunks = 2;
  o.train_ratio = 0.5;
  o.test_ratio = 0.4;
  written = im2rec::make_list(out.file("split"), f.root.str(), o);
  std::vector<std::string> names;
  std::vector<std::size_t> sizes;
  for (const auto& w : written) {
    names.push_back(fs::path(w.path).filename().string());
    sizes.push_back(w.size);
  }
  // As im2rec.py, from chunk_size 3: sep = int(1.5) = 1, sep_test = int(1.2) = 1, so test is
  // chunk[0:1], val chunk[2:], train chunk[1:2]; the second chunk's val is empty, and written.
  BOOST_TEST(names == (std::vector<std::string>{"split_0_test.lst", "split_0_val.lst", "split_0_train.lst", "split_1_test.lst",
                                                "split_1_val.lst", "split_1_train.lst"}),
             boost::test_tools::per_element());
  BOOST_TEST(sizes == (std::vector<std::size_t>{1, 1, 1, 1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(paths(im2rec::read_list(out.file("split_1_train.lst"))) == std::vector<std::string>{"zoo/inner/d.jpeg"},
             boost::test_tools::per_element());
  BOOST_TEST(ndg_test::read_bytes(out.file("split_1_val.lst")).empty());
  // train_ratio + test_ratio = 1: no _val list.
  o.chunks = 1;
  o.train_ratio = 0.6;
  written = im2rec::make_list(out.file("tt"), f.root.str(), o);
  BOOST_TEST(written.size() == 2u);
  BOOST_TEST(written.back().path == out.file("tt_train.lst"));
  o.chunks = 0;
  NDG_CHECK_THROWS_WITH(im2rec::make_list(out.file("x"), f.root.str(), o), mx::ValueError, "chunks", "got 0");
  o.chunks = 1;
  o.train_ratio = 1.5;
  NDG_CHECK_THROWS_WITH(im2rec::make_list(out.file("x"), f.root.str(), o), mx::ValueError, "train_ratio", "[0, 1]");
}

BOOST_AUTO_TEST_CASE(lists_are_found_by_prefix) {
  const ndg_test::TempDir dir;
  for (const char* name : {"data.lst", "data_train.lst", "data_val.lst", "other.lst", "data.txt"}) {
    ndg_test::write_bytes(dir.file(name), "");
  }
  fs::create_directories(dir.file("data_folder.lst"));
  std::vector<std::string> lists, recs;
  for (const auto& job : im2rec::find_lists(dir.file("data"))) {
    lists.push_back(fs::path(job.list).filename().string());
    recs.push_back(job.rec);
    BOOST_TEST(fs::path(job.idx).replace_extension(".rec").string() == job.rec);
  }
  BOOST_TEST(lists == (std::vector<std::string>{"data.lst", "data_train.lst", "data_val.lst"}), boost::test_tools::per_element());
  BOOST_TEST(recs[1] == dir.file("data_train.rec"));
  // A folder as the prefix: every list in it.
  BOOST_TEST(im2rec::find_lists(dir.str()).size() == 4u);
  BOOST_TEST(im2rec::find_lists(dir.str() + "/").size() == 4u);
  BOOST_TEST(im2rec::find_lists(dir.file("nothing")).empty());
  NDG_CHECK_THROWS_WITH(im2rec::find_lists(dir.file("no/such/data")), mx::FileError, "no/such");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(im2rec_pack, *boost::unit_test::precondition(has_codecs))

BOOST_AUTO_TEST_CASE(pass_through_stores_the_files_bytes) {
  const Folder f;
  const ndg_test::TempDir out;
  const std::vector<im2rec::ListItem> items = {{7, {2.0f}, "dog/c.png", 1}, {3, {1.0f, 5.0f}, "cat/b.JPG", 2},
                                               {0, {0.0f}, "top.png", 3}};
  const im2rec::ListJob job{out.file("p.lst"), out.file("p.rec"), out.file("p.idx")};
  const auto result = im2rec::pack_list(items, f.root.str(), job, {.pass_through = true});
  BOOST_TEST(result.packed == 3u);
  BOOST_TEST(result.skipped.empty());
  const rio::MXIndexedRecordIO rec(job.idx, job.rec, 'r');
  BOOST_TEST(rec.keys() == (std::vector<std::int64_t>{7, 3, 0}), boost::test_tools::per_element());
  for (const auto& item : items) {
    BOOST_TEST_CONTEXT(item.path) {
      const auto [h, payload] = rio::unpack(rec.read_idx(item.index));
      BOOST_TEST(payload == ndg_test::read_bytes(f.root.file(item.path)));
      BOOST_TEST(h.id == static_cast<std::uint64_t>(item.index));
      BOOST_TEST(h.id2 == 0u);
      BOOST_TEST(h.label == std::vector<float>{item.labels[0]}, boost::test_tools::per_element());  // the first label only
    }
  }
  // --pack-label: every label, the header's flag their count.
  im2rec::pack_list(items, f.root.str(), job, {.pass_through = true, .pack_label = true});
  const rio::MXIndexedRecordIO labelled(job.idx, job.rec, 'r');
  const std::string record = labelled.read_idx(3);
  std::uint32_t flag = 0;
  std::memcpy(&flag, record.data(), 4);
  BOOST_TEST(flag == 2u);
  BOOST_TEST(rio::unpack(record).first.label == (std::vector<float>{1.0f, 5.0f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(images_are_decoded_cropped_resized_and_encoded) {
  const Folder f;
  const ndg_test::TempDir out;
  const auto items = im2rec::list_images(f.root.str(), true, {".jpeg", ".jpg", ".png"});
  const im2rec::ListJob job{out.file("r.lst"), out.file("r.rec"), out.file("r.idx")};
  // PNG, centre-cropped and resized to 3: the pixels of resize_short(center_crop(imread)).
  BOOST_TEST(im2rec::pack_list(items, f.root.str(), job, {.resize = 3, .center_crop = true, .encoding = ".png"}).packed == 5u);
  const rio::MXIndexedRecordIO rec(job.idx, job.rec, 'r');
  BOOST_TEST(rec.keys() == indices(items), boost::test_tools::per_element());
  for (const auto& item : items) {
    BOOST_TEST_CONTEXT(item.path) {
      const auto [h, payload] = rio::unpack(rec.read_idx(item.index));
      BOOST_TEST(payload.substr(1, 3) == "PNG");
      BOOST_TEST(h.label == item.labels, boost::test_tools::per_element());
      const nd::NDArray original = mx::image::imread(f.root.file(item.path));
      const std::int64_t side = std::min(original.shape()[0], original.shape()[1]);
      const nd::NDArray want = mx::image::resize_short(mx::image::center_crop(original, side, side), 3);
      const nd::NDArray got = mx::image::imdecode(payload);
      BOOST_TEST(got.shape() == mx::Shape({3, 3, 3}));
      BOOST_TEST(pixels(got) == pixels(want), boost::test_tools::per_element());
    }
  }
  // JPEG (quality 95) without a crop: the shorter edge 4, the other in proportion; gray with --color 0.
  im2rec::pack_list(items, f.root.str(), job, {.resize = 4});
  const rio::MXIndexedRecordIO jpeg(job.idx, job.rec, 'r');
  const auto [h, payload] = rio::unpack(jpeg.read_idx(1));  // cat/a.png, 6 x 8
  BOOST_TEST(payload.substr(0, 2) == "\xFF\xD8");
  const nd::NDArray decoded = mx::image::imdecode(payload);
  BOOST_TEST(decoded.shape() == mx::Shape({4, 5, 3}));
  const Bytes want = pixels(mx::image::resize_short(image(0, 6, 8), 4)), got = pixels(decoded);
  int worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(int(got[i]) - int(want[i])));
  BOOST_TEST(worst <= 12);
  im2rec::pack_list(items, f.root.str(), job, {.color = 0});
  const rio::MXIndexedRecordIO gray(job.idx, job.rec, 'r');
  BOOST_TEST(mx::image::imdecode(rio::unpack(gray.read_idx(4)).second, -1).shape() == mx::Shape({7, 9, 1}));
}

BOOST_AUTO_TEST_CASE(threads_write_the_same_files) {
  const Folder f;
  const ndg_test::TempDir out;
  const std::vector<im2rec::ListItem> listed = im2rec::list_images(f.root.str(), true, {".jpeg", ".jpg", ".png"});
  // Twenty images and a missing one, so that the workers run ahead of the writer.
  std::vector<im2rec::ListItem> items;
  for (int copy = 0; copy < 4; ++copy) {
    for (const auto& item : listed) items.push_back({static_cast<std::int64_t>(items.size()), {float(copy)}, item.path, 0});
  }
  items.insert(items.begin() + 7, {100, {9.0f}, "gone.png", 0});
  const im2rec::ListJob one{"t.lst", out.file("one.rec"), out.file("one.idx")}, many{"t.lst", out.file("many.rec"), out.file("many.idx")};
  const auto a = im2rec::pack_list(items, f.root.str(), one, {.resize = 5});
  const auto b = im2rec::pack_list(items, f.root.str(), many, {.resize = 5, .num_thread = 3});
  BOOST_TEST(a.packed == 20u);
  BOOST_TEST(b.packed == 20u);
  BOOST_TEST(b.skipped.size() == 1u);
  BOOST_TEST(ndg_test::read_bytes(one.rec) == ndg_test::read_bytes(many.rec));
  BOOST_TEST(ndg_test::read_bytes(one.idx) == ndg_test::read_bytes(many.idx));
}

// The bytes of MXNet's layout, built field by field: a record whose image holds the magic number
// at an aligned offset (dmlc-core cuts it there into a first and a last part, leaving the word
// out), a record with two labels (flag 2, label 0, the labels after the header), and one label.
BOOST_AUTO_TEST_CASE(records_have_mxnets_layout_byte_for_byte) {
  const ndg_test::TempDir dir;
  std::string magic_image = "\x89PNG";  // the magic at byte 4 of the image, 28 of the record
  put(magic_image, std::uint32_t{0xced7230a});
  magic_image += "rest";
  ndg_test::write_bytes(dir.file("m.png"), magic_image);
  ndg_test::write_bytes(dir.file("odd.jpg"), "12345");  // 5 bytes: the record is padded
  const std::vector<im2rec::ListItem> items = {{5, {3.0f}, "m.png", 1}, {2, {1.5f, -2.0f}, "odd.jpg", 2}, {9, {7.0f}, "odd.jpg", 3}};
  const im2rec::ListJob job{"l.lst", dir.file("l.rec"), dir.file("l.idx")};
  im2rec::pack_list(items, dir.str(), job, {.pass_through = true, .pack_label = true});
  const std::string first = header(0, 3.0f, 5, 0) + "\x89PNG";
  const std::string second = header(2, 0.0f, 2, 0, {1.5f, -2.0f}) + "12345";
  const std::string third = header(0, 7.0f, 9, 0) + "12345";
  const std::string want = part(1, first) + part(3, "rest") + part(0, second) + part(0, third);
  BOOST_TEST(ndg_test::read_bytes(job.rec) == want);
  const std::size_t second_at = part(1, first).size() + part(3, "rest").size();
  BOOST_TEST(ndg_test::read_bytes(job.idx) == "5\t0\n2\t" + std::to_string(second_at) + "\n9\t" +
                                                   std::to_string(second_at + part(0, second).size()) + "\n");
  // MXNet's reader joins the parts with the magic number between them.
  const rio::MXIndexedRecordIO rec(job.idx, job.rec, 'r');
  BOOST_TEST(rio::unpack(rec.read_idx(5)).second == magic_image);
}

BOOST_AUTO_TEST_CASE(unreadable_images_are_skipped_and_counted) {
  const Folder f;
  const ndg_test::TempDir out;
  ndg_test::write_bytes(f.root.file("cat/bad.png"), "not a png");
  const std::vector<im2rec::ListItem> items = {{0, {0.0f}, "cat/a.png", 1}, {1, {0.0f}, "cat/gone.png", 2},
                                               {2, {0.0f}, "cat/bad.png", 3}, {3, {1.0f}, "dog/c.png", 4}};
  const im2rec::ListJob job{"s.lst", out.file("s.rec"), out.file("s.idx")};
  std::vector<std::string> reported;
  const auto result = im2rec::pack_list(items, f.root.str(), job, {}, [&](const im2rec::Skipped& s) { reported.push_back(s.item.path); });
  BOOST_TEST(result.packed == 2u);
  BOOST_TEST_REQUIRE(result.skipped.size() == 2u);
  BOOST_TEST(reported == (std::vector<std::string>{"cat/gone.png", "cat/bad.png"}), boost::test_tools::per_element());
  BOOST_TEST(result.skipped[0].item.line == 2);
  BOOST_TEST(result.skipped[0].reason.find("gone.png") != std::string::npos, result.skipped[0].reason);
  BOOST_TEST(result.skipped[1].reason.find("neither a JPEG nor a PNG") != std::string::npos, result.skipped[1].reason);
  BOOST_TEST(rio::MXIndexedRecordIO(job.idx, job.rec, 'r').keys() == (std::vector<std::int64_t>{0, 3}),
             boost::test_tools::per_element());
  // Pass-through reads the bytes only: a corrupt image is packed as it is, a missing one skipped.
  const auto raw = im2rec::pack_list(items, f.root.str(), job, {.pass_through = true});
  BOOST_TEST(raw.packed == 3u);
  BOOST_TEST(raw.skipped.size() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_lists_roots_outputs_and_options_are_typed_errors) {
  const Folder f;
  const ndg_test::TempDir out;
  const std::vector<im2rec::ListItem> items = {{0, {0.0f}, "cat/a.png", 1}, {1, {1.0f}, "dog/c.png", 2}};
  const im2rec::ListJob job{out.file("e.lst"), out.file("e.rec"), out.file("e.idx")};
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.file("none"), job, {}), mx::FileError, "image root", "none", "missing");
  // Nothing is written before the errors of the list and of the root.
  BOOST_TEST(!fs::exists(job.rec));
  const std::vector<im2rec::ListItem> twice = {{4, {0.0f}, "cat/a.png", 1}, {4, {1.0f}, "dog/c.png", 3}};
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(twice, f.root.str(), job, {}), mx::FileError, "e.lst", "line 3", "index 4 is listed twice");
  const std::vector<im2rec::ListItem> negative = {{-1, {0.0f}, "cat/a.png", 1}};
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(negative, f.root.str(), job, {}), mx::FileError, "line 1", "index -1 is negative");
  BOOST_TEST(!fs::exists(job.rec));
  // An output that cannot be written: its folder is missing, or it is a folder.
  const im2rec::ListJob nowhere{"e.lst", out.file("no/such/e.rec"), out.file("no/such/e.idx")};
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), nowhere, {}), mx::FileError, "no/such/e.rec", "cannot open");
  fs::create_directories(out.file("folder.idx"));
  const im2rec::ListJob folder{"e.lst", out.file("folder.rec"), out.file("folder.idx")};
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), folder, {}), mx::FileError, "folder.idx");
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), job, {.quality = 0}), mx::ValueError, "quality", "got 0");
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), job, {.encoding = ".bmp"}), mx::ValueError, ".bmp");
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), job, {.color = 2}), mx::ValueError, "color", "got 2");
  NDG_CHECK_THROWS_WITH(im2rec::pack_list(items, f.root.str(), job, {.num_thread = 0}), mx::ValueError, "num_thread");
}

BOOST_AUTO_TEST_SUITE_END()
