// mx::im2rec (im2rec.hpp): MXNet's tools/im2rec.py (MXNet 1.9), list and pack.
#include "ndarray/io/im2rec.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>

#include "context/error.hpp"
#include "context/file.hpp"
#include "ndarray/io/image.hpp"
#include "ndarray/io/recordio.hpp"

namespace mx::im2rec {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSpace = " \t\n\r\f\v";

std::string_view strip(std::string_view s) {
  const std::size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// Python's int() of a stripped field, within int64: an optional sign and decimal digits.
bool parse_index(std::string_view s, std::int64_t& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s[0] == '+') return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), out);
  return error == std::errc() && end == s.data() + s.size();
}

// Python's float() of a stripped field, then float32 as mx.recordio.pack stores it: decimal or
// exponent forms, inf, nan (from_chars's grammar: no hexadecimal); a value beyond float32 becomes
// infinite, as NumPy's cast makes it.
bool parse_label(std::string_view s, float& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s[0] == '+') return false;
  double v = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (end != s.data() + s.size() || (error != std::errc() && error != std::errc::result_out_of_range)) return false;
  // Out of double's range, from_chars leaves v alone: strtod gives infinity or 0, as Python does.
  if (error == std::errc::result_out_of_range) v = std::strtod(std::string(s).c_str(), nullptr);
  out = static_cast<float>(v);
  return true;
}

// Python's os.path.splitext(name)[1], lower-cased: from the last dot, unless only dots precede it.
std::string lower_extension(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string::npos || name.find_first_not_of('.') >= dot) return "";
  std::string ext = name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// A folder's entries split as os.walk splits them (folders: what is a folder through symbolic
// links), each sorted by name. Unreadable folders list nothing, as os.walk skips them.
struct Entries {
  std::vector<std::string> folders, files;
};

Entries entries_of(const fs::path& folder) {
  Entries e;
  std::error_code error;
  fs::directory_iterator it(folder, error), end;
  for (; !error && it != end; it.increment(error)) {
    std::error_code kind;
    (it->is_directory(kind) ? e.folders : e.files).push_back(it->path().filename().string());
  }
  std::sort(e.folders.begin(), e.folders.end());
  std::sort(e.files.begin(), e.files.end());
  return e;
}

bool is_image(const fs::path& folder, const std::string& name, const std::vector<std::string>& exts) {
  std::error_code error;
  const std::string ext = lower_extension(name);
  return std::find(exts.begin(), exts.end(), ext) != exts.end() && fs::is_regular_file(folder / name, error);
}

std::string joined(const std::string& relative, const std::string& name) {
  return relative == "." ? name : relative + "/" + name;
}

// os.walk(root, followlinks=True) with sorted folders and files: a folder's images, then its
// sub-folders in turn. `ancestors` (canonical paths) keeps a link to an enclosing folder from
// recursing forever.
void walk(const fs::path& folder, const std::string& relative, const std::vector<std::string>& exts,
          std::set<std::string>& ancestors, std::vector<ListItem>& items, std::vector<std::pair<std::string, int>>& classes) {
  std::error_code error;
  const std::string canonical = fs::canonical(folder, error).string();
  if (error || !ancestors.insert(canonical).second) return;
  const Entries e = entries_of(folder);
  int label = -1;
  for (const std::string& name : e.files) {
    if (!is_image(folder, name, exts)) continue;
    if (label < 0) {
      label = static_cast<int>(classes.size());
      classes.emplace_back(relative, label);
    }
    items.push_back({static_cast<std::int64_t>(items.size()), {static_cast<float>(label)}, joined(relative, name), 0});
  }
  for (const std::string& name : e.folders) walk(folder / name, joined(relative, name), exts, ancestors, items, classes);
  ancestors.erase(canonical);
}

// CPython's random module: MT19937 seeded by init_by_array with the seed's 32-bit words, and
// random.shuffle through _randbelow_with_getrandbits.
class PythonRandom {
 public:
  explicit PythonRandom(std::uint64_t seed) {
    std::vector<std::uint32_t> key = {static_cast<std::uint32_t>(seed)};
    if (seed >> 32) key.push_back(static_cast<std::uint32_t>(seed >> 32));
    init_genrand(19650218u);
    std::size_t i = 1, j = 0;
    for (std::size_t k = std::max<std::size_t>(kN, key.size()); k > 0; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<std::uint32_t>(j);
      if (++i >= kN) mt_[0] = mt_[kN - 1], i = 1;
      if (++j >= key.size()) j = 0;
    }
    for (std::size_t k = kN - 1; k > 0; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - static_cast<std::uint32_t>(i);
      if (++i >= kN) mt_[0] = mt_[kN - 1], i = 1;
    }
    mt_[0] = 0x80000000u;
  }

