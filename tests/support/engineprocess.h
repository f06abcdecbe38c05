#pragma once

#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>
#include <QUrl>

#include <memory>
#include <sys/types.h>

// A real sandboxd for a test: its own data dir, an ephemeral port, its key.
class EngineProcess final
{
public:
    EngineProcess();
    ~EngineProcess();

    // Starts sandboxd and waits until it prints its URL. `dataDir` empty: a fresh temporary one.
    bool start(const QStringList &extraArgs = {}, const QString &dataDir = {});
    // Before start(), from a root test: run the engine as this unprivileged uid instead (through
    // setpriv), with its data dir handed to it: the README's way for a normal user.
    void setRunAsUid(uid_t uid) { m_runAsUid = uid; }
    // Before start(): one more variable in the engine's environment (e.g. npm's registry).
    void setEnvironmentValue(const QString &name, const QString &value)
    {
        m_extraEnv.insert(name, value);
    }
    // SIGKILL, as a crash would.
    void kill9();
    // SIGTERM and wait.
    void terminate();

    QUrl url() const { return m_url; }
    QUrl wsUrl() const;
    QString key() const { return m_key; }
    QString dataDir() const { return m_dataDir; }
    qint64 pid() const { return m_process ? m_process->processId() : 0; }
    // The engine's CPU time so far (user + system), in ms (-1 if it cannot be read): what work
    // cost the engine itself, whatever else the machine runs.
    double cpuMs() const;
    QString log() const;
    // After terminate(): it exited by itself with status 0 (no crash, no SIGKILL needed).
    bool exitedCleanly() const;

private:
    std::unique_ptr<QTemporaryDir> m_tmp;
    std::unique_ptr<QProcess> m_process;
    QString m_dataDir;
    QUrl m_url;
    QString m_key;
    QByteArray m_log;
    uid_t m_runAsUid = uid_t(-1);
    QProcessEnvironment m_extraEnv;
};
