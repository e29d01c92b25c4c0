#pragma once
// What every tutorial program shares besides the command line (tutorials/cli.hpp): the --ctx
// option's contexts, and the curves, written to CSV and drawn by gnuplot into a PNG next to it.
//
//   app.add_option("--ctx", ctx, "...")->check(tutorial::existing_context());
//   std::FILE* csv = tutorial::open_csv(path, "model,epoch,loss");   // null: the error was printed
//   ... std::fprintf(csv, ...) ...
//   if (const auto why = tutorial::close_csv(csv)) { /* error: writing failed: *why */ }
//   tutorial::plot_png(path, "set xlabel 'epoch'\nplot '" + path + "' using 2:3 with lines\n");
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <context/context.hpp>

#include "tutorials/cli.hpp"

namespace tutorial {

// "no GPU is visible", "1 GPU is visible", "2 GPUs are visible".
inline std::string visible_gpus() {
  const int n = mx::num_gpus();
  return n == 0 ? "no GPU is visible" : n == 1 ? "1 GPU is visible" : std::to_string(n) + " GPUs are visible";
}

// "cpu", "gpu" (gpu(0)) or "gpu:N"; nothing for anything else.
inline std::optional<mx::Context> context_named(const std::string& text) {
  if (text == "cpu") return mx::cpu();
  if (text == "gpu") return mx::gpu(0);
  if (text.rfind("gpu:", 0) != 0 || text.size() == 4 || text.size() > 8 ||
      text.find_first_not_of("0123456789", 4) != std::string::npos) {
    return std::nullopt;
  }
  return mx::gpu(std::stoi(text.substr(4)));
}

// --ctx: a context that exists on this machine.
inline CLI::Validator existing_context() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::optional<mx::Context> ctx = context_named(value);
        if (!ctx) return value + " is not cpu, gpu or gpu:N";
        if (ctx->is_gpu() && ctx->device_id() >= mx::num_gpus()) {
          return value + ": there is no " + ctx->str() + ", " + visible_gpus();
        }
        return "";
      },
      "", "existing_context");
}

// --data PATH of a text corpus: a file that exists, else the message says where to get it.
inline CLI::Validator existing_text(std::string where_to_get_it) {
  return CLI::Validator(
      [where = std::move(where_to_get_it)](std::string& value) -> std::string {
        return std::filesystem::is_regular_file(value) ? "" : value + ": no such file. " + where;
      },
      "", "existing_file");
}

// The corpus: --data's path, else the environment variable's; nullopt (the error printed, naming
// both and where to get the text) when neither names a file.
inline std::optional<std::string> text_path(const std::string& data, const char* variable, const char* what,
                                            const char* where_to_get_it) {
  if (!data.empty()) return data;
  const char* env = std::getenv(variable);
  if (env == nullptr || *env == '\0') {
    std::fprintf(stderr, "error: no text: give --data PATH or set %s to %s. %s\n", variable, what, where_to_get_it);
    return std::nullopt;
  }
  if (!std::filesystem::is_regular_file(env)) {
    std::fprintf(stderr, "error: %s=%s: no such file. %s\n", variable, env, where_to_get_it);
    return std::nullopt;
  }
  return std::string(env);
}

// Opens the CSV of the curves and writes its header line. Opened before training, so that a bad
// path fails at once: then it prints the error and returns null.
inline std::FILE* open_csv(const std::string& path, const std::string& header) {
  std::FILE* csv = std::fopen(path.c_str(), "w");
  if (!csv) {
    std::fprintf(stderr, "error: cannot write the curves to %s: %s\n", path.c_str(), std::strerror(errno));
    return nullptr;
  }
  std::fprintf(csv, "%s\n", header.c_str());
  return csv;
}

// Closes the CSV; returns why writing it failed, or nothing. A full disk or a failed write shows
// at the latest when the file is closed.
inline std::optional<std::string> close_csv(std::FILE* csv) {
  const bool write_failed = std::ferror(csv) != 0;
  errno = 0;
  const bool close_failed = std::fclose(csv) != 0;
  if (!write_failed && !close_failed) return std::nullopt;
  return close_failed && errno != 0 ? std::strerror(errno) : "a write failed";
}

// Draws the curves of `csv` into a PNG next to it (curves.csv -> curves.png), when gnuplot is
// installed. `script` is gnuplot's commands after the terminal, the output and the CSV separator
// are set: the labels and the plot command. size: the PNG's, in pixels ("width,height").
inline void plot_png(const std::string& csv, const std::string& script, const std::string& size = "900,500") {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    std::printf("gnuplot is not installed (apt-get install gnuplot-nox): no PNG drawn; the curves are in %s\n",
                csv.c_str());
    return;
  }
  const std::string png = std::filesystem::path(csv).replace_extension(".png").string();
  // The script goes to gnuplot's standard input, so that no shell sees its quotes and $ columns.
  const std::string whole = "set terminal pngcairo size " + size + "\nset output '" + png +
                            "'\nset datafile separator ','\n" + script;
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  const bool written = gnuplot && std::fputs(whole.c_str(), gnuplot) >= 0;
  const bool ok = gnuplot && pclose(gnuplot) == 0 && written;
  if (ok) std::printf("plot written to %s\n", png.c_str());
  else std::printf("gnuplot failed; the curves are in %s\n", csv.c_str());
}

}  // namespace tutorial
