// The main of the Catch2 test programs: Catch2's own options, plus the cross-backend test's filters (--op, --backend;
// see setCaseFilter in test_support.h). Without them, CONVSCOPE_TEST_OP and CONVSCOPE_TEST_BACKEND apply.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/test_support.h"

#include <cstdlib>

int main(int argc, char* argv[])
{
    Catch::Session session;
    std::string ops, backends;
    using Catch::clara::Opt;
    session.cli(session.cli()
        | Opt(ops, "kind[,kind...]")["--op"]("cross-backend test: only these layer kinds (\"graph\": the networks)")
        | Opt(backends, "backend[.algorithm][,...]")["--backend"]("cross-backend test: only these backends"));
    if (const int rc = session.applyCommandLine(argc, argv); rc != 0)
        return rc;
    const char* envOps = std::getenv("CONVSCOPE_TEST_OP");
    const char* envBackends = std::getenv("CONVSCOPE_TEST_BACKEND");
    convscope::test::setCaseFilter(
        ops.empty() && envOps ? envOps : ops, backends.empty() && envBackends ? envBackends : backends);
    return session.run();
}
