#pragma once
// The command line of the tutorial and benchmark programs, parsed with CLI11.
//
//   CLI::App app{"What the program does."};
//   app.add_option("--epochs", epochs, "epochs to train")->capture_default_str()->check(cli::integer(1));
//   if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
//
// `-h` / `--help` prints the usage, every flag with its default, and exits 0, whatever else is on the
// line. A bad command line (an unknown flag, a missing value, a value of the wrong type or out of
// range) prints one line naming the flag and the value, then "run with --help for usage", and
// exits 2:
//
//   train_fashion_mnist: --batch-size: 0 is not an integer >= 1
//   run with --help for usage
//
// The checks are the parser's (the validators below), so a value that was not given is never
// checked and no default can be refused. Parse before touching a device: --help needs no GPU.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace cli {

// The exit code of a bad command line, as in most Unix tools. (Not 77: meson reads that as SKIP.)
constexpr int kUsageError = 2;

// A whole integer in [min, max]: "1.5", "10x" and values that overflow are refused.
inline CLI::Validator integer(std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  const bool unbounded = max == std::numeric_limits<std::int64_t>::max();
  const std::string range = unbounded ? ">= " + std::to_string(min)
                                      : "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        std::int64_t n = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, n);
        if (error == std::errc() && stop == end && n >= min && n <= max) return "";
        return value + " is not an integer " + range;
      },
      "", "integer");
}

// A finite number > 0 ("1e-3" and "0.5" are; "0", "-0.5", "inf", "nan" and "0.5x" are not).
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* stop = nullptr;
        errno = 0;
        const double x = value.empty() ? 0 : std::strtod(value.c_str(), &stop);
        if (!value.empty() && errno == 0 && *stop == '\0' && std::isfinite(x) && x > 0) return "";
        return value + " is not a positive number";
      },
      "", "positive_number");
}

// A folder that exists. `hint`, when given, follows the message (where to look instead).
inline CLI::Validator existing_folder(std::string hint = "") {
  return CLI::Validator(
      [hint](std::string& value) -> std::string {
        std::error_code error;
        if (std::filesystem::is_directory(value, error)) return "";
        return value + (std::filesystem::exists(value, error) ? " is not a folder" : ": no such folder") +
               (hint.empty() ? "" : "; " + hint);
      },
      "", "existing_folder");
}

// A file to be written: its folder must exist and the path must not be a folder.
inline CLI::Validator file_to_write() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::filesystem::path path(value);
        const std::filesystem::path folder = path.parent_path().empty() ? "." : path.parent_path();
        std::error_code error;
        if (value.empty()) return "the file name is empty";
        if (!std::filesystem::is_directory(folder, error)) {
          return value + ": the folder " + folder.string() + " does not exist";
        }
        if (std::filesystem::is_directory(path, error)) return value + " is a folder, not a file";
        return "";
      },
      "", "file_to_write");
}

// Help lines that end with the default: "  --epochs INT   epochs per model (default: 10, or $NDG_TRAIN_EPOCHS when set)".
// An option's default is its default string: captured from the variable (capture_default_str) or
// written in words (default_str).
class Formatter : public CLI::Formatter {
 public:
  Formatter() { column_width(24); }

  std::string make_option_opts(const CLI::Option* option) const override {
    if (!option->get_option_text().empty()) return " " + option->get_option_text();
    return option->get_type_size() == 0 || option->get_type_name().empty() ? "" : " " + option->get_type_name();
  }

  std::string make_option_desc(const CLI::Option* option) const override {
    std::string fallback = option->get_default_str();
    if (!fallback.empty()) fallback = "default: " + fallback;
    if (!option->get_envname().empty()) {
      fallback += (fallback.empty() ? "default: $" : ", or $") + option->get_envname() + " when set";
    }
    if (!option->get_excludes().empty()) {
      fallback += fallback.empty() ? "not with" : "; not with";
      for (const CLI::Option* other : option->get_excludes()) fallback += " " + other->get_name();
    }
    return option->get_description() + (fallback.empty() ? "" : " (" + fallback + ")");
  }
};

namespace detail {

inline bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

// Whether an option with a name of `option` is on the command line (as "--name", "--name=...", "-n").
inline bool on_command_line(const CLI::Option& option, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const std::string& name : option.get_lnames()) {
      if (arg == "--" + name || arg.rfind("--" + name + "=", 0) == 0) return true;
    }
    for (const std::string& name : option.get_snames()) {
      if (arg.rfind("-" + name, 0) == 0) return true;
    }
  }
  return false;
}

// CLI11's message, reworded where it speaks of types or lists the arguments awkwardly, and with
// the environment variable named when the value came from there.
inline std::string one_line(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  std::string message = error.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
    const std::vector<std::string> extras = app.remaining();
    if (extras.size() == 1) {
      return (extras[0].rfind('-', 0) == 0 ? "unknown flag " : "unexpected argument ") + extras[0];
    }
    if (!extras.empty()) {
      std::string list;
      for (const std::string& extra : extras) list += " " + extra;
      return "unexpected arguments:" + list;
    }
    return message;
  }
  // ArgumentMismatch: "--lr: 1 required FLOAT missing".
  const std::size_t colon = message.find(": ");
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) && colon != std::string::npos &&
      message.size() >= 8 && message.compare(message.size() - 8, 8, " missing") == 0) {
    return message.substr(0, colon) + ": the value is missing";
  }
  for (const CLI::Option* option : app.get_options()) {
    const std::string& variable = option->get_envname();
    const char* value = variable.empty() ? nullptr : std::getenv(variable.c_str());
    if (value && *value && message.rfind(option->get_name() + ":", 0) == 0 && !on_command_line(*option, argc, argv)) {
      return message + " (the value of $" + variable + ")";
    }
  }
  return message;
}

}  // namespace detail

// Parses the command line into `app`. Returns nothing when the program should go on, else the
// code it should exit with: 0 after printing the help, kUsageError after a bad command line.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  const std::string program = argc > 0 && argv[0] ? std::filesystem::path(argv[0]).filename().string() : app.get_name();
  app.name(program);
  app.formatter(std::make_shared<Formatter>());
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);  // --help
    if (detail::asks_for_help(argc, argv)) {  // --help wins over a bad value elsewhere on the line
      std::cout << app.help();
      return 0;
    }
    std::cerr << program << ": " << detail::one_line(app, error, argc, argv) << "\nrun with --help for usage\n";
    return kUsageError;
  }
}

}  // namespace cli
