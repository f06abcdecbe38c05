// The sidebar's model under QAbstractItemModelTester: groups by kind, creation order, and
// listings applied as row insertions, removals and in-place changes.
#include <mainwindow/sandboxlistmodel.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
SandboxInfo make(const QString &id, const QString &kind, int createdSecond,
                 const QString &status = QStringLiteral("running"))
{
    SandboxInfo s;
    s.id = id;
    s.kind = kind;
    s.type = kind == QLatin1String("agent") ? QStringLiteral("claude-code")
                                            : QStringLiteral("postgres");
    s.status = status;
    s.createdAt = QDateTime(QDate(2026, 11, 29), QTime(9, 0, createdSecond), Qt::UTC);
    return s;
}

QStringList ids(const SandboxListModel &m, SandboxListModel::Group g)
{
    QStringList out;
    const QModelIndex parent = m.groupIndex(g);
    for (int r = 0; r < m.rowCount(parent); ++r)
        out << m.index(r, 0, parent).data(SandboxListModel::IdRole).toString();
    return out;
}
} // namespace

class TestSandboxListModel final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void groupsAndOrder()
    {
        SandboxListModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 3);
        model.setSandboxes({make(QStringLiteral("sb_c"), QStringLiteral("agent"), 3),
                            make(QStringLiteral("sb_a"), QStringLiteral("agent"), 1),
                            make(QStringLiteral("db_1"), QStringLiteral("database"), 2),
                            make(QStringLiteral("x_1"), QStringLiteral("browser"), 4)});
        QCOMPARE(ids(model, SandboxListModel::AgentsGroup),
                 (QStringList{QStringLiteral("sb_a"), QStringLiteral("sb_c")}));
        QCOMPARE(ids(model, SandboxListModel::DatabasesGroup), QStringList{QStringLiteral("db_1")});
        QCOMPARE(ids(model, SandboxListModel::OtherGroup), QStringList{QStringLiteral("x_1")});
        QCOMPARE(model.groupIndex(SandboxListModel::AgentsGroup).data().toString(),
                 QStringLiteral("Agents (2)"));
        QVERIFY(
            !(model.flags(model.groupIndex(SandboxListModel::AgentsGroup)) & Qt::ItemIsSelectable));
        const QModelIndex a = model.indexOf(QStringLiteral("sb_a"), SandboxListModel::StatusColumn);
        QCOMPARE(a.data().toString(), QStringLiteral("running"));
        QVERIFY(model.indexOf(QStringLiteral("sb_a"))
                        .data(Qt::DecorationRole)
                        .value<QIcon>()
                        .availableSizes()
                        .size()
                    > 0
                || !model.indexOf(QStringLiteral("sb_a"))
                        .data(Qt::DecorationRole)
                        .value<QIcon>()
                        .isNull());
    }

    void listingsApplyAsDiffs()
    {
        SandboxListModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSandboxes({make(QStringLiteral("a"), QStringLiteral("agent"), 1),
                            make(QStringLiteral("b"), QStringLiteral("agent"), 2),
                            make(QStringLiteral("c"), QStringLiteral("agent"), 3)});
        const QPersistentModelIndex c(model.indexOf(QStringLiteral("c")));
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);

        // b stopped, a deleted, d created: one removal, one insertion, one changed row (+ the group's count).
        model.setSandboxes(
            {make(QStringLiteral("b"), QStringLiteral("agent"), 2, QStringLiteral("stopped")),
             make(QStringLiteral("c"), QStringLiteral("agent"), 3),
             make(QStringLiteral("d"), QStringLiteral("agent"), 4)});
        QCOMPARE(reset.size(), 0);
        QCOMPARE(removed.size(), 1);
        QCOMPARE(inserted.size(), 1);
        QCOMPARE(ids(model, SandboxListModel::AgentsGroup),
                 (QStringList{QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")}));
        QCOMPARE(model.sandbox(QStringLiteral("b"))->status, QStringLiteral("stopped"));
        QVERIFY(c.isValid());
        QCOMPARE(c.row(), 1);
        bool bChanged = false;
        for (const auto &args : std::as_const(changed))
            bChanged = bChanged
                       || args.first().toModelIndex() == model.indexOf(QStringLiteral("b"));
        QVERIFY(bChanged);

        // The same listing again changes nothing.
        changed.clear();
        model.setSandboxes(model.sandboxes());
        QCOMPARE(changed.size(), 0);

        model.updateSandbox(
            make(QStringLiteral("c"), QStringLiteral("agent"), 3, QStringLiteral("error")));
        QCOMPARE(model.sandbox(QStringLiteral("c"))->status, QStringLiteral("error"));
        model.removeSandbox(QStringLiteral("d"));
        QCOMPARE(model.count(), 2);
        model.clear();
        QCOMPARE(model.count(), 0);
        QCOMPARE(model.rowCount(), 3);
    }
};

QTEST_MAIN(TestSandboxListModel)
#include "tst_sandboxlistmodel.moc"
