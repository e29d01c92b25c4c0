// libFuzzer target: the tutorial programs' command line (tutorial::detail::parse of
// tutorials/training.hpp with CLI11 and the validators of tutorials/cli.hpp), as train_fashion_mnist
// and lenet parse it.
//
// The input is the arguments after the program name, separated by NUL bytes. Parsing must end in
// one of three ways: go on with options that hold every documented constraint, exit 0 (--help) or
// exit 2 (a bad command line). Output is discarded.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "test/fuzz/fuzz_check.hpp"
#include "tutorials/training.hpp"

namespace {

// Swallows what the parser prints.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

const std::vector<tutorial::Model>& models() {
  static const std::vector<tutorial::Model> list = {
      {"softmax", "softmax regression", "softmax", 0.1, nullptr, nullptr},
      {"mlp", "MLP 784-256-10", "MLP", 0.5, nullptr, nullptr},
  };
  return list;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"train_fashion_mnist"};
  std::string arg;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  if (size > 0) args.push_back(arg);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  static NullBuffer null;
  std::streambuf* out = std::cout.rdbuf(&null);
  std::streambuf* err = std::cerr.rdbuf(&null);
  CLI::App app{"fuzzed"};
  tutorial::Options o;
  o.model = "both";
  const std::optional<int> exit_code =
      tutorial::detail::parse(app, static_cast<int>(args.size()), argv.data(), models(), "each model's own", o);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  // --dist joined a job (a job of one here, without a launcher): leave it, as the program does
  // after training, so that the next input may join again.
  if (!exit_code && o.dist) mx::dist::shutdown();

  if (exit_code) {
    ndg_fuzz::expect(*exit_code == 0 || *exit_code == cli::kUsageError, "exit codes are 0 (--help) or 2");
    return 0;
  }
  ndg_fuzz::expect(o.epochs >= 1 && o.epochs <= 1'000'000, "--epochs is from 1 to 1000000");
  ndg_fuzz::expect(!o.batch_size || *o.batch_size >= 1, "--batch-size is each model's own or >= 1");
  ndg_fuzz::expect(!o.resize, "no --resize where no model resizes");
  ndg_fuzz::expect(o.subset == -1 || o.subset >= 1, "--subset is all or >= 1");
  ndg_fuzz::expect(!o.lr || (std::isfinite(*o.lr) && *o.lr > 0), "--lr is a finite number > 0");
  ndg_fuzz::expect(o.dtype == "float32" || o.dtype == "bfloat16" || o.dtype == "float16", "--dtype is known");
  ndg_fuzz::expect(o.model == "softmax" || o.model == "mlp" || o.model == "both", "--model is known");
  ndg_fuzz::expect(!o.ctxs.empty(), "there is a context");
  for (const mx::Context& ctx : o.ctxs) {
    ndg_fuzz::expect(ctx.is_cpu() || ctx.device_id() < mx::num_gpus(), "every context exists");
  }
  return 0;
}
