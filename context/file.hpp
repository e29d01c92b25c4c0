#pragma once
// Whole files, read and written with every failure an mx::FileError that names the caller, the
// path and the reason. Every file the library writes goes through write_file_atomically, every
// file it reads whole through read_file.
//
//   mx::write_file_atomically("net.params", bytes, "save_parameters");
//   const std::string bytes = mx::read_file("net.params", "load_parameters");
#include <string>
#include <string_view>

namespace mx {

// Replaces the file at `path` with `bytes`, so that the path always holds either its old contents
// or all of the new ones, never a part (see the note in file.cpp). Throws mx::FileError naming `op`,
// `path` and the reason (a folder that does not exist, a full disk, a file size limit, ...); the old
// file is then untouched and no temporary file is left. A path that is a symbolic link replaces the
// file the link points to. A new file gets the permissions the umask allows; a replaced one keeps
// its permissions.
void write_file_atomically(const std::string& path, std::string_view bytes, const char* op);

// The whole contents of the file at `path`. Throws mx::FileError naming `op`, `path` and the reason:
// missing, a directory, unreadable, too large to hold in memory.
std::string read_file(const std::string& path, const char* op);

}  // namespace mx
