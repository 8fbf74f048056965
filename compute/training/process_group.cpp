// ProcessGroup (distributed.h): the TCP rendezvous between the ranks, POSIX sockets. Rank 0 listens at MASTER_PORT
// on every address; each other rank connects to MASTER_ADDR:MASTER_PORT (retrying while rank 0 is not up yet) and
// introduces itself with a magic word, its rank and the world size. Messages are length-prefixed byte strings. Every
// wait polls with the time left, so nothing blocks past the timeout.
#include "compute/training/distributed.h"

#include "compute/error.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace convscope {

namespace {
    using Clock = std::chrono::steady_clock;
    constexpr uint32_t kMagic = 0x43534450; // "CSDP"

    std::string seconds(double s)
    {
        const std::string t = std::to_string(s);
        return t.substr(0, t.find('.') + 2) + " s";
    }

    Clock::time_point deadlineIn(double seconds)
    {
        return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    }

    double left(Clock::time_point deadline) { return std::chrono::duration<double>(deadline - Clock::now()).count(); }

    // Waits until fd is readable (or writable); false when the deadline passed.
    bool waitFor(int fd, short events, Clock::time_point deadline)
    {
        for (;;) {
            const double s = left(deadline);
            if (s <= 0)
                return false;
            pollfd p { fd, events, 0 };
            const int rc = ::poll(&p, 1, int(s * 1000) + 1);
            if (rc > 0)
                return true;
            if (rc < 0 && errno != EINTR)
                throw Error(std::string("rendezvous: poll failed: ") + std::strerror(errno));
        }
    }

    void putU32(std::string& s, uint32_t v)
    {
        for (int i = 0; i < 4; ++i)
            s.push_back(char((v >> (8 * i)) & 0xff));
    }
    uint32_t getU32(const std::string& s, size_t at)
    {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v |= uint32_t(uint8_t(s.at(at + size_t(i)))) << (8 * i);
        return v;
    }
} // namespace

ProcessGroup::ProcessGroup(DistributedEnv env, double timeoutSeconds)
    : m_env(std::move(env))
    , m_timeout(timeoutSeconds)
{
}

ProcessGroup::~ProcessGroup()
{
    for (int fd : m_fds)
        if (fd >= 0)
            ::close(fd);
}

