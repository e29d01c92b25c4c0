#pragma once
// MXNet's RecordIO (dmlc-core's format), both ways, as mx.recordio: the .rec files im2rec writes
// and ImageRecordIter reads, with their .idx index, and the IRHeader that MXNet puts in front of
// each image.
//
//   mx::recordio::MXIndexedRecordIO rec("train.idx", "train.rec", 'r');
//   const auto [header, image] = mx::recordio::unpack(rec.read_idx(rec.keys()[0]));
//   header.label[0];  header.id;          // image: the encoded JPEG or PNG bytes
//
//   mx::recordio::MXIndexedRecordIO out("out.idx", "out.rec", 'w');
//   out.write_idx(0, mx::recordio::pack({.label = {3}, .id = 0}, jpeg_bytes));
//
// The layout is Note [MXNet's RecordIO] in recordio.cpp. Reads are positioned (pread), so that
// one reader serves several threads at once. A file that is not RecordIO, a record cut short, an
// index entry past the end of the file or a malformed index line throws mx::FileError naming the
// file and the record's key or offset.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mx::recordio {

// MXNet's IRHeader (flag, label, id, id2). One label is stored in the header itself (flag 0); several
// (a multi-label record, flag = their count) as float32s in front of the payload, as mx.recordio.pack.
struct IRHeader {
  std::vector<float> label = {0.0f};
  std::uint64_t id = 0, id2 = 0;
};

// The record mx.recordio.pack(header, payload) makes: the 24-byte header ("IfQQ": flag, label, id,
// id2), the labels when there are several, then the payload. mx::ValueError for no label at all.
std::string pack(const IRHeader& header, std::string_view payload);
// mx.recordio.unpack: the header and the payload. mx::FileError (naming `what`) for a record shorter
// than its header or its labels.
std::pair<IRHeader, std::string> unpack(std::string_view record, const std::string& what = "record");

// A .rec file read sequentially (flag 'r') or written (flag 'w', the file created or emptied), as
// mx.recordio.MXRecordIO.
class MXRecordIO {
 public:
  MXRecordIO(const std::string& uri, char flag);
  MXRecordIO(MXRecordIO&&) noexcept;
  MXRecordIO& operator=(MXRecordIO&&) = delete;
  ~MXRecordIO();

  // The next record, or nothing at the end of the file.
  std::optional<std::string> read();
  // Appends a record (split around the words equal to the magic number, as dmlc-core does).
  void write(std::string_view record);
  // The reading or writing position: where the next record starts.
  std::uint64_t tell() const { return position_; }
  // Reads from the start again.
  void reset();
  // The record starting at byte `offset` (which read() or tell() gave); mx::FileError naming
  // `key` (what the caller calls it) when no record starts there. Thread-safe.
  std::string read_at(std::uint64_t offset, const std::string& key) const;
  // Flushes and closes a file being written (the destructor does it too, without reporting errors).
  void close();
  const std::string& uri() const { return uri_; }

 private:
  std::string uri_;
  char flag_;
  int fd_ = -1;
  std::FILE* out_ = nullptr;
  std::uint64_t position_ = 0, size_ = 0;
  // The record at offset and where the next one starts.
  std::pair<std::string, std::uint64_t> record_at(std::uint64_t offset, const std::string& key) const;
};

// A .rec file with its .idx ("key\toffset" per line), as mx.recordio.MXIndexedRecordIO: records by
// integer key (the order the index lists them in keys()).
class MXIndexedRecordIO {
 public:
  MXIndexedRecordIO(const std::string& idx_path, const std::string& uri, char flag);

  const std::vector<std::int64_t>& keys() const { return keys_; }
  // The record of key; mx::FileError naming the files and the key for a key the index lacks.
  std::string read_idx(std::int64_t key) const;
  // Appends a record under key and its line to the index.
  void write_idx(std::int64_t key, std::string_view record);
  void close();

 private:
  std::string idx_path_;
  MXRecordIO rec_;
  std::vector<std::int64_t> keys_;
  std::map<std::int64_t, std::uint64_t> offsets_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> idx_out_{nullptr, &std::fclose};
};

}  // namespace mx::recordio
