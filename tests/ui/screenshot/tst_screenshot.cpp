// The main window as a user sees it, on a real X server (Xvfb), at 1024x700, 1600x1000 and
// 1920x1080 in a light and a dark palette: a sandbox open with its files, a Python file in the
// editor and a console that ran a command with colours and an error line, then a database's SQL
// console with a result. The pictures are kept in build/artefacts/{mainwindow,sql}-WxH-THEME.png;
// the test checks that the panes are not empty, the fonts are the ones asked for, the editor's
// paper follows the palette, nothing is cut off and a result gets the room for ten rows. Then the
// terminal running htop and the agent dashboard with real runs (Claude Code against the mock
// model API), light and dark.
#include <uitest.h>

#include <agents/agentdashboard.h>
#include <agents/agentdashboardmodel.h>
#include <client/agentrun.h>
#include <client/agentsservice.h>
#include <client/client.h>
#include <common/uistyle.h>
#include <connection/connectiondialog.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <console/commandline.h>
#include <console/consolebuffer.h>
#include <console/consolepage.h>
#include <console/consoleview.h>
#include <editor/editorpage.h>
#include <files/filespage.h>
#include <files/filetreemodel.h>
#include <mainwindow/mainwindow.h>
#include <mainwindow/newsandboxdialog.h>
#include <mainwindow/sandboxlistmodel.h>
#include <sql/resultmodel.h>
#include <sql/resultview.h>
#include <sql/sqlconsole.h>
#include <sql/sqleditor.h>
#include <terminal/terminalpage.h>
#include <terminal/terminalview.h>
#include <workspace/sandboxpageregistry.h>
#include <workspace/sandboxworkspace.h>

#include <mockmodelserver.h>

#include <Qsci/qscilexer.h>
#include <Qsci/qsciscintilla.h>

#include <QAbstractButton>
#include <QApplication>
#include <QDir>
#include <QFontInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QScreen>
#include <QSet>
#include <QSignalSpy>
#include <QStyleFactory>
#include <QTabBar>
#include <QTableView>
#include <QTest>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>

#include <optional>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
// Distinct colours in a rectangle: an empty pane has one or two.
int colours(const QImage &image, const QRect &rect)
{
    QSet<QRgb> seen;
    const QRect r = rect.intersected(image.rect());
    for (int y = r.top(); y <= r.bottom(); y += 2) {
        for (int x = r.left(); x <= r.right(); x += 2)
            seen.insert(image.pixel(x, y));
    }
    return int(seen.size());
}

QRect rectIn(QWidget *window, QWidget *w)
{
    return QRect(w->mapTo(window, QPoint(0, 0)), w->size());
}

// Widgets a user must be able to reach: shown, yet clipped by their parents or the window (the
// ones inside `within` when given).
QStringList unreachable(QWidget *window, QWidget *within = nullptr)
{
    QStringList out;
    const QRect inside = window->rect();
    const auto check = [&](QWidget *w) {
        if (!w->isVisibleTo(window) || w->window() != window)
            return;
        const QRect r(w->mapTo(window, QPoint(0, 0)), w->size());
        const QRect visible = w->visibleRegion().boundingRect();
        const bool clipped = visible.width() < w->width() - 1 || visible.height() < w->height() - 1;
        // A tool bar's hidden buttons sit in its extension menu: those are reachable.
        if (qobject_cast<QToolBar *>(w->parentWidget()))
            return;
        if (!inside.contains(r) || clipped || w->width() < 8 || w->height() < 8) {
            const QString text = qobject_cast<QAbstractButton *>(w)
                                     ? static_cast<QAbstractButton *>(w)->text()
                                     : w->objectName();
            out << QStringLiteral("%1 \"%2\" at %3,%4 %5x%6")
                       .arg(QString::fromLatin1(w->metaObject()->className()), text)
                       .arg(r.x())
                       .arg(r.y())
                       .arg(r.width())
                       .arg(r.height());
        }
    };
    QWidget *root = within ? within : window;
    for (QAbstractButton *b : root->findChildren<QAbstractButton *>()) {
        // Tab bars' scroll arrows and close buttons come and go with the room.
        if (qobject_cast<QTabBar *>(b->parentWidget()))
            continue;
        check(b);
    }
    for (QLineEdit *e : root->findChildren<QLineEdit *>())
        check(e);
    return out;
}

