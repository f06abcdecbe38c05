#include "diffmodel.h"

#include "../common/uistyle.h"

#include <QRegularExpression>
#include <QSet>

namespace Sandbox::Ui {

DiffModel::DiffModel(QObject *parent)
    : QAbstractTableModel(parent)
{}

void DiffModel::setDiff(const QString &unified)
{
    m_lines.clear();
    static const QRegularExpression hunkRe(
        QStringLiteral("^@@ -(\\d+)(?:,(\\d+))? \\+(\\d+)(?:,(\\d+))? @@"));
    int oldNo = 0, newNo = 0;
    const QStringList lines = unified.split(u'\n');
    for (const QString &l : lines) {
        if (l.startsWith(QLatin1String("--- ")) || l.startsWith(QLatin1String("+++ ")))
            continue;
        if (l.startsWith(QLatin1String("@@"))) {
            const auto m = hunkRe.match(l);
            if (!m.hasMatch())
                continue;
            oldNo = m.captured(1).toInt();
            newNo = m.captured(3).toInt();
            // An empty side ("-0,0") starts at the line before the first.
            if (m.captured(2) == QLatin1String("0"))
                ++oldNo;
            if (m.captured(4) == QLatin1String("0"))
                ++newNo;
            m_lines.append({Kind::Hunk, 0, 0, l});
        } else if (l.startsWith(u'+')) {
            m_lines.append({Kind::Added, 0, newNo++, l.mid(1)});
        } else if (l.startsWith(u'-')) {
            m_lines.append({Kind::Removed, oldNo++, 0, l.mid(1)});
        } else if (l.startsWith(u' ')) {
            m_lines.append({Kind::Context, oldNo++, newNo++, l.mid(1)});
        } else if (l.startsWith(u'\\') && !m_lines.isEmpty()) {
            m_lines.last().text += tr("   (no newline at the end)"); // "\ No newline at end of file"
        }
    }
    rebuild();
}

void DiffModel::setLayout(Layout layout)
{
    if (layout == m_layout)
        return;
    m_layout = layout;
    rebuild();
}

void DiffModel::setPalette(const QPalette &palette)
{
    m_palette = palette;
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void DiffModel::setCommentedLines(const QSet<int> &newLines, const QSet<int> &oldLines)
{
    m_commentedNew = newLines;
    m_commentedOld = oldLines;
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void DiffModel::rebuild()
{
    beginResetModel();
    m_rows.clear();
    if (m_layout == Layout::Unified) {
        for (const Line &l : std::as_const(m_lines))
            m_rows.append({l, {}});
    } else {
        // A run of removed lines and the added lines after it share rows: before | after.
        for (qsizetype i = 0; i < m_lines.size();) {
            const Line &l = m_lines[i];
            if (l.kind == Kind::Hunk || l.kind == Kind::Context) {
                m_rows.append({l, l});
                ++i;
                continue;
            }
            QList<Line> removed, added;
            while (i < m_lines.size() && m_lines[i].kind == Kind::Removed)
                removed.append(m_lines[i++]);
            while (i < m_lines.size() && m_lines[i].kind == Kind::Added)
                added.append(m_lines[i++]);
            for (qsizetype k = 0; k < qMax(removed.size(), added.size()); ++k)
                m_rows.append({k < removed.size() ? removed[k] : Line{},
                               k < added.size() ? added[k] : Line{}});
        }
    }
    endResetModel();
}

int DiffModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int DiffModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : (m_layout == Layout::Unified ? 3 : 4);
}

std::optional<int> DiffModel::lineAt(const QModelIndex &index, bool *isNew) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return std::nullopt;
    const Row &row = m_rows[index.row()];
    const bool leftSide = m_layout == Layout::SideBySide && index.column() <= OldText;
    const Line &l = m_layout == Layout::Unified ? row.left : (leftSide ? row.left : row.right);
    if (l.kind == Kind::Hunk || l.kind == Kind::Empty)
        return std::nullopt;
    // A comment belongs to the file after the run where the line is there, else before it.
    if (l.newNo > 0 && !(leftSide && l.kind == Kind::Context)) {
        *isNew = true;
        return l.newNo;
    }
    *isNew = false;
    return l.oldNo > 0 ? std::optional<int>(l.oldNo) : std::nullopt;
}

QString DiffModel::textAt(const QModelIndex &index) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return {};
    const Row &row = m_rows[index.row()];
    const bool leftSide = m_layout == Layout::SideBySide && index.column() <= OldText;
    return (m_layout == Layout::Unified || leftSide ? row.left : row.right).text;
}

QVariant DiffModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return {};
    const Row &row = m_rows[index.row()];
    const int c = index.column();
    const bool unified = m_layout == Layout::Unified;
    const Line &l = unified ? row.left : (c <= OldText ? row.left : row.right);
    const bool numberColumn = unified ? (c == UnifiedOld || c == UnifiedNew)
                                      : (c == OldNumber || c == NewNumber);
    const bool oldNumber = unified ? c == UnifiedOld : c == OldNumber;
    if (role == KindRole)
        return int(l.kind);
    if (role == Qt::DisplayRole) {
        if (l.kind == Kind::Hunk)
            return (unified ? c == UnifiedText : (c == OldText || c == NewText)) ? l.text
                                                                                 : QVariant();
        if (numberColumn) {
            const int n = oldNumber ? l.oldNo : l.newNo;
            if (n <= 0)
                return {};
            const bool commented = oldNumber ? (l.newNo <= 0 && m_commentedOld.contains(n))
                                             : m_commentedNew.contains(n);
            return commented ? QStringLiteral("● %1").arg(n) : QString::number(n);
        }
        if (unified) {
            const QChar mark = l.kind == Kind::Added ? u'+' : l.kind == Kind::Removed ? u'-' : u' ';
            return QString(mark + l.text);
        }
        return l.text;
    }
    if (role == Qt::BackgroundRole) {
        switch (l.kind) {
        case Kind::Added:
            return Style::background(Style::Tone::Success, m_palette);
        case Kind::Removed:
            return Style::background(Style::Tone::Error, m_palette);
        case Kind::Hunk:
            return Style::background(Style::Tone::Info, m_palette);
        case Kind::Empty:
            return m_palette.color(QPalette::AlternateBase);
        case Kind::Context:
            return {};
        }
    }
    if (role == Qt::ForegroundRole) {
        if (numberColumn)
            return Style::color(Style::Tone::Muted, m_palette);
        if (l.kind == Kind::Hunk)
            return Style::color(Style::Tone::Info, m_palette);
        return {};
    }
    if (role == Qt::TextAlignmentRole && numberColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    if (m_layout == Layout::Unified)
        return section == UnifiedOld   ? tr("Before")
               : section == UnifiedNew ? tr("After")
                                       : QString();
    return section == OldNumber   ? QString()
           : section == OldText   ? tr("Before the turn")
           : section == NewNumber ? QString()
                                  : tr("After the turn");
}

} // namespace Sandbox::Ui