  // random.shuffle(x): for i from len-1 down to 1, swap x[i] with x[randbelow(i + 1)].
  template <class T>
  void shuffle(std::vector<T>& x) {
    for (std::size_t i = x.size(); i-- > 1;) std::swap(x[i], x[static_cast<std::size_t>(below(i + 1))]);
  }

 private:
  static constexpr std::size_t kN = 624, kM = 397;
  std::array<std::uint32_t, kN> mt_{};
  std::size_t index_ = kN;

  void init_genrand(std::uint32_t s) {
    mt_[0] = s;
    for (std::size_t i = 1; i < kN; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    index_ = kN;
  }

  std::uint32_t next() {
    if (index_ >= kN) {
      for (std::size_t k = 0; k < kN; ++k) {
        const std::uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % kN] & 0x7fffffffu);
        mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
      }
      index_ = 0;
    }
    std::uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }

  // getrandbits(k), 1 <= k <= 64: 32-bit words from the least significant, the last one cut.
  std::uint64_t bits(int k) {
    std::uint64_t r = 0;
    for (int shift = 0; k > 0; shift += 32, k -= 32) {
      const std::uint64_t word = k < 32 ? next() >> (32 - k) : next();
      r |= word << shift;
    }
    return r;
  }

  std::uint64_t below(std::uint64_t n) {
    const int k = std::bit_width(n);
    std::uint64_t r = bits(k);
    while (r >= n) r = bits(k);
    return r;
  }
};

// The records of items[i], or why it was skipped: what one worker hands the writer.
struct Encoded {
  bool ready = false;
  std::string record, failure;
};

Encoded encode_or_skip(const ListItem& item, const std::string& root, const PackOptions& options) {
  Encoded e;
  try {
    e.record = encode_record(item, root, options);
  } catch (const std::exception& error) {
    e.failure = error.what();
    if (e.failure.empty()) e.failure = "unknown error";
  }
  e.ready = true;
  return e;
}

void check_options(const PackOptions& o) {
  const auto bad = [](const std::string& what) { return ValueError("im2rec: " + what); };
  if (o.encoding != ".jpg" && o.encoding != ".png") throw bad("encoding must be .jpg or .png, got '" + o.encoding + "'");
  if (o.quality < 1 || o.quality > 100) throw bad("quality must be 1 to 100, got " + std::to_string(o.quality));
  if (o.color < -1 || o.color > 1) throw bad("color must be 1, 0 or -1, got " + std::to_string(o.color));
  if (o.resize < 0) throw bad("resize must be >= 0, got " + std::to_string(o.resize));
  if (o.num_thread < 1) throw bad("num_thread must be >= 1, got " + std::to_string(o.num_thread));
}

// mx::FileError unless root is a folder.
void check_root(const std::string& root) {
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    throw FileError("im2rec: the image root '" + root + "' is " + (fs::exists(root, error) ? "not a folder" : "missing"));
  }
}

}  // namespace

std::vector<ListItem> parse_list(std::string_view text, const std::string& what) {
  std::vector<ListItem> items;
  std::int64_t number = 0;
  for (std::size_t start = 0; start < text.size();) {
    // Lines end in \n, \r\n or \r, as Python's text files read them.
    std::size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(start, end - start);
    start = end + (text.substr(end, 2) == "\r\n" ? 2 : 1);
    ++number;
    const std::string_view line = strip(raw);
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (std::size_t from = 0;;) {
      const std::size_t tab = line.find('\t', from);
      fields.push_back(strip(line.substr(from, tab - from)));
      if (tab == std::string_view::npos) break;
      from = tab + 1;
    }
    const auto bad = [&](const std::string& why) {
      return FileError("'" + what + "', line " + std::to_string(number) + " (\"" + std::string(raw) + "\"): " + why +
                       "; a line is index<TAB>label(s)<TAB>path");
    };
    if (fields.size() < 3 || fields.back().empty()) throw bad("no label or no path");
    ListItem item;
    item.line = number;
    if (!parse_index(fields[0], item.index)) throw bad("index '" + std::string(fields[0]) + "' is not an integer");
    for (std::size_t f = 1; f + 1 < fields.size(); ++f) {
      float v = 0;
      if (!parse_label(fields[f], v)) throw bad("label '" + std::string(fields[f]) + "' is not a number");
      item.labels.push_back(v);
    }
    item.path = std::string(fields.back());
    items.push_back(std::move(item));
  }
  return items;
}

