#pragma once

#include "protocol/result.h"

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

class QProcess;

namespace Sandbox {

// One check of `sandboxd doctor` (engine/doctor/doctor.h): a plain verdict and the fix.
struct HostCheckItem
{
    QString id;      // "userns", "apparmor", "bubblewrap", "sandbox", "cgroups", ...
    QString title;   // "User namespaces"
    QString verdict; // "ok" | "warn" | "fail" | "skip"
    QString summary;
    QString fix; // empty when nothing is to be done
};

// The report of `sandboxd doctor --json` for this computer.
struct HostReport
{
    QString host;
    QList<HostCheckItem> checks;
    int failures = 0;
    int warnings = 0;

    static Result<HostReport> fromJson(const QByteArray &json);
};

// Runs the local engine's `sandboxd doctor --json` (as the user who will run the engine) and
// reads its report. Asynchronous and bounded (HostCheck::TimeoutMs); finished() follows run().
class HostCheck final : public QObject
{
    Q_OBJECT

public:
    static constexpr int TimeoutMs = 30000;

    explicit HostCheck(QObject *parent = nullptr);
    ~HostCheck() override;

    // The sandboxd to ask: setProgram(), else LocalEngine's (next to the executable, then PATH).
    void setProgram(const QString &path) { m_program = path; }
    // More arguments after `doctor --json` (e.g. --root DIR --uid N for a prepared tree).
    void setExtraArguments(const QStringList &arguments) { m_extraArguments = arguments; }
    void run();
    bool isRunning() const { return m_process != nullptr; }

Q_SIGNALS:
    void finished(const Sandbox::Result<Sandbox::HostReport> &report);

private:
    void done(const Result<HostReport> &report);

    QString m_program;
    QStringList m_extraArguments;
    QProcess *m_process = nullptr; // owned (child) while it runs
};

} // namespace Sandbox

Q_DECLARE_METATYPE(Sandbox::HostReport)
