#include "agenttranscriptmodel.h"

#include "../common/uistyle.h"
#include "agentproblem.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace Sandbox::Ui {

namespace {

constexpr qsizetype kMaxBody = 64 * 1024; // per row, for the view; the rest is cut with a note

QString bounded(const QString &s)
{
    return s.size() <= kMaxBody
               ? s
               : s.left(kMaxBody)
                     + QStringLiteral("\n… (%1 more characters)").arg(s.size() - kMaxBody);
}

QString toolTitle(const QString &name, const QJsonValue &input)
{
    const QJsonObject o = input.toObject();
    for (const char *key :
         {"file_path", "filePath", "path", "command", "pattern", "url", "query", "description"}) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (v.isString())
            return name + u' ' + v.toString().left(200).section(u'\n', 0, 0);
        if (v.isArray())
            return name + u' '
                   + QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact))
                         .left(200);
    }
    return name;
}

QString pretty(const QJsonValue &v)
{
    if (v.isObject())
        return QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Indented));
    if (v.isArray())
        return QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Indented));
    return v.toVariant().toString();
}

} // namespace

AgentTranscriptModel::AgentTranscriptModel(QObject *parent)
    : QAbstractListModel(parent)
{}

int AgentTranscriptModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_items.size());
}

QVariant AgentTranscriptModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Item &it = m_items.at(index.row());
    switch (role) {
    case Qt::DisplayRole:
        return it.title.isEmpty() ? it.body.left(500) : it.title;
    case Qt::ToolTipRole:
        return it.title;
    case KindRole:
        return int(it.kind);
    case TitleRole:
        return it.title;
    case BodyRole:
        return it.body;
    case IsErrorRole:
        return it.isError;
    case ExpandedRole:
        return it.expanded;
    case CollapsibleRole:
        return it.kind == Kind::ToolCall || it.kind == Kind::Thinking
               || it.kind == Kind::FileChange;
    case TurnRole:
        return it.turn;
    case TimeRole:
        return it.time;
    case PendingRole:
        return it.pending;
    case ProblemRole:
        return it.problem;
    case RawTextRole:
        return it.raw;
    case FixRole:
        return it.fix;
    case HostsRole:
        return it.hosts;
    default:
        return {};
    }
}

bool AgentTranscriptModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (role != ExpandedRole
        || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return false;
    Item &it = m_items[index.row()];
    if (!data(index, CollapsibleRole).toBool() || it.expanded == value.toBool())
        return false;
    it.expanded = value.toBool();
    Q_EMIT dataChanged(index, index, {ExpandedRole});
    return true;
}

Qt::ItemFlags AgentTranscriptModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable;
}

QHash<int, QByteArray> AgentTranscriptModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(KindRole, "kind");
    names.insert(TitleRole, "title");
    names.insert(BodyRole, "body");
    names.insert(IsErrorRole, "isError");
    names.insert(ExpandedRole, "expanded");
    names.insert(CollapsibleRole, "collapsible");
    names.insert(TurnRole, "turn");
    names.insert(TimeRole, "time");
    names.insert(PendingRole, "pending");
    names.insert(ProblemRole, "problem");
    names.insert(RawTextRole, "rawText");
    names.insert(FixRole, "fix");
    names.insert(HostsRole, "hosts");
    return names;
}

void AgentTranscriptModel::toggleExpanded(int row)
{
    const QModelIndex i = index(row);
    setData(i, !data(i, ExpandedRole).toBool(), ExpandedRole);
}

void AgentTranscriptModel::append(QList<Item> items)
{
    if (items.isEmpty())
        return;
    const int first = int(m_items.size());
    beginInsertRows({}, first, first + int(items.size()) - 1);
    for (Item &it : items) {
        if (it.kind == Kind::ToolCall && !it.toolId.isEmpty())
            m_toolRows.insert(it.toolId, int(m_items.size()));
        m_items.append(std::move(it));
    }
    endInsertRows();
}

void AgentTranscriptModel::addPrompt(const QString &prompt)
{
    Item it;
    it.kind = Kind::Prompt;
    it.body = bounded(prompt);
    it.time = QDateTime::currentDateTime();
    m_runStart = int(m_items.size());
    m_denied.clear();
    append({it});
}

void AgentTranscriptModel::explain(Item *item, const QString &message) const
{
    const AgentProblem p = AgentProblem::explain(message, m_agentType, m_denied);
    item->kind = Kind::Error;
    item->isError = true;
    item->problem = int(p.kind);
    item->title = p.title;
    item->body = bounded(p.text);
    item->raw = p.kind == AgentProblem::Kind::None ? QString() : bounded(message);
    item->fix = p.fix;
    item->hosts = p.hosts;
}

bool AgentTranscriptModel::mergeIntoLastText(const QString &message)
{
    if (m_items.size() <= m_runStart || message.trimmed().isEmpty())
        return false;
    Item &last = m_items.last();
    if (last.kind != Kind::Text || last.body.trimmed() != bounded(message).trimmed())
        return false;
    explain(&last, message);
    const QModelIndex i = index(int(m_items.size()) - 1);
    Q_EMIT dataChanged(i, i);
    return true;
}

bool AgentTranscriptModel::shownThisRun(const Item &card) const
{
    for (qsizetype row = m_runStart; row < m_items.size(); ++row) {
        const Item &it = m_items.at(row);
        if (it.problem < 0)
            continue;
        // The same words, or the same known problem said in other words (Claude Code's
        // "permission denied: Write", then the engine's "a file change was not permitted").
        if ((it.raw == card.raw && it.body == card.body)
            || (it.problem == card.problem && card.problem != int(AgentProblem::Kind::None)))
            return true;
    }
    return false;
}

