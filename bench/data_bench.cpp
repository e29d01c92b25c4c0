// The ImageNet-style input pipeline on one GPU, in one run: JPEG files of about 500x375 (made here
// with libjpeg-turbo: --images of them, kept in --dir for later runs) decoded on worker threads,
// RandomResizedCrop(224) and a flip per sample there, then ToTensor, Normalize and a cast to
// bfloat16 per batch of 256 on the GPU (DataLoader::transform_on). Reported: the decode rate of one
// core, the pipeline's images/s from the image folder and from the same images packed into a .rec
// (ImageRecordDataset), ResNet-50 v1's training images/s (bfloat16 amp, SGD momentum 0.9, wd 1e-4)
// on resident synthetic data and fed by the pipeline, and PyTorch's torchvision pipeline
// (decode_jpeg on the GPU + transforms.v2) when torchvision is installed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gluon/amp.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/model_zoo/vision.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/io/im2rec.hpp>
#include <ndarray/io/image.hpp>
#include <ndarray/ndarray.hpp>

#include "bench/bench_util.hpp"
#include "bench/peer_cli.hpp"

namespace nd = mx::nd;
namespace gdata = mx::gluon::data;
namespace T = mx::gluon::data::vision::transforms;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kBatch = 256;
constexpr int kClasses = 10;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Image i: smooth gradients, a few discs and noise, so that it compresses as photographs do
// (about 40-80 KB at quality 90) rather than to a few hundred bytes.
std::string make_jpeg(int i) {
  constexpr std::int64_t h = 375, w = 500;
  std::mt19937 rng(static_cast<unsigned>(i));
  std::uniform_int_distribution<int> noise(-12, 12), pos(0, 499), colour(0, 255);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(h * w * 3));
  const int r0 = colour(rng), g0 = colour(rng), b0 = colour(rng);
  struct Disc { int x, y, r, c[3]; };
  std::vector<Disc> discs;
  for (int d = 0; d < 6; ++d) discs.push_back({pos(rng), pos(rng) * 3 / 4, 20 + pos(rng) / 8, {colour(rng), colour(rng), colour(rng)}});
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      int c[3] = {static_cast<int>((r0 + x / 3) % 256), static_cast<int>((g0 + y / 2) % 256), static_cast<int>((b0 + (x + y) / 4) % 256)};
      for (const Disc& d : discs) {
        if ((x - d.x) * (x - d.x) + (y - d.y) * (y - d.y) < d.r * d.r) std::copy(d.c, d.c + 3, c);
      }
      for (int k = 0; k < 3; ++k) {
        px[static_cast<std::size_t>((y * w + x) * 3 + k)] = static_cast<std::uint8_t>(std::clamp(c[k] + noise(rng), 0, 255));
      }
    }
  }
  return mx::image::imencode(nd::array(px, {h, w, 3}, mx::cpu(), mx::DType::uint8), ".jpg", 90);
}

