// `convscope-cli algos NET.json [--math fp32|tf32] [--option layout=nhwc] [--option workspace_limit=BYTES]`:
// cuDNN's algorithm explorer, one table per conv2d layer — every forward algorithm with its status (or cuDNN's
// reason it cannot run the layer), our median time, cuDNN's own Find time, workspace, determinism and math
// type, and which one cudnn.auto picks. `--suite unet-encoder [--cases 0-2]` explores a built-in suite instead
// of a file; `--json FILE` keeps the explorer's documents. The explorer lives in the cudnn module
// (Backend::explore), so this file needs no cuDNN header and works, with a clear message, where it is absent.
#include "cli/bench_suites.h"
#include "cli/commands.h"
#include "cli/run_support.h"
#include "cli/text_table.h"
#include "compute/materialize.h"

#include "compute/atomic_file.h"
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/shape_inference.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <set>

namespace convscope::cli {

namespace {
    struct AlgosArgs {
        std::string network, suite, cases, math = "fp32", json, layer;
        int64_t batch = 0;
        std::vector<std::string> options;
    };

    // "1-3", "0,2,5" or empty (all).
    std::set<size_t> parseCaseList(const std::string& text, size_t count)
    {
        std::set<size_t> out;
        if (text.empty()) {
            for (size_t i = 0; i < count; ++i)
                out.insert(i);
            return out;
        }
        size_t pos = 0;
        while (pos <= text.size()) {
            const size_t comma = std::min(text.find(',', pos), text.size());
            const std::string item = text.substr(pos, comma - pos);
            try {
                const size_t dash = item.find('-');
                const size_t lo = std::stoul(item.substr(0, dash));
                const size_t hi = dash == std::string::npos ? lo : std::stoul(item.substr(dash + 1));
                for (size_t i = lo; i <= hi; ++i) {
                    if (i >= count)
                        throw InputError("--cases " + text + ": case " + std::to_string(i) + " does not exist (0-"
                            + std::to_string(count - 1) + ")");
                    out.insert(i);
                }
            } catch (const InputError&) {
                throw;
            } catch (const std::exception&) {
                throw InputError("--cases " + text + ": expected e.g. 1-3 or 0,2,5");
            }
            pos = comma + 1;
        }
        return out;
    }

    std::string fixed(const nlohmann::json& v, int digits)
    {
        if (!v.is_number())
            return "—";
        char b[32];
        std::snprintf(b, sizeof b, "%.*f", digits, v.get<double>());
        return b;
    }

    std::string bytes(const nlohmann::json& v)
    {
        if (!v.is_number())
            return "—";
        const double b = v.get<double>();
        char s[32];
        if (b < 1024 * 1024)
            std::snprintf(s, sizeof s, "%.0f KiB", b / 1024);
        else
            std::snprintf(s, sizeof s, "%.1f MiB", b / (1024 * 1024));
        return s;
    }

