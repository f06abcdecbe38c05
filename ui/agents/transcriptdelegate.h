#pragma once

#include <QHash>
#include <QStyledItemDelegate>

class QTextDocument;

namespace Sandbox::Ui {

// Paints one transcript row (see AgentTranscriptModel::Role) and measures it; a row with a widget
// of its own (an error card, the view's index widget) is as high as the widget wants. Heights are cached
// per row and width; the cache is dropped for rows that change and when the width changes.
class TranscriptDelegate final : public QStyledItemDelegate
{
    Q_OBJECT

public:
    explicit TranscriptDelegate(QObject *parent = nullptr);

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    // A row's widget (an error card) fills the row.
    void updateEditorGeometry(QWidget *editor, const QStyleOptionViewItem &option,
                              const QModelIndex &index) const override;

    void invalidate(int firstRow = -1, int lastRow = -1);
    // Whether a click at `pos` (in the row's rectangle `rect`) is on its header (toggles it).
    static bool isOnHeader(const QRect &rect, const QPoint &pos, const QFont &font);

private:
    struct Layout;
    Layout layoutFor(const QStyleOptionViewItem &option, const QModelIndex &index) const;
    std::unique_ptr<QTextDocument> documentFor(const QModelIndex &index, int width,
                                               const QFont &font, const QPalette &palette) const;

    mutable QHash<int, QPair<int, int>> m_heights; // row -> (width, height)
};

} // namespace Sandbox::Ui