// A label whose text does not fit in it (cut at its edge or at the window's): empty when all of
// it shows.
QString cutOff(QWidget *window, QLabel *label)
{
    const QRect r(label->mapTo(window, QPoint(0, 0)), label->size());
    const QRect room = label->contentsRect();
    const int flags = int(label->alignment()) | (label->wordWrap() ? int(Qt::TextWordWrap) : 0);
    const QRect needed = label->fontMetrics().boundingRect(QRect(0, 0, room.width(), 1 << 20),
                                                           flags, label->text());
    const QRect visible = label->visibleRegion().boundingRect();
    if (window->rect().contains(r) && visible.size() == label->size()
        && needed.width() <= room.width() && needed.height() <= room.height())
        return {};
    return QStringLiteral(
               "\"%1\" needs %2x%3, has %4x%5 at %6,%7 (%8x%9 visible) in a %10x%11 window")
        .arg(label->text())
        .arg(needed.width())
        .arg(needed.height())
        .arg(room.width())
        .arg(room.height())
        .arg(r.x())
        .arg(r.y())
        .arg(visible.width())
        .arg(visible.height())
        .arg(window->width())
        .arg(window->height());
}

// Pixels of a saturated red (Fusion's tab close box) in a rectangle.
int redPixels(const QImage &image, const QRect &rect)
{
    int n = 0;
    const QRect r = rect.intersected(image.rect());
    for (int y = r.top(); y <= r.bottom(); ++y) {
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (c.red() > 170 && c.green() < 120 && c.blue() < 110)
                ++n;
        }
    }
    return n;
}

QImage grab(QWidget *window)
{
    QCoreApplication::processEvents();
    return window->screen()->grabWindow(window->winId()).toImage();
}

QString artefact(const QString &name)
{
    QDir().mkpath(QStringLiteral(SANDBOX_ARTEFACT_DIR));
    return QStringLiteral(SANDBOX_ARTEFACT_DIR "/") + name + QStringLiteral(".png");
}
} // namespace