std::vector<ListItem> read_list(const std::string& path) { return parse_list(read_file(path, "im2rec: the list"), path); }

std::string format_list(const std::vector<ListItem>& items) {
  std::string out;
  char number[64];
  for (const ListItem& item : items) {
    std::snprintf(number, sizeof number, "%lld\t", static_cast<long long>(item.index));
    out += number;
    for (const float label : item.labels) {
      // A label is a float32: "%f" of it never needs more than 47 digits and the point.
      std::snprintf(number, sizeof number, "%f\t", static_cast<double>(label));
      out += number;
    }
    out += item.path + "\n";
  }
  return out;
}

void write_list(const std::string& path, const std::vector<ListItem>& items) {
  write_file_atomically(path, format_list(items), "im2rec: the list");
}

std::vector<ListItem> list_images(const std::string& root, bool recursive, const std::vector<std::string>& exts,
                                  std::vector<std::pair<std::string, int>>* classes) {
  check_root(root);
  std::vector<ListItem> items;
  std::vector<std::pair<std::string, int>> found;
  if (recursive) {
    std::set<std::string> ancestors;
    walk(root, ".", exts, ancestors, items, found);
  } else {
    for (const std::string& name : entries_of(root).files) {
      if (is_image(root, name, exts)) items.push_back({static_cast<std::int64_t>(items.size()), {0.0f}, name, 0});
    }
  }
  if (classes) *classes = std::move(found);
  return items;
}

void shuffle(std::vector<ListItem>& items, std::uint64_t seed) { PythonRandom(seed).shuffle(items); }

std::vector<ListFile> make_list(const std::string& prefix, const std::string& root, const ListOptions& options,
                                std::vector<std::pair<std::string, int>>* classes) {
  if (options.chunks < 1) throw ValueError("im2rec: chunks must be >= 1, got " + std::to_string(options.chunks));
  for (const auto& [name, ratio] : {std::pair{"train_ratio", options.train_ratio}, std::pair{"test_ratio", options.test_ratio}}) {
    if (!(ratio >= 0.0 && ratio <= 1.0)) throw ValueError(std::string("im2rec: ") + name + " must be in [0, 1], got " + std::to_string(ratio));
  }
  std::vector<ListItem> items = list_images(root, options.recursive, options.exts, classes);
  if (options.shuffle) shuffle(items, options.seed);
  const std::size_t n = items.size(), chunks = static_cast<std::size_t>(options.chunks);
  const std::size_t chunk_size = (n + chunks - 1) / chunks;
  // Python's slice x[begin:end] of the chunk, the bounds clamped.
  const auto slice = [](const std::vector<ListItem>& x, std::size_t begin, std::size_t end) {
    begin = std::min(begin, x.size());
    end = std::clamp(end, begin, x.size());
    return std::vector<ListItem>(x.begin() + static_cast<std::ptrdiff_t>(begin), x.begin() + static_cast<std::ptrdiff_t>(end));
  };
  std::vector<ListFile> written;
  const auto write = [&](const std::string& path, const std::vector<ListItem>& list) {
    write_list(path, list);
    written.push_back({path, list.size()});
  };
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::vector<ListItem> chunk = slice(items, i * chunk_size, (i + 1) * chunk_size);
    const std::string base = prefix + (chunks > 1 ? "_" + std::to_string(i) : "");
    const auto sep = static_cast<std::size_t>(static_cast<double>(chunk_size) * options.train_ratio);
    const auto sep_test = static_cast<std::size_t>(static_cast<double>(chunk_size) * options.test_ratio);
    if (options.train_ratio == 1.0) {
      write(base + ".lst", chunk);
      continue;
    }
    if (options.test_ratio != 0.0) write(base + "_test.lst", slice(chunk, 0, sep_test));
    if (options.train_ratio + options.test_ratio < 1.0) write(base + "_val.lst", slice(chunk, sep_test + sep, chunk.size()));
    write(base + "_train.lst", slice(chunk, sep_test, sep_test + sep));
  }
  return written;
}

