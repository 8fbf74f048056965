// Built-in benchmark suites. Each case is a network; a suite of single layers (unet-encoder) makes one
// one-layer network per case so every layer gets its own input size.
#pragma once

#include "compute/backend.h"
#include "compute/interpolation.h"
#include "compute/network.h"

#include <string>
#include <vector>

namespace convscope::cli {

struct BenchCase {
    std::string name;
    Network network;
};

std::vector<std::string> suiteNames();
// The lecture's autoencoder (resources/networks/autoencoder3d.json, built here so a suite needs no file) for a batch.
Network autoencoder3dNetwork(int64_t batch);
// Throws InputError for an unknown suite.
std::vector<BenchCase> makeSuite(const std::string& name);

// The lecture's workload (suite "lecture-interpolation", and interpolate --lecture): `inputs` chair variants encoded
// as one batch, every ordered pair (or the first `pairs`) interpolated in `steps` and decoded in each mode on each
// selection; prints the table and returns the exit status (3 when a selection is unsupported).
int runLectureTable(const Network& net, const std::string& at, const std::vector<Selection>& selections,
    const SessionOptions& session, int inputs, int64_t pairs, int steps, const std::vector<DecodeMode>& modes);

} // namespace convscope::cli
