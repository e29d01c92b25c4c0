// libFuzzer target: the symbol-JSON reader (graph::from_json), which reads what hybridize's export
// writes and what MXNet 1.x writes, for SymbolBlock::imports.
//
// A graph the reader accepts must be written and read back to the same graph: to_json of the
// re-read graph equals to_json of the first. Anything else than acceptance must be an mx::Error
// (FileError for malformed JSON or structure, ValueError for an unknown op or bad attributes).
#include <cstdint>
#include <string>

#include "context/error.hpp"
#include "ndarray/graph/graph.hpp"
#include "test/fuzz/fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  std::string written;
  try {
    written = mx::graph::to_json(mx::graph::from_json(json, "fuzz-symbol.json"));
  } catch (const mx::Error&) {
    return 0;
  }
  std::string again;
  try {
    again = mx::graph::to_json(mx::graph::from_json(written, "written"));
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    ndg_fuzz::expect(false, "what to_json writes, from_json reads");
  }
  ndg_fuzz::expect(again == written, "to_json and from_json round-trip");
  return 0;
}
