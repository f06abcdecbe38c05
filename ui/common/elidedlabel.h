#pragma once

#include <QWidget>

namespace Sandbox::Ui {

// One line of text that asks for its whole width, gives way when the row is short, and then
// ends in "…" (never cut in the middle of a letter); the whole text is in the tooltip.
class ElidedLabel final : public QWidget
{
    Q_OBJECT

public:
    explicit ElidedLabel(QWidget *parent = nullptr);

    void setText(const QString &text);
    QString text() const { return m_text; }
    // What is drawn now: the text, or its elided form.
    QString shownText() const;
    void setAlignment(Qt::Alignment alignment);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    QString m_text;
    Qt::Alignment m_alignment = Qt::AlignLeft | Qt::AlignVCenter;
};

} // namespace Sandbox::Ui
