#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QList>
#include <QPalette>

namespace Sandbox::Ui {

// One file's unified diff (`diff -u`, as agents.runChanges sends it) as a table: unified (old
// line number, new line number, the line) or side by side (old number and text, new number and
// text, a run of removed lines paired with the added lines that replace them). Added and removed
// lines get soft backgrounds of the palette's success and error tones; a line with a review
// comment is marked in its number column.
class DiffModel final : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum class Layout { Unified, SideBySide };
    enum Column { OldNumber, OldText, NewNumber, NewText }; // side by side
    enum UnifiedColumn { UnifiedOld, UnifiedNew, UnifiedText };
    enum Role { KindRole = Qt::UserRole + 1, LineRole };
    enum class Kind { Hunk, Context, Added, Removed, Empty };

    explicit DiffModel(QObject *parent = nullptr);

    void setDiff(const QString &unified);
    void setLayout(Layout layout);
    Layout layout() const { return m_layout; }
    void setPalette(const QPalette &palette);
    // Lines (in the file after the run, else before it) that carry a comment: marked.
    void setCommentedLines(const QSet<int> &newLines, const QSet<int> &oldLines);

    // The line at a cell: its number in the file after the run (new side) or before it (old
    // side); nullopt for a hunk header or an empty cell. `isNew` says which.
    std::optional<int> lineAt(const QModelIndex &index, bool *isNew) const;
    // The text of that line, without its +/-/space.
    QString textAt(const QModelIndex &index) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    struct Line
    {
        Kind kind = Kind::Empty;
        int oldNo = 0; // 0: none
        int newNo = 0;
        QString text;
    };
    struct Row
    {
        Line left;  // side by side: the old side; unified: the one line
        Line right; // side by side: the new side
    };
    void rebuild();

    QList<Line> m_lines;
    QList<Row> m_rows;
    Layout m_layout = Layout::Unified;
    QPalette m_palette;
    QSet<int> m_commentedNew;
    QSet<int> m_commentedOld;
};

} // namespace Sandbox::Ui
