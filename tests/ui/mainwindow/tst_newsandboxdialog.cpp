// The New Sandbox dialog as a user fills it: the Name typed is the name asked for (a database's
// too), a database's form has no blank rows where the agent's fields were, and environment
// values (model keys) are never on the screen in plain text, typed or pasted.
#include <mainwindow/newsandboxdialog.h>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
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
        auto *env = dialog.findChild<QWidget *>(QStringLiteral("environment"));
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

    void environmentValuesAreNeverShown()
    {
        NewSandboxDialog dialog;
        dialog.show();
        QVERIFY(QTest::qWaitForWindowActive(&dialog));
        auto *env = dialog.findChild<QWidget *>(QStringLiteral("environment"));
        QVERIFY(env);
        auto *name = env->findChild<QLineEdit *>(QStringLiteral("envName"));
        QVERIFY(name);
        // Typed: the name, Tab, the key.
        name->setFocus();
        QTest::keyClicks(name, QStringLiteral("ANTHROPIC_API_KEY"));
        QTest::keyClick(name, Qt::Key_Tab);
        QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("sk-ant-typed"));
        // "NAME=" typed into a name moves on to its value.
        QTest::mouseClick(dialog.findChild<QPushButton *>(QStringLiteral("addVariable")),
                          Qt::LeftButton);
        QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("GH_TOKEN="));
        QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("ghp-typed"));
        // Pasted .env lines: each its own row, values masked from the first frame.
        QApplication::clipboard()->setText(QStringLiteral("OPENAI_API_KEY=sk-pasted\nDEBUG=1\n"));
        QTest::mouseClick(dialog.findChild<QPushButton *>(QStringLiteral("addVariable")),
                          Qt::LeftButton);
        QTest::keySequence(QApplication::focusWidget(), QKeySequence::Paste);

        // What the user can see: no field or label shows a value.
        for (const QString &secret : {QStringLiteral("sk-ant-typed"), QStringLiteral("ghp-typed"),
                                      QStringLiteral("sk-pasted")}) {
            for (QLineEdit *edit : dialog.findChildren<QLineEdit *>())
                QVERIFY2(!edit->displayText().contains(secret),
                         qPrintable(edit->objectName() + u' ' + edit->displayText()));
            for (QLabel *label : dialog.findChildren<QLabel *>())
                QVERIFY2(!label->text().contains(secret), qPrintable(label->text()));
        }
        // And the sandbox gets them all.
        const QMap<QString, QString> sent = dialog.agentOptions().env;
        QCOMPARE(sent.value(QStringLiteral("ANTHROPIC_API_KEY")), QStringLiteral("sk-ant-typed"));
        QCOMPARE(sent.value(QStringLiteral("GH_TOKEN")), QStringLiteral("ghp-typed"));
        QCOMPARE(sent.value(QStringLiteral("OPENAI_API_KEY")), QStringLiteral("sk-pasted"));
        QCOMPARE(sent.value(QStringLiteral("DEBUG")), QStringLiteral("1"));
        QCOMPARE(sent.size(), 4);
    }

    void aBadNameIsSaidAndNothingIsCreated()
    {
        NewSandboxDialog dialog;
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        auto *name = dialog.findChild<QLineEdit *>(QStringLiteral("envName"));
        name->setText(QStringLiteral("9LIVES"));
        dialog.accept();
        QVERIFY(dialog.isVisible());
        auto *error = dialog.findChild<QLabel *>(QStringLiteral("error"));
        QVERIFY(error->isVisible());
        QVERIFY2(error->text().contains(QStringLiteral("row 1")), qPrintable(error->text()));
    }
};

QTEST_MAIN(TestNewSandboxDialog)
#include "tst_newsandboxdialog.moc"
