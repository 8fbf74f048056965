// Built-in benchmark suites. Each case is a network; a suite of single layers (unet-encoder) makes one
// one-layer network per case so every layer gets its own input size.
#pragma once

#include "compute/backend.h"
#include "compute/interpolation.h"
#include "compute/network.h"
#include "compute/training/train_run.h"

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
// The "norms" suite (bench_suites_norm.cpp): layer_norm, group_norm and instance_norm on 256 MiB tensors.
std::vector<BenchCase> normCases();
// Throws InputError for an unknown suite.
std::vector<BenchCase> makeSuite(const std::string& name);

// The lecture's workload (suite "lecture-interpolation", and interpolate --lecture): `inputs` chair variants encoded
// as one batch, every ordered pair (or the first `pairs`) interpolated in `steps` and decoded in each mode on each
// selection; prints the table and returns the exit status (3 when a selection is unsupported).
int runLectureTable(const Network& net, const std::string& at, const std::vector<Selection>& selections,
    const SessionOptions& session, int inputs, int64_t pairs, int steps, const std::vector<DecodeMode>& modes);

// `bench --train` (bench_train.cpp): every chosen case runs the training step on each selection (trainNetwork, from the
// same weights, `warmup` untimed steps then `steps` timed ones) with a reproducible target (class n mod C for ce,
// values in [0, 1) otherwise); prints each layer's forward / backward-data / backward-weights / update medians per
// selection, each case's whole step with its ratio against the first selection, and writes --report (.csv, .json,
// .md) and --json.
struct TrainBenchOptions {
    std::string title; // the suite or the network file
    std::vector<Selection> selections;
    SessionOptions session;
    std::string loss = "mse", optimizer = "sgd";
    double lr = 0.001;
    int warmup = 1, steps = 10;
    std::string report, json;
};
int runTrainBench(std::vector<BenchCase> cases, const std::vector<size_t>& chosen, const TrainBenchOptions& options);

} // namespace convscope::cli
