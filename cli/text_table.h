// Plain-text tables for the terminal: columns sized by their widest cell (counted in UTF-8 code points, so
// "⌊" and "→" line up), numbers right-aligned.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace convscope::cli {

// `v` with `digits` decimals ("%.*f"), the way every table of the CLI writes its numbers.
std::string fixedDigits(double v, int digits);

class TextTable {
public:
    explicit TextTable(std::vector<std::string> header, std::vector<bool> rightAligned = {});
    void addRow(std::vector<std::string> cells);
    void addSeparator();
    void print(std::ostream& out) const;

private:
    std::vector<std::string> m_header;
    std::vector<bool> m_right;
    std::vector<std::vector<std::string>> m_rows; // an empty row is a separator
};

} // namespace convscope::cli
