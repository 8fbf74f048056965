#include "gui/document/class_prediction.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace convscope::gui {

std::vector<ClassScore> topClasses(const Tensor& out, int64_t item, const std::vector<std::string>& labels, int k)
{
    const Shape& s = out.shape();
    if (!s.flat || s.c < 2 || item < 0 || item >= s.n)
        return {};
    const float* v = out.data() + item * s.c;
    std::vector<double> p(v, v + s.c);
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    const bool probabilities
        = std::all_of(p.begin(), p.end(), [](double x) { return x >= 0; }) && std::fabs(sum - 1) < 1e-3;
    if (!probabilities) {
        const double top = *std::max_element(p.begin(), p.end());
        double z = 0;
        for (double& x : p)
            z += (x = std::exp(x - top));
        for (double& x : p)
            x /= z;
    }
    std::vector<int> order(size_t(s.c));
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(size_t(std::max(k, 1)), order.size());
    std::partial_sort(
        order.begin(), order.begin() + long(n), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    std::vector<ClassScore> scores;
    for (size_t i = 0; i < n; ++i) {
        const int c = order[i];
        scores.push_back({ c, size_t(c) < labels.size() ? labels[size_t(c)] : std::string(), p[size_t(c)] });
    }
    return scores;
}

} // namespace convscope::gui
