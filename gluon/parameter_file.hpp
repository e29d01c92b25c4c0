#pragma once
// Parameter files. save_parameters and ParameterDict::save write MXNet's NDArray file (nd::save,
// ndarray/io/ndarray_file.hpp): a dict of name -> array, as MXNet's save_parameters writes, so MXNet and
// ndgluon read each other's files. Loading also reads ndgluon's earlier format, told apart by
// its magic (little-endian):
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

#include "gluon/parameter.hpp"
#include "ndarray/core/array.hpp"

namespace mx::gluon {

// Writes entries, in order, as MXNet's NDArray file through mx::write_file_atomically: a failed
// save throws mx::FileError naming op, the path and the reason, and leaves a file already at path
// as it was.
void save_parameter_file(const std::string& path, const std::vector<std::pair<std::string, nd::NDArray>>& entries,
                         const char* op = "save_parameters");

// Reads the whole file onto cpu(0): MXNet's NDArray file with names (nd::load's errors), or
// ndgluon's earlier format. Throws mx::FileError naming the file and what is wrong (missing, a
// directory, unreadable, neither format's magic, truncated, checksum mismatch, an MXNet file of
// arrays without names), and for a bad entry also its record number (and name where the format
// puts it first); mx::DTypeError for an MXNet dtype that ndgluon lacks.
std::vector<std::pair<std::string, nd::NDArray>> load_parameter_file(const std::string& path,
                                                                     const char* op = "load_parameters");

// load_parameter_file of bytes already read; `source` names them in errors as the path does.
std::vector<std::pair<std::string, nd::NDArray>> load_parameter_bytes(const std::string& bytes,
                                                                      const std::string& source);

// ndgluon's earlier format (above), which save_parameters wrote before it wrote MXNet's. Kept so
// that files of it can still be made (the tests make them); nothing in the library writes it.
void save_ndgluon_parameter_file(const std::string& path,
                                 const std::vector<std::pair<std::string, nd::NDArray>>& entries);

// A parameter to load and the key it has in its owner's naming (a structural name in a Block,
// the full name in a ParameterDict).
struct ParameterSlot {
  std::string key;
  Parameter param;
};

// Loads the file's entries into slots, as load_parameters / ParameterDict::load do (MXNet's
// load_dict): entry_slots[j] are the slots that entries[j] fills (none: an extra entry). Checks
// everything first, so that a bad file changes nothing. Throws, naming op, the path and `owner`
// ("block 'mlp0'"): mx::FileError for a slot that no entry fills unless allow_missing (a slot whose
// parameter another slot fills counts as filled: shared parameters), an entry that fills no slot
// unless ignore_extra, two entries for one slot, or an entry without data (a none array);
// mx::ShapeError for a value whose shape or dtype does not fit its parameter (extents 0 are
// unknown and take the file's). Each parameter filled gets a copy on every context of ctxs.
void load_parameter_slots(const std::string& path, const char* op, const std::string& owner,
                          const std::vector<ParameterSlot>& slots,
                          const std::vector<std::pair<std::string, nd::NDArray>>& entries,
                          const std::vector<std::vector<std::size_t>>& entry_slots, const std::vector<Context>& ctxs,
                          bool allow_missing, bool ignore_extra);

}  // namespace mx::gluon
