#include "enginefixture.h"

#include <QJsonArray>
#include <QJsonDocument>

EngineFixture::~EngineFixture()
{
    cleanup();
}

bool EngineFixture::start(const QStringList &extraArgs, const QString &dataDir)
{
    return m_engine.start(extraArgs, dataDir) && m_rpc.open(m_engine.wsUrl(), m_engine.key());
}

void EngineFixture::cleanup()
{
    // A suite may have restarted the engine or closed the client: delete what can still be.
    if (m_rpc.isOpen()) {
        for (const QString &id : std::as_const(m_created))
            m_rpc.call(QStringLiteral("sandbox.delete"), {{QStringLiteral("id"), id}}, 30000);
    }
    m_created.clear();
    m_engine.terminate();
}

QJsonObject EngineFixture::create(const QString &method, const QJsonObject &params, int timeoutMs)
{
    const QJsonObject sandbox = m_rpc.result(method, params, timeoutMs);
    const QString id = sandbox.value(QStringLiteral("id")).toString();
    if (!id.isEmpty())
        m_created.append(id);
    return sandbox;
}

QString EngineFixture::createAgent(const QString &type, const QString &size,
                                   const QJsonObject &extra)
{
    QJsonObject params{{QStringLiteral("type"), type}};
    if (!size.isEmpty())
        params.insert(QStringLiteral("size"), size);
    for (auto it = extra.begin(); it != extra.end(); ++it)
        params.insert(it.key(), it.value());
    return create(QStringLiteral("agents.create"), params).value(QStringLiteral("id")).toString();
}

QJsonObject EngineFixture::exec(const QString &id, const QJsonValue &command,
                                const QJsonObject &options, int timeoutMs)
{
    QJsonObject params{{QStringLiteral("id"), id}, {QStringLiteral("command"), command}};
    if (!options.isEmpty())
        params.insert(QStringLiteral("options"), options);
    return m_rpc.result(QStringLiteral("sandbox.exec"), params, timeoutMs);
}

QString EngineFixture::readFile(const QString &id, const QString &path)
{
    return m_rpc
        .result(QStringLiteral("sandbox.readFile"),
                {{QStringLiteral("id"), id}, {QStringLiteral("path"), path}})
        .value(QStringLiteral("content"))
        .toString();
}

int EngineFixture::errorCode(const QString &method, const QJsonObject &params)
{
    return m_rpc.call(method, params)
        .value(QStringLiteral("error"))
        .toObject()
        .value(QStringLiteral("code"))
        .toInt();
}

QByteArray dump(const QJsonValue &value)
{
    return value.isObject()  ? QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact)
           : value.isArray() ? QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact)
                             : QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact);
}
