#include "networktypes.h"

#include "protocol/fieldreader.h"
#include "types.h"

#include <QCoreApplication>

namespace Sandbox {

namespace {

Result<QStringList> entries(const QJsonObject &o, const QString &key)
{
    if (!o.contains(key))
        return QStringList();
    const QJsonValue v = o.value(key);
    QStringList out;
    bool ok = v.isArray();
    for (const QJsonValue &e : v.toArray()) {
        ok = ok && e.isString();
        out.append(e.toString());
    }
    if (!ok)
        return Error{ErrorCode::InternalError,
                     QStringLiteral("network.%1 must be an array of strings").arg(key),
                     QJsonObject{
                         {QStringLiteral("field"), QString(QStringLiteral("network.") + key)}}};
    return out;
}

} // namespace

Result<NetworkPolicy> NetworkPolicy::fromJson(const QJsonValue &value)
{
    if (value.isUndefined() || value.isNull())
        return NetworkPolicy();
    if (value.isBool())
        return value.toBool() ? publicInternet() : off();
    if (!value.isObject())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("network must be false, true or {allow, deny}"),
                     QJsonObject{{QStringLiteral("field"), QStringLiteral("network")}}};
    const QJsonObject o = value.toObject();
    const auto allow = entries(o, QStringLiteral("allow"));
    if (!allow)
        return allow.error();
    const auto deny = entries(o, QStringLiteral("deny"));
    if (!deny)
        return deny.error();
    NetworkPolicy p;
    p.allow = allow.value();
    p.deny = deny.value();
    const bool star = p.allow.removeAll(QStringLiteral("*")) > 0;
    if (star || !o.contains(QStringLiteral("allow")))
        p.mode = Mode::Public;
    else
        p.mode = p.allow.isEmpty() ? Mode::Off : Mode::List;
    return p;
}

QJsonValue NetworkPolicy::toJson() const
{
    switch (mode) {
    case Mode::Off:
        return false;
    case Mode::Public: {
        if (deny.isEmpty() && allow.isEmpty())
            return true;
        QJsonObject o;
        if (!allow.isEmpty())
            o.insert(QStringLiteral("allow"),
                     QJsonArray::fromStringList(QStringList{QStringLiteral("*")} + allow));
        if (!deny.isEmpty())
            o.insert(QStringLiteral("deny"), QJsonArray::fromStringList(deny));
        return o;
    }
    case Mode::List: {
        QJsonObject o{{QStringLiteral("allow"), QJsonArray::fromStringList(allow)}};
        if (!deny.isEmpty())
            o.insert(QStringLiteral("deny"), QJsonArray::fromStringList(deny));
        return o;
    }
    }
    return false;
}

NetworkPolicy NetworkPolicy::allowing(const QString &entry) const
{
    NetworkPolicy p = *this;
    const QString e = entry.trimmed().toLower();
    if (e.isEmpty())
        return p;
    // What names the entry exactly (or its host) in deny goes.
    const QString host = e.startsWith(u'[') ? e.section(u']', 0, 0) + u']' : e.section(u':', 0, 0);
    p.deny.removeIf([&](const QString &d) {
        const QString x = d.toLower();
        return x == e || x == host;
    });
    if (p.mode == Mode::Off)
        p.mode = Mode::List;
    // With the public internet the entry matters for what the internet does not reach
    // (loopback, private networks): it goes in `allow` next to "*" either way.
    if (!p.allow.contains(e, Qt::CaseInsensitive))
        p.allow.append(e);
    return p;
}

QString NetworkPolicy::summary() const
{
    switch (mode) {
    case Mode::Off:
        return QCoreApplication::translate("NetworkPolicy", "no network");
    case Mode::Public:
        return deny.isEmpty()
                   ? QCoreApplication::translate("NetworkPolicy", "the public internet")
                   : QCoreApplication::translate("NetworkPolicy", "the public internet, %n denied",
                                                 "", int(deny.size()));
    case Mode::List:
        if (allow.isEmpty())
            return QCoreApplication::translate("NetworkPolicy", "no network (empty allow list)");
        return QCoreApplication::translate("NetworkPolicy", "%n allowed", "", int(allow.size()));
    }
    return {};
}

Result<NetworkDenial> NetworkDenial::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("Denial"));
    NetworkDenial d;
    d.time = r.dateTime(QStringLiteral("time"));
    d.host = r.optionalString(QStringLiteral("host"));
    d.port = int(r.optionalInteger(QStringLiteral("port")));
    d.address = r.optionalString(QStringLiteral("address"));
    d.reason = r.string(QStringLiteral("reason"));
    d.via = r.optionalString(QStringLiteral("via"));
    d.pid = r.optionalInteger(QStringLiteral("pid"), -1);
    d.process = r.optionalString(QStringLiteral("process"));
    d.count = int(r.optionalInteger(QStringLiteral("count"), 1));
    d.allowWith = r.optionalString(QStringLiteral("allowWith"));
    if (!r.ok())
        return r.error();
    return d;
}

Result<NetworkLog> NetworkLog::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("NetworkLog"));
    NetworkLog log;
    log.id = r.string(QStringLiteral("id"));
    const auto policy = NetworkPolicy::fromJson(r.object().value(QStringLiteral("network")));
    if (!policy)
        return policy.error();
    log.policy = policy.value();
    if (!r.ok())
        return r.error();
    auto denied = listFromJson<NetworkDenial>(r.object(), QStringLiteral("denied"));
    if (!denied)
        return denied.error();
    log.denied = std::move(denied).value();
    return log;
}

} // namespace Sandbox
