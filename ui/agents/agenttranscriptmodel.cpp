#include "agenttranscriptmodel.h"

#include "../common/uistyle.h"

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
        it->kind = Kind::Error;
        it->title = tr("Error");
        it->body = bounded(e.text);
        it->isError = true;
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
        // A tool result may refer to a call in this same batch: flush first.
        if (e.type == AgentEvent::Type::ToolResult && !m_toolRows.contains(e.id)
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
    it.title = result.success ? tr("Done in %1").arg(Style::formatDuration(result.durationMs))
                              : tr("Failed after %1").arg(Style::formatDuration(result.durationMs));
    it.body = result.success ? QString() : bounded(result.error);
    append({it});
}

void AgentTranscriptModel::clear()
{
    beginResetModel();
    m_items.clear();
    m_toolRows.clear();
    endResetModel();
}

} // namespace Sandbox::Ui
