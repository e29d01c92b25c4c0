#include "context/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

#include "context/error.hpp"

// Note [atomic replace]
// A file written in place (open with O_TRUNC, then write) is lost when the write fails half way:
// a full disk, a file size limit, a killed process. The user's last good file is then a partial
// one. So the bytes go to a new file in the same folder as the target (the same file system, so
// that rename() can move it), which is flushed with fsync() and then renamed over the target.
// POSIX rename() replaces the target atomically: a reader sees the old file or the new one. On any
// failure before the rename the temporary file is removed and the target was never touched. The
// folder is flushed after the rename, so that the new name survives a power loss; a failure there
// is not reported, since the new file is already in place.

namespace mx {
namespace {

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

std::string errno_text(int error) { return std::strerror(error); }

// Closes a file descriptor when it goes out of scope (release() hands it back).
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The file a write to `path` replaces: `path` itself, or the file it links to.
std::string write_target(const std::string& path, const char* op) {
  struct stat link_info {};
  if (::lstat(path.c_str(), &link_info) != 0 || !S_ISLNK(link_info.st_mode)) return path;
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  if (error) {
    throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": cannot resolve the symbolic link: " +
                    error.message());
  }
  return resolved.string();
}

// Creates a new, empty file next to `target`, named after it, with the permissions the umask
// allows (as a file made by std::ofstream). Returns its descriptor and sets `temp_path`.
int create_temp_beside(const std::string& path, const std::string& target, std::string& temp_path,
                       const char* op) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target_path(target);
  const std::filesystem::path folder = target_path.has_parent_path() ? target_path.parent_path() : ".";
  // ".net.params.tmp-<pid>-<n>", short enough for NAME_MAX.
  std::string stem(1, '.');
  stem.append(target_path.filename().string(), 0, 200);
  stem.append(".tmp-").append(std::to_string(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path = (folder / (stem + "-" + std::to_string(counter++))).string();
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    const int error = errno;
    if (error != EEXIST) {
      throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": cannot create a file in the folder " +
                      in_quotes(folder.string()) + ": " + errno_text(error));
    }
  }
  throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": no free temporary name in " +
                  in_quotes(folder.string()));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes, const char* op) {
  const std::string target = write_target(path, op);
  struct stat old_info {};
  const bool replaces = ::stat(target.c_str(), &old_info) == 0;
  if (replaces && S_ISDIR(old_info.st_mode)) {
    throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": it is a directory");
  }
  std::string temp_path;
  Descriptor file(create_temp_beside(path, target, temp_path, op));
  // Every failure from here on removes the temporary file and leaves the target as it was.
  const auto fail = [&](const std::string& what, int error) {
    ::close(file.release());
    ::unlink(temp_path.c_str());
    throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": " + what + ": " + errno_text(error) +
                    (replaces ? "; the existing file is unchanged" : "; no file was created"));
  };
  // A replaced file keeps its permissions (best effort: the data matters more than the mode).
  if (replaces) (void)::fchmod(file.get(), old_info.st_mode & 07777);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(file.get(), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      fail("writing failed after " + std::to_string(written) + " of " + std::to_string(bytes.size()) + " bytes",
           error);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(file.get()) != 0) {
    const int error = errno;
    fail("flushing " + std::to_string(bytes.size()) + " bytes to the disk failed", error);
  }
  const int fd = file.release();
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp_path.c_str());
    throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": closing the new file failed: " +
                    errno_text(error) + (replaces ? "; the existing file is unchanged" : "; no file was created"));
  }
  if (::rename(temp_path.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp_path.c_str());
    throw FileError(std::string(op) + ": cannot write " + in_quotes(path) + ": renaming " + in_quotes(temp_path) +
                    " over it failed: " + errno_text(error) +
                    (replaces ? "; the existing file is unchanged" : "; no file was created"));
  }
  const std::filesystem::path folder = std::filesystem::path(target).parent_path();
  const Descriptor dir(::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) (void)::fsync(dir.get());
}

std::string read_file(const std::string& path, const char* op) {
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    const int error = errno;
    throw FileError(std::string(op) + ": cannot open " + in_quotes(path) + ": " + errno_text(error));
  }
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) {
    const int error = errno;
    throw FileError(std::string(op) + ": cannot read " + in_quotes(path) + ": " + errno_text(error));
  }
  if (S_ISDIR(info.st_mode)) throw FileError(std::string(op) + ": " + in_quotes(path) + " is a directory, not a file");
  std::string bytes;
  try {
    if (S_ISREG(info.st_mode)) bytes.reserve(static_cast<std::size_t>(info.st_size));
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    const std::unique_ptr<char[]> chunk(new char[kChunk]);
    for (;;) {
      const ssize_t n = ::read(file.get(), chunk.get(), kChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        throw FileError(std::string(op) + ": cannot read " + in_quotes(path) + " after " + std::to_string(bytes.size()) +
                        " bytes: " + errno_text(error));
      }
      if (n == 0) break;
      bytes.append(chunk.get(), static_cast<std::size_t>(n));
    }
  } catch (const std::bad_alloc&) {
    throw FileError(std::string(op) + ": " + in_quotes(path) + " holds " + std::to_string(info.st_size) +
                    " bytes, more than this process can hold in memory");
  } catch (const std::length_error&) {
    throw FileError(std::string(op) + ": " + in_quotes(path) + " holds " + std::to_string(info.st_size) +
                    " bytes, more than a string can hold");
  }
  return bytes;
}

}  // namespace mx
