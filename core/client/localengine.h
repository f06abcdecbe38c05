#pragma once

#include "connectionprofile.h"
#include "restclient.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace Sandbox {

// Makes sure the local engine answers, starting it when nothing does (docs/protocol.md 1.2).
// ensureRunning(): GET /health; if nothing answers, starts `sandboxd --data-dir DIR` detached
// (found next to the running executable, then on PATH, or setProgram(); its output appended
// to DATA_DIR/sandboxd.log), then polls /health
// until it answers and DATA_DIR/api-key exists, for at most startTimeout() ms. Ends with ready()
// (the profile with its key filled in) or failed(). Never blocks.
class LocalEngine final : public QObject
{
    Q_OBJECT

public:
    static constexpr int DefaultStartTimeoutMs = 15000;

    explicit LocalEngine(const ConnectionProfile &profile, QObject *parent = nullptr);
    ~LocalEngine() override;

    void setProgram(const QString &path) { m_program = path; }
    // The sandboxd to start: setProgram(), else next to the executable, else on PATH; empty if none.
    QString program() const;
    void setStartTimeout(int ms) { m_startTimeoutMs = ms; }
    int startTimeout() const { return m_startTimeoutMs; }
    void setPollInterval(int ms) { m_pollIntervalMs = ms; }

    void ensureRunning();
    bool isBusy() const { return m_busy; }

Q_SIGNALS:
    void ready(const Sandbox::ConnectionProfile &profile);
    void failed(const Sandbox::Error &error);
    // sandboxd was started with this process id.
    void engineStarted(qint64 pid);

private:
    void probe();
    void onHealth(const Result<QJsonValue> &health);
    void finish(const Result<ConnectionProfile> &result);

    ConnectionProfile m_profile;
    RestClient *m_rest; // owned (child)
    RpcCall m_probe;
    QTimer m_pollTimer;
    QElapsedTimer m_sinceStart;
    QString m_program;
    int m_startTimeoutMs = DefaultStartTimeoutMs;
    int m_pollIntervalMs = 200;
    bool m_busy = false;
    bool m_started = false;
};

} // namespace Sandbox
