#include "gui/document/axis_names.h"

#include <algorithm>
#include <initializer_list>

namespace convscope::gui {

namespace {
    // "₁₂" for the path "12".
    std::string subscript(const std::string& path)
    {
        std::string s;
        for (const char c : path) {
            s += "\xE2\x82"; // U+2080 + digit
            s += char(0x80 + (c - '0'));
        }
        return s;
    }

    // One whole piece when `a` is every piece of one named axis (in any order), else `a` as it is.
    AxisName joined(AxisName a)
    {
        if (a.pieces.size() < 2 || !a.known())
            return a;
        const std::string& name = a.pieces.front().name;
        const int64_t whole = a.pieces.front().whole;
        int64_t product = 1;
        for (const AxisPiece& p : a.pieces) {
            if (p.name != name || p.whole != whole)
                return a;
            product *= p.size;
        }
        return product == whole ? AxisName::named(name, whole) : a;
    }
} // namespace

bool AxisName::known() const
{
    return !pieces.empty()
        && std::none_of(pieces.begin(), pieces.end(), [](const AxisPiece& p) { return p.name.empty(); });
}

int64_t AxisName::size() const
{
    int64_t s = 1;
    for (const AxisPiece& p : pieces)
        s *= p.size;
    return s;
}

std::string AxisName::text(size_t position) const
{
    if (!known())
        return "d" + std::to_string(position);
    const AxisName a = joined(*this);
    // Pieces of size 1 say nothing about a merge ("C·H·W" of [C, 1, 1] is C), unless there is nothing else.
    const bool skipOnes = std::any_of(a.pieces.begin(), a.pieces.end(), [](const AxisPiece& p) { return p.size > 1; });
    std::string s;
    for (const AxisPiece& p : a.pieces) {
        if (skipOnes && p.size == 1)
            continue;
        s += (s.empty() ? "" : "·") + p.name + subscript(p.path);
    }
    return s;
}

bool AxisName::is(const std::string& name) const
{
    return pieces.size() == 1 && pieces.front().name == name && pieces.front().path.empty();
}

AxisNames unknownAxes(const std::vector<int64_t>& dims)
{
    AxisNames names;
    for (const int64_t d : dims)
        names.push_back(AxisName::unknown(d));
    return names;
}

AxisNames inputAxes(const Shape& input)
{
    const std::vector<int64_t> dims = input.dims();
    auto named = [&dims](std::initializer_list<const char*> list) {
        AxisNames names;
        size_t i = 0;
        for (const char* n : list) {
            names.push_back(AxisName::named(n, dims[i]));
            ++i;
        }
        return names;
    };
    if (input.ndim() == 2)
        return named({ "N", "features" });
    if (input.isImage())
        return named({ "N", "C", "H", "W" });
    if (input.isVolume())
        return named({ "N", "C", "D", "H", "W" });
    AxisNames names = unknownAxes(dims);
    names.front() = AxisName::named("N", dims.front());
    return names;
}

AxisNames reshapedAxes(const AxisNames& names, const std::vector<int64_t>& dims)
{
    // The input's pieces in memory order; an axis of size 1 is one piece of size 1 that carries its name.
    std::vector<AxisPiece> pieces;
    for (size_t i = 0; i < names.size(); ++i) {
        const AxisName& a = names[i];
        if (a.size() == 1) {
            pieces.push_back({ a.known() ? a.text(i) : std::string(), 1, 1, "" });
            continue;
        }
        for (const AxisPiece& p : a.pieces)
            if (p.size > 1)
                pieces.push_back(a.known() ? p : AxisPiece { "", p.size, p.size, "" });
    }
    AxisNames out;
    size_t q = 0;
    bool lost = false;
    for (const int64_t o : dims) {
        if (lost) {
            out.push_back(AxisName::unknown(o));
            continue;
        }
        if (o == 1) { // a size-1 axis keeps a size-1 input axis's name; a new one (unsqueeze) is unknown
            if (q < pieces.size() && pieces[q].size == 1)
                out.push_back({ { pieces[q++] } });
            else
                out.push_back(AxisName::unknown(1));
            continue;
        }
        AxisName a;
        int64_t need = o;
        while (need > 1) {
            if (q >= pieces.size()) {
                lost = true;
                break;
            }
            AxisPiece& p = pieces[q];
            if (p.size == 1) {
                ++q; // squeezed away
            } else if (need % p.size == 0) {
                a.pieces.push_back(p);
                need /= p.size;
                ++q;
            } else if (p.size % need == 0) { // this axis takes the leading part of the piece
                AxisPiece lead = p;
                lead.size = need;
                lead.path += '1';
                a.pieces.push_back(lead);
                p.size /= need;
                p.path += '2';
                need = 1;
            } else {
                lost = true;
            }
            if (lost)
                break;
        }
        out.push_back(lost ? AxisName::unknown(o) : joined(std::move(a)));
    }
    return out;
}

AxisNames permutedAxes(const AxisNames& names, const std::vector<int64_t>& perm)
{
    AxisNames out;
    for (const int64_t p : perm)
        out.push_back(p >= 0 && size_t(p) < names.size() ? names[size_t(p)] : AxisName {});
    return out;
}

AxisNames fittedAxes(const AxisNames& names, const std::vector<int64_t>& dims)
{
    if (names.size() != dims.size())
        return unknownAxes(dims);
    AxisNames out;
    for (size_t i = 0; i < dims.size(); ++i) {
        const AxisName& a = names[i];
        if (!a.pieces.empty() && a.size() == dims[i])
            out.push_back(a);
        else
            out.push_back(a.known() ? AxisName::named(a.text(i), dims[i]) : AxisName::unknown(dims[i]));
    }
    return out;
}

std::string axesText(const AxisNames& names)
{
    std::string s;
    for (size_t i = 0; i < names.size(); ++i)
        s += (i ? ", " : "") + names[i].text(i);
    return s;
}

std::string shapeWithAxes(const Shape& shape, const AxisNames& names)
{
    const std::vector<int64_t> dims = shape.dims();
    std::string s;
    for (const int64_t d : dims)
        s += (s.empty() ? "" : "×") + std::to_string(d);
    const bool fits = names.size() == dims.size()
        && std::any_of(names.begin(), names.end(), [](const AxisName& a) { return a.known(); });
    return fits ? s + " (" + axesText(names) + ")" : s;
}

} // namespace convscope::gui
