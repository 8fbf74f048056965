#include "cli/text_table.h"

#include <algorithm>
#include <cstdio>

namespace convscope::cli {

namespace {
    size_t displayWidth(const std::string& s)
    {
        size_t n = 0;
        for (unsigned char c : s)
            if ((c & 0xC0) != 0x80)
                ++n;
        return n;
    }
} // namespace

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> rightAligned)
    : m_header(std::move(header))
    , m_right(std::move(rightAligned))
{
    m_right.resize(m_header.size(), false);
}

void TextTable::addRow(std::vector<std::string> cells)
{
    cells.resize(m_header.size());
    m_rows.push_back(std::move(cells));
}

void TextTable::addSeparator() { m_rows.emplace_back(); }

void TextTable::print(std::ostream& out) const
{
    std::vector<size_t> width(m_header.size());
    for (size_t c = 0; c < m_header.size(); ++c)
        width[c] = displayWidth(m_header[c]);
    for (const auto& row : m_rows)
        for (size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], displayWidth(row[c]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c) {
            const size_t pad = width[c] - displayWidth(cells[c]);
            const bool last = c + 1 == cells.size();
            if (m_right[c])
                text += std::string(pad, ' ') + cells[c];
            else
                text += cells[c] + (last ? "" : std::string(pad, ' '));
            if (!last)
                text += "  ";
        }
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        out << text << '\n';
    };
    auto rule = [&] {
        size_t total = 0;
        for (size_t w : width)
            total += w + 2;
        out << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
    };
    line(m_header);
    rule();
    for (const auto& row : m_rows) {
        if (row.empty())
            rule();
        else
            line(row);
    }
}

std::string fixedDigits(double v, int digits)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

} // namespace convscope::cli
