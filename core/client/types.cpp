#include "types.h"

#include "protocol/fieldreader.h"

namespace Sandbox {

namespace {

QJsonObject envObject(const QMap<QString, QString> &env)
{
    QJsonObject o;
    for (auto it = env.cbegin(); it != env.cend(); ++it)
        o.insert(it.key(), it.value());
    return o;
}

Quota::Usage readUsage(FieldReader &r, const QString &key)
{
    const QJsonObject o = r.object(key);
    if (!r.ok())
        return {};
    FieldReader inner = FieldReader::answer(o, QStringLiteral("Quota.") + key);
    Quota::Usage u{inner.integer(QStringLiteral("used")), inner.integer(QStringLiteral("limit"))};
    if (!inner.ok())
        r.failWith(inner.error());
    return u;
}

} // namespace

Result<SandboxInfo> SandboxInfo::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("Sandbox"));
    SandboxInfo s;
    s.id = r.string(QStringLiteral("id"));
    s.kind = r.oneOf(QStringLiteral("kind"), {QStringLiteral("agent"), QStringLiteral("database")});
    s.type = r.string(QStringLiteral("type"));
    s.status = r.oneOf(QStringLiteral("status"),
                       {QStringLiteral("creating"), QStringLiteral("starting"),
                        QStringLiteral("running"), QStringLiteral("sleeping"),
                        QStringLiteral("stopped"), QStringLiteral("error")});
    s.createdAt = r.dateTime(QStringLiteral("createdAt"));
    s.size = r.optionalString(QStringLiteral("size"));
    s.name = r.optionalString(QStringLiteral("name"));
    s.error = r.optionalString(QStringLiteral("error"));
    s.lastActiveAt = r.optionalDateTime(QStringLiteral("lastActiveAt"));
    s.sleepAfterMs = r.optionalInteger(QStringLiteral("sleepAfter"));
    if (const QJsonValue network = r.object().value(QStringLiteral("network"));
        !network.isUndefined() && !network.isNull() && !network.isBool() && !network.isObject()) {
        r.fail(QStringLiteral("network"), QStringLiteral("must be false, true or an object"));
    } else if (const auto policy = NetworkPolicy::fromJson(network); !policy) {
        r.failWith(policy.error());
    } else {
        s.networkPolicy = policy.value();
        s.network = policy->mode != NetworkPolicy::Mode::Off;
    }
    s.gateway = r.optionalBool(QStringLiteral("gateway"));
    s.env = r.stringList(QStringLiteral("env"), true);
    if (r.ok() && r.object().contains(QStringLiteral("limits"))) {
        FieldReader limits = FieldReader::answer(r.object(QStringLiteral("limits")),
                                                 QStringLiteral("Sandbox.limits"));
        s.limits.memoryMb = limits.integer(QStringLiteral("memoryMb"));
        s.limits.pids = limits.integer(QStringLiteral("pids"));
        s.limits.cpus = limits.number(QStringLiteral("cpus"));
        s.limits.diskMb = limits.integer(QStringLiteral("diskMb"));
        if (limits.ok() && limits.object().contains(QStringLiteral("enforced")))
            s.limits.enforced = limits.boolean(QStringLiteral("enforced"));
        if (limits.ok() && limits.object().contains(QStringLiteral("enforcement"))) {
            const QJsonObject detail = limits.object(QStringLiteral("enforcement"));
            for (auto it = detail.constBegin(); it != detail.constEnd() && limits.ok(); ++it) {
                FieldReader one = FieldReader::answer(it.value(),
                                                      QStringLiteral("Sandbox.limits.enforcement.")
                                                          + it.key());
                LimitHold hold;
                hold.enforced = one.boolean(QStringLiteral("enforced"));
                hold.by = one.optionalString(QStringLiteral("by"));
                hold.reason = one.optionalString(QStringLiteral("reason"));
                if (!one.ok())
                    limits.failWith(one.error());
                s.limits.enforcement.insert(it.key(), hold);
            }
        }
        if (!limits.ok())
            r.failWith(limits.error());
    }
    if (r.ok() && s.id.isEmpty())
        r.fail(QStringLiteral("id"), QStringLiteral("must not be empty"));
    if (!r.ok())
        return r.error();
    return s;
}

