#include "gui/views/message_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QToolButton>

namespace convscope::gui {

MessageBanner::MessageBanner(QWidget* parent)
    : QWidget(parent)
    , m_label(new QLabel(this))
{
    setObjectName(QStringLiteral("messageBanner"));
    setAttribute(Qt::WA_StyledBackground, true);
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(8, 4, 4, 4);
    m_label->setWordWrap(true);
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    row->addWidget(m_label, 1);
    auto* close = new QToolButton(this);
    close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    row->addWidget(close);
    connect(close, &QToolButton::clicked, this, &MessageBanner::dismiss);
    hide();
}

void MessageBanner::showError(const QString& text) { showMessage(text, true); }
void MessageBanner::showInfo(const QString& text) { showMessage(text, false); }
QString MessageBanner::text() const { return isHidden() ? QString() : m_label->text(); }

void MessageBanner::dismiss()
{
    m_label->clear();
    hide();
}

void MessageBanner::showMessage(const QString& text, bool error)
{
    setStyleSheet(error ? QStringLiteral("#messageBanner { background: #ffebee; border: 1px solid #e57373; }"
                                         " QLabel { color: #8e0000; }")
                        : QStringLiteral("#messageBanner { background: #e3f2fd; border: 1px solid #64b5f6; }"
                                         " QLabel { color: #0d47a1; }"));
    m_label->setText(text);
    show();
}

} // namespace convscope::gui