std::vector<ListJob> find_lists(const std::string& prefix) {
  // os.path.abspath: absolute, normalised, no trailing separator.
  std::string full = fs::absolute(prefix).lexically_normal().string();
  while (full.size() > 1 && full.back() == '/') full.pop_back();
  std::error_code error;
  const fs::path folder = fs::is_directory(full, error) ? fs::path(full) : fs::path(full).parent_path();
  if (!fs::is_directory(folder, error)) throw FileError("im2rec: no folder '" + folder.string() + "' to look for lists in (prefix '" + prefix + "')");
  std::vector<ListJob> jobs;
  for (const std::string& name : entries_of(folder).files) {
    const std::string path = (folder / name).string();
    if (path.rfind(full, 0) != 0 || !path.ends_with(".lst") || !fs::is_regular_file(path, error)) continue;
    const std::string stem = (folder / name.substr(0, name.size() - 4)).string();
    jobs.push_back({path, stem + ".rec", stem + ".idx"});
  }
  return jobs;
}

std::string encode_record(const ListItem& item, const std::string& root, const PackOptions& options) {
  if (item.labels.empty()) throw ValueError("im2rec: the item '" + item.path + "' has no label");
  recordio::IRHeader header;
  header.label = options.pack_label ? item.labels : std::vector<float>{item.labels[0]};
  header.id = static_cast<std::uint64_t>(item.index);
  header.id2 = 0;
  const std::string path = (fs::path(root) / item.path).string();
  if (options.pass_through) return recordio::pack(header, read_file(path, "im2rec"));
  nd::NDArray image = image::imread(path, options.color);
  if (options.center_crop) {
    const std::int64_t side = std::min(image.shape()[0], image.shape()[1]);
    image = image::center_crop(image, side, side);
  }
  if (options.resize > 0) image = image::resize_short(image, options.resize);
  return recordio::pack(header, image::imencode(image, options.encoding, options.quality));
}

void check_indices(const std::vector<ListItem>& items, const std::string& what) {
  std::unordered_set<std::int64_t> seen;
  for (const ListItem& item : items) {
    const std::string where = "'" + what + "', line " + std::to_string(item.line) + ": ";
    if (item.index < 0) {
      throw FileError(where + "index " + std::to_string(item.index) + " is negative; a record's id is an unsigned integer");
    }
    if (!seen.insert(item.index).second) {
      throw FileError(where + "index " + std::to_string(item.index) + " is listed twice; each record needs its own key in the .idx");
    }
  }
}

PackResult pack_list(const std::vector<ListItem>& items, const std::string& root, const ListJob& job,
                     const PackOptions& options, const std::function<void(const Skipped&)>& on_skip) {
  check_options(options);
  check_indices(items, job.list);
  check_root(root);
  recordio::MXIndexedRecordIO out(job.idx, job.rec, 'w');
  PackResult result;
  const auto take = [&](const ListItem& item, Encoded& e) {
    if (e.failure.empty()) {
      out.write_idx(item.index, e.record);
      ++result.packed;
      return;
    }
    Skipped skipped{item, std::move(e.failure)};
    if (on_skip) on_skip(skipped);
    result.skipped.push_back(std::move(skipped));
  };
  const std::size_t n = items.size();
  const auto threads = static_cast<std::size_t>(std::min<std::int64_t>(options.num_thread, static_cast<std::int64_t>(n)));
  if (threads <= 1) {
    for (const ListItem& item : items) {
      Encoded e = encode_or_skip(item, root, options);
      take(item, e);
    }
    out.close();
    return result;
  }
  // Workers claim items in order, at most `window` ahead of the writer, and leave each encoded
  // record in its slot of the ring; this thread writes the slots in the list's order.
  const std::size_t window = 4 * threads;
  std::vector<Encoded> ring(window);
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t claimed = 0, written = 0;
  bool stop = false;
  const auto work = [&] {
    for (;;) {
      std::size_t i = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || claimed >= n || claimed < written + window; });
        if (stop || claimed >= n) return;
        i = claimed++;
      }
      Encoded e = encode_or_skip(items[i], root, options);
      {
        std::lock_guard lock(mutex);
        ring[i % window] = std::move(e);
      }
      changed.notify_all();
    }
  };
  // Stops and joins the workers however this function ends (a failed write throws).
  struct Pool {
    std::vector<std::thread> threads;
    std::function<void()> stop;
    ~Pool() {
      stop();
      for (std::thread& t : threads) t.join();
    }
  } pool{{}, [&] {
           {
             std::lock_guard lock(mutex);
             stop = true;
           }
           changed.notify_all();
         }};
  for (std::size_t t = 0; t < threads; ++t) pool.threads.emplace_back(work);
  for (std::size_t k = 0; k < n; ++k) {
    Encoded e;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return ring[k % window].ready; });
      e = std::move(ring[k % window]);
      ring[k % window] = Encoded{};
      ++written;
    }
    changed.notify_all();
    take(items[k], e);
  }
  out.close();
  return result;
}

}  // namespace mx::im2rec