// dir/images/<class>/<i>.jpg for i < count (the missing ones made on every core), and
// dir/images.rec / .idx packing them (when missing).
void prepare(const fs::path& dir, int count) {
  const fs::path root = dir / "images";
  std::vector<int> missing;
  for (int i = 0; i < count; ++i) {
    if (!fs::exists(root / std::to_string(i % kClasses) / (std::to_string(i) + ".jpg"))) missing.push_back(i);
  }
  if (!missing.empty()) {
    std::printf("writing %zu JPEG files to %s ...\n", missing.size(), root.c_str());
    std::fflush(stdout);
    for (int c = 0; c < kClasses; ++c) fs::create_directories(root / std::to_string(c));
    std::vector<std::thread> threads;
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < n; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t k = t; k < missing.size(); k += n) {
          const int i = missing[k];
          std::FILE* f = std::fopen((root / std::to_string(i % kClasses) / (std::to_string(i) + ".jpg")).c_str(), "wb");
          const std::string bytes = make_jpeg(i);
          if (f) {
            std::fwrite(bytes.data(), 1, bytes.size(), f);
            std::fclose(f);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  if (!missing.empty() || !fs::exists(dir / "images.rec")) {
    std::printf("packing %s/images.rec ...\n", dir.c_str());
    std::fflush(stdout);
    mx::im2rec::ListOptions list;
    list.recursive = true;
    mx::im2rec::make_list((dir / "images").string(), root.string(), list);
    mx::im2rec::PackOptions pack;
    pack.pass_through = true;
    mx::im2rec::pack_list(mx::im2rec::read_list((dir / "images.lst").string()), root.string(),
                          {(dir / "images.lst").string(), (dir / "images.rec").string(), (dir / "images.idx").string()},
                          pack);
  }
}

// Images per second of `batches` batches of loader (after `warm` more), each batch's data waited for.
double pipeline_rate(gdata::DataLoader& loader, int warm, int batches) {
  int seen = 0;
  std::int64_t images = 0;
  Clock::time_point start;
  for (auto& batch : loader) {
    batch.data.wait_to_read();
    if (++seen == warm) start = Clock::now();
    if (seen > warm) images += batch.data.shape()[0];
    if (seen == warm + batches) break;
  }
  return static_cast<double>(images) / since(start);
}

gdata::DataLoader loader_of(std::shared_ptr<const gdata::Dataset> images, int workers, mx::Context gpu) {
  const T::Compose per_sample(T::RandomResizedCrop(224), T::RandomFlipLeftRight());
  const T::Compose per_batch(T::ToTensor(), T::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}),
                             T::Cast(mx::DType::bfloat16));
  gdata::DataLoader loader(gdata::transform_first(std::move(images), per_sample), kBatch, true, "discard", {}, workers);
  loader.transform_on(gpu, per_batch).prefetch(4);
  return loader;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The ImageNet-style input pipeline on gpu(0): JPEG decoding on worker threads, RandomResizedCrop(224) "
               "and flips per sample, normalisation and bfloat16 per batch on the GPU; against ResNet-50's training "
               "rate and PyTorch's torchvision pipeline, in one run. Run from the source root: "
               "build/bench/data_bench bench/torch_peer.py"};
  std::string peer_script, dir = "/tmp/ndgluon_data_bench";
  int images = 10000, workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), batches = 30;
  app.add_option("--images", images, "JPEG files to make and read")->capture_default_str()->check(cli::integer(kBatch * 4));
  app.add_option("--dir", dir, "where the files are kept between runs")->capture_default_str();
  app.add_option("--workers", workers, "decoding threads")->capture_default_str()->check(cli::integer(1, 1024));
  app.add_option("--batches", batches, "batches timed per measurement")->capture_default_str()->check(cli::integer(1));
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, %d decoding threads, %d images\n", mx::gpu_name(0).c_str(), workers, images);
  prepare(dir, images);
  auto folder = std::make_shared<gdata::vision::ImageFolderDataset>((fs::path(dir) / "images").string());
  auto records = std::make_shared<gdata::vision::ImageRecordDataset>((fs::path(dir) / "images.rec").string());

  // One core's decode rate (libjpeg-turbo through mx::image::imdecode).
  {
    const nd::SingleThreadedOps one_thread;
    const auto start = Clock::now();
    constexpr int kDecodes = 200;
    for (int i = 0; i < kDecodes; ++i) folder->get(i);
    std::printf("decode, one core: %.0f images/s (500x375 JPEG to RGB)\n", kDecodes / since(start));
  }
  const int warm = 3;
  gdata::DataLoader from_folder = loader_of(folder, workers, gpu0), from_rec = loader_of(records, workers, gpu0);
  const double folder_rate = pipeline_rate(from_folder, warm, batches);
  const double rec_rate = pipeline_rate(from_rec, warm, batches);
  std::printf("pipeline, image folder: %.0f images/s (%.0f per thread)\n", folder_rate, folder_rate / workers);
  std::printf("pipeline, .rec file:    %.0f images/s (%.0f per thread)\n", rec_rate, rec_rate / workers);

  // ResNet-50 v1 training, bfloat16 amp: resident synthetic data, then fed by the folder's pipeline.
  auto net = mx::gluon::model_zoo::vision::get_model("resnet50_v1", {});
  net->initialize(mx::init::Xavier(), {gpu0});
  net->hybridize();
  mx::gluon::Trainer trainer(net->collect_params(), "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"wd", 1e-4}});
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  const auto step = [&](const nd::NDArray& x, const nd::NDArray& y) {
    {
      auto recording = mx::autograd::record();
      const auto autocast = mx::amp::autocast(mx::DType::bfloat16);
      nd::NDArray l = loss((*net)(x), y);
      l.backward();
    }
    trainer.step(x.shape()[0]);
  };
  const nd::NDArray x = nd::random::uniform(-1, 1, {kBatch, 3, 224, 224}, gpu0).astype(mx::DType::bfloat16);
  const nd::NDArray y = nd::zeros({kBatch}, gpu0, mx::DType::int32);
  for (int i = 0; i < warm; ++i) step(x, y);
  nd::waitall();
  auto start = Clock::now();
  for (int i = 0; i < batches; ++i) step(x, y);
  nd::waitall();
  const double resident = batches * kBatch / since(start);
  int seen = 0;
  for (auto& batch : from_folder) {
    if (++seen == warm) {
      nd::waitall();
      start = Clock::now();
    }
    step(batch.data, batch.label);
    if (seen == warm + batches) break;
  }
  nd::waitall();
  const double fed = batches * kBatch / since(start);
  std::printf("ResNet-50 v1 training (bfloat16 amp, batch %lld): resident data %.0f images/s, fed from JPEG files "
              "%.0f images/s (%.3f of resident)\n",
              static_cast<long long>(kBatch), resident, fed, fed / resident);
  std::printf("pipeline / ResNet-50 resident rate: folder %.2f, .rec %.2f\n", folder_rate / resident, rec_rate / resident);
  const std::map<std::string, double> peer = bench::run_peer("python3 " + peer_script + " data_pipeline " + dir);
  if (const auto it = peer.find("data_pipeline"); it != peer.end()) {
    std::printf("PyTorch torchvision (decode_jpeg on the GPU + transforms.v2): %.0f images/s; ndgluon folder %.2fx\n",
                kBatch / it->second, folder_rate * it->second / kBatch);
  } else {
    std::printf("PyTorch torchvision pipeline: not measured (torchvision is not installed, or the peer failed)\n");
  }
  return 0;
}
