// The New Sandbox dialog as a user fills it: the Name typed is the name asked for (a database's
// too), and a database's form has no blank rows where the agent's fields were.
#include <mainwindow/newsandboxdialog.h>

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTest>

using namespace Sandbox::Ui;

class TestNewSandboxDialog final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theNameTypedIsKept_data()
    {
        QTest::addColumn<bool>("database");
        QTest::newRow("database") << true;
        QTest::newRow("agent") << false;
    }

    void theNameTypedIsKept()
    {
        QFETCH(bool, database);
        NewSandboxDialog dialog;
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        dialog.setKind(database);
        auto *name = dialog.findChild<QLineEdit *>(QStringLiteral("name"));
        QVERIFY(name);
        name->setFocus();
        QTest::keyClicks(name, QStringLiteral("pg-demo "));
        QCOMPARE(dialog.isDatabase(), database);
        if (database)
            QCOMPARE(dialog.databaseOptions().name, QStringLiteral("pg-demo"));
        else
            QCOMPARE(dialog.agentOptions().name, QStringLiteral("pg-demo"));
    }

    void aDatabaseFormHasNoGap()
    {
        NewSandboxDialog dialog;
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        auto *network = dialog.findChild<QCheckBox *>();
        auto *env = dialog.findChild<QPlainTextEdit *>();
        QVERIFY(network && env);
        network->setChecked(true);
        const int agentHeight = dialog.height();
        dialog.setKind(true);
        QVERIFY(!network->isVisible());
        QVERIFY(!env->isVisible());
        // The rows are gone, not just their fields: the dialog is shorter by at least the
        // environment box.
        QTRY_VERIFY2(dialog.height() <= agentHeight - env->height(),
                     qPrintable(QStringLiteral("%1 -> %2").arg(agentHeight).arg(dialog.height())));
        // Between the Name field and the buttons, no more than a row's spacing.
        auto *name = dialog.findChild<QLineEdit *>(QStringLiteral("name"));
        const int below = dialog.height() - (name->mapTo(&dialog, QPoint(0, name->height())).y());
        QVERIFY2(below < 3 * name->height(), qPrintable(QString::number(below)));
    }
};

QTEST_MAIN(TestNewSandboxDialog)
#include "tst_newsandboxdialog.moc"
