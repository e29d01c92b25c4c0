#pragma once
// The parameter file format of save_parameters / load_parameters (little-endian):
//
//   "NDGLUONP"  magic, 8 bytes
//   u32         format version (1)
//   u32         number of entries
//   per entry:  u32 name length, name bytes, u8 dtype, u32 ndim, i64 extents[ndim],
//               u64 byte count, the elements (row-major)
//   u32         CRC-32 (zlib) of every byte before it
#include <string>
#include <utility>
#include <vector>

#include "ndarray/array.hpp"

namespace mx::gluon {

// Writes entries to path through mx::write_file_atomically: a failed save throws mx::FileError
// naming the path and the reason, and leaves a file already at path as it was.
void save_parameter_file(const std::string& path, const std::vector<std::pair<std::string, nd::NDArray>>& entries);

// Reads the whole file onto cpu(0). Throws mx::FileError naming the file and what is wrong
// (missing, a directory, unreadable, bad magic, unknown version, truncated, checksum mismatch), and
// for a bad entry also its record number and name (an unknown dtype, negative extents, extents
// whose bytes overflow 63 bits, a byte count that does not fit the extents).
std::vector<std::pair<std::string, nd::NDArray>> load_parameter_file(const std::string& path);

}  // namespace mx::gluon
