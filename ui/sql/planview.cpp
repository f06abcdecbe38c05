#include "planview.h"

#include "resultmodel.h"

#include "../common/uistyle.h"

#include <client/databasetypes.h>
#include <protocol/json.h>

#include <QHash>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>
#include <QRegularExpression>
#include <QStyledItemDelegate>

#include <functional>

namespace Sandbox::Ui {

namespace {

// The share column: a bar as long as the node's share of the plan's cost or time.
class ShareDelegate final : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override
    {
        QStyledItemDelegate::paint(painter, option, index);
        const double share = qBound(0.0, index.data(PlanView::ShareRole).toDouble(), 1.0);
        if (share <= 0)
            return;
        const QRect r = option.rect.adjusted(3, 4, -3, -4);
        QRect bar = r;
        bar.setWidth(qMax(2, int(r.width() * share)));
        const QPalette &pal = option.palette;
        const QColor c = share > 0.5 ? Style::color(Style::Tone::Warning, pal)
                                     : pal.color(QPalette::Highlight);
        painter->fillRect(bar, Style::blend(pal.color(QPalette::Base), c, 0.55));
        painter->setPen(pal.color(QPalette::Text));
        painter->drawText(r, Qt::AlignCenter, QStringLiteral("%1 %").arg(qRound(share * 100)));
    }
};

QString number(double v)
{
    return QString::number(v, 'f', v < 10 ? 2 : 0);
}

} // namespace

PlanView::PlanView(QWidget *parent)
    : QTreeWidget(parent)
{
    setObjectName(QStringLiteral("plan"));
    setColumnCount(5);
    setHeaderLabels({tr("Operation"), tr("Cost"), tr("Rows"), tr("Time (ms)"), tr("Share")});
    setItemDelegateForColumn(ShareColumn, new ShareDelegate(this));
    setUniformRowHeights(true);
    setAlternatingRowColors(true);
    header()->setStretchLastSection(false);
    header()->setSectionResizeMode(OperationColumn, QHeaderView::Stretch);
    for (int c : {CostColumn, RowsColumn, TimeColumn})
        header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    header()->setSectionResizeMode(ShareColumn, QHeaderView::Fixed);
    header()->resizeSection(ShareColumn, 120);
}

bool PlanView::setPlan(const ResultModel &model)
{
    clear();
    const QList<SqlField> &fields = model.fields();
    if (fields.size() == 1 && model.rowCount() == 1) {
        const QString text = SqlValue::toText(model.rowAt(0).at(0));
        if (text.trimmed().startsWith(u'[') && setPostgresJson(text))
            return true;
    }
    if (fields.size() == 4 && fields[3].name == QLatin1String("detail"))
        return setSqliteRows(model);
    if (fields.size() == 2 && fields[1].name == QLatin1String("explain_value")
        && model.rowCount() > 0)
        return setDuckDbText(SqlValue::toText(model.rowAt(model.rowCount() - 1).at(1)));
    return false;
}

bool PlanView::setPostgresJson(const QString &json)
{
    // From the database server: strict JSON, bounded depth.
    const Json::Parsed parsed = Json::parse(json.toUtf8());
    if (parsed.error || !parsed.value.isArray())
        return false;
    const QJsonObject top = parsed.value.toArray().first().toObject();
    const QJsonObject plan = top.value(QStringLiteral("Plan")).toObject();
    if (plan.isEmpty())
        return false;
    clear();
    const bool byTime = plan.contains(QStringLiteral("Actual Total Time"));
    const double total = byTime ? plan.value(QStringLiteral("Actual Total Time")).toDouble()
                                : plan.value(QStringLiteral("Total Cost")).toDouble();
    addPostgresNode(plan, nullptr, total, byTime);
    setColumnHidden(TimeColumn, !byTime);
    expandAll();
    return true;
}

void PlanView::addPostgresNode(const QJsonObject &plan, QTreeWidgetItem *parent, double total,
                               bool byTime)
{
    QString what = plan.value(QStringLiteral("Node Type")).toString();
    for (const char *key : {"Relation Name", "Index Name", "CTE Name", "Function Name"}) {
        const QString v = plan.value(QLatin1String(key)).toString();
        if (!v.isEmpty()) {
            what += QStringLiteral(" on %1").arg(v);
            break;
        }
    }
    const QString filter = plan.value(QStringLiteral("Filter")).toString();
    auto *item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(this);
    item->setText(OperationColumn, what);
    item->setToolTip(OperationColumn, filter.isEmpty() ? what : what + u'\n' + filter);
    const double cost = plan.value(QStringLiteral("Total Cost")).toDouble();
    item->setText(CostColumn, number(cost));
    const QString rowsKey = byTime ? QStringLiteral("Actual Rows") : QStringLiteral("Plan Rows");
    item->setText(RowsColumn, QString::number(qint64(plan.value(rowsKey).toDouble())));
    const double time = plan.value(QStringLiteral("Actual Total Time")).toDouble()
                        * qMax(1.0, plan.value(QStringLiteral("Actual Loops")).toDouble());
    if (byTime)
        item->setText(TimeColumn, number(time));
    for (int c : {CostColumn, RowsColumn, TimeColumn})
        item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    item->setData(ShareColumn, ShareRole, total > 0 ? (byTime ? time : cost) / total : 0.0);
    for (const QJsonValue &child : plan.value(QStringLiteral("Plans")).toArray())
        addPostgresNode(child.toObject(), item, total, byTime);
}

bool PlanView::setSqliteRows(const ResultModel &model)
{
    QHash<qint64, QTreeWidgetItem *> byId;
    for (int r = 0; r < model.rowCount(); ++r) {
        const QJsonArray row = model.rowAt(r);
        const qint64 id = row.at(0).toInteger(), parent = row.at(1).toInteger();
        QTreeWidgetItem *up = byId.value(parent);
        auto *item = up ? new QTreeWidgetItem(up) : new QTreeWidgetItem(this);
        item->setText(OperationColumn, SqlValue::toText(row.at(3)));
        byId.insert(id, item);
    }
    for (int c : {CostColumn, RowsColumn, TimeColumn, ShareColumn})
        setColumnHidden(c, true);
    expandAll();
    return topLevelItemCount() > 0;
}

bool PlanView::setDuckDbText(const QString &text)
{
    // DuckDB draws its plan as boxes, one operator per box, children below: the operator names
    // are the boxes' first lines (upper-case words), in order from the root.
    static const QRegularExpression name(QStringLiteral("│\\s*([A-Z][A-Z_ ]+[A-Z])\\s*│"));
    QTreeWidgetItem *last = nullptr;
    auto it = name.globalMatch(text);
    while (it.hasNext()) {
        const QString op = it.next().captured(1).trimmed();
        auto *item = last ? new QTreeWidgetItem(last) : new QTreeWidgetItem(this);
        item->setText(OperationColumn, op);
        last = item;
    }
    for (int c : {CostColumn, RowsColumn, TimeColumn, ShareColumn})
        setColumnHidden(c, true);
    expandAll();
    return last != nullptr;
}

QStringList PlanView::outline() const
{
    QStringList out;
    std::function<void(QTreeWidgetItem *, int)> walk = [&](QTreeWidgetItem *item, int depth) {
        out.append(QString(depth * 2, u' ') + item->text(OperationColumn));
        for (int i = 0; i < item->childCount(); ++i)
            walk(item->child(i), depth + 1);
    };
    for (int i = 0; i < topLevelItemCount(); ++i)
        walk(topLevelItem(i), 0);
    return out;
}

} // namespace Sandbox::Ui
