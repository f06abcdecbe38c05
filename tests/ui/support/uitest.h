#pragma once

#include <enginefixture.h>

#include <client/client.h>

#include <QEventLoop>
#include <QString>
#include <QTemporaryDir>
#include <QTimer>

#include <functional>
#include <memory>

class QWidget;

namespace UiTest {

// Points QSettings and the XDG directories at a fresh temporary directory, so that a test never
// reads or writes the user's settings. Call first (e.g. in initTestCase()).
void isolateSettings();
QString settingsDir();

// `widget` at 1024x700 and 1920x1080 in the light and the dark palette, kept as
// build/artefacts/NAME-WxH-THEME.png to be looked at; false when a picture could not be saved.
bool shoot(QWidget *widget, const QString &name);

// Runs the event loop until `done()` or `timeoutMs`; true if done() held.
bool waitFor(const std::function<bool()> &done, int timeoutMs = 30000);

// Calls `start` with a callback and waits for its result (a call to a real engine).
template<typename T>
Sandbox::Result<T> call(const std::function<Sandbox::RpcCall(Sandbox::Callback<T>)> &start,
                        int timeoutMs = 60000)
{
    std::optional<Sandbox::Result<T>> out;
    Sandbox::RpcCall handle = start([&out](Sandbox::Result<T> r) { out.emplace(std::move(r)); });
    if (!waitFor([&] { return out.has_value(); }, timeoutMs))
        return Sandbox::Error{Sandbox::ErrorCode::Timeout,
                              QStringLiteral("test wait timed out"),
                              {}};
    return std::move(*out);
}

// A real sandboxd on an ephemeral port with its own data dir (an EngineFixture, with its /rpc
// client), and a Client connected to it. The sandboxes made through it are deleted at the end.
class Engine final
{
public:
    Engine();
    ~Engine();

    bool start(const QStringList &extraArgs = {});
    EngineProcess &process() { return m_fixture.process(); }
    // Connected (waits until it is).
    Sandbox::Client *client();
    // The profile sandbox-desktop would use for this engine.
    Sandbox::ConnectionProfile localProfile() const;
    Sandbox::ConnectionProfile remoteProfile() const;

    Sandbox::Result<Sandbox::SandboxInfo> createAgent(
        const QString &name = {}, const QString &type = QStringLiteral("claude-code"));
    Sandbox::Result<Sandbox::SandboxInfo> createAgent(const Sandbox::AgentCreateOptions &options);
    Sandbox::Result<Sandbox::SandboxInfo> createDatabase(
        const Sandbox::DatabaseCreateOptions &options);
    Sandbox::Result<Sandbox::ExecResult> exec(const QString &id, const QString &command);
    Sandbox::Result<QByteArray> readFile(const QString &id, const QString &path);
    bool writeFile(const QString &id, const QString &path, const QByteArray &content);

private:
    Sandbox::Result<Sandbox::SandboxInfo> deletedAtCleanup(Sandbox::Result<Sandbox::SandboxInfo> r);

    EngineFixture m_fixture;
    std::unique_ptr<QObject> m_owner;
    Sandbox::Client *m_client = nullptr;
};

} // namespace UiTest
