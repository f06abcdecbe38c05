#include "hostcheck.h"

#include "localengine.h"
#include "protocol/fieldreader.h"
#include "protocol/json.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QTimer>

namespace Sandbox {

namespace {
constexpr qint64 MaxReportBytes = 1 << 20;
}

Result<HostReport> HostReport::fromJson(const QByteArray &json)
{
    const Json::Parsed parsed = Json::parse(json);
    if (parsed.error || !parsed.value.isObject())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("sandboxd doctor did not print a JSON report"),
                     {}};
    FieldReader r = FieldReader::answer(parsed.value.toObject(), QStringLiteral("HostReport"));
    HostReport report;
    report.host = r.string(QStringLiteral("host"));
    report.failures = int(r.integer(QStringLiteral("failures")));
    report.warnings = int(r.integer(QStringLiteral("warnings")));
    const QJsonArray checks = r.array(QStringLiteral("checks"));
    for (const QJsonValue &v : checks) {
        if (!r.ok())
            break;
        FieldReader c = FieldReader::answer(v, QStringLiteral("HostReport.check"));
        HostCheckItem item;
        item.id = c.string(QStringLiteral("id"));
        item.title = c.string(QStringLiteral("title"));
        item.verdict = c.oneOf(QStringLiteral("verdict"),
                               {QStringLiteral("ok"), QStringLiteral("warn"),
                                QStringLiteral("fail"), QStringLiteral("skip")});
        item.summary = c.string(QStringLiteral("summary"));
        item.fix = c.optionalString(QStringLiteral("fix"));
        if (!c.ok())
            r.failWith(c.error());
        report.checks.append(item);
    }
    if (!r.ok())
        return r.error();
    return report;
}

HostCheck::HostCheck(QObject *parent)
    : QObject(parent)
{}

HostCheck::~HostCheck()
{
    if (m_process) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(1000);
    }
}

void HostCheck::run()
{
    if (m_process)
        return;
    const QString program = m_program.isEmpty() ? LocalEngine::findProgram() : m_program;
    if (program.isEmpty()) {
        QTimer::singleShot(0, this, [this] {
            Q_EMIT finished(Error{ErrorCode::ConnectionError,
                                  QStringLiteral("sandboxd was not found next to the app or on "
                                                 "PATH, so this computer cannot be checked"),
                                  {}});
        });
        return;
    }
    m_process = new QProcess(this);
    m_process->setStandardInputFile(QProcess::nullDevice());
    connect(m_process, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        const QByteArray out = m_process->read(MaxReportBytes);
        // 0: nothing failed, 1: something failed; both print a report.
        if (status != QProcess::NormalExit || (code != 0 && code != 1))
            return done(Error{ErrorCode::InternalError,
                              QStringLiteral("sandboxd doctor ended with status %1: %2")
                                  .arg(code)
                                  .arg(QString::fromUtf8(m_process->readAllStandardError().left(500))
                                           .trimmed()),
                              {}});
        done(HostReport::fromJson(out));
    });
    connect(m_process, &QProcess::errorOccurred, this, [this, program](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart)
            done(Error{ErrorCode::ConnectionError,
                       QStringLiteral("cannot run %1: %2").arg(program, m_process->errorString()),
                       {}});
    });
    QTimer::singleShot(TimeoutMs, m_process, [this] {
        if (m_process)
            m_process->kill(); // finished() reports it
    });
    m_process->start(program, QStringList{QStringLiteral("doctor"), QStringLiteral("--json")}
                                  + m_extraArguments);
}

void HostCheck::done(const Result<HostReport> &report)
{
    if (!m_process)
        return;
    m_process->deleteLater();
    m_process = nullptr;
    Q_EMIT finished(report);
}

} // namespace Sandbox
