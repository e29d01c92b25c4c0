#pragma once
// The command line of the benchmarks that run beside a PyTorch peer: one optional positional
// argument, the peer script. Parsed with CLI11 (tutorials/cli.hpp) before any device is touched.
#include <cstdio>
#include <optional>
#include <string>

#include <context/device.hpp>

#include "tutorials/cli.hpp"

namespace bench {

// Parses app's command line into peer_script (default bench/torch_peer.py). Returns the exit code
// main should return: after --help or a bad command line, and 77 (skipped) when no GPU is visible
// and the benchmark needs one; nullopt when the benchmark should run.
inline std::optional<int> parse_peer_command_line(CLI::App& app, int argc, char** argv, std::string& peer_script,
                                                  bool needs_gpu = true) {
  peer_script = "bench/torch_peer.py";
  app.add_option("torch_peer", peer_script, "the PyTorch peer script, run with python3 (a path from the working directory)")
      ->capture_default_str()
      ->check(CLI::ExistingFile);
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return exit_code;
  if (needs_gpu && mx::num_gpus() == 0) {
    std::printf("no GPU visible: the benchmarks need one\n");
    return 77;
  }
  return std::nullopt;
}

}  // namespace bench
