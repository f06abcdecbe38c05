#include "uitest.h"

#include <QApplication>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QTest>
#include <QWidget>

#include <common/uistyle.h>

using namespace Sandbox;

namespace UiTest {

namespace {
QTemporaryDir *settingsRoot()
{
    static QTemporaryDir dir; // one per test process, removed at exit
    return &dir;
}
} // namespace

bool shoot(QWidget *widget, const QString &name)
{
    const QPalette light = QApplication::palette();
    const QSize was = widget->size();
    bool ok = QDir().mkpath(QStringLiteral(SANDBOX_BINARY_DIR "/artefacts"));
    for (const QSize size : {QSize(1024, 700), QSize(1920, 1080)}) {
        for (const bool dark : {false, true}) {
            QApplication::setPalette(dark ? Ui::Style::darkPalette() : light);
            widget->resize(size);
            QTest::qWait(30); // on purpose: deferred layouts and repaints land before the picture
            ok = ok
                 && widget->grab().save(
                     QStringLiteral(SANDBOX_BINARY_DIR "/artefacts/%1-%2x%3-%4.png")
                         .arg(name)
                         .arg(size.width())
                         .arg(size.height())
                         .arg(dark ? QStringLiteral("dark") : QStringLiteral("light")));
        }
    }
    QApplication::setPalette(light);
    widget->resize(was);
    return ok;
}

void isolateSettings()
{
    const QString root = settingsRoot()->path();
    for (const char *var :
         {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}) {
        const QString dir = root + u'/' + QString::fromLatin1(var).toLower();
        QDir().mkpath(dir);
        qputenv(var, QFile::encodeName(dir));
    }
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope,
                       root + QStringLiteral("/xdg_config_home"));
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope,
                       root + QStringLiteral("/xdg_config_home"));
    QCoreApplication::setOrganizationName(QStringLiteral("sandbox-desktop-tests"));
    QCoreApplication::setApplicationName(QCoreApplication::applicationName().isEmpty()
                                             ? QStringLiteral("tests")
                                             : QCoreApplication::applicationName());
}

QString settingsDir()
{
    return settingsRoot()->path();
}

bool waitFor(const std::function<bool()> &done, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    }
    return true;
}

Engine::Engine()
    : m_owner(std::make_unique<QObject>())
{}

Engine::~Engine()
{
    if (m_client)
        m_client->close();
    m_owner.reset();
    m_fixture.cleanup();
}

bool Engine::start(const QStringList &extraArgs)
{
    return m_fixture.start(extraArgs);
}

ConnectionProfile Engine::localProfile() const
{
    const EngineProcess &proc = m_fixture.process();
    ConnectionProfile p = ConnectionProfile::local(proc.dataDir());
    p.url = proc.url();
    return p;
}

ConnectionProfile Engine::remoteProfile() const
{
    const EngineProcess &proc = m_fixture.process();
    return ConnectionProfile::remote(proc.url(), proc.key());
}

Client *Engine::client()
{
    if (!m_client) {
        m_client = new Client(remoteProfile(), m_owner.get());
        m_client->open();
    }
    waitFor([this] { return m_client->rpc()->state() == RpcClient::State::Connected; }, 15000);
    return m_client;
}

Result<SandboxInfo> Engine::createAgent(const QString &name, const QString &type)
{
    AgentCreateOptions options;
    options.type = type;
    options.name = name;
    options.size = QStringLiteral("basic");
    return createAgent(options);
}

Result<SandboxInfo> Engine::createAgent(const AgentCreateOptions &options)
{
    Client *c = client();
    return deletedAtCleanup(call<SandboxInfo>(
        [&](Callback<SandboxInfo> cb) { return c->agents().create(options, m_owner.get(), cb); }));
}

Result<SandboxInfo> Engine::createDatabase(const DatabaseCreateOptions &options)
{
    Client *c = client();
    return deletedAtCleanup(
        call<SandboxInfo>([&](Callback<SandboxInfo>
                                  cb) { return c->databases().create(options, m_owner.get(), cb); },
                          120000));
}

Result<SandboxInfo> Engine::deletedAtCleanup(Result<SandboxInfo> r)
{
    if (r)
        m_fixture.deleteAtCleanup(r->id);
    return r;
}

Result<ExecResult> Engine::exec(const QString &id, const QString &command)
{
    Client *c = client();
    return call<ExecResult>([&](Callback<ExecResult> cb) {
        return c->sandboxes().exec(id, Command(command), ExecOptions{}, m_owner.get(), cb);
    });
}

Result<QByteArray> Engine::readFile(const QString &id, const QString &path)
{
    Client *c = client();
    Result<FileContent> r = call<FileContent>([&](Callback<FileContent> cb) {
        return c->sandboxes().readFile(id, path, ReadFileOptions{}, m_owner.get(), cb);
    });
    if (!r)
        return r.error();
    return r->content;
}

bool Engine::writeFile(const QString &id, const QString &path, const QByteArray &content)
{
    Client *c = client();
    WriteFileOptions options;
    options.parents = true;
    Result<WriteFileResult> r = call<WriteFileResult>([&](Callback<WriteFileResult> cb) {
        return c->sandboxes().writeFile(id, path, content, options, m_owner.get(), cb);
    });
    return r.ok();
}

} // namespace UiTest
