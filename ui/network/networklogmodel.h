#pragma once

#include <client/networktypes.h>

#include <QAbstractTableModel>

#include <deque>

namespace Sandbox::Ui {

// A sandbox's refused connection attempts (docs/protocol.md 4.9), newest last: what
// sandbox.networkLog answered, then each network.denied notification as it comes. An attempt
// identical to the last row (host, port, reason, process) within a few seconds adds to its count
// instead of a row. At most MaxRows rows; the oldest go first.
class NetworkLogModel final : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Column { Time, Destination, Process, Reason, Count, ColumnCount };
    enum Role {
        AllowEntryRole = Qt::UserRole + 1, // the entry that would let it through ("" : none)
        HostRole,
    };
    static constexpr int MaxRows = 500;

    explicit NetworkLogModel(QObject *parent = nullptr);

    void setDenials(const QList<NetworkDenial> &denials);
    void addDenial(const NetworkDenial &denial);
    void clear();
    const NetworkDenial &denial(int row) const { return m_rows.at(size_t(row)); }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::deque<NetworkDenial> m_rows;
};

} // namespace Sandbox::Ui
