// Built-in benchmark suites. Each case is a network; a suite of single layers (unet-encoder) makes one
// one-layer network per case so every layer gets its own input size.
#pragma once

#include "compute/network.h"

#include <string>
#include <vector>

namespace convscope::cli {

struct BenchCase {
    std::string name;
    Network network;
};

std::vector<std::string> suiteNames();
// Throws InputError for an unknown suite.
std::vector<BenchCase> makeSuite(const std::string& name);

} // namespace convscope::cli