// Every row: a main window at one screen size in one palette, a sandbox open with its files, an
// editor and a console that ran a coloured command, then a database with a SQL result.
class TestScreenshot final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (QGuiApplication::platformName() != QLatin1String("xcb"))
            QSKIP("needs an X server (run under xvfb-run)");
        UiTest::isolateSettings();
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        m_light = QApplication::palette();
        QVERIFY(m_mock.listen());
        QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"),
                                 QStringLiteral(SANDBOX_BINARY_DIR "/agents")}),
                 qPrintable(m_engine.process().log()));

        // Some sandboxes to list: the one we open, one stopped, one database.
        const auto s = m_engine.createAgent(QStringLiteral("web-app"));
        QVERIFY(s);
        m_agent = s->id;
        const auto other = m_engine.createAgent(QStringLiteral("experiments"),
                                                QStringLiteral("opencode"));
        QVERIFY(other);
        Client *c = m_engine.client();
        QVERIFY(UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->sandboxes().stop(other->id, this, cb); }));
        QVERIFY(
            m_engine
                .writeFile(s->id, QStringLiteral("/workspace/app/server.py"),
                           "\"\"\"A tiny HTTP server.\"\"\"\n"
                           "import http.server\n\n"
                           "PORT = 8080  # the port to listen on\n\n\n"
                           "class Handler(http.server.BaseHTTPRequestHandler):\n"
                           "    def do_GET(self):\n"
                           "        self.send_response(200)\n"
                           "        self.end_headers()\n"
                           "        self.wfile.write(b'hello from the sandbox\\n')\n\n\n"
                           "if __name__ == '__main__':\n"
                           "    http.server.HTTPServer(('', PORT), Handler).serve_forever()\n"));
        QVERIFY(m_engine.writeFile(s->id, QStringLiteral("/workspace/README.md"), "# web-app\n"));
        QVERIFY(m_engine.writeFile(s->id, QStringLiteral("/workspace/Dockerfile"),
                                   "FROM python:3.12\n"));
        QVERIFY(m_engine.exec(s->id,
                              QStringLiteral("mkdir -p tests docs && touch tests/test_server.py")));

        DatabaseCreateOptions db;
        db.type = QStringLiteral("sqlite");
        db.size = QStringLiteral("lite");
        db.name = QStringLiteral("orders-db");
        const auto created = UiTest::call<SandboxInfo>(
            [&](Callback<SandboxInfo> cb) { return c->databases().create(db, this, cb); });
        QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
        m_database = created->id;
    }

    void cleanup() { QApplication::setPalette(m_light); }

    void mainWindow_data()
    {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("dark");
        for (const QSize size : {QSize(1024, 700), QSize(1600, 1000), QSize(1920, 1080)}) {
            for (const bool dark : {false, true}) {
                const QString name = QStringLiteral("%1x%2-%3")
                                         .arg(size.width())
                                         .arg(size.height())
                                         .arg(dark ? QStringLiteral("dark")
                                                   : QStringLiteral("light"));
                QTest::newRow(qPrintable(name)) << size << dark;
            }
        }
    }

    void mainWindow()
    {
        QFETCH(QSize, size);
        QFETCH(bool, dark);
        const QString row = QString::fromLatin1(QTest::currentDataTag());
        QApplication::setPalette(dark ? Style::darkPalette() : m_light);

        SandboxPageRegistry registry;
        registerDefaultPages(registry);
        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionManager connection;
        MainWindow window(&connection, &registry, &profiles, &secrets);
        window.resize(size);
        window.move(0, 0);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy listed(&window, &MainWindow::sandboxesListed);
        window.connectWith(m_engine.localProfile(), QStringLiteral("screenshot-") + row);
        QVERIFY(listed.wait(15000));
        QTRY_COMPARE(window.size(), size);

        SandboxWorkspace *ws = window.openSandbox(m_agent);
        QVERIFY(ws);
        auto *files = ws->page<FilesPage>(QStringLiteral("files"));
        QTRY_VERIFY_WITH_TIMEOUT(files->model()->indexOf(QStringLiteral("/workspace/app")).isValid(),
                                 10000);
        files->view()->expand(files->model()->indexOf(QStringLiteral("/workspace/app")));
        QTRY_VERIFY_WITH_TIMEOUT(files->model()
                                     ->indexOf(QStringLiteral("/workspace/app/server.py"))
                                     .isValid(),
                                 10000);
        files->view()->setCurrentIndex(
            files->model()->indexOf(QStringLiteral("/workspace/app/server.py")));

        EditorPage *editor = ws->openFile(QStringLiteral("/workspace/app/server.py"));
        QTRY_VERIFY_WITH_TIMEOUT(editor->state() == EditorPage::State::Text, 10000);
        editor->editor()->setCursorPosition(3, 7);

        auto *console = ws->page<ConsolePage>(QStringLiteral("console"));
        QSignalSpy finished(console, &ConsolePage::commandFinished);
        console->run(QStringLiteral("ls -la --color=always app; printf '\\033[1;32mPASS\\033[0m 12 "
                                    "tests  \\033[33m1 warning\\033[0m\\n'; "
                                    "echo 'error: port 8080 already in use' >&2; exit 1"));
        QVERIFY(finished.wait(15000));
        console->run(QStringLiteral("python3 --version"));
        QVERIFY(finished.wait(15000));
        console->view()->flushPendingUpdate();

        // The fonts asked for are the ones drawn: fixed-pitch in the console and the editor.
        QVERIFY(QFontInfo(console->view()->font()).fixedPitch());
        QVERIFY(QFontInfo(editor->editor()->lexer()->font(1)).fixedPitch()); // Python comments

        QImage shot = grab(&window);
        QVERIFY(!shot.isNull());
        QVERIFY(shot.save(artefact(QStringLiteral("mainwindow-") + row)));
        qInfo("screenshot: %s", qPrintable(artefact(QStringLiteral("mainwindow-") + row)));

        // No empty panes: the sidebar, the file tree, the editor and the console all hold content.
        const qreal dpr = shot.devicePixelRatio();
        const auto scaled = [dpr](const QRect &r) {
            return QRect((r.topLeft() * dpr), r.size() * dpr);
        };
        QVERIFY2(colours(shot, scaled(rectIn(&window, window.sidebar()))) > 20,
                 "the sandbox list looks empty");
        QVERIFY2(colours(shot, scaled(rectIn(&window, files->view()))) > 20,
                 "the file tree looks empty");
        QVERIFY2(colours(shot, scaled(rectIn(&window, editor->editor()))) > 20,
                 "the editor looks empty");
        QVERIFY2(colours(shot, scaled(rectIn(&window, console->view()))) > 20,
                 "the console looks empty");
        // The editor's paper follows the palette.
        const QColor paper = shot.pixelColor(
            scaled(rectIn(&window, editor->editor()->viewport())).bottomRight() - QPoint(4, 4));
        QVERIFY2(Style::isDark(window.palette()) == (paper.lightnessF() < 0.4),
                 qPrintable(paper.name()));
        // Nothing cut off: every button and field is whole, the command line has room.
        const QStringList cut = unreachable(&window);
        QVERIFY2(cut.isEmpty(), qPrintable(cut.join(QStringLiteral("; "))));
        QVERIFY2(console->commandLine()->width() >= 240,
                 qPrintable(QString::number(console->commandLine()->width())));
        // The console's status ("exit 0 · 5 ms") is whole, not cut at its first letters.
        auto *status = console->findChild<QWidget *>(QStringLiteral("consoleStatus"));
        QVERIFY(status);
        QVERIFY2(status->width() >= status->fontMetrics().horizontalAdvance(console->statusText()),
                 qPrintable(QStringLiteral("\"%1\" in %2 px")
                                .arg(console->statusText())
                                .arg(status->width())));
        // Tab close buttons are the style's plain close icon, not red boxes.
        for (QTabBar *bar : window.findChildren<QTabBar *>()) {
            if (!bar->isVisible() || !bar->tabsClosable())
                continue;
            QVERIFY2(redPixels(shot, scaled(rectIn(&window, bar))) < 4,
                     qPrintable(bar->parentWidget()->objectName()));
        }

        // A database: its SQL console with a result of 200 rows.
        SandboxWorkspace *dbws = window.openSandbox(m_database);
        QVERIFY(dbws);
        dbws->showPage(dbws->page(QStringLiteral("sql-console")));
        auto *sql = dbws->findChild<SqlConsole *>();
        QVERIFY(sql);
        sql->editor()->setText(QStringLiteral(
            "-- the first orders\nWITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
            "WHERE i < 200)\nSELECT i AS id, 'customer ' || i AS customer, i * 9.5 AS total\n"
            "FROM n;"));
        QSignalSpy ran(sql, &SqlConsole::runFinished);
        sql->runAll();
        QVERIFY(ran.wait(60000));
        QTRY_VERIFY(sql->resultAt(0) && sql->resultAt(0)->model()->rowCount() > 0);
        shot = grab(&window);
        QVERIFY(shot.save(artefact(QStringLiteral("sql-") + row)));
        // The result has the room: at least ten rows are in view.
        QTableView *table = sql->resultAt(0)->table();
        const int rowHeight = table->verticalHeader()->defaultSectionSize();
        QVERIFY2(table->viewport()->height() >= 10 * rowHeight,
                 qPrintable(QStringLiteral("%1 px for rows of %2 px")
                                .arg(table->viewport()->height())
                                .arg(rowHeight)));
        // The pages get the height: a line above them (limits not enforced) stays one line.
        for (QWidget *badge : dbws->findChildren<QWidget *>(QStringLiteral("limitsBadge"))) {
            if (badge->isVisible())
                QVERIFY2(badge->height() <= 2 * badge->sizeHint().height(),
                         qPrintable(QString::number(badge->height())));
        }
        const QStringList cutSql = unreachable(&window);
        QVERIFY2(cutSql.isEmpty(), qPrintable(cutSql.join(QStringLiteral("; "))));
        window.close();
    }

    // The dialogs, kept next to the main window's picture (the New Sandbox dialog in both
    // palettes, with a key in its environment).
    void dialogs()
    {
        for (const bool dark : {false, true}) {
            QApplication::setPalette(dark ? Style::darkPalette() : m_light);
            NewSandboxDialog create;
            create.setName(QStringLiteral("review-bot"));
            create.show();
            QVERIFY(QTest::qWaitForWindowExposed(&create));
            auto *name = create.findChild<QLineEdit *>(QStringLiteral("envName"));
            QVERIFY(name);
            name->setFocus();
            QTest::keyClicks(name, QStringLiteral("ANTHROPIC_API_KEY="));
            QTest::keyClicks(create.findChild<QLineEdit *>(QStringLiteral("envValue")),
                             QStringLiteral("sk-ant-not-on-screen"));
            QApplication::processEvents();
            const QImage a = create.grab().toImage();
            QVERIFY(a.save(QStringLiteral(SANDBOX_ARTEFACT_DIR "/new-sandbox-dialog-%1.png")
                               .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))));
            QVERIFY(colours(a, a.rect()) > 10);
        }
        QApplication::setPalette(m_light);

        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionDialog connect(&profiles, &secrets, QStringLiteral("local"));
        connect.addProfile();
        connect.setFields(QStringLiteral("Team sandboxes"),
                          QStringLiteral("https://sandbox.example.workers.dev"),
                          QStringLiteral("secret"));
        connect.show();
        QVERIFY(QTest::qWaitForWindowExposed(&connect));
        const QImage b = connect.grab().toImage();
        QVERIFY(b.save(QStringLiteral(SANDBOX_ARTEFACT_DIR "/connection-dialog.png")));
        QVERIFY(colours(b, b.rect()) > 10);
    }

    // The terminal running htop, light and dark, at 1024x700 and 1600x1000:
    // build/artefacts/terminal-htop-{light,dark}-WxH.png.
    void terminalRunsHtop_data()
    {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<QSize>("size");
        QTest::newRow("light 1024x700") << false << QSize(1024, 700);
        QTest::newRow("dark 1600x1000") << true << QSize(1600, 1000);
    }
    void terminalRunsHtop()
    {
        QFETCH(bool, dark);
        QFETCH(QSize, size);
        const auto s = m_engine.createAgent(QStringLiteral("terminal-shot"));
        QVERIFY(s);
        TerminalPage page(SandboxPageContext{m_engine.client(), s.value(), nullptr});
        if (dark) {
            QPalette p = page.palette();
            p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
            p.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
            p.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
            p.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
            page.setPalette(p);
        }
        page.resize(size);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QVERIFY(
            UiTest::waitFor([&] { return page.isRunning() && !page.session()->streamId().isEmpty(); },
                            15000));
        // The shell is ready for input once its prompt shows.
        QVERIFY(
            UiTest::waitFor([&] { return !page.view()->screen().screenText().trimmed().isEmpty(); },
                            15000));
        page.view()->setFocus();
        QTest::keyClicks(page.view(), QStringLiteral("htop"));
        QTest::keyClick(page.view(), Qt::Key_Return);
        QVERIFY(UiTest::waitFor(
            [&] { return page.view()->screen().screenText().contains(QLatin1String("PID")); },
            20000));
        QTest::qWait(1500); // a second refresh with the CPU bars filled
        QDir().mkpath(QStringLiteral(SANDBOX_ARTEFACT_DIR));
        const QImage shot = page.grab().toImage();
        QVERIFY(shot.save(QStringLiteral(SANDBOX_ARTEFACT_DIR "/terminal-htop-%1-%2x%3.png")
                              .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))
                              .arg(size.width())
                              .arg(size.height())));
        QVERIFY(colours(shot, shot.rect()) > 4);
        QTest::keyClick(page.view(), Qt::Key_Q);
        page.hangUp();
    }

    // The terminal after a flood of output (20 MB of base64 lines, then a coloured line and the
    // prompt), light and dark, small and large: build/artefacts/terminal-flood-THEME-WxH.png. The
    // screen shows the end of the output with its colours and the prompt under it, and the
    // scrollback is full.
    void terminalAfterBigOutput_data() { addFloodRows(); }
    void terminalAfterBigOutput()
    {
        QFETCH(bool, dark);
        QFETCH(QSize, size);
        QVERIFY(makeFloodSandbox());
        QApplication::setPalette(dark ? Style::darkPalette() : m_light);
        TerminalPage page(SandboxPageContext{m_engine.client(), *m_floodSandbox, nullptr});
        page.resize(size);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QVERIFY(
            UiTest::waitFor([&] { return !page.view()->screen().screenText().trimmed().isEmpty(); },
                            15000));
        page.view()->setFocus();
        QTest::keyClicks(page.view(),
                         QStringLiteral("head -c 15000000 /dev/urandom | base64 -w 100; printf "
                                        "'\\033[1;32mflood %s\\033[0m \\033[44m blue \\033[0m\\n' "
                                        "done"));
        QTest::keyClick(page.view(), Qt::Key_Return);
        QVERIFY(UiTest::waitFor(
            [&] {
                // The marker, then the prompt again on the cursor's line.
                const TerminalScreen &screen = page.view()->screen();
                const QString prompt = screen.lineText(screen.cursor().y());
                return screen.screenText().contains(QLatin1String("flood done"))
                       && !prompt.isEmpty() && !prompt.contains(QLatin1String("flood"));
            },
            120000));
        QTest::qWait(100); // a repaint after the last output
        const TerminalScreen &screen = page.view()->screen();
        QCOMPARE(screen.scrollbackLines(), TerminalScreen::kDefaultScrollback);
        const QImage shot = page.grab().toImage();
        QVERIFY(saveFloodShot(shot, "terminal", dark, size));
        QVERIFY(colours(shot, shot.rect()) > 4);
        page.hangUp();
        QApplication::setPalette(m_light);
    }

    // The console after a flood of output (15 MB of base64 lines, then a coloured line and a line
    // on stderr), light and dark, small and large: build/artefacts/console-flood-THEME-WxH.png.
    // The console shows the end of the output with its colours, stderr marked, the exit line
    // under it, and keeps as many lines as its cap.
    void consoleAfterBigOutput_data() { addFloodRows(); }
    void consoleAfterBigOutput()
    {
        QFETCH(bool, dark);
        QFETCH(QSize, size);
        QVERIFY(makeFloodSandbox());
        QApplication::setPalette(dark ? Style::darkPalette() : m_light);
        ConsolePage page(SandboxPageContext{m_engine.client(), *m_floodSandbox, nullptr});
        page.resize(size);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QSignalSpy finished(&page, &ConsolePage::commandFinished);
        page.run(QStringLiteral("head -c 15000000 /dev/urandom | base64 -w 100; printf "
                                "'\\033[1;32mflood %s\\033[0m \\033[44m blue \\033[0m\\n' done; "
                                "echo 'an error line' >&2"));
        QVERIFY(finished.wait(120000));
        page.view()->flushPendingUpdate();
        const ConsoleBuffer &b = page.view()->buffer();
        QCOMPARE(b.lineCount(), ConsoleBuffer::DefaultMaxLines);
        QVERIFY(b.droppedLines() > 0);
        QVERIFY(page.view()->isFollowing());
        // The last lines are in view: the exit line, the coloured one right before it or before
        // stderr's (the two come through two pipes: stderr's may come a pipe's worth of stdout
        // lines early).
        const qint64 end = page.view()->firstVisibleLine() + page.view()->visibleLineCount();
        QCOMPARE(end, b.lineCount());
        const qint64 last = b.lineCount() - 1;
        QVERIFY(b.line(last).text.startsWith(QStringLiteral("[exit 0 · ")));
        bool coloured = false;
        bool stderrLine = false;
        for (qint64 i = last - 3000; i < last; ++i) {
            const ConsoleBuffer::Line line = b.line(i);
            if (line.text == QLatin1String("flood done  blue ") && line.spans.size() == 2)
                coloured = i >= last - 2;
            if (line.kind == ConsoleBuffer::LineKind::Stderr)
                stderrLine = line.text == QLatin1String("an error line");
        }
        QVERIFY(coloured);
        QVERIFY(stderrLine);
        const QImage shot = page.grab().toImage();
        QVERIFY(saveFloodShot(shot, "console", dark, size));
        QVERIFY(colours(shot, rectIn(&page, page.view())) > 4);
        QApplication::setPalette(m_light);
    }

    // The agent dashboard as a main view (View ▸ Agent Dashboard) with real runs: one done, one
    // failed, one running; light and dark at 720x520, 1024x700, 1600x1000 and 1920x1080 (with
    // "By day" open; the totals line and the Refresh button whole at every size):
    // build/artefacts/dashboard-{light,dark}-WxH.png.
    void agentDashboard_data()
    {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<QSize>("size");
        QTest::newRow("light 720x520") << false << QSize(720, 520);
        QTest::newRow("dark 720x520") << true << QSize(720, 520);
        QTest::newRow("light 1024x700") << false << QSize(1024, 700);
        QTest::newRow("dark 1024x700") << true << QSize(1024, 700);
        QTest::newRow("light 1600x1000") << false << QSize(1600, 1000);
        QTest::newRow("dark 1600x1000") << true << QSize(1600, 1000);
        QTest::newRow("light 1920x1080") << false << QSize(1920, 1080);
        QTest::newRow("dark 1920x1080") << true << QSize(1920, 1080);
    }
    void agentDashboard()
    {
        QFETCH(bool, dark);
        QFETCH(QSize, size);
        Client *c = m_engine.client();
        if (m_agents.isEmpty()) {
            const auto make = [&](const QString &name) {
                AgentCreateOptions o;
                o.type = QStringLiteral("claude-code");
                o.size = QStringLiteral("basic");
                o.name = name;
                // The mock is on this computer's loopback: only an exact entry reaches it.
                o.networkPolicy = NetworkPolicy{NetworkPolicy::Mode::List,
                                                {QStringLiteral("127.0.0.1:%1").arg(m_mock.port())},
                                                {}};
                o.env = {{QStringLiteral("ANTHROPIC_API_KEY"), QStringLiteral("sk-ant-shot-0000")},
                         {QStringLiteral("ANTHROPIC_BASE_URL"), m_mock.baseUrl().toString()}};
                const auto r = UiTest::call<SandboxInfo>(
                    [&](Callback<SandboxInfo> cb) { return c->agents().create(o, this, cb); },
                    60000);
                if (!r)
                    qWarning("cannot create %s: %s", qPrintable(name),
                             qPrintable(r.error().message));
                return r ? r->id : QString();
            };
            for (const char *name : {"docs-writer", "api-refactor", "test-runner"})
                m_agents.append(make(QString::fromLatin1(name)));
            QVERIFY(!m_agents.contains(QString()));
            const auto run = [&](const QString &id, const QString &prompt) {
                QJsonObject options{{QStringLiteral("model"), QStringLiteral("claude-sonnet-4-5")}};
                return UiTest::call<QJsonObject>(
                    [&](Callback<QJsonObject> cb) {
                        return c->agents().run(id, prompt, options, this, cb);
                    },
                    180000);
            };
            QVERIFY(run(m_agents[0], QStringLiteral("[[write:/workspace/README.md|# Docs]]")));
            QVERIFY(run(m_agents[1], QStringLiteral("[[fail:400]] refactor the API")));
            // The third runs on while the pictures are taken.
            AgentRunOptions options;
            options.model = QStringLiteral("claude-sonnet-4-5");
            m_running = c->agents().runStreaming(m_agents[2],
                                                 QStringLiteral(
                                                     "[[sleep:600000]] run the test suite"),
                                                 options, this);
            QVERIFY(m_running);
        }
        const QPalette before = QApplication::palette();
        if (dark) {
            QPalette p;
            p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
            p.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
            p.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
            p.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
            p.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
            p.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
            p.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
            p.setColor(QPalette::Highlight, QColor(0x2f, 0x65, 0xca));
            p.setColor(QPalette::HighlightedText, Qt::white);
            QApplication::setPalette(p);
        }
        SandboxPageRegistry registry;
        registerDefaultPages(registry);
        ProfileStore profiles;
        SecretStore secrets(SecretStore::Backend::File,
                            UiTest::settingsDir() + QStringLiteral("/keys.json"));
        ConnectionManager connection;
        MainWindow window(&connection, &registry, &profiles, &secrets);
        window.resize(size);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy listed(&window, &MainWindow::sandboxesListed);
        window.connectWith(m_engine.localProfile(), QStringLiteral("local"));
        QVERIFY(listed.wait(15000));
        window.action(QStringLiteral("agentDashboard"))->trigger();
        AgentDashboard *dashboard = window.agentDashboard();
        QVERIFY(dashboard);
        AgentDashboardModel *model = dashboard->model();
        QVERIFY(UiTest::waitFor(
            [&] {
                for (const QString &id : std::as_const(m_agents)) {
                    if (!model->hasHistory(id))
                        return false;
                }
                return model->totals().running == 1;
            },
            20000));
        const auto state = [&](int i) { return model->stateAt(model->rowOf(m_agents[i])); };
        QCOMPARE(state(0), AgentDashboardModel::State::Done);
        QCOMPARE(state(1), AgentDashboardModel::State::Failed);
        QCOMPARE(state(2), AgentDashboardModel::State::Running);
        dashboard->table()->sortByColumn(AgentDashboardModel::Name, Qt::AscendingOrder);
        // The big window shows the runs per day too.
        if (size.width() >= 1920)
            dashboard->byDayButton()->setChecked(true);
        QTest::qWait(300); // on purpose: deferred layouts (column widths, By day) settle first
        QDir().mkpath(QStringLiteral(SANDBOX_ARTEFACT_DIR));
        const QImage shot = window.grab().toImage();
        QApplication::setPalette(before);
        QVERIFY(shot.save(QStringLiteral(SANDBOX_ARTEFACT_DIR "/dashboard-%1-%2x%3.png")
                              .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))
                              .arg(size.width())
                              .arg(size.height())));
        QVERIFY(colours(shot, rectIn(&window, dashboard->table())) > 4);
        auto *totals = dashboard->findChild<QLabel *>(QStringLiteral("agentTotals"));
        QVERIFY(totals);
        QVERIFY(totals->text().contains(QLatin1String("cost $")));
        QVERIFY(totals->text().contains(QLatin1String("today: ")));
        QCOMPARE(window.size(), size);
        const QString cut = cutOff(&window, totals);
        QVERIFY2(cut.isEmpty(), qPrintable(cut));
        const QStringList hidden = unreachable(&window, dashboard);
        QVERIFY2(hidden.isEmpty(), qPrintable(hidden.join(QStringLiteral("; "))));
    }

    void cleanupTestCase()
    {
        if (m_running)
            m_running->cancel();
    }