QJsonObject ExecOptions::toJson(bool stream) const
{
    QJsonObject o;
    if (!cwd.isEmpty())
        o.insert(QStringLiteral("cwd"), cwd);
    if (timeoutMs)
        o.insert(QStringLiteral("timeout"), double(*timeoutMs));
    if (!env.isEmpty())
        o.insert(QStringLiteral("env"), envObject(env));
    if (stream)
        o.insert(QStringLiteral("stream"), true);
    if (maxOutputBytes)
        o.insert(QStringLiteral("maxOutputBytes"), double(*maxOutputBytes));
    if (stdinText)
        o.insert(QStringLiteral("stdin"), *stdinText);
    return o;
}

Result<ExecResult> ExecResult::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("ExecResult"));
    ExecResult e;
    e.exitCode = int(r.integer(QStringLiteral("exitCode")));
    e.signal = r.optionalString(QStringLiteral("signal"));
    e.standardOutput = r.optionalString(QStringLiteral("stdout")).toUtf8();
    e.standardError = r.optionalString(QStringLiteral("stderr")).toUtf8();
    e.durationMs = r.optionalInteger(QStringLiteral("durationMs"));
    e.truncated = r.optionalBool(QStringLiteral("truncated"));
    e.timedOut = r.optionalBool(QStringLiteral("timedOut"));
    e.streamId = r.optionalString(QStringLiteral("streamId"));
    if (!r.ok())
        return r.error();
    return e;
}

Result<FileEntry> FileEntry::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("FileEntry"));
    FileEntry f;
    f.name = r.string(QStringLiteral("name"));
    f.path = r.string(QStringLiteral("path"));
    const QString type = r.oneOf(QStringLiteral("type"),
                                 {QStringLiteral("file"), QStringLiteral("directory"),
                                  QStringLiteral("symlink"), QStringLiteral("other")});
    f.type = type == QStringLiteral("file")        ? Type::File
             : type == QStringLiteral("directory") ? Type::Directory
             : type == QStringLiteral("symlink")   ? Type::Symlink
                                                   : Type::Other;
    f.size = r.integer(QStringLiteral("size"));
    f.mode = int(r.optionalInteger(QStringLiteral("mode")));
    f.mtime = r.optionalDateTime(QStringLiteral("mtime"));
    f.target = r.optionalString(QStringLiteral("target"));
    if (r.ok() && f.size < 0)
        r.fail(QStringLiteral("size"), QStringLiteral("must not be negative"));
    if (!r.ok())
        return r.error();
    return f;
}

Result<FileListing> FileListing::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("FileListing"));
    FileListing l;
    l.path = r.string(QStringLiteral("path"));
    l.truncated = r.optionalBool(QStringLiteral("truncated"));
    r.array(QStringLiteral("entries"));
    if (!r.ok())
        return r.error();
    Result<QList<FileEntry>> entries = listFromJson<FileEntry>(value, QStringLiteral("entries"));
    if (!entries)
        return entries.error();
    l.entries = std::move(entries).value();
    return l;
}

Result<FileContent> FileContent::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("FileContent"));
    FileContent c;
    c.path = r.string(QStringLiteral("path"));
    const QString content = r.string(QStringLiteral("content"));
    c.encoding = r.optionalString(QStringLiteral("encoding"), QStringLiteral("utf8"));
    c.size = r.optionalInteger(QStringLiteral("size"), -1);
    c.truncated = r.optionalBool(QStringLiteral("truncated"));
    if (r.ok()) {
        if (c.encoding == QStringLiteral("base64")) {
            auto decoded = QByteArray::fromBase64Encoding(content.toLatin1(),
                                                          QByteArray::AbortOnBase64DecodingErrors);
            if (!decoded)
                r.fail(QStringLiteral("content"), QStringLiteral("is not valid base64"));
            else
                c.content = std::move(decoded.decoded);
        } else if (c.encoding == QStringLiteral("utf8")) {
            c.content = content.toUtf8();
        } else {
            r.fail(QStringLiteral("encoding"), QStringLiteral("must be utf8 or base64"));
        }
    }
    if (!r.ok())
        return r.error();
    if (c.size < 0)
        c.size = c.content.size();
    return c;
}

