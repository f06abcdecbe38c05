#include "elidedlabel.h"

#include <QPainter>
#include <QStyle>
#include <QStyleOption>

namespace Sandbox::Ui {

ElidedLabel::ElidedLabel(QWidget *parent)
    : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void ElidedLabel::setText(const QString &text)
{
    if (text == m_text)
        return;
    const bool wider = fontMetrics().horizontalAdvance(text)
                       != fontMetrics().horizontalAdvance(m_text);
    m_text = text;
    setToolTip(text);
    if (wider)
        updateGeometry();
    update();
}

void ElidedLabel::setAlignment(Qt::Alignment alignment)
{
    m_alignment = alignment;
    update();
}

QString ElidedLabel::shownText() const
{
    return fontMetrics().elidedText(m_text, Qt::ElideRight, contentsRect().width());
}

QSize ElidedLabel::sizeHint() const
{
    const QFontMetrics fm = fontMetrics();
    return {fm.horizontalAdvance(m_text) + 2, fm.height()};
}

QSize ElidedLabel::minimumSizeHint() const
{
    const QFontMetrics fm = fontMetrics();
    return {qMin(sizeHint().width(), fm.horizontalAdvance(u'x') * 6), fm.height()};
}

void ElidedLabel::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    QStyleOption option;
    option.initFrom(this);
    style()->drawItemText(&painter, contentsRect(), int(m_alignment), option.palette, isEnabled(),
                          shownText(), foregroundRole());
}

} // namespace Sandbox::Ui
