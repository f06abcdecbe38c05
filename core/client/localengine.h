#pragma once

#include "connectionprofile.h"
#include "restclient.h"

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>
#include <QTimer>

class QProcess;

namespace Sandbox {

// Makes sure the local engine answers, starting it when nothing does (docs/protocol.md 1.2).
// ensureRunning(): GET /health; if nothing answers, starts the engine:
// - as the systemd user service when its unit (packaging/systemd/sandboxd.service) is installed
//   and serves this profile's address and data dir: `systemctl --user start sandboxd.service`,
//   so that systemd delegates a cgroup subtree and sandbox limits hold (docs/protocol.md 6.2);
// - otherwise (or when that fails) `sandboxd --data-dir DIR` detached (found next to the running
//   executable, then on PATH, or setProgram(); its output appended to DATA_DIR/sandboxd.log);
// then polls /health until it answers and DATA_DIR/api-key exists, for at most startTimeout() ms.
// Ends with ready() (the profile with its key filled in) or failed(). Never blocks.
class LocalEngine final : public QObject
{
    Q_OBJECT

public:
    static constexpr int DefaultStartTimeoutMs = 15000;

    explicit LocalEngine(const ConnectionProfile &profile, QObject *parent = nullptr);
    ~LocalEngine() override;

    void setProgram(const QString &path) { m_program = path; }
    // The sandboxd to start: setProgram(), else findProgram().
    QString program() const;
    // sandboxd next to the running executable, else on PATH; empty if none.
    static QString findProgram();
    void setStartTimeout(int ms) { m_startTimeoutMs = ms; }
    int startTimeout() const { return m_startTimeoutMs; }
    void setPollInterval(int ms) { m_pollIntervalMs = ms; }
    // The service manager's client ("systemctl" on PATH) and where user units are looked for
    // (the user's, the admin's, the packages': systemd's own order).
    void setSystemctl(const QString &program) { m_systemctl = program; }
    void setUserUnitDirs(const QStringList &dirs) { m_unitDirs = dirs; }
    // The installed sandboxd.service that serves this profile, or empty.
    QString userServiceUnit() const;

    void ensureRunning();
    bool isBusy() const { return m_busy; }

Q_SIGNALS:
    void ready(const Sandbox::ConnectionProfile &profile);
    void failed(const Sandbox::Error &error);
    // sandboxd was started with this process id.
    void engineStarted(qint64 pid);
    // sandboxd was started as the systemd user service.
    void serviceStarted();

private:
    void probe();
    void onHealth(const Result<QJsonValue> &health);
    void finish(const Result<ConnectionProfile> &result);
    void startService(const QString &unit);
    void startOwnEngine();
    void waitForEngine();

    ConnectionProfile m_profile;
    RestClient *m_rest; // owned (child)
    RpcCall m_probe;
    QTimer m_pollTimer;
    QElapsedTimer m_sinceStart;
    QString m_program;
    QString m_systemctl = QStringLiteral("systemctl");
    QStringList m_unitDirs;
    QProcess *m_systemctlRun = nullptr; // owned (child) while it runs
    bool m_triedService = false;
    int m_startTimeoutMs = DefaultStartTimeoutMs;
    int m_pollIntervalMs = 200;
    bool m_busy = false;
    bool m_started = false;
};

} // namespace Sandbox
