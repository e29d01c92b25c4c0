// MXNet's RecordIO (ndarray/io/recordio.hpp): a .rec and .idx written here byte by byte from
// dmlc-core's and mx.recordio's layout (IRHeader "IfQQ", a multi-label record, a record holding the
// magic number, cut in two parts) read back; the writer producing exactly those bytes; sequential
// reads; and the typed errors of cut, foreign and mis-indexed files.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <ndarray/io/recordio.hpp>

namespace rio = mx::recordio;

namespace {

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// One part: magic, cflag << 29 | length, the bytes, zero padding to 4.
std::string part(std::uint32_t cflag, const std::string& bytes) {
  std::string out;
  put(out, std::uint32_t{0xced7230a});
  put(out, static_cast<std::uint32_t>(cflag << 29 | bytes.size()));
  out += bytes;
  out.append((4 - bytes.size() % 4) % 4, '\0');
  return out;
}

// mx.recordio.pack(IRHeader(flag, label, id, id2), payload), field by field.
std::string packed(std::uint32_t flag, float label, std::uint64_t id, std::uint64_t id2, const std::string& payload) {
  std::string out;
  put(out, flag);
  put(out, label);
  put(out, id);
  put(out, id2);
  return out + payload;
}

struct Files {
  std::string rec, idx;
  std::vector<std::string> records;
};

// Three records, as MXIndexedRecordIO.write_idx(key, pack(...)) writes them for keys 0, 5, 2:
// one label; three labels (flag 3, float32s after the header); and a payload holding the magic
// number at an aligned offset, which dmlc-core writes as two parts without that word.
Files mxnet_files() {
  Files f;
  std::string labels;
  for (float v : {1.5f, -2.0f, 7.0f}) put(labels, v);
  std::string magic_payload = "abcd";
  put(magic_payload, std::uint32_t{0xced7230a});
  magic_payload += "xyz";
  f.records = {packed(0, 3.0f, 0, 0, "JPEG bytes"), packed(3, 0.0f, 5, 9, labels + "PNG"), packed(0, 1.0f, 2, 0, magic_payload)};
  std::vector<std::uint64_t> at;
  for (std::size_t i = 0; i < 2; ++i) {
    at.push_back(f.rec.size());
    f.rec += part(0, f.records[i]);
  }
  at.push_back(f.rec.size());
  const std::string& r = f.records[2];
  const std::size_t cut = 24 + 4;  // the magic word's offset in the record: a multiple of 4
  f.rec += part(1, r.substr(0, cut)) + part(3, r.substr(cut + 4));
  const std::int64_t keys[] = {0, 5, 2};
  for (std::size_t i = 0; i < 3; ++i) f.idx += std::to_string(keys[i]) + "\t" + std::to_string(at[i]) + "\n";
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(recordio)

BOOST_AUTO_TEST_CASE(reads_what_mxnet_writes) {
  const Files f = mxnet_files();
  const ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("a.rec"), f.rec);
  ndg_test::write_bytes(dir.file("a.idx"), f.idx);
  rio::MXIndexedRecordIO rec(dir.file("a.idx"), dir.file("a.rec"), 'r');
  BOOST_TEST(rec.keys() == (std::vector<std::int64_t>{0, 5, 2}), boost::test_tools::per_element());
  auto [h0, p0] = rio::unpack(rec.read_idx(0));
  BOOST_TEST(h0.label == std::vector<float>{3.0f}, boost::test_tools::per_element());
  BOOST_TEST(p0 == "JPEG bytes");
  auto [h5, p5] = rio::unpack(rec.read_idx(5));
  BOOST_TEST(h5.label == (std::vector<float>{1.5f, -2.0f, 7.0f}), boost::test_tools::per_element());
  BOOST_TEST(h5.id == 5u);
  BOOST_TEST(h5.id2 == 9u);
  BOOST_TEST(p5 == "PNG");
  BOOST_TEST(rec.read_idx(2) == f.records[2]);  // the two parts joined with the magic number
  // Sequentially, the same records in file order, then the end.
  rio::MXRecordIO seq(dir.file("a.rec"), 'r');
  for (const std::string& want : f.records) BOOST_TEST(*seq.read() == want);
  BOOST_TEST(!seq.read().has_value());
  BOOST_TEST(seq.tell() == f.rec.size());
  seq.reset();
  BOOST_TEST(*seq.read() == f.records[0]);
}

BOOST_AUTO_TEST_CASE(writes_what_mxnet_writes) {
  const Files f = mxnet_files();
  const ndg_test::TempDir dir;
  {
    rio::MXIndexedRecordIO out(dir.file("b.idx"), dir.file("b.rec"), 'w');
    out.write_idx(0, rio::pack({.label = {3.0f}}, "JPEG bytes"));
    out.write_idx(5, rio::pack({.label = {1.5f, -2.0f, 7.0f}, .id = 5, .id2 = 9}, "PNG"));
    out.write_idx(2, f.records[2]);
    out.close();
  }
  BOOST_TEST(ndg_test::read_bytes(dir.file("b.rec")) == f.rec);
  BOOST_TEST(ndg_test::read_bytes(dir.file("b.idx")) == f.idx);
}

BOOST_AUTO_TEST_CASE(bad_files_are_file_errors_naming_file_and_record) {
  const Files f = mxnet_files();
  const ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("a.rec"), f.rec);
  ndg_test::write_bytes(dir.file("a.idx"), f.idx);
  // Cut inside the second record.
  ndg_test::write_bytes(dir.file("cut.rec"), f.rec.substr(0, 50));
  rio::MXIndexedRecordIO cut(dir.file("a.idx"), dir.file("cut.rec"), 'r');
  BOOST_TEST(rio::unpack(cut.read_idx(0)).second == "JPEG bytes");  // the records before the cut still read
  NDG_CHECK_THROWS_WITH(cut.read_idx(5), mx::FileError, "cut.rec", "record 5", "cut short", "ends at byte 50");
  ndg_test::write_bytes(dir.file("cut60.rec"), f.rec.substr(0, 60));
  NDG_CHECK_THROWS_WITH(rio::MXIndexedRecordIO(dir.file("a.idx"), dir.file("cut60.rec"), 'r').read_idx(5), mx::FileError,
                        "record 5", "runs past the end of the file (60 bytes)");
  NDG_CHECK_THROWS_WITH(cut.read_idx(2), mx::FileError, "record 2", "past the end of the file");
  // An index pointing inside a record, a missing key, a malformed index line.
  ndg_test::write_bytes(dir.file("off.idx"), "0\t4\n");
  NDG_CHECK_THROWS_WITH(rio::MXIndexedRecordIO(dir.file("off.idx"), dir.file("a.rec"), 'r').read_idx(0), mx::FileError,
                        "a.rec", "record 0", "at byte 4", "no RecordIO magic number");
  rio::MXIndexedRecordIO good(dir.file("a.idx"), dir.file("a.rec"), 'r');
  NDG_CHECK_THROWS_WITH(good.read_idx(7), mx::FileError, "a.idx", "no key 7");
  ndg_test::write_bytes(dir.file("bad.idx"), "0\t0\nfive\t12\n");
  NDG_CHECK_THROWS_WITH(rio::MXIndexedRecordIO(dir.file("bad.idx"), dir.file("a.rec"), 'r'), mx::FileError, "bad.idx",
                        "line 2", "\"five\t12\"");
  ndg_test::write_bytes(dir.file("twice.idx"), "0\t0\n0\t20\n");
  NDG_CHECK_THROWS_WITH(rio::MXIndexedRecordIO(dir.file("twice.idx"), dir.file("a.rec"), 'r'), mx::FileError, "line 2",
                        "key 0 is listed twice");
  // Not RecordIO at all; missing files.
  ndg_test::write_bytes(dir.file("text.rec"), "just some text, not records");
  NDG_CHECK_THROWS_WITH(rio::MXRecordIO(dir.file("text.rec"), 'r').read(), mx::FileError, "text.rec", "at byte 0",
                        "no RecordIO magic number");
  NDG_CHECK_THROWS_WITH(rio::MXRecordIO(dir.file("none.rec"), 'r'), mx::FileError, "none.rec", "cannot open");
  NDG_CHECK_THROWS_WITH(rio::MXIndexedRecordIO(dir.file("none.idx"), dir.file("a.rec"), 'r'), mx::FileError, "none.idx");
  NDG_CHECK_THROWS_WITH(rio::MXRecordIO(dir.file("a.rec"), 'x'), mx::ValueError, "'r' or 'w'");
  // Headers cut short; a header without a label.
  NDG_CHECK_THROWS_WITH(rio::unpack(std::string(10, 'x'), "record 3"), mx::FileError, "record 3", "10 bytes",
                        "shorter than an IRHeader");
  NDG_CHECK_THROWS_WITH(rio::unpack(packed(4, 0, 0, 0, "ab")), mx::FileError, "4 labels", "26 bytes");
  NDG_CHECK_THROWS_WITH(rio::pack({.label = {}}, "x"), mx::ValueError, "no label");
}

BOOST_AUTO_TEST_SUITE_END()