void ProcessGroup::sendAll(int fd, const std::string& bytes, const std::string& peer)
{
    std::string msg;
    putU32(msg, uint32_t(bytes.size()));
    msg += bytes;
    const auto deadline = deadlineIn(m_timeout);
    size_t sent = 0;
    while (sent < msg.size()) {
        if (!waitFor(fd, POLLOUT, deadline))
            throw InputError(m_env.str() + ": " + peer + " took no data for " + seconds(m_timeout));
        const ssize_t n = ::send(fd, msg.data() + sent, msg.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            throw InputError(m_env.str() + ": the connection to " + peer + " broke (" + std::strerror(errno)
                + "); did that rank fail?");
        sent += size_t(n);
    }
}

std::string ProcessGroup::recvAll(int fd, const std::string& peer)
{
    const auto deadline = deadlineIn(m_timeout);
    std::string buf;
    size_t want = 4;
    bool header = true;
    while (buf.size() < want) {
        if (!waitFor(fd, POLLIN, deadline))
            throw InputError(m_env.str() + ": waited " + seconds(m_timeout) + " for " + peer
                + " and nothing came; is that rank still running?");
        std::array<char, 65536> chunk {};
        const ssize_t n = ::recv(fd, chunk.data(), std::min(chunk.size(), want - buf.size()), 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            throw InputError(m_env.str() + ": " + peer + " closed the connection"
                + (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : std::string()) + "; did that rank fail?");
        buf.append(chunk.data(), size_t(n));
        if (header && buf.size() == 4) {
            want = 4 + getU32(buf, 0);
            header = false;
        }
    }
    return buf.substr(4);
}

std::unique_ptr<ProcessGroup> ProcessGroup::rendezvous(const DistributedEnv& env, double timeoutSeconds)
{
    std::unique_ptr<ProcessGroup> g(new ProcessGroup(env, timeoutSeconds));
    const std::string where = env.masterAddr + ":" + std::to_string(env.masterPort);
    const auto deadline = deadlineIn(timeoutSeconds);
    if (env.worldSize == 1)
        return g;
    if (env.rank == 0) {
        g->m_fds.assign(size_t(env.worldSize), -1);
        // Every address, IPv6 with IPv4 mapped where the host has IPv6, else IPv4 alone.
        const auto listenAt = [&](bool v6) {
            const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0)
                return -1;
            const int one = 1, zero = 0;
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            int rc = 0;
            if (v6) {
                ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero); // IPv4 clients too
                sockaddr_in6 a {};
                a.sin6_family = AF_INET6;
                a.sin6_addr = in6addr_any;
                a.sin6_port = htons(uint16_t(env.masterPort));
                rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
            } else {
                sockaddr_in a {};
                a.sin_family = AF_INET;
                a.sin_addr.s_addr = htonl(INADDR_ANY);
                a.sin_port = htons(uint16_t(env.masterPort));
                rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
            }
            if (rc != 0 || ::listen(fd, env.worldSize) != 0) {
                const int err = errno;
                ::close(fd);
                errno = err;
                return -1;
            }
            return fd;
        };
        int listener = listenAt(true);
        if (listener < 0 && errno != EADDRINUSE)
            listener = listenAt(false);
        if (listener < 0)
            throw InputError(env.str() + ": cannot listen at port " + std::to_string(env.masterPort) + " ("
                + std::strerror(errno) + "); choose another MASTER_PORT");
        struct Closer {
            int fd;
            ~Closer() { ::close(fd); }
        } closer { listener };
        const int one = 1;
        int joined = 0;
        while (joined < env.worldSize - 1) {
            if (!waitFor(listener, POLLIN, deadline)) {
                std::string missing;
                for (int r = 1; r < env.worldSize; ++r)
                    if (g->m_fds[size_t(r)] < 0)
                        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
                throw InputError(env.str() + ": waited " + seconds(timeoutSeconds) + " at port "
                    + std::to_string(env.masterPort) + " and " + std::to_string(joined) + " of the "
                    + std::to_string(env.worldSize - 1) + " other ranks connected (missing: rank " + missing
                    + "); were they started with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?");
            }
            const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            std::string hello;
            try {
                hello = g->recvAll(fd, "a connecting rank");
            } catch (const InputError&) {
                ::close(fd);
                continue; // not one of ours (a port scanner, a stale client): keep waiting
            }
            if (hello.size() != 12 || getU32(hello, 0) != kMagic) {
                ::close(fd);
                continue;
            }
            const int r = int(getU32(hello, 4)), world = int(getU32(hello, 8));
            if (world != env.worldSize) {
                ::close(fd);
                throw InputError(env.str() + ": rank " + std::to_string(r) + " says WORLD_SIZE=" + std::to_string(world)
                    + " but this rank has " + std::to_string(env.worldSize));
            }
            if (r < 1 || r >= env.worldSize || g->m_fds[size_t(r)] >= 0) {
                ::close(fd);
                throw InputError(env.str() + ": two processes claim RANK=" + std::to_string(r)
                    + " (or it is out of range); every rank needs its own RANK");
            }
            g->m_fds[size_t(r)] = fd;
            ++joined;
        }
        return g;
    }
    // A non-zero rank: connect to rank 0, retrying while it is not listening yet.
    addrinfo hints {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string lastError = "no answer";
    for (;;) {
        addrinfo* res = nullptr;
        const int gai = ::getaddrinfo(env.masterAddr.c_str(), std::to_string(env.masterPort).c_str(), &hints, &res);
        if (gai != 0) {
            lastError = std::string("cannot resolve the address: ") + ::gai_strerror(gai);
        } else {
            for (addrinfo* a = res; a; a = a->ai_next) {
                const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
                if (fd < 0)
                    continue;
                int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
                if (rc != 0 && errno == EINPROGRESS) {
                    const auto step = std::min(deadline, deadlineIn(2));
                    int err = ETIMEDOUT;
                    if (waitFor(fd, POLLOUT, step)) {
                        socklen_t len = sizeof err;
                        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                    }
                    rc = err == 0 ? 0 : -1;
                    errno = err;
                }
                if (rc == 0) {
                    const int one = 1;
                    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    g->m_fds = { fd };
                    break;
                }
                if (errno != ETIMEDOUT || lastError == "no answer")
                    lastError = std::strerror(errno); // keep "Connection refused" over the last try's deadline
                ::close(fd);
            }
            ::freeaddrinfo(res);
        }
        if (!g->m_fds.empty())
            break;
        if (left(deadline) <= 0)
            throw InputError(env.str() + ": could not reach rank 0 at " + where + " within " + seconds(timeoutSeconds)
                + " (" + lastError + "); is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string hello;
    putU32(hello, kMagic);
    putU32(hello, uint32_t(env.rank));
    putU32(hello, uint32_t(env.worldSize));
    g->sendAll(g->m_fds[0], hello, "rank 0 at " + where);
    return g;
}

void ProcessGroup::broadcast(std::string& bytes)
{
    if (m_env.worldSize == 1)
        return;
    if (m_env.rank == 0) {
        for (int r = 1; r < m_env.worldSize; ++r)
            sendAll(m_fds[size_t(r)], bytes, "rank " + std::to_string(r));
        return;
    }
    bytes = recvAll(m_fds[0], "rank 0");
}

std::vector<std::string> ProcessGroup::gather(const std::string& bytes)
{
    if (m_env.rank != 0) {
        sendAll(m_fds[0], bytes, "rank 0");
        return {};
    }
    std::vector<std::string> all { bytes };
    for (int r = 1; r < m_env.worldSize; ++r)
        all.push_back(recvAll(m_fds[size_t(r)], "rank " + std::to_string(r)));
    return all;
}

void ProcessGroup::requireSame(const std::string& value, const std::string& what)
{
    if (m_env.worldSize == 1)
        return;
    const std::vector<std::string> all = gather(value);
    std::string verdict;
    for (size_t r = 1; r < all.size() && verdict.empty(); ++r)
        if (all[r] != value)
            verdict = "rank " + std::to_string(r) + " runs " + what + " \"" + all[r] + "\" but rank 0 runs \"" + value
                + "\"; start every rank with the same command";
    broadcast(verdict);
    if (!verdict.empty())
        throw InputError(m_env.str() + ": " + verdict);
}

} // namespace convscope
