#include "schemamodel.h"

#include "../common/uistyle.h"

#include <client/databasesservice.h>

namespace Sandbox::Ui {

SchemaModel::SchemaModel(DatabasesService *service, QString databaseId, QObject *parent)
    : QStandardItemModel(parent)
    , m_service(service)
    , m_databaseId(std::move(databaseId))
{
    setHorizontalHeaderLabels({tr("Name"), tr("Type")});
}

void SchemaModel::refresh()
{
    const quint64 generation = ++m_generation;
    m_calls.clear();
    m_pending = 1;
    m_calls.push_back(
        m_service->listTables(m_databaseId, this, [this, generation](Result<QList<TableInfo>> tables) {
            if (generation != m_generation)
                return;
            --m_pending;
            if (!tables) {
                Q_EMIT failed(tables.error().message);
                return;
            }
            removeRows(0, rowCount());
            m_columns.clear();
            if (tables->isEmpty()) {
                // Said, rather than an empty pane that looks like one still loading.
                auto *none = new QStandardItem(tr("No tables yet"));
                none->setFlags(Qt::ItemIsEnabled);
                none->setData(QStringLiteral("empty"), KindRole);
                none->setToolTip(tr("This database has no tables or views yet: CREATE TABLE "
                                    "makes one (the tree follows)."));
                auto *blank = new QStandardItem();
                blank->setFlags(Qt::ItemIsEnabled);
                appendRow({none, blank});
                Q_EMIT loaded();
                return;
            }
            for (const TableInfo &t : *tables) {
                const bool defaultSchema = t.schema.isEmpty() || t.schema == QLatin1String("public")
                                           || t.schema == QLatin1String("main");
                const QString name = defaultSchema ? t.name : t.schema + u'.' + t.name;
                auto *item = new QStandardItem(name);
                item->setEditable(false);
                item->setData(t.type, KindRole);
                item->setData(name, NameRole);
                auto *type = new QStandardItem(t.type);
                type->setEditable(false);
                appendRow({item, type});
                ++m_pending;
                m_calls.push_back(m_service->describeTable(
                    m_databaseId, t.name, defaultSchema ? QString() : t.schema, this,
                    [this, generation, name](Result<TableDescription> d) {
                        if (generation != m_generation)
                            return;
                        --m_pending;
                        const QList<QStandardItem *> found = findItems(name);
                        if (d && !found.isEmpty()) {
                            QStandardItem *table = found.first();
                            QStringList columns;
                            for (const ColumnInfo &c : d->columns) {
                                auto *col = new QStandardItem(c.name);
                                col->setEditable(false);
                                col->setData(QStringLiteral("column"), KindRole);
                                col->setData(c.name, NameRole);
                                col->setToolTip(
                                    QStringLiteral("%1 %2%3%4")
                                        .arg(c.name, c.type,
                                             c.nullable ? QString() : QStringLiteral(" NOT NULL"),
                                             c.primaryKey ? QStringLiteral(" PRIMARY KEY")
                                                          : QString()));
                                // The key is drawn (every machine has the painter; not every
                                // one has an emoji font).
                                if (c.primaryKey)
                                    col->setIcon(Style::keyIcon());
                                auto *type = new QStandardItem(
                                    c.type + (c.primaryKey ? tr(" · primary key") : QString()));
                                type->setEditable(false);
                                table->appendRow({col, type});
                                columns.append(c.name);
                            }
                            if (!d->indexes.isEmpty()) {
                                auto *folder = new QStandardItem(tr("Indexes"));
                                folder->setEditable(false);
                                folder->setData(QStringLiteral("indexes"), KindRole);
                                for (const IndexInfo &i : d->indexes) {
                                    auto *index = new QStandardItem(i.name);
                                    index->setEditable(false);
                                    index->setData(QStringLiteral("index"), KindRole);
                                    index->setToolTip(i.definition);
                                    auto *what = new QStandardItem(
                                        QStringLiteral("%1(%2)")
                                            .arg(i.primary  ? QStringLiteral("PRIMARY KEY ")
                                                 : i.unique ? QStringLiteral("UNIQUE ")
                                                            : QString(),
                                                 i.columns.join(QStringLiteral(", "))));
                                    what->setEditable(false);
                                    folder->appendRow({index, what});
                                }
                                table->appendRow({folder, new QStandardItem()});
                            }
                            m_columns.insert(name, columns);
                        }
                        if (m_pending == 0)
                            Q_EMIT loaded();
                    }));
            }
        }));
}

} // namespace Sandbox::Ui
