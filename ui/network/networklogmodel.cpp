#include "networklogmodel.h"

namespace Sandbox::Ui {

namespace {

constexpr qint64 kFoldSeconds = 5;

bool sameAttempt(const NetworkDenial &a, const NetworkDenial &b)
{
    return a.host == b.host && a.port == b.port && a.reason == b.reason && a.via == b.via
           && a.pid == b.pid && a.address == b.address;
}

QString destination(const NetworkDenial &d)
{
    if (d.host.isEmpty())
        return QObject::tr("(any)");
    const QString host = d.host.contains(u':') ? u'[' + d.host + u']' : d.host;
    QString text = host + u':' + QString::number(d.port);
    if (!d.address.isEmpty() && d.address != d.host)
        text += QStringLiteral(" → ") + d.address;
    return text;
}

} // namespace

NetworkLogModel::NetworkLogModel(QObject *parent)
    : QAbstractTableModel(parent)
{}

void NetworkLogModel::setDenials(const QList<NetworkDenial> &denials)
{
    beginResetModel();
    m_rows.clear();
    const qsizetype first = qMax<qsizetype>(0, denials.size() - MaxRows);
    for (qsizetype i = first; i < denials.size(); ++i)
        m_rows.push_back(denials.at(i));
    endResetModel();
}

void NetworkLogModel::addDenial(const NetworkDenial &denial)
{
    if (!m_rows.empty() && sameAttempt(m_rows.back(), denial)
        && m_rows.back().time.secsTo(denial.time) <= kFoldSeconds) {
        m_rows.back().count += denial.count;
        m_rows.back().time = denial.time;
        const int row = int(m_rows.size()) - 1;
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
        return;
    }
    if (int(m_rows.size()) >= MaxRows) {
        beginRemoveRows({}, 0, 0);
        m_rows.pop_front();
        endRemoveRows();
    }
    const int row = int(m_rows.size());
    beginInsertRows({}, row, row);
    m_rows.push_back(denial);
    endInsertRows();
}

void NetworkLogModel::clear()
{
    beginResetModel();
    m_rows.clear();
    endResetModel();
}

int NetworkLogModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int NetworkLogModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant NetworkLogModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const NetworkDenial &d = m_rows.at(size_t(index.row()));
    if (role == AllowEntryRole)
        return d.allowWith;
    if (role == HostRole)
        return d.host;
    if (role == Qt::ToolTipRole)
        return d.reason;
    if (role == Qt::TextAlignmentRole && index.column() == Count)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Time:
        return d.time.toLocalTime().toString(QStringLiteral("HH:mm:ss"));
    case Destination:
        return destination(d);
    case Process:
        if (d.pid < 0)
            return d.via == QLatin1String("gateway") ? tr("model gateway") : QString();
        return d.process.isEmpty() ? tr("pid %1").arg(d.pid)
                                   : tr("%1 (pid %2)").arg(d.process).arg(d.pid);
    case Reason:
        return d.reason;
    case Count:
        return d.count;
    default:
        return {};
    }
}

QVariant NetworkLogModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Time:
        return tr("Time");
    case Destination:
        return tr("Destination");
    case Process:
        return tr("Process");
    case Reason:
        return tr("Why");
    case Count:
        return tr("Tries");
    default:
        return {};
    }
}

} // namespace Sandbox::Ui
