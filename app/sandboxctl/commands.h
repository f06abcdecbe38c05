#pragma once

#include <client/client.h>
#include <client/rpccall.h>

#include <QObject>
#include <QStringList>

#include <memory>

// The commands of sandboxctl, each asynchronous: it finishes by calling done(exitCode).
class Commands final : public QObject
{
    Q_OBJECT

public:
    struct Options
    {
        bool json = false;
    };

    Commands(Sandbox::Client *client, Options options, QObject *parent = nullptr);

    // Runs `args` (the command and its arguments); false with a usage message for bad args.
    bool run(const QStringList &args, QString *usageError);

Q_SIGNALS:
    void done(int exitCode);

private:
    void fail(const Sandbox::Error &error);
    void printJson(const QJsonValue &value);
    void printSandboxes(const QList<Sandbox::SandboxInfo> &list);
    void call(const QString &method, const QJsonObject &params);
    void clis();
    void installCli(const QString &type);
    void exec(const QString &id, const QStringList &command, const Sandbox::ExecOptions &options);
    void transcript(const QString &id, const QString &runId, qint64 after);
    void query(const QString &id, const QString &sql, const QJsonArray &params, int pageSize);
    void fetchRest(const QString &id, const QString &cursor, int pageSize, qint64 rows, int pages);
    void printRows(const QList<QJsonArray> &rows);

    Sandbox::Client *m_client; // not owned
    Options m_options;
    Sandbox::RpcCall m_call;
};