    void printExploration(std::ostream& out, const std::string& caseName, const nlohmann::json& doc)
    {
        // conv2d documents list two numbers per size and four paddings, conv3d ones three and six.
        const auto dims = [](const nlohmann::json& v, const char* sep) {
            std::string text;
            for (size_t k = 0; k < v.size(); ++k)
                text += (k ? sep : "") + v[k].dump();
            return text;
        };
        out << caseName << "L" << doc["layer"].get<size_t>() << " " << doc["name"].get<std::string>() << ": "
            << doc.value("type", "conv2d") << " " << doc["input"].get<std::string>() << " → "
            << doc["output"].get<std::string>() << ", kernel " << dims(doc["kernel"], "×") << ", stride "
            << dims(doc["stride"], "×") << ", dilation " << dims(doc["dilation"], "×") << ", padding ["
            << dims(doc["padding"], ", ") << "], groups " << doc["groups"] << "\n";
        out << "  cuDNN " << doc["cudnn"].get<std::string>() << ", math " << doc["math"].get<std::string>()
            << ", layout " << doc["layout"].get<std::string>() << ", workspace limit "
            << bytes(doc["workspace_limit_bytes"]) << (doc["pad_step"].get<bool>() ? ", explicit pad step first" : "")
            << "; time = median of " << doc["timed_runs"] << " runs (CUDA events), find = cuDNN's Find\n";
        TextTable t({ "algorithm", "status", "time ms", "find ms", "workspace", "deterministic", "math", "reason" },
            { false, false, true, true, true, false, false, false });
        for (const auto& a : doc["algorithms"]) {
            const std::string name = a["algorithm"].get<std::string>() + (a.value("auto_choice", false) ? " *" : "");
            t.addRow({ name, a.value("status", "?"), fixed(a.value("time_ms", nlohmann::json()), 4),
                fixed(a.value("find_ms", nlohmann::json()), 4), bytes(a.value("workspace_bytes", nlohmann::json())),
                a.value("deterministic", "—"), a.value("math", "—"), a.value("reason", "") });
        }
        t.print(out);
        const std::string choice = doc.value("auto_choice", "");
        out << "  * cudnn.auto picks " << (choice.empty() ? "(nothing: implicit_gemm fallback)" : choice) << "\n\n";
    }
} // namespace

Command addAlgosCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("algos", "cuDNN's algorithm explorer: every conv2d and conv3d algorithm per layer");
    auto a = std::make_shared<AlgosArgs>();
    cmd->add_option("network", a->network, "network file (.json) or ONNX model (.onnx)");
    addBatchOption(cmd, a->batch);
    cmd->add_option("--suite", a->suite, "a built-in suite instead of a file (unet-encoder, lenet5, weak-shapes)");
    cmd->add_option("--cases", a->cases, "which cases of the suite, e.g. 0-2");
    cmd->add_option("--layer", a->layer, "only this layer (name or index)");
    cmd->add_option("--math", a->math, kMathModeHelp)->capture_default_str();
    cmd->add_option("--option", a->options, "backend option KEY=VALUE (layout=nchw|nhwc, workspace_limit=BYTES)");
    cmd->add_option("--json", a->json, "write the explorer's documents as JSON");
    return [a]() {
        if (a->network.empty() == a->suite.empty())
            throw InputError("algos needs either a network file or --suite");
        SessionOptions options;
        options.math = parseMathMode(a->math);
        options.extra = parseBackendOptions(a->options);
        std::vector<BenchCase> cases;
        if (!a->suite.empty()) {
            cases = makeSuite(a->suite);
        } else {
            Network n = openNetwork(a->network, a->batch);
            cases.push_back({ "", std::move(n) });
        }
        const auto chosen = parseCaseList(a->suite.empty() ? "" : a->cases, cases.size());

        auto backend = BackendRegistry::instance().find("cudnn");
        if (!backend)
            throw UnsupportedError("the cudnn backend is not registered");
        const Availability av = backend->availability();
        if (!av.available)
            throw UnsupportedError("cudnn is unavailable: " + av.reason);

        nlohmann::json all = { { "format", "convscope-algos" }, { "version", 1 }, { "math", a->math },
            { "layers", nlohmann::json::array() } };
        int convLayers = 0;
        for (size_t c : chosen) {
            Network& net = cases[c].network;
            const ShapeReport shapes = inferShapes(net);
            if (!shapes.ok())
                throw InputError(net.name + ": " + shapes.firstError());
            materializeParameters(net, shapes);
            const std::string caseName
                = a->suite.empty() ? "" : "case " + std::to_string(c) + " (" + cases[c].name + ") ";
            for (size_t i = 0; i < net.layers.size(); ++i) {
                if (!std::holds_alternative<Conv2d>(net.layers[i].spec)
                    && !std::holds_alternative<Conv3d>(net.layers[i].spec))
                    continue;
                if (!a->layer.empty() && a->layer != net.layers[i].name && a->layer != std::to_string(i))
                    continue;
                const std::string text = backend->explore(net, shapes, i, options);
                if (text.empty())
                    continue;
                nlohmann::json doc = nlohmann::json::parse(text);
                printExploration(std::cout, caseName, doc);
                if (!caseName.empty())
                    doc["case"] = cases[c].name;
                all["layers"].push_back(std::move(doc));
                ++convLayers;
            }
        }
        if (convLayers == 0)
            std::cout << "no conv2d or conv3d layer to explore\n";
        if (!a->json.empty())
            writeFileAtomically(a->json, all.dump(2) + "\n");
        return 0;
    };
}

} // namespace convscope::cli
