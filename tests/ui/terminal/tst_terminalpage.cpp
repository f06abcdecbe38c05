// A sandbox's terminal against a real engine and a real PTY in the sandbox: a resize reflows
// what the shell printed (a 190-character line wrapped at 80 columns is wrapped again at 40 and
// at 120), the programs see the new size (stty size), and a full-screen program redraws at it
// (htop).
#include <uitest.h>

#include <client/client.h>
#include <client/terminalsession.h>
#include <terminal/terminalpage.h>
#include <terminal/terminalview.h>
#include <workspace/sandboxpage.h>

#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;

class tst_TerminalPage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void resizeReflowsAndProgramsSeeTheNewSize();

private:
    // Resizes the page until its terminal has `cols` x `rows` cells.
    bool setSize(TerminalPage &page, int cols, int rows);
    // The rows of the screen, top to bottom.
    static QStringList rowsOf(const TerminalScreen &screen);
    static void type(TerminalPage &page, const QString &line);

    UiTest::Engine m_engine;
    SandboxInfo m_sandbox;
};

void tst_TerminalPage::initTestCase()
{
    QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
    const auto s = m_engine.createAgent(QStringLiteral("terminal-resize"));
    QVERIFY2(s, s ? "" : qPrintable(s.error().message));
    m_sandbox = s.value();
}

bool tst_TerminalPage::setSize(TerminalPage &page, int cols, int rows)
{
    const TerminalScreen &screen = page.view()->screen();
    for (int attempt = 0; attempt < 6; ++attempt) {
        if (screen.cols() == cols && screen.rows() == rows) {
            // Time passes on purpose: a size the window settles on later (its first show) must
            // not change the terminal after this returns.
            QTest::qWait(500);
            if (screen.cols() == cols && screen.rows() == rows)
                return true;
        }
        const QSize cell = page.view()->cellSize();
        page.resize(page.width() + (cols - screen.cols()) * cell.width(),
                    page.height() + (rows - screen.rows()) * cell.height());
        UiTest::waitFor([&] { return screen.cols() == cols && screen.rows() == rows; }, 2000);
    }
    return screen.cols() == cols && screen.rows() == rows;
}

QStringList tst_TerminalPage::rowsOf(const TerminalScreen &screen)
{
    QStringList out;
    for (int r = 0; r < screen.rows(); ++r)
        out.append(screen.lineText(r));
    return out;
}

void tst_TerminalPage::type(TerminalPage &page, const QString &line)
{
    QTest::keyClicks(page.view(), line);
    QTest::keyClick(page.view(), Qt::Key_Return);
}

void tst_TerminalPage::resizeReflowsAndProgramsSeeTheNewSize()
{
    TerminalPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
    page.resize(900, 600);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QVERIFY(
        UiTest::waitFor([&] { return page.isRunning() && !page.session()->streamId().isEmpty(); },
                        15000));
    QVERIFY(setSize(page, 80, 24));
    const TerminalScreen &screen = page.view()->screen();
    QVERIFY(UiTest::waitFor(
        [&] {
            return screen.lineText(screen.cursor().y()).contains(u'$')
                   || screen.lineText(screen.cursor().y()).contains(u'#');
        },
        15000));
    page.view()->setFocus();
    type(page, QStringLiteral("clear;head -c190 /dev/zero|tr '\\0' x;echo;echo END"));
    const QString x80(80, u'x');
    QVERIFY2(UiTest::waitFor(
                 [&] {
                     const QStringList r = rowsOf(screen);
                     return r.contains(x80) && r.contains(QStringLiteral("END"));
                 },
                 15000),
             qPrintable(rowsOf(screen).join(u'\n')));
    QStringList rows = rowsOf(screen);
    int first = int(rows.indexOf(x80));
    QVERIFY2(first >= 0, qPrintable(rows.join(u'\n')));
    QCOMPARE(rows.at(first + 1), x80);
    QCOMPARE(rows.at(first + 2), QString(30, u'x'));

    // Narrower: the 190 characters take four rows of 40 and one of 30, "END" follows them.
    QVERIFY(setSize(page, 40, 24));
    const QString x40(40, u'x');
    QVERIFY2(UiTest::waitFor(
                 [&] {
                     const QStringList r = rowsOf(screen);
                     const int f = int(r.indexOf(x40));
                     return f >= 0 && f + 5 < r.size() && r.at(f + 3) == x40
                            && r.at(f + 4) == QString(30, u'x')
                            && r.at(f + 5) == QLatin1String("END");
                 },
                 5000),
             qPrintable(rowsOf(screen).join(u'\n')));
    // The shell and its programs see the new size.
    type(page, QStringLiteral("stty size"));
    QVERIFY2(UiTest::waitFor([&] { return rowsOf(screen).contains(QStringLiteral("24 40")); },
                             10000),
             qPrintable(rowsOf(screen).join(u'\n')));

    // Wider: one row of 120 and one of 70.
    QVERIFY(setSize(page, 120, 24));
    QVERIFY2(UiTest::waitFor(
                 [&] {
                     const QStringList r = rowsOf(screen);
                     const int f = int(r.indexOf(QString(120, u'x')));
                     return f >= 0 && f + 2 < r.size() && r.at(f + 1) == QString(70, u'x')
                            && r.at(f + 2) == QLatin1String("END");
                 },
                 5000),
             qPrintable(rowsOf(screen).join(u'\n')));

    // A full-screen program draws at the size it is given, and again at a new one: htop's
    // function-key bar is on the last row.
    type(page, QStringLiteral("htop"));
    QVERIFY2(UiTest::waitFor([&] { return screen.lineText(23).startsWith(QLatin1String("F1")); },
                             20000),
             qPrintable(rowsOf(screen).join(u'\n')));
    QVERIFY(setSize(page, 100, 30));
    QVERIFY2(UiTest::waitFor([&] { return screen.lineText(29).startsWith(QLatin1String("F1")); },
                             10000),
             qPrintable(rowsOf(screen).join(u'\n')));
    QTest::keyClick(page.view(), Qt::Key_Q);
    page.hangUp();
}

QTEST_MAIN(tst_TerminalPage)
#include "tst_terminalpage.moc"
