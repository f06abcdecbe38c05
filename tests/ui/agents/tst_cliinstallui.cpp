// The app on an engine that has no agent CLI yet, as after installing the .deb: creating an
// OpenCode agent offers "Install OpenCode (npm, ~121 MB)"; Return takes the offer, a dialog shows
// the download's progress from the engine (a real npm install from the registry), and the agent
// is created once its CLI is there. The offer and the progress are kept as pictures in a light and
// a dark palette (build/artefacts/cliinstall-*.png).
#include <uitest.h>

#include <agents/cliinstalldialog.h>
#include <common/uistyle.h>
#include <connection/connectionmanager.h>
#include <connection/profilestore.h>
#include <connection/secretstore.h>
#include <mainwindow/mainwindow.h>
#include <workspace/sandboxpageregistry.h>

#include <QAbstractButton>
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <functional>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {

QString artefact(const QString &name)
{
    const QString dir = QStringLiteral(SANDBOX_BINARY_DIR "/artefacts");
    QDir().mkpath(dir);
    return dir + u'/' + name + QStringLiteral(".png");
}

QMessageBox *offer()
{
    return qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
}

// The offer is modal (its own event loop): `act` runs from a timer inside that loop once it shows.
class OfferAnswer final
{
public:
    explicit OfferAnswer(std::function<void(QMessageBox *)> act)
    {
        m_timer.setInterval(50);
        QObject::connect(&m_timer, &QTimer::timeout, [this, act] {
            if (QMessageBox *box = offer()) {
                m_timer.stop();
                act(box);
                m_done = true;
            }
        });
        m_timer.start();
    }
    bool done() const { return m_done; }

private:
    QTimer m_timer;
    bool m_done = false;
};

} // namespace

