#include "transcriptdelegate.h"

#include "../common/uistyle.h"

#include "agenttranscriptmodel.h"

#include <QAbstractItemView>
#include <QAbstractTextDocumentLayout>
#include <QFontDatabase>
#include <QPainter>
#include <QTextDocument>

namespace Sandbox::Ui {

namespace {

constexpr int kPad = 6;
constexpr int kIndent = 14;
constexpr int kMargin = 2; // around a row's content
using Kind = AgentTranscriptModel::Kind;

QWidget *rowWidget(const QStyleOptionViewItem &option, const QModelIndex &index)
{
    const auto *view = qobject_cast<const QAbstractItemView *>(option.widget);
    return view ? view->indexWidget(index) : nullptr;
}

QString diffHtml(const QString &diff, const QPalette &palette)
{
    using namespace Style;
    const QString added = QStringLiteral("<span style=\"background:%1;color:%2\">")
                              .arg(htmlColor(background(Tone::Success, palette)),
                                   htmlColor(color(Tone::Success, palette)));
    const QString removed = QStringLiteral("<span style=\"background:%1;color:%2\">")
                                .arg(htmlColor(background(Tone::Error, palette)),
                                     htmlColor(color(Tone::Error, palette)));
    const QString hunk
        = QStringLiteral("<span style=\"color:%1\">").arg(htmlColor(color(Tone::Info, palette)));
    QString html = QStringLiteral("<pre style=\"margin:0\">");
    QStringList lines = diff.split(u'\n');
    while (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    for (const QString &line : std::as_const(lines)) {
        const QString esc = line.toHtmlEscaped();
        if (line.startsWith(u'+') && !line.startsWith(QLatin1String("+++")))
            html += added + esc + QStringLiteral("</span>\n");
        else if (line.startsWith(u'-') && !line.startsWith(QLatin1String("---")))
            html += removed + esc + QStringLiteral("</span>\n");
        else if (line.startsWith(QLatin1String("@@")))
            html += hunk + esc + QStringLiteral("</span>\n");
        else
            html += esc + u'\n';
    }
    if (html.endsWith(u'\n'))
        html.chop(1);
    return html + QStringLiteral("</pre>");
}

} // namespace

struct TranscriptDelegate::Layout
{
    bool header = false;
    bool showBody = false;
    int headerHeight = 0;
};

TranscriptDelegate::TranscriptDelegate(QObject *parent)
    : QStyledItemDelegate(parent)
{}

void TranscriptDelegate::invalidate(int firstRow, int lastRow)
{
    if (firstRow < 0) {
        m_heights.clear();
        return;
    }
    for (int r = firstRow; r <= lastRow; ++r)
        m_heights.remove(r);
}

bool TranscriptDelegate::isOnHeader(const QRect &rect, const QPoint &pos, const QFont &font)
{
    return pos.y() - rect.top() < QFontMetrics(font).height() + 2 * kPad;
}

TranscriptDelegate::Layout TranscriptDelegate::layoutFor(const QStyleOptionViewItem &option,
                                                         const QModelIndex &index) const
{
    Layout l;
    const auto kind = Kind(index.data(AgentTranscriptModel::KindRole).toInt());
    const bool collapsible = index.data(AgentTranscriptModel::CollapsibleRole).toBool();
    l.header = !index.data(AgentTranscriptModel::TitleRole).toString().isEmpty()
               || kind == Kind::Prompt;
    l.showBody = !index.data(AgentTranscriptModel::BodyRole).toString().isEmpty()
                 && (!collapsible || index.data(AgentTranscriptModel::ExpandedRole).toBool());
    l.headerHeight = l.header ? QFontMetrics(option.font).height() + kPad : 0;
    return l;
}

std::unique_ptr<QTextDocument> TranscriptDelegate::documentFor(const QModelIndex &index, int width,
                                                               const QFont &font,
                                                               const QPalette &palette) const
{
    auto doc = std::make_unique<QTextDocument>();
    doc->setDocumentMargin(0);
    const auto kind = Kind(index.data(AgentTranscriptModel::KindRole).toInt());
    const QString body = index.data(AgentTranscriptModel::BodyRole).toString();
    QFont f = font;
    if (kind == Kind::ToolCall || kind == Kind::FileChange)
        f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    if (kind == Kind::Thinking)
        f.setItalic(true);
    doc->setDefaultFont(f);
    if (kind == Kind::Text || kind == Kind::Prompt)
        doc->setMarkdown(body);
    else if (kind == Kind::FileChange)
        doc->setHtml(diffHtml(body, palette));
    else
        doc->setPlainText(body);
    doc->setTextWidth(qMax(50, width));
    return doc;
}

QSize TranscriptDelegate::sizeHint(const QStyleOptionViewItem &option,
                                   const QModelIndex &index) const
{
    const int width = option.rect.width() > 0 ? option.rect.width() : 600;
    const auto cached = m_heights.constFind(index.row());
    if (cached != m_heights.constEnd() && cached->first == width)
        return {width, cached->second};
    int h = 0;
    if (const QWidget *card = rowWidget(option, index)) {
        h = card->heightForWidth(width - 2 * kMargin);
        h = (h > 0 ? h : card->sizeHint().height()) + 2 * kMargin;
        m_heights.insert(index.row(), {width, h});
        return {width, h};
    }
    const Layout l = layoutFor(option, index);
    h = l.headerHeight + 2 * kPad;
    if (l.showBody)
        h += int(documentFor(index, width - 2 * kPad - kIndent, option.font, option.palette)
                     ->size()
                     .height())
             + kPad / 2;
    m_heights.insert(index.row(), {width, h});
    return {width, h};
}

void TranscriptDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option,
                               const QModelIndex &index) const
{
    if (rowWidget(option, index))
        return; // the card paints itself
    painter->save();
    const auto kind = Kind(index.data(AgentTranscriptModel::KindRole).toInt());
    const bool error = index.data(AgentTranscriptModel::IsErrorRole).toBool();
    const QRect r = option.rect.adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const QPalette &pal = option.palette;
    QColor bg = pal.color(QPalette::Base);
    if (kind == Kind::Prompt)
        bg = pal.color(QPalette::AlternateBase);
    else if (error)
        bg = Style::background(Style::Tone::Error, pal);
    else if (kind == Kind::ToolCall || kind == Kind::FileChange)
        bg = pal.color(QPalette::Window);
    painter->fillRect(r, bg);
    if (option.state & QStyle::State_Selected)
        painter->fillRect(r, QColor(pal.color(QPalette::Highlight).red(),
                                    pal.color(QPalette::Highlight).green(),
                                    pal.color(QPalette::Highlight).blue(), 40));

    const Layout l = layoutFor(option, index);
    int y = r.top() + kPad;
    if (l.header) {
        QString title = index.data(AgentTranscriptModel::TitleRole).toString();
        if (kind == Kind::Prompt)
            title = tr("You");
        if (index.data(AgentTranscriptModel::CollapsibleRole).toBool())
            title = (index.data(AgentTranscriptModel::ExpandedRole).toBool() ? QStringLiteral("▾ ")
                                                                             : QStringLiteral("▸ "))
                    + title;
        if (index.data(AgentTranscriptModel::PendingRole).toBool())
            title += QStringLiteral(" …");
        QFont bold = option.font;
        bold.setBold(kind == Kind::Prompt || kind == Kind::ToolCall || kind == Kind::FileChange
                     || kind == Kind::Result);
        painter->setFont(bold);
        painter->setPen(error ? Style::color(Style::Tone::Error, pal)
                        : kind == Kind::Thinking || kind == Kind::Result
                            ? pal.color(QPalette::PlaceholderText)
                            : pal.color(QPalette::Text));
        const QFontMetrics fm(bold);
        painter->drawText(QRect(r.left() + kPad, y, r.width() - 2 * kPad, fm.height()),
                          Qt::AlignLeft | Qt::AlignVCenter,
                          fm.elidedText(title, Qt::ElideRight, r.width() - 2 * kPad));
        y += l.headerHeight;
    }
    if (l.showBody) {
        auto doc = documentFor(index, r.width() - 2 * kPad - kIndent + 4, option.font,
                               option.palette);
        painter->translate(r.left() + kPad + (l.header ? kIndent : 0), y);
        QAbstractTextDocumentLayout::PaintContext ctx;
        ctx.palette = pal;
        if (error)
            ctx.palette.setColor(QPalette::Text, Style::color(Style::Tone::Error, pal));
        else if (kind == Kind::Thinking)
            ctx.palette.setColor(QPalette::Text, pal.color(QPalette::PlaceholderText));
        ctx.clip = QRectF(0, 0, r.width(), r.bottom() - y);
        doc->documentLayout()->draw(painter, ctx);
    }
    painter->restore();
}

void TranscriptDelegate::updateEditorGeometry(QWidget *editor, const QStyleOptionViewItem &option,
                                              const QModelIndex &) const
{
    editor->setGeometry(option.rect.adjusted(kMargin, kMargin, -kMargin, -kMargin));
}

} // namespace Sandbox::Ui
