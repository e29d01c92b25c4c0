// ndgluon-im2rec: MXNet's tools/im2rec.py over mx::im2rec (ndarray/io/im2rec.hpp), with its flags.
//
//   ndgluon-im2rec --list --recursive data/train images/   # data/train.lst: a label per sub-folder
//   ndgluon-im2rec --resize 256 data/train images/          # data/train.rec and data/train.idx
//
// Without --list it packs every PREFIX*.lst (each into the .rec and .idx of its own name). An image
// that cannot be read or decoded is skipped with a line naming it and its list line, as im2rec.py
// skips it; the exit code is 1 only when no image could be packed, after any other error (a
// malformed list, an output that cannot be written: the message names the file and line), and 2
// after a bad command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "context/error.hpp"
#include "ndarray/io/im2rec.hpp"
#include "tutorials/cli.hpp"

namespace {

namespace im2rec = mx::im2rec;

// A number from 0 to 1 ("0.8", "1"; not "1.5", "-0", "nan").
CLI::Validator ratio() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* stop = nullptr;
        const double x = value.empty() ? -1 : std::strtod(value.c_str(), &stop);
        if (!value.empty() && *stop == '\0' && x >= 0.0 && x <= 1.0 && value[0] != '-') return "";
        return value + " is not a number from 0 to 1";
      },
      "", "ratio");
}

int make_lists(const std::string& prefix, const std::string& root, const im2rec::ListOptions& options) {
  std::vector<std::pair<std::string, int>> classes;
  const std::vector<im2rec::ListFile> written = im2rec::make_list(prefix, root, options, &classes);
  if (options.recursive) {
    for (const auto& [folder, label] : classes) std::printf("%s %d\n", folder.c_str(), label);  // as im2rec.py prints them
  }
  for (const im2rec::ListFile& file : written) std::printf("wrote %s: %zu images\n", file.path.c_str(), file.size);
  return 0;
}

int pack(const std::string& prefix, const std::string& root, const im2rec::PackOptions& options) {
  const std::vector<im2rec::ListJob> jobs = im2rec::find_lists(prefix);
  if (jobs.empty()) throw mx::FileError("no list file (PREFIX*.lst) with prefix '" + prefix + "'; make one with --list");
  // Every list is read and checked before anything is written.
  std::vector<std::vector<im2rec::ListItem>> lists;
  for (const im2rec::ListJob& job : jobs) {
    lists.push_back(im2rec::read_list(job.list));
    im2rec::check_indices(lists.back(), job.list);
  }
  std::size_t packed = 0, skipped = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const im2rec::ListJob& job = jobs[i];
    std::printf("packing %s into %s\n", job.list.c_str(), job.rec.c_str());
    std::fflush(stdout);
    const im2rec::PackResult result =
        im2rec::pack_list(lists[i], root, job, options, [&](const im2rec::Skipped& s) {
          std::fprintf(stderr, "skipped %s (%s, line %lld): %s\n", s.item.path.c_str(), job.list.c_str(),
                       static_cast<long long>(s.item.line), s.reason.c_str());
        });
    std::printf("%s: %zu images packed, %zu skipped\n", job.rec.c_str(), result.packed, result.skipped.size());
    packed += result.packed;
    skipped += result.skipped.size();
  }
  if (packed == 0 && skipped > 0) {
    std::fprintf(stderr, "error: none of the %zu images listed could be packed\n", skipped);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Makes image lists (.lst) from a folder of images, or packs the images a list names into MXNet's "
               "RecordIO (.rec with its .idx), as MXNet's tools/im2rec.py does.",
               "ndgluon-im2rec"};
  app.footer("Example: ndgluon-im2rec --list --recursive data/train images/ && ndgluon-im2rec --resize 256 data/train images/");
  std::string prefix, root;
  bool make = false;
  im2rec::ListOptions lists;
  im2rec::PackOptions packing;
  // Both are required, checked after parsing, so that a bad flag is named first.
  app.add_option("prefix", prefix, "prefix of the .lst, .rec and .idx files (PREFIX.lst, PREFIX_train.lst, ...)");
  app.add_option("root", root, "folder of the images; the lists' paths are relative to it");

  const std::string list_group = "Making lists (--list)";
  app.add_flag("--list", make, "list the images under ROOT into PREFIX.lst (or chunks and splits) instead of packing")
      ->group(list_group);
  app.add_option("--exts", lists.exts, "the extensions of image files (lower case)")
      ->capture_default_str()->expected(1, -1)->group(list_group);
  app.add_option("--chunks", lists.chunks, "number of chunks: PREFIX_0.lst, PREFIX_1.lst, ...")
      ->capture_default_str()->check(cli::integer(1, 1 << 20))->group(list_group);
  app.add_option("--train-ratio", lists.train_ratio, "share of each chunk in PREFIX_train.lst (1: one PREFIX.lst)")
      ->capture_default_str()->check(ratio())->group(list_group);
  app.add_option("--test-ratio", lists.test_ratio, "share of each chunk in PREFIX_test.lst")
      ->capture_default_str()->check(ratio())->group(list_group);
  app.add_flag("--recursive", lists.recursive,
               "walk every sub-folder, a label per folder holding images (in sorted order); "
               "without it, only ROOT's own images, label 0")->group(list_group);
  bool shuffle = false, no_shuffle = false;
  CLI::Option* shuffled =
      app.add_flag("--shuffle", shuffle, "shuffle the list as Python's random.shuffle after random.seed(SEED) (the default)")
          ->group(list_group);
  app.add_flag("--no-shuffle", no_shuffle, "keep the order of the folders")->excludes(shuffled)->group(list_group);
  app.add_option("--seed", lists.seed, "the shuffle's seed (100: the order im2rec.py writes)")
      ->capture_default_str()->check(cli::integer(0))->group(list_group);

  const std::string pack_group = "Packing (without --list)";
  app.add_flag("--pass-through", packing.pass_through, "store each file's bytes unchanged: no decoding, resizing or encoding")
      ->group(pack_group);
  app.add_option("--resize", packing.resize, "resize the shorter edge to this many pixels, bilinear (0: keep the size)")
      ->capture_default_str()->check(cli::integer(0, 65535))->group(pack_group);
  app.add_flag("--center-crop", packing.center_crop, "crop the centred square first")->group(pack_group);
  app.add_option("--quality", packing.quality, "JPEG quality (PNG is written lossless)")
      ->capture_default_str()->check(cli::integer(1, 100))->group(pack_group);
  app.add_option("--encoding", packing.encoding, "how the images are stored")
      ->capture_default_str()->check(CLI::IsMember({".jpg", ".png"}))->group(pack_group);
  app.add_option("--color", packing.color, "1: color, 0: grayscale, -1: as stored (gray stays gray)")
      ->capture_default_str()->check(CLI::IsMember({-1, 0, 1}))->group(pack_group);
  app.add_option("--num-thread", packing.num_thread, "images decoded and encoded at once; the records keep the list's order")
      ->capture_default_str()->check(cli::integer(1, 1024))->group(pack_group);
  app.add_flag("--pack-label", packing.pack_label, "store every label of a list line (else only the first, as im2rec.py)")
      ->group(pack_group);

  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  if (prefix.empty() || root.empty()) {
    std::fprintf(stderr, "%s: PREFIX and ROOT are required\nrun with --help for usage\n", app.get_name().c_str());
    return cli::kUsageError;
  }
  lists.shuffle = !no_shuffle;
  try {
    return make ? make_lists(prefix, root, lists) : pack(prefix, root, packing);
  } catch (const mx::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