class TestCliInstallUi final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        // No CLI anywhere: an empty --agents-dir, a fresh data dir.
        QVERIFY2(m_engine.start({QStringLiteral("--agents-dir"), m_noClis.path()}),
                 qPrintable(m_engine.process().log()));
        registerDefaultPages(m_registry);
        m_secrets = std::make_unique<SecretStore>(SecretStore::Backend::File,
                                                  UiTest::settingsDir()
                                                      + QStringLiteral("/keys.json"));
        m_light = QApplication::palette();
    }

    void cancellingTheOfferCreatesNothing()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        QSignalSpy created(w.get(), &MainWindow::sandboxCreated);
        AgentCreateOptions options;
        options.type = QStringLiteral("opencode");
        options.size = QStringLiteral("basic");
        QString name, text;
        OfferAnswer answer([&](QMessageBox *box) {
            name = box->objectName();
            text = box->text();
            QTest::keyClick(box, Qt::Key_Escape);
        });
        w->createAgent(options);
        QVERIFY(UiTest::waitFor([&] { return answer.done(); }, 15000));
        QCOMPARE(name, QStringLiteral("cliInstallOffer"));
        QVERIFY2(text.contains(QLatin1String("OpenCode is not installed")), qPrintable(text));
        QVERIFY(UiTest::waitFor([] { return offer() == nullptr; }, 5000));
        QVERIFY(!w->findChild<CliInstallDialog *>());
        QCOMPARE(created.size(), 0);
    }

    void theOfferInstallsThenCreates()
    {
        auto w = makeWindow();
        QVERIFY(UiTest::waitFor(
            [&] { return m_connection->state() == ConnectionManager::State::Connected; }, 15000));
        QSignalSpy created(w.get(), &MainWindow::sandboxCreated);
        QSignalSpy errors(w.get(), &MainWindow::errorShown);
        AgentCreateOptions options;
        options.type = QStringLiteral("opencode");
        options.size = QStringLiteral("basic");
        options.name = QStringLiteral("after-install");
        QString installText;
        bool shots = true;
        OfferAnswer answer([&](QMessageBox *box) {
            QAbstractButton *install = box->defaultButton();
            installText = install ? install->text() : QString();
            for (const bool dark : {false, true}) {
                box->setPalette(dark ? Style::darkPalette() : m_light);
                shots = shots
                        && box->grab().save(
                            artefact(QStringLiteral("cliinstall-offer-")
                                     + (dark ? QStringLiteral("dark") : QStringLiteral("light"))));
            }
            box->setPalette(m_light);
            QTest::keyClick(box, Qt::Key_Return); // the default: install
        });
        w->createAgent(options);
        QVERIFY(UiTest::waitFor([&] { return answer.done(); }, 15000));
        QCOMPARE(installText, QStringLiteral("Install OpenCode (npm, ~121 MB)"));
        QVERIFY(shots);

        // The progress dialog follows the engine's download.
        CliInstallDialog *dialog = nullptr;
        QVERIFY(
            UiTest::waitFor([&] { return (dialog = w->findChild<CliInstallDialog *>()) != nullptr; },
                            10000));
        QVERIFY(dialog->isVisible());
        QPointer<CliInstallDialog> guard(dialog);
        bool sawDownload = false;
        QVERIFY(UiTest::waitFor(
            [&] {
                // (A picture with a fifth of it downloaded.)
                if (guard && guard->progressBar()->value() >= 200
                    && guard->statusLabel()->text().startsWith(QLatin1String("Downloading:")))
                    sawDownload = true;
                return sawDownload || !guard;
            },
            300000));
        QVERIFY2(sawDownload, "no progress was shown before the install ended");
        for (const bool dark : {false, true}) {
            if (!guard)
                break;
            guard->setPalette(dark ? Style::darkPalette() : m_light);
            QVERIFY(guard->grab().save(
                artefact(QStringLiteral("cliinstall-progress-")
                         + (dark ? QStringLiteral("dark") : QStringLiteral("light")))));
        }
        QApplication::setPalette(m_light);

        // Then the agent is created, with no error on the way.
        QVERIFY(UiTest::waitFor([&] { return !created.isEmpty() || !errors.isEmpty(); }, 240000));
        QVERIFY2(errors.isEmpty(), qPrintable(errors.value(0).value(0).toString()));
        QCOMPARE(created.first().first().value<SandboxInfo>().name,
                 QStringLiteral("after-install"));
        QCOMPARE(errors.size(), 0);
        QVERIFY(QFileInfo::exists(m_engine.process().dataDir()
                                  + QStringLiteral("/agents/opencode/node_modules/.bin/opencode")));

        // A second agent of the type is created without an offer.
        QSignalSpy again(w.get(), &MainWindow::sandboxCreated);
        options.name = QStringLiteral("second");
        w->createAgent(options);
        QVERIFY(again.wait(30000));
        QVERIFY(offer() == nullptr);
    }

    void npmsLineReadsInEveryTheme()
    {
        // npm's last line is secondary, not faint: it reads on the theme the dialog opened in and
        // on the one the user switches to while it is open (contrast as WCAG asks of text).
        const AgentCliInfo cli{QStringLiteral("opencode"),
                               QStringLiteral("OpenCode"),
                               QStringLiteral("opencode-ai"),
                               QStringLiteral("1.18.0"),
                               121000000,
                               false,
                               false,
                               true,
                               {}};
        for (const bool darkFirst : {false, true}) {
            QApplication::setPalette(darkFirst ? Style::darkPalette() : m_light);
            CliInstallDialog dialog(AgentsService(nullptr), cli);
            dialog.logLabel()->setText(QStringLiteral(
                "npm http fetch GET 200 https://registry.npmjs.org/opencode-ai 412ms"));
            dialog.resize(520, 200);
            dialog.show();
            QVERIFY(QTest::qWaitForWindowExposed(&dialog));
            for (const bool dark : {darkFirst, !darkFirst}) {
                QApplication::setPalette(dark ? Style::darkPalette() : m_light);
                QCoreApplication::processEvents();
                const QColor text = dialog.logLabel()->palette().color(QPalette::WindowText);
                const QColor window = dialog.palette().color(QPalette::Window);
                QVERIFY2(Style::contrast(text, window) >= 4.5,
                         qPrintable(QStringLiteral("%1 on %2 (%3): %4")
                                        .arg(text.name(), window.name(),
                                             dark ? QStringLiteral("dark") : QStringLiteral("light"))
                                        .arg(Style::contrast(text, window))));
                // Still set apart from the dialog's own text.
                QVERIFY(text != dialog.palette().color(QPalette::WindowText));
                QVERIFY(dialog.grab().save(
                    artefact(QStringLiteral("cliinstall-log-")
                             + (dark ? QStringLiteral("dark") : QStringLiteral("light")))));
            }
        }
        QApplication::setPalette(m_light);
    }

    void cleanupTestCase() { m_connection.reset(); }

private:
    std::unique_ptr<MainWindow> makeWindow()
    {
        m_connection.reset();
        m_connection = std::make_unique<ConnectionManager>();
        auto w = std::make_unique<MainWindow>(m_connection.get(), &m_registry, &m_profiles,
                                              m_secrets.get());
        w->resize(1024, 700);
        w->show();
        w->connectWith(m_engine.localProfile(), QStringLiteral("test-engine"));
        return w;
    }

    QTemporaryDir m_noClis;
    UiTest::Engine m_engine;
    SandboxPageRegistry m_registry;
    ProfileStore m_profiles;
    std::unique_ptr<SecretStore> m_secrets;
    std::unique_ptr<ConnectionManager> m_connection;
    QPalette m_light;
};

QTEST_MAIN(TestCliInstallUi)
#include "tst_cliinstallui.moc"
