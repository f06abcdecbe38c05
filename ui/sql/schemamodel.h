#pragma once

#include <client/rpccall.h>

#include <QMap>
#include <QStandardItemModel>
#include <QStringList>

#include <vector>

namespace Sandbox {
class DatabasesService;
}

namespace Sandbox::Ui {

// The schema tree of one database: tables and views, each with its columns (name and type) and
// its indexes. Filled from databases.listTables / describeTable on refresh().
class SchemaModel final : public QStandardItemModel
{
    Q_OBJECT

public:
    // kind: table | view | column | index | indexes | empty (the "No tables yet" row)
    enum Role { KindRole = Qt::UserRole + 1, NameRole };

    SchemaModel(DatabasesService *service, QString databaseId, QObject *parent = nullptr);

    void refresh();
    bool isLoading() const { return m_pending > 0; }
    // Tables (schema-qualified when not the default schema) and their columns.
    const QMap<QString, QStringList> &columnsByTable() const { return m_columns; }

Q_SIGNALS:
    void loaded();
    void failed(const QString &message);

private:
    DatabasesService *m_service; // not owned
    QString m_databaseId;
    QMap<QString, QStringList> m_columns;
    int m_pending = 0;
    quint64 m_generation = 0;
    std::vector<RpcCall> m_calls;
};

} // namespace Sandbox::Ui