Result<WriteFileResult> WriteFileResult::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("WriteFileResult"));
    WriteFileResult w{r.string(QStringLiteral("path")), r.integer(QStringLiteral("size"))};
    if (!r.ok())
        return r.error();
    return w;
}

QJsonObject AgentCreateOptions::toJson() const
{
    QJsonObject o{{QStringLiteral("type"), type}};
    if (!size.isEmpty())
        o.insert(QStringLiteral("size"), size);
    if (!env.isEmpty())
        o.insert(QStringLiteral("env"), envObject(env));
    if (networkPolicy)
        o.insert(QStringLiteral("network"), networkPolicy->toJson());
    else if (network)
        o.insert(QStringLiteral("network"), true);
    if (gateway)
        o.insert(QStringLiteral("gateway"), *gateway);
    if (sleepAfterMs)
        o.insert(QStringLiteral("sleepAfter"), double(*sleepAfterMs));
    if (!name.isEmpty())
        o.insert(QStringLiteral("name"), name);
    return o;
}

QJsonObject DatabaseCreateOptions::toJson() const
{
    QJsonObject o{{QStringLiteral("type"), type}};
    if (!size.isEmpty())
        o.insert(QStringLiteral("size"), size);
    if (!database.isEmpty())
        o.insert(QStringLiteral("database"), database);
    if (!username.isEmpty())
        o.insert(QStringLiteral("username"), username);
    if (!password.isEmpty())
        o.insert(QStringLiteral("password"), password);
    if (!name.isEmpty())
        o.insert(QStringLiteral("name"), name);
    if (sleepAfterMs)
        o.insert(QStringLiteral("sleepAfter"), double(*sleepAfterMs));
    return o;
}

Result<QueryResult> QueryResult::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("QueryResult"));
    QueryResult q;
    q.rows = r.array(QStringLiteral("rows"));
    q.rowCount = r.optionalInteger(QStringLiteral("rowCount"), -1);
    const QJsonValue fields = r.object().value(QStringLiteral("fields"));
    if (!fields.isUndefined() && !fields.isNull())
        q.fields = r.array(QStringLiteral("fields"));
    q.command = r.optionalString(QStringLiteral("command"));
    if (!r.ok())
        return r.error();
    if (q.rowCount < 0)
        q.rowCount = q.rows.size();
    return q;
}

Result<SessionInfo> SessionInfo::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("Session"));
    SessionInfo s;
    s.id = r.string(QStringLiteral("id"));
    s.name = r.optionalString(QStringLiteral("name"));
    s.createdAt = r.optionalDateTime(QStringLiteral("createdAt"));
    s.backend = r.oneOf(QStringLiteral("backend"),
                        {QStringLiteral("local"), QStringLiteral("cloudflare")});
    s.version = r.optionalString(QStringLiteral("version"));
    const QJsonObject sandboxes = r.object(QStringLiteral("sandboxes"));
    if (r.ok()) {
        FieldReader inner = FieldReader::answer(sandboxes, QStringLiteral("Session.sandboxes"));
        s.sandboxesTotal = inner.integer(QStringLiteral("total"));
        s.sandboxesRunning = inner.integer(QStringLiteral("running"));
        if (!inner.ok())
            r.failWith(inner.error());
    }
    if (!r.ok())
        return r.error();
    return s;
}

Result<Quota> Quota::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("Quota"));
    Quota q;
    q.running = readUsage(r, QStringLiteral("running"));
    q.memoryMb = readUsage(r, QStringLiteral("memoryMb"));
    q.sandboxes = readUsage(r, QStringLiteral("sandboxes"));
    if (!r.ok())
        return r.error();
    return q;
}

} // namespace Sandbox
