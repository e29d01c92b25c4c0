// MXNet's RecordIO: records, their index and the IRHeader (recordio.hpp).
//
// Note [MXNet's RecordIO]
// A .rec file (dmlc-core's RecordIOWriter) is a sequence of parts, each
//   uint32 magic 0xced7230a, uint32 lrecord = cflag << 29 | length, `length` bytes, zero padding
//   to a multiple of 4 bytes,
// little-endian. cflag 0 is a whole record. A record whose bytes hold the magic number at an
// offset that is a multiple of 4 is written as several parts, cut at each such word, which is left
// out: cflag 1 (first), 2 (middle), 3 (last); a reader joins them with the magic number between.
// The .idx beside it (MXIndexedRecordIO) has a line "key\toffset" per record, offset being where
// its first part starts. mx.recordio.pack puts IRHeader in front of the payload: uint32 flag,
// float32 label, uint64 id, uint64 id2 ("IfQQ", 24 bytes); flag > 0 means the record has `flag`
// labels, stored as float32s right after the header (the header's label is then 0).
#include "ndarray/io/recordio.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "context/error.hpp"

namespace mx::recordio {
namespace {

constexpr std::uint32_t kMagic = 0xced7230a;
constexpr std::size_t kHeaderBytes = 24;

template <class T>
T read_value(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string why() { return std::strerror(errno); }

}  // namespace

std::string pack(const IRHeader& header, std::string_view payload) {
  if (header.label.empty()) throw ValueError("recordio::pack: the header has no label (one, or several)");
  std::string out;
  const bool several = header.label.size() > 1;
  out.reserve(kHeaderBytes + (several ? 4 * header.label.size() : 0) + payload.size());
  append(out, static_cast<std::uint32_t>(several ? header.label.size() : 0));
  append(out, several ? 0.0f : header.label[0]);
  append(out, header.id);
  append(out, header.id2);
  if (several) out.append(reinterpret_cast<const char*>(header.label.data()), 4 * header.label.size());
  out.append(payload);
  return out;
}

std::pair<IRHeader, std::string> unpack(std::string_view record, const std::string& what) {
  if (record.size() < kHeaderBytes) {
    throw FileError(what + ": " + std::to_string(record.size()) + " bytes, shorter than an IRHeader (24)");
  }
  IRHeader h;
  const auto flag = read_value<std::uint32_t>(record.data());
  h.id = read_value<std::uint64_t>(record.data() + 8);
  h.id2 = read_value<std::uint64_t>(record.data() + 16);
  std::size_t start = kHeaderBytes;
  if (flag == 0) {
    h.label = {read_value<float>(record.data() + 4)};
  } else {
    if (record.size() < kHeaderBytes + 4ull * flag) {
      throw FileError(what + ": its IRHeader announces " + std::to_string(flag) + " labels, but the record has " +
                      std::to_string(record.size()) + " bytes");
    }
    h.label.resize(flag);
    std::memcpy(h.label.data(), record.data() + kHeaderBytes, 4ull * flag);
    start += 4ull * flag;
  }
  return {std::move(h), std::string(record.substr(start))};
}

// --- MXRecordIO -------------------------------------------------------------------------------------

MXRecordIO::MXRecordIO(const std::string& uri, char flag) : uri_(uri), flag_(flag) {
  if (flag == 'r') {
    fd_ = ::open(uri.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) throw FileError("MXRecordIO: cannot open '" + uri + "' to read: " + why());
    if (S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw FileError("MXRecordIO: '" + uri + "' is a directory");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  } else if (flag == 'w') {
    out_ = std::fopen(uri.c_str(), "wb");
    if (!out_) throw FileError("MXRecordIO: cannot open '" + uri + "' to write: " + why());
  } else {
    throw ValueError(std::string("MXRecordIO: flag must be 'r' or 'w', got '") + flag + "'");
  }
}

MXRecordIO::MXRecordIO(MXRecordIO&& other) noexcept
    : uri_(std::move(other.uri_)), flag_(other.flag_), fd_(other.fd_), out_(other.out_), position_(other.position_),
      size_(other.size_) {
  other.fd_ = -1;
  other.out_ = nullptr;
}

MXRecordIO::~MXRecordIO() {
  if (fd_ >= 0) ::close(fd_);
  if (out_) std::fclose(out_);
}

void MXRecordIO::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (out_) {
    const bool failed = std::ferror(out_) != 0;
    const bool close_failed = std::fclose(out_) != 0;
    out_ = nullptr;
    if (failed || close_failed) throw FileError("MXRecordIO: writing '" + uri_ + "' failed: " + why());
  }
}

std::pair<std::string, std::uint64_t> MXRecordIO::record_at(std::uint64_t offset, const std::string& key) const {
  if (fd_ < 0) throw ValueError("MXRecordIO: '" + uri_ + "' is not open for reading");
  const auto fail = [&](const std::string& what) {
    return FileError("MXRecordIO: '" + uri_ + "', record " + key + " at byte " + std::to_string(offset) + ": " + what);
  };
  std::string record;
  std::uint64_t at = offset;
  for (int part = 0;; ++part) {
    char head[8];
    if (at >= size_) throw fail("past the end of the file (" + std::to_string(size_) + " bytes)");
    if (at + 8 > size_) throw fail("cut short: the file ends at byte " + std::to_string(size_) + ", inside a part's header");
    if (::pread(fd_, head, 8, static_cast<off_t>(at)) != 8) throw fail("cannot read: " + why());
    if (read_value<std::uint32_t>(head) != kMagic) throw fail("no RecordIO magic number there: not a record");
    const auto lrecord = read_value<std::uint32_t>(head + 4);
    const std::uint32_t cflag = lrecord >> 29, length = lrecord & ((1u << 29) - 1);
    if ((part == 0) != (cflag == 0 || cflag == 1) || (part > 0 && cflag != 2 && cflag != 3)) {
      throw fail("part " + std::to_string(part) + " has continuation flag " + std::to_string(cflag));
    }
    if (at + 8 + length > size_) {
      throw fail("its part of " + std::to_string(length) + " bytes runs past the end of the file (" +
                 std::to_string(size_) + " bytes)");
    }
    if (part > 0) append(record, kMagic);
    const std::size_t start = record.size();
    record.resize(start + length);
    if (length > 0 && ::pread(fd_, record.data() + start, length, static_cast<off_t>(at + 8)) != static_cast<ssize_t>(length)) {
      throw fail("cannot read: " + why());
    }
    at += 8 + (length + 3u) / 4u * 4u;
    if (cflag == 0 || cflag == 3) return {std::move(record), at};
  }
}

std::optional<std::string> MXRecordIO::read() {
  if (position_ >= size_) return std::nullopt;
  auto [record, next] = record_at(position_, "#at " + std::to_string(position_));
  position_ = next;
  return std::move(record);
}

std::string MXRecordIO::read_at(std::uint64_t offset, const std::string& key) const { return record_at(offset, key).first; }

void MXRecordIO::reset() {
  if (flag_ == 'w') throw ValueError("MXRecordIO: reset of '" + uri_ + "', which is being written");
  position_ = 0;
}

void MXRecordIO::write(std::string_view record) {
  if (!out_) throw ValueError("MXRecordIO: '" + uri_ + "' is not open for writing");
  if (record.size() >= (1u << 29)) {
    throw ValueError("MXRecordIO: a record of " + std::to_string(record.size()) + " bytes; RecordIO's limit is 2^29");
  }
  std::string out;
  const auto part = [&](std::uint32_t cflag, std::string_view bytes) {
    append(out, kMagic);
    append(out, static_cast<std::uint32_t>(cflag << 29 | bytes.size()));
    out.append(bytes);
    out.append((4 - bytes.size() % 4) % 4, '\0');
  };
  // Cut at each aligned word equal to the magic number, as dmlc::RecordIOWriter::WriteRecord.
  std::size_t begin = 0;
  bool split = false;
  for (std::size_t i = 0; i + 4 <= record.size(); i += 4) {
    if (read_value<std::uint32_t>(record.data() + i) != kMagic) continue;
    part(split ? 2 : 1, record.substr(begin, i - begin));
    split = true;
    begin = i + 4;
  }
  part(split ? 3 : 0, record.substr(begin));
  if (std::fwrite(out.data(), 1, out.size(), out_) != out.size()) {
    throw FileError("MXRecordIO: writing '" + uri_ + "' failed: " + why());
  }
  position_ += out.size();
}

// --- MXIndexedRecordIO ------------------------------------------------------------------------------

MXIndexedRecordIO::MXIndexedRecordIO(const std::string& idx_path, const std::string& uri, char flag)
    : idx_path_(idx_path), rec_(uri, flag) {
  if (flag == 'w') {
    idx_out_.reset(std::fopen(idx_path.c_str(), "w"));
    if (!idx_out_) throw FileError("MXIndexedRecordIO: cannot open '" + idx_path + "' to write: " + why());
    return;
  }
  std::ifstream in(idx_path);
  if (!in) throw FileError("MXIndexedRecordIO: cannot open the index '" + idx_path + "': " + why());
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    std::istringstream fields(line);
    long long key = 0;
    unsigned long long offset = 0;
    std::string rest;
    if (!(fields >> key >> offset) || (fields >> rest && rest != "\r")) {
      throw FileError("MXIndexedRecordIO: '" + idx_path + "', line " + std::to_string(number) + ": \"" + line +
                      "\" is not \"key<TAB>offset\"");
    }
    if (!offsets_.emplace(key, offset).second) {
      throw FileError("MXIndexedRecordIO: '" + idx_path + "', line " + std::to_string(number) + ": key " +
                      std::to_string(key) + " is listed twice");
    }
    keys_.push_back(key);
  }
}

std::string MXIndexedRecordIO::read_idx(std::int64_t key) const {
  const auto it = offsets_.find(key);
  if (it == offsets_.end()) {
    throw FileError("MXIndexedRecordIO: '" + idx_path_ + "' has no key " + std::to_string(key));
  }
  return rec_.read_at(it->second, std::to_string(key) + " (" + idx_path_ + ")");
}

void MXIndexedRecordIO::write_idx(std::int64_t key, std::string_view record) {
  if (!idx_out_) throw ValueError("MXIndexedRecordIO: '" + idx_path_ + "' is not open for writing");
  if (!offsets_.emplace(key, rec_.tell()).second) {
    throw ValueError("MXIndexedRecordIO: key " + std::to_string(key) + " is written twice to '" + idx_path_ + "'");
  }
  const std::uint64_t offset = rec_.tell();
  rec_.write(record);
  keys_.push_back(key);
  if (std::fprintf(idx_out_.get(), "%lld\t%llu\n", static_cast<long long>(key), static_cast<unsigned long long>(offset)) < 0) {
    throw FileError("MXIndexedRecordIO: writing '" + idx_path_ + "' failed: " + why());
  }
}

void MXIndexedRecordIO::close() {
  rec_.close();
  if (idx_out_) {
    std::FILE* f = idx_out_.release();
    const bool failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || failed) throw FileError("MXIndexedRecordIO: writing '" + idx_path_ + "' failed: " + why());
  }
}

}  // namespace mx::recordio