private:
    // The rows of the pictures after a flood: light and dark, small and large.
    static void addFloodRows()
    {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<QSize>("size");
        QTest::newRow("light 720x520") << false << QSize(720, 520);
        QTest::newRow("dark 720x520") << true << QSize(720, 520);
        QTest::newRow("light 1600x1000") << false << QSize(1600, 1000);
        QTest::newRow("dark 1600x1000") << true << QSize(1600, 1000);
    }
    // build/artefacts/WHAT-flood-THEME-WxH.png
    static bool saveFloodShot(const QImage &shot, const char *what, bool dark, QSize size)
    {
        QDir().mkpath(QStringLiteral(SANDBOX_ARTEFACT_DIR));
        return shot.save(
            QStringLiteral(SANDBOX_ARTEFACT_DIR "/%1-flood-%2-%3x%4.png")
                .arg(QLatin1String(what), dark ? QStringLiteral("dark") : QStringLiteral("light"))
                .arg(size.width())
                .arg(size.height()));
    }
    // One sandbox for every flood row (a new shell or command in it each time): the suite's key
    // may run at most 8 sandboxes at once, and the dashboard's agents come after these rows.
    bool makeFloodSandbox()
    {
        if (!m_floodSandbox) {
            const auto s = m_engine.createAgent(QStringLiteral("terminal-flood"));
            if (!s)
                return false;
            m_floodSandbox = s.value();
        }
        return true;
    }

    UiTest::Engine m_engine;
    Sandbox::Mocks::MockModelServer m_mock;
    QStringList m_agents;
    QPointer<AgentRun> m_running;
    QPalette m_light;
    QString m_agent;
    QString m_database;
    std::optional<Sandbox::SandboxInfo> m_floodSandbox;
};

QTEST_MAIN(TestScreenshot)
#include "tst_screenshot.moc"
