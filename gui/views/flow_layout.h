// A layout that places its items left to right and starts a new row when the next one would not fit, like words
// in a paragraph. The Run panel's algorithm check boxes use it: cuDNN has nine algorithms with long names, and a
// fixed grid either clipped them ("implicit_gen") or made the dock wider than a laptop screen.
#pragma once

#include <QLayout>
#include <QList>

namespace convscope::gui {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget* parent = nullptr, int spacing = 6);
    ~FlowLayout() override;

    void addItem(QLayoutItem* item) override;
    int count() const override { return int(m_items.size()); }
    QLayoutItem* itemAt(int index) const override { return m_items.value(index); }
    QLayoutItem* takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override { return place(QRect(0, 0, width, 0), false); }
    QSize minimumSize() const override;
    QSize sizeHint() const override;
    void setGeometry(const QRect& rect) override;

private:
    int place(const QRect& rect, bool apply) const; // returns the height used
    QList<QLayoutItem*> m_items;
    int m_space;
};

} // namespace convscope::gui
