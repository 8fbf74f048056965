// launchLocalRanks (train_launcher.h): fork and exec this program once per rank with torchrun's environment. The
// command line is this process's own (/proc/self/cmdline) without --nproc-per-node, with --distributed; the program
// is /proc/self/exe, so the ranks run exactly this binary.
#include "cli/train_launcher.h"

#include "compute/error.h"
#include "compute/training/distributed.h"

#include "convscope_config.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace convscope::cli {

namespace {
    std::vector<std::string> launcherOwnArgs()
    {
        std::ifstream f("/proc/self/cmdline", std::ios::binary);
        const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        std::vector<std::string> args;
        for (size_t at = 0; at < all.size();) {
            const size_t end = all.find('\0', at);
            args.push_back(all.substr(at, end - at));
            at = end == std::string::npos ? all.size() : end + 1;
        }
        std::vector<std::string> out;
        for (size_t i = 0; i < args.size(); ++i) {
            if (args[i] == "--nproc-per-node") {
                ++i; // and its value
                continue;
            }
            if (args[i].rfind("--nproc-per-node=", 0) == 0 || args[i] == "--distributed")
                continue;
            out.push_back(args[i]);
        }
        out.push_back("--distributed");
        return out;
    }

    // A port free now on the loopback (bound to 0 and read back); MASTER_PORT from the environment wins.
    int launcherFreePort()
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a {};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0
            || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            if (fd >= 0)
                ::close(fd);
            return 29500; // torchrun's default
        }
        ::close(fd);
        return ntohs(a.sin_port);
    }

    int exitStatus(int status)
    {
        if (WIFEXITED(status))
            return WEXITSTATUS(status);
        return 1; // killed by a signal
    }
} // namespace

int launchLocalRanks(int nproc)
{
    if (nproc < 1)
        throw InputError("--nproc-per-node " + std::to_string(nproc) + ": at least one rank");
    const std::vector<std::string> args = launcherOwnArgs();
    const char* envPort = std::getenv("MASTER_PORT");
    const std::string port = envPort && *envPort ? envPort : std::to_string(launcherFreePort());
    const char* envAddr = std::getenv("MASTER_ADDR");
    const std::string addr = envAddr && *envAddr ? envAddr : "127.0.0.1";
    std::cerr << "starting " << nproc << " ranks (rendezvous at " << addr << ":" << port << ")\n";
    std::vector<pid_t> pids;
    for (int r = 0; r < nproc; ++r) {
        const pid_t pid = ::fork();
        if (pid < 0)
            throw Error(std::string("--nproc-per-node: fork failed: ") + std::strerror(errno));
        if (pid == 0) {
            ::setenv("RANK", std::to_string(r).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
            ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
            ::setenv("MASTER_ADDR", addr.c_str(), 1);
            ::setenv("MASTER_PORT", port.c_str(), 1);
            ::setenv("NCCL_NVLS_ENABLE", "0", 0);
            std::vector<char*> argv;
            for (const std::string& a : args)
                argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv("/proc/self/exe", argv.data());
            std::cerr << "rank " << r << ": cannot start /proc/self/exe: " << std::strerror(errno) << "\n";
            ::_exit(127);
        }
        pids.push_back(pid);
    }
    int result = 0;
    size_t running = pids.size();
    std::vector<char> done(pids.size(), 0);
    while (running > 0) {
        for (size_t r = 0; r < pids.size(); ++r) {
            if (done[r])
                continue;
            int status = 0;
            const pid_t got = ::waitpid(pids[r], &status, WNOHANG);
            if (got == 0)
                continue;
            done[r] = 1;
            --running;
            const int rc = got < 0 ? 1 : exitStatus(status);
            if (rc != 0 && result == 0) {
                result = rc;
                std::cerr << "rank " << r << " failed (exit status " << rc << "); stopping the other ranks\n";
                for (size_t o = 0; o < pids.size(); ++o)
                    if (!done[o])
                        ::kill(pids[o], SIGTERM);
            }
        }
        if (running > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return result;
}

void addDistributedOptions(CLI::App* cmd, DistributedArgs& a)
{
    cmd->add_flag("--distributed", a.distributed,
        "data parallel with NCCL (the GPU backends: cudnn, cuda): this process is one rank, as torchrun starts them "
        "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); the batch is split among the ranks");
    cmd->add_option("--nproc-per-node", a.nprocPerNode,
        "start this many ranks of this command on this host (one per GPU), like torchrun, and merge their reports");
    cmd->add_option("--rendezvous-timeout", a.rendezvousTimeout,
           "seconds a rank waits for the others (the rendezvous, NCCL's setup, each step's all-reduce)")
        ->capture_default_str();
}

std::optional<int> launchRanksIfAsked(const DistributedArgs& a)
{
    if ((a.distributed || a.nprocPerNode > 0) && !CONVSCOPE_WITH_NCCL)
        throw UnsupportedError(std::string("--distributed is unavailable: ") + CONVSCOPE_NCCL_WHY);
    if (a.nprocPerNode != 0)
        return launchLocalRanks(a.nprocPerNode);
    if (!(a.rendezvousTimeout > 0))
        throw InputError("--rendezvous-timeout must be a positive number of seconds");
    return std::nullopt;
}

std::shared_ptr<ProcessGroup> joinRanksIfAsked(const DistributedArgs& a)
{
    if (!a.distributed)
        return nullptr;
    const DistributedEnv env = parseDistributedEnv();
    // Every rank of a host drives the GPU its local rank names; NVLink multicast off unless set.
    // (A launcher that gives each rank one GPU through CUDA_VISIBLE_DEVICES leaves it device 0.)
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const bool oneVisible = visible && *visible && !std::strchr(visible, ',');
    ::setenv("CONVSCOPE_CUDA_DEVICE", oneVisible ? "0" : std::to_string(env.localRank).c_str(), 1);
    ::setenv("NCCL_NVLS_ENABLE", "0", 0);
    return ProcessGroup::rendezvous(env, a.rendezvousTimeout);
}

} // namespace convscope::cli