void AgentTranscriptModel::addProblem(const QString &message)
{
    Item it;
    it.time = QDateTime::currentDateTime();
    explain(&it, message);
    append({it});
}

void AgentTranscriptModel::addError(const QString &message)
{
    Item it;
    it.kind = Kind::Error;
    it.title = tr("Error");
    it.body = bounded(message);
    it.isError = true;
    it.time = QDateTime::currentDateTime();
    append({it});
}

bool AgentTranscriptModel::itemFor(const AgentEvent &e, Item *it)
{
    it->turn = e.turn;
    it->time = QDateTime::currentDateTime();
    if (e.typeName == QLatin1String("network.denied")) {
        // (From the engine: at most one entry, bounded like the rest of the event.)
        const QString entry = e.raw.value(QStringLiteral("allowWith")).toString().left(300);
        if (!entry.isEmpty() && !m_denied.contains(entry) && m_denied.size() < 8)
            m_denied.append(entry);
        return false;
    }
    switch (e.type) {
    case AgentEvent::Type::Text:
        it->kind = Kind::Text;
        it->body = bounded(e.text);
        return true;
    case AgentEvent::Type::Thinking:
        it->kind = Kind::Thinking;
        it->title = tr("Thinking");
        it->body = bounded(e.text);
        return true;
    case AgentEvent::Type::ToolCall:
        it->kind = Kind::ToolCall;
        it->toolId = e.id;
        it->title = toolTitle(e.name, e.input);
        it->body = bounded(pretty(e.input));
        it->pending = true;
        if (m_toolRows.contains(e.id)) // a repeated announcement (OpenCode sends one per state)
            return false;
        return true;
    case AgentEvent::Type::ToolResult: {
        const int row = m_toolRows.value(e.id, -1);
        if (row < 0) {
            it->kind = Kind::ToolCall;
            it->title = e.name.isEmpty() ? tr("Tool result") : e.name;
            it->body = bounded(e.output);
            it->isError = e.isError;
            return true;
        }
        Item &call = m_items[row];
        call.pending = false;
        call.isError = e.isError;
        call.body = bounded(call.body + QStringLiteral("\n── result ──\n") + e.output);
        const QModelIndex i = index(row);
        Q_EMIT dataChanged(i, i, {BodyRole, IsErrorRole, PendingRole});
        return false;
    }
    case AgentEvent::Type::FileChange:
        it->kind = Kind::FileChange;
        it->title = (e.changeKind == QLatin1String("add")      ? tr("Created %1")
                     : e.changeKind == QLatin1String("delete") ? tr("Deleted %1")
                                                               : tr("Changed %1"))
                        .arg(e.path.isEmpty() ? tr("a file") : e.path)
                    + (e.isError ? tr(" — failed") : QString());
        it->body = bounded(!e.diff.isEmpty() ? e.diff : e.content);
        it->isError = e.isError;
        it->expanded = !e.isError && !it->body.isEmpty() && it->body.count(u'\n') < 40;
        return true;
    case AgentEvent::Type::Error:
        if (mergeIntoLastText(e.text))
            return false;
        explain(it, e.text);
        return true;
    case AgentEvent::Type::Session:
    case AgentEvent::Type::Usage:
    case AgentEvent::Type::Result:
    case AgentEvent::Type::Other:
        return false;
    }
    return false;
}

void AgentTranscriptModel::addEvent(const AgentEvent &event)
{
    Item it;
    if (itemFor(event, &it))
        append({it});
}

void AgentTranscriptModel::addEvents(const QList<AgentEvent> &events)
{
    QList<Item> items;
    items.reserve(events.size());
    for (const AgentEvent &e : events) {
        // A tool result may refer to a call in this same batch, an error to the text before it:
        // flush first.
        if (((e.type == AgentEvent::Type::ToolResult && !m_toolRows.contains(e.id))
             || e.type == AgentEvent::Type::Error)
            && !items.isEmpty()) {
            append(std::exchange(items, {}));
        }
        Item it;
        if (itemFor(e, &it))
            items.append(std::move(it));
        if (e.type == AgentEvent::Type::ToolCall && !items.isEmpty())
            append(std::exchange(items, {}));
    }
    append(std::move(items));
}

void AgentTranscriptModel::addRunEnd(const AgentRunResult &result)
{
    Item it;
    it.kind = Kind::Result;
    it.time = QDateTime::currentDateTime();
    it.isError = !result.success;
    const QString duration = Style::formatDuration(result.durationMs);
    if (result.success) {
        it.title = tr("Done in %1").arg(duration);
    } else {
        Item card;
        if (!result.error.trimmed().isEmpty())
            explain(&card, result.error);
        if (result.error.trimmed().isEmpty() || shownThisRun(card)) {
            it.title = tr("Failed after %1").arg(duration); // the card above says why
        } else {
            card.kind = Kind::Result;
            card.time = it.time;
            card.title = tr("Failed after %1: %2").arg(duration, card.title);
            it = std::move(card);
        }
    }
    append({it});
}

void AgentTranscriptModel::clear()
{
    beginResetModel();
    m_items.clear();
    m_toolRows.clear();
    m_denied.clear();
    m_runStart = 0;
    endResetModel();
}

} // namespace Sandbox::Ui
