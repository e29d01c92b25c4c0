#pragma once
// What MXNet's tools/im2rec.py does, as a library (the ndgluon-im2rec program is its command line):
// lists an image folder into .lst files, and packs the images a .lst lists into a .rec with its
// .idx, which MXNet's ImageRecordIter and ndgluon's ImageRecordDataset read.
//
//   mx::im2rec::ListOptions lists;                 // im2rec's defaults: shuffled with seed 100
//   lists.recursive = true;                        // a label per sub-folder
//   mx::im2rec::make_list("data/train", "images", lists);          // data/train.lst
//   for (const mx::im2rec::ListJob& job : mx::im2rec::find_lists("data/train")) {
//     mx::im2rec::pack_list(mx::im2rec::read_list(job.list), "images", job, {.resize = 256});
//   }                                                               // data/train.rec, data/train.idx
//
// The .lst format is im2rec's: a line per image, "index<TAB>label<TAB>...<TAB>path", the path
// relative to the image root, at least one label. Where ndgluon differs from im2rec.py on purpose:
// a malformed .lst line is an mx::FileError naming the file and the line (im2rec.py skips it with
// a message), and so is an index listed twice or a negative one (which MXNet's reader would not
// tell apart, or cannot pack).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mx::im2rec {

// One line of a .lst file.
struct ListItem {
  std::int64_t index = 0;     // the record's id and its key in the .idx
  std::vector<float> labels;  // one or more
  std::string path;           // relative to the image root
  std::int64_t line = 0;      // where it was read: line number in its file, 1-based (0: not read from a file)
};

// The items of .lst text, blank lines skipped; each field is stripped of surrounding spaces, as
// im2rec.py's read_list does. mx::FileError naming `what` (the file) and the line for a line with
// fewer than three fields, an empty path, an index that is not an integer or a label that is not a
// number.
std::vector<ListItem> parse_list(std::string_view text, const std::string& what);
// parse_list of a file's contents; mx::FileError for a file that cannot be read. An empty list is
// no error here.
std::vector<ListItem> read_list(const std::string& path);
// The lines im2rec.py's write_list writes: "%d\t" for the index, "%f\t" for each label, the path.
std::string format_list(const std::vector<ListItem>& items);
// format_list into a file (replaced whole); mx::FileError naming it when it cannot be written.
void write_list(const std::string& path, const std::vector<ListItem>& items);

// The images under root, in im2rec.py's order (list_image): without `recursive`, the files of root
// itself, sorted by name, label 0; with it, every folder under root (symbolic links followed),
// walked top-down in sorted order, its files before its sub-folders, each folder that holds an
// image getting the next label (root too, when it holds images). A file is an image when its
// extension, lower-cased, is one of `exts`. Indices count from 0 in that order. `classes`, when
// given, receives each labelled folder relative to root ("." for root) with its label.
// mx::FileError when root is not a folder.
std::vector<ListItem> list_images(const std::string& root, bool recursive, const std::vector<std::string>& exts,
                                  std::vector<std::pair<std::string, int>>* classes = nullptr);

// Shuffles items as Python 3's random.shuffle does after random.seed(seed) (Mersenne Twister,
// seeded by init_by_array): with seed 100, the order im2rec.py's --list writes.
void shuffle(std::vector<ListItem>& items, std::uint64_t seed);

struct ListOptions {
  std::vector<std::string> exts = {".jpeg", ".jpg", ".png"};
  bool recursive = false;
  bool shuffle = true;       // im2rec.py shuffles unless --no-shuffle
  std::uint64_t seed = 100;  // im2rec.py's
  int chunks = 1;
  double train_ratio = 1.0, test_ratio = 0.0;
};

// A list written by make_list: its path and how many images it lists.
struct ListFile {
  std::string path;
  std::size_t size = 0;
};

// im2rec.py --list: lists root (list_images), shuffles, cuts the list into `chunks` chunks of
// ceil(N / chunks) and writes each: PREFIX.lst when train_ratio is 1, else PREFIX_test.lst (when
// test_ratio > 0), PREFIX_val.lst (when train_ratio + test_ratio < 1) and PREFIX_train.lst, with
// "_<chunk>" after PREFIX when chunks > 1. Returns the files in the order written.
// mx::ValueError for chunks < 1 or a ratio outside [0, 1]; mx::FileError for a root that is not a
// folder or a list that cannot be written.
std::vector<ListFile> make_list(const std::string& prefix, const std::string& root, const ListOptions& options,
                                std::vector<std::pair<std::string, int>>* classes = nullptr);

// A list to pack and the files it goes to.
struct ListJob {
  std::string list, rec, idx;
};

// The lists im2rec.py packs for prefix: every file of the folder prefix names (prefix itself when
// it is a folder, else its parent) whose absolute path starts with prefix's and ends in ".lst",
// sorted; each packed into the .rec and .idx of its own name in that folder
// (data/train_val.lst -> data/train_val.rec, data/train_val.idx).
std::vector<ListJob> find_lists(const std::string& prefix);

struct PackOptions {
  bool pass_through = false;     // the files' bytes as they are: no decoding, no check
  std::int64_t resize = 0;       // > 0: shorter edge to this (mx::image::resize_short), after the crop
  bool center_crop = false;      // the centred square of the shorter edge
  int quality = 95;              // JPEG quality, 1 to 100 (PNG is written lossless whatever it is)
  std::string encoding = ".jpg"; // or ".png"
  int color = 1;                 // mx::image::imdecode's flag: 1 color, 0 grayscale, -1 as stored
  int num_thread = 1;            // images decoded and encoded at once; the records keep the list's order
  bool pack_label = false;       // every label of a line in the record (else only its first), as im2rec.py
};

// The record im2rec.py packs for an item: IRHeader(flag, label, id = index, id2 = 0) and the image
// (recordio::pack), the image read from root / item.path and, unless pass_through, decoded,
// cropped, resized and encoded again. Throws what reading, decoding or encoding throws
// (mx::FileError naming the file for a missing or undecodable image).
std::string encode_record(const ListItem& item, const std::string& root, const PackOptions& options);

// An image that could not be packed, and why.
struct Skipped {
  ListItem item;
  std::string reason;  // the error's message, which names the file
};

struct PackResult {
  std::size_t packed = 0;
  std::vector<Skipped> skipped;
};

// mx::FileError unless every index of items is >= 0 and listed once; `what` names the list.
void check_indices(const std::vector<ListItem>& items, const std::string& what);

// Packs items into job.rec and job.idx (created or emptied) in the list's order, as im2rec.py
// does: an image that cannot be read, decoded or encoded is skipped, reported to on_skip (on the
// calling thread) and counted. Throws, before writing anything, mx::FileError when root is not a
// folder or the output cannot be opened, what check_indices throws, and mx::ValueError for options
// out of range; mx::FileError when writing fails.
PackResult pack_list(const std::vector<ListItem>& items, const std::string& root, const ListJob& job,
                     const PackOptions& options, const std::function<void(const Skipped&)>& on_skip = {});

}  // namespace mx::im2rec
