#pragma once

#include <client/client.h>
#include <client/rpccall.h>
#include <client/sqlrows.h>

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
    struct Invocation;
    struct Spec;
    using Handler = bool (Commands::*)(const Invocation &in, QString *usageError);
    static const Spec kSpecs[];

    // One per command of the table in commands.cpp: false with a usage message for bad args.
    bool session(const Invocation &in, QString *usageError);
    bool quota(const Invocation &in, QString *usageError);
    bool list(const Invocation &in, QString *usageError);
    bool create(const Invocation &in, QString *usageError);
    bool lifecycle(const Invocation &in, QString *usageError);
    bool exec(const Invocation &in, QString *usageError);
    bool query(const Invocation &in, QString *usageError);
    bool shell(const Invocation &in, QString *usageError);
    bool read(const Invocation &in, QString *usageError);
    bool write(const Invocation &in, QString *usageError);
    bool ls(const Invocation &in, QString *usageError);
    bool mkdirOrRm(const Invocation &in, QString *usageError);
    bool runs(const Invocation &in, QString *usageError);
    bool runAgent(const Invocation &in, QString *usageError);
    bool transcript(const Invocation &in, QString *usageError);
    bool keys(const Invocation &in, QString *usageError);
    bool agents(const Invocation &in, QString *usageError);

    void fail(const Sandbox::Error &error);
    void printJson(const QJsonValue &value);
    void printSandboxes(const QList<Sandbox::SandboxInfo> &list);
    void printRuns(const QList<Sandbox::AgentRunRecord> &runs);
    void printListing(const Sandbox::FileListing &listing);
    void call(const QString &method, const QJsonObject &params);
    void clis();
    void installCli(const QString &type);
    void execStreaming(const QString &id, const QStringList &command,
                       const Sandbox::ExecOptions &options);
    void transcriptFrom(const QString &id, const QString &runId, qint64 after);
    void queryPaged(const QString &id, const QString &sql, const QJsonArray &params, int pageSize);
    void fetchRest(const QString &id, const QString &cursor, int pageSize, qint64 rows, int pages);
    void printRows(const Sandbox::SqlRows &rows);

    Sandbox::Client *m_client; // not owned
    Options m_options;
    Sandbox::RpcCall m_call;
};
