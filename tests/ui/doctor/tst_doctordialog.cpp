// The System Check dialog (ui/doctor/) shows what the real `sandboxd doctor` says — here about a
// prepared Ubuntu 24.04 tree (tests/doctor/trees) — and the limits badge shows what a real
// engine's Sandbox object says about its limits.
#include "doctor/doctordialog.h"
#include "doctor/limitsbadge.h"
#include "hosttree.h"
#include "uitest.h"
#include "workspace/sandboxpageregistry.h"
#include "workspace/sandboxworkspace.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFrame>
#include <QLabel>
#include <QSignalSpy>
#include <QStyleFactory>
#include <QTest>
#include <QToolButton>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {

QFrame *row(DoctorDialog &d, const QString &id)
{
    return d.findChild<QFrame *>(QStringLiteral("check-") + id);
}

QString labelText(QWidget *row, const char *name)
{
    auto *l = row ? row->findChild<QLabel *>(QString::fromLatin1(name)) : nullptr;
    return l ? l->text() : QStringLiteral("<none>");
}

// A dark palette like a desktop's dark theme, to look at the dialog in both.
QPalette darkPalette()
{
    QPalette p;
    p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    p.setColor(QPalette::WindowText, QColor(0xdd, 0xdd, 0xdd));
    p.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    p.setColor(QPalette::AlternateBase, QColor(0x35, 0x35, 0x35));
    p.setColor(QPalette::Text, QColor(0xdd, 0xdd, 0xdd));
    p.setColor(QPalette::Button, QColor(0x3a, 0x3a, 0x3a));
    p.setColor(QPalette::ButtonText, QColor(0xdd, 0xdd, 0xdd));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7a, 0xc4));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, QColor(0x35, 0x35, 0x35));
    p.setColor(QPalette::ToolTipText, QColor(0xdd, 0xdd, 0xdd));
    return p;
}

} // namespace

class TestDoctorDialog : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { UiTest::isolateSettings(); }
    void showsTheReportOfAPreparedTree();
    void saysWhenSandboxdIsMissing();
    void limitsBadgeFromARealEngine();
    void limitsBadgeHidesWhenEverythingHolds();
    void screenshots();
};

void TestDoctorDialog::showsTheReportOfAPreparedTree()
{
    HostTree tree({QStringLiteral("ubuntu-24.04")});
    QVERIFY2(tree.isValid(), qPrintable(tree.error()));
    DoctorDialog dialog;
    dialog.setProgram(QStringLiteral(SANDBOXD_BIN),
                      {QStringLiteral("--root"), tree.root(), QStringLiteral("--uid"),
                       QStringLiteral("1000")});
    QSignalSpy checked(&dialog, &DoctorDialog::checked);
    dialog.show();
    dialog.runCheck();
    QVERIFY(checked.wait(30000));
    QCOMPARE(checked.at(0).at(0).toBool(), true); // AppArmor fails there
    QVERIFY(dialog.report().has_value());
    QCOMPARE(dialog.report()->checks.size(), 11);
    QVERIFY(dialog.findChild<QLabel *>(QStringLiteral("doctorSummary"))
                ->text()
                .startsWith(QLatin1String("1 check failed: sandboxes do not work")));

    QFrame *apparmor = row(dialog, QStringLiteral("apparmor"));
    QVERIFY(apparmor);
    QCOMPARE(labelText(apparmor, "title"), QStringLiteral("AppArmor — Fails"));
    const QString fix = labelText(apparmor, "fix");
    QVERIFY2(fix.contains(QLatin1String("sudo apparmor_parser -r /etc/apparmor.d/sandboxd")),
             qPrintable(fix));
    auto *copy = apparmor->findChild<QToolButton *>(QStringLiteral("copyFix"));
    QVERIFY(copy);
    copy->click();
    QCOMPARE(QApplication::clipboard()->text(), fix);

    // An ok check has no fix and no Copy button.
    QFrame *userns = row(dialog, QStringLiteral("userns"));
    QVERIFY(userns);
    QCOMPARE(labelText(userns, "title"), QStringLiteral("User namespaces — OK"));
    QVERIFY(!userns->findChild<QToolButton *>(QStringLiteral("copyFix")));
    QVERIFY(labelText(row(dialog, QStringLiteral("bubblewrap")), "summary")
                .contains(QLatin1String("CVE-2026-87766")));

    // Again: the rows are replaced, not added.
    dialog.runCheck();
    QVERIFY(checked.wait(30000));
    QCOMPARE(dialog.findChildren<QFrame *>(QStringLiteral("check-apparmor")).size(), 1);
}

void TestDoctorDialog::saysWhenSandboxdIsMissing()
{
    DoctorDialog dialog;
    dialog.setProgram(QDir::temp().filePath(QStringLiteral("no-such-sandboxd")));
    QSignalSpy checked(&dialog, &DoctorDialog::checked);
    dialog.runCheck();
    QVERIFY(checked.wait(10000));
    QVERIFY(!dialog.report().has_value());
    QVERIFY(dialog.findChild<QLabel *>(QStringLiteral("doctorSummary"))
                ->text()
                .contains(QLatin1String("no-such-sandboxd")));
}

