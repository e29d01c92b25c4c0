#pragma once
// MXNet's binary NDArray file, both ways: what mx.nd.save writes and mx.nd.load reads. MXNet's
// .params files (Gluon's save_parameters, Module checkpoints, export's -0000.params) are such
// files, so they load here with no MXNet installed.
//
//   nd::save("list.nd", {x, y});                      // mx.nd.save('list.nd', [x, y])
//   nd::save("dict.nd", {{"w", w}, {"b", b}});        // mx.nd.save('dict.nd', {'w': w, 'b': b})
//   const nd::LoadedArrays loaded = nd::load("dict.nd");   // onto cpu(0); load(path, mx::gpu()) too
//   loaded.as_map().at("w");  loaded.arrays[0];  loaded.names[0];
//
// The layout, and which of MXNet's record versions are read, is Note [MXNet's NDArray file] in
// io.cpp. Every array is written with the context it lives on, as MXNet does, and read onto the
// context the caller gives, whatever context the file names.
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// What nd::load returns: the arrays in file order and, when the file has them, one name per array
// (mx.nd.load returns a dict then, and a list otherwise).
struct LoadedArrays {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;  // empty (a list), or names[i] is arrays[i]'s name (a dict)

  bool has_names() const { return !names.empty(); }
  // name -> array, as mx.nd.load's dict: a name given twice keeps its last array, as dict() does.
  // Throws mx::ValueError, naming the count, when the file holds a list of arrays without names.
  std::map<std::string, NDArray> as_map() const;
};

// Writes the arrays to path as mx.nd.save does, replacing the file atomically
// (mx::write_file_atomically): a list (no names), a dict (in the map's order), or names[i] for
// arrays[i] in the order given (MXNDArraySave's keys; no names is a list). Arrays may live on any
// context and be views; a none array (NDArray()) is written as MXNet writes one, without shape or
// data, and loads as a none array. Throws mx::ValueError for a name count other than 0 or
// arrays.size(), mx::FileError naming the path when it cannot be written (the old file is then
// unchanged).
void save(const std::string& path, const std::vector<NDArray>& arrays);
void save(const std::string& path, const std::map<std::string, NDArray>& arrays);
// save(path, {x, y}): a list. (Without it a braced pair of arrays could also be std::map's
// iterator-range constructor.)
void save(const std::string& path, std::initializer_list<NDArray> arrays);
void save(const std::string& path, const std::vector<std::string>& names, const std::vector<NDArray>& arrays);

// Reads a file written by nd::save or by any version of MXNet (V3, V2, V1 and legacy records)
// onto ctx. Throws mx::FileError naming the path, what is wrong and, inside an array, its record
// index: missing, unreadable, truncated, bad magic, absurd extents, an unknown dtype flag, a sparse
// storage type, trailing bytes. A dtype that MXNet has and ndgluon lacks (float16, bfloat16, int8,
// bool, ...) throws mx::DTypeError naming the path, the record and the dtype. A record that MXNet
// wrote for an array without a shape (NDArray() in C++) loads as a none array, as in MXNet.
// Nothing is returned unless the whole file is good. mx::DeviceError when ctx does not exist.
LoadedArrays load(const std::string& path, Context ctx = cpu());

// The same from and to memory: the bytes nd::save writes, and nd::load of bytes
// (mx.nd.load_frombuffer). Errors call the bytes `name` (a file's path) when given, else
// "the buffer".
std::string save_tobuffer(const std::vector<std::string>& names, const std::vector<NDArray>& arrays);
LoadedArrays load_frombuffer(std::string_view bytes, Context ctx = cpu(), const std::string& name = "");

}  // namespace mx::nd
