#include "compute/atomic_file.h"

#include "compute/error.h"
#include "compute/memory_budget.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

namespace convscope {

namespace {

    std::string errnoText(int err) { return std::strerror(err); }

    // Closes the descriptor and removes the temporary file unless the rename happened.
    struct TempFile {
        int fd = -1;
        std::filesystem::path path;
        bool committed = false;
        ~TempFile()
        {
            if (fd >= 0)
                ::close(fd);
            if (!committed && !path.empty()) {
                std::error_code ec;
                std::filesystem::remove(path, ec);
            }
        }
    };

} // namespace

void writeFileAtomically(const std::filesystem::path& path, const std::string& bytes)
{
    // The temporary lives in the target's folder: rename() is atomic only within one file system.
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::random_device rd;
    TempFile tmp;
    for (int attempt = 0; attempt < 16 && tmp.fd < 0; ++attempt) {
        tmp.path = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(rd()));
        tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (tmp.fd < 0 && errno != EEXIST) {
            const int err = errno;
            tmp.path.clear();
            throw Error("cannot write " + path.string() + ": " + errnoText(err));
        }
    }
    if (tmp.fd < 0) {
        tmp.path.clear();
        throw Error("cannot write " + path.string() + ": no free temporary file name");
    }

    const char* p = bytes.data();
    size_t left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(tmp.fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            throw Error("cannot write " + path.string() + ": " + errnoText(errno));
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    // Data must be on disk before the rename makes it visible, or a crash could leave an empty file
    // under the real name.
    if (::fsync(tmp.fd) != 0)
        throw Error("cannot write " + path.string() + ": " + errnoText(errno));
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0)
        throw Error("cannot write " + path.string() + ": " + errnoText(errno));
    if (std::rename(tmp.path.c_str(), path.c_str()) != 0)
        throw Error("cannot write " + path.string() + ": " + errnoText(errno));
    tmp.committed = true;

    // Make the rename itself durable; failing here loses nothing already written, so it is best effort.
    const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd >= 0) {
        ::fsync(dirFd);
        ::close(dirFd);
    }
}

std::string readFile(const std::filesystem::path& path, const std::string& what)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError("cannot read " + what + ": it is a folder");
    // Only regular files: a path in a network file could name /dev/zero, /dev/stdin or a FIFO, and reading one
    // of those never ends (or blocks). The size is checked against the memory budget before it is read.
    const auto status = std::filesystem::status(path, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw InputError("cannot read " + what + ": not a regular file (a device, a pipe or a socket)");
    if (!ec && std::filesystem::is_regular_file(status)) {
        const auto size = std::filesystem::file_size(path, ec);
        if (!ec)
            checkHostAllocation(int64_t(size), "reading " + what);
    }
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        throw InputError("cannot read " + what + ": " + (err ? errnoText(err) : std::string("cannot open file")));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw InputError("cannot read " + what + ": read error");
    return std::move(ss).str();
}

std::string safeFileName(const std::string& name)
{
    std::string out;
    for (char c : name)
        out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
    while (!out.empty() && out.front() == '.')
        out.erase(out.begin());
    return out.empty() ? "layer" : out;
}

} // namespace convscope