void TestDoctorDialog::limitsBadgeFromARealEngine()
{
    UiTest::Engine engine;
    QVERIFY(engine.start({QStringLiteral("--no-cgroups")}));
    const Result<SandboxInfo> sandbox = engine.createAgent();
    QVERIFY2(sandbox, sandbox ? "" : qPrintable(sandbox.error().message));
    QWidget parent;
    auto *badge = new LimitsBadge(&parent);
    parent.show();
    badge->setLimits(sandbox->limits);
    QVERIFY(badge->isVisible());
    QCOMPARE(badge->notEnforced().mid(0, 3),
             (QStringList{QStringLiteral("memory"), QStringLiteral("pids"), QStringLiteral("cpu")}));
    QVERIFY(badge->text().contains(QLatin1String("Limits not enforced: memory, pids, cpu")));
    QVERIFY2(badge->toolTip().contains(QLatin1String("--no-cgroups")), qPrintable(badge->toolTip()));
}

void TestDoctorDialog::limitsBadgeHidesWhenEverythingHolds()
{
    QWidget parent;
    auto *badge = new LimitsBadge(&parent);
    parent.show();
    SandboxLimits holds;
    holds.enforced = true;
    badge->setLimits(holds);
    QVERIFY(!badge->isVisible());
    SandboxLimits noClaim; // a backend that says nothing (e.g. an older engine)
    badge->setLimits(noClaim);
    QVERIFY(!badge->isVisible());
    SandboxLimits disk;
    disk.enforced = false;
    disk.enforcement.insert(QStringLiteral("memory"), {true, QStringLiteral("cgroup v2"), {}});
    disk.enforcement.insert(QStringLiteral("disk"), {false, {}, QStringLiteral("no loop devices")});
    badge->setLimits(disk);
    QVERIFY(badge->isVisible());
    QCOMPARE(badge->notEnforced(), QStringList{QStringLiteral("disk")});
    badge->setLimits(holds);
    QVERIFY(!badge->isVisible());
}

// SANDBOX_SCREENSHOT_DIR=DIR (under Xvfb): the dialog at a small and a large size, light and
// dark, for a person to look at.
void TestDoctorDialog::screenshots()
{
    const QString dir = qEnvironmentVariable("SANDBOX_SCREENSHOT_DIR");
    if (dir.isEmpty())
        QSKIP("set SANDBOX_SCREENSHOT_DIR to write screenshots");
    HostTree tree({QStringLiteral("ubuntu-24.04")});
    const QPalette light = QApplication::palette();
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    for (const bool dark : {false, true}) {
        QApplication::setPalette(dark ? darkPalette() : light);
        for (const QSize size : {QSize(700, 520), QSize(1100, 900)}) {
            DoctorDialog dialog;
            dialog.setProgram(QStringLiteral(SANDBOXD_BIN),
                              {QStringLiteral("--root"), tree.root(), QStringLiteral("--uid"),
                               QStringLiteral("1000")});
            QSignalSpy checked(&dialog, &DoctorDialog::checked);
            dialog.resize(size);
            dialog.show();
            dialog.runCheck();
            QVERIFY(checked.wait(30000));
            QVERIFY(QTest::qWaitForWindowExposed(&dialog));
            const QString file = QStringLiteral("%1/doctor-%2-%3x%4.png")
                                     .arg(dir,
                                          dark ? QStringLiteral("dark") : QStringLiteral("light"))
                                     .arg(size.width())
                                     .arg(size.height());
            QVERIFY(dialog.grab().save(file));
        }
    }

    // A sandbox whose limits do not hold (an engine without cgroups), opened as in the app.
    UiTest::Engine engine;
    QVERIFY(engine.start({QStringLiteral("--no-cgroups")}));
    const Result<SandboxInfo> sandbox = engine.createAgent(QStringLiteral("no-limits"));
    QVERIFY(sandbox);
    SandboxPageRegistry registry;
    registerDefaultPages(registry);
    for (const bool dark : {false, true}) {
        QApplication::setPalette(dark ? darkPalette() : light);
        SandboxWorkspace workspace(engine.client(), *sandbox, registry);
        workspace.resize(1024, 700);
        workspace.show();
        QVERIFY(QTest::qWaitForWindowExposed(&workspace));
        QTRY_VERIFY(workspace.findChild<LimitsBadge *>()->isVisible());
        QVERIFY(workspace.grab().save(
            QStringLiteral("%1/workspace-%2.png")
                .arg(dir, dark ? QStringLiteral("dark") : QStringLiteral("light"))));
    }
    QApplication::setPalette(light);
}

QTEST_MAIN(TestDoctorDialog)
#include "tst_doctordialog.moc"
