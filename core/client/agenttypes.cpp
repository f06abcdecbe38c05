#include "agenttypes.h"

#include "protocol/fieldreader.h"
#include "types.h"

#include <cmath>

namespace Sandbox {

namespace {

AgentEvent::Type typeOf(const QString &name)
{
    static const QHash<QString, AgentEvent::Type> types{
        {QStringLiteral("session"), AgentEvent::Type::Session},
        {QStringLiteral("text"), AgentEvent::Type::Text},
        {QStringLiteral("thinking"), AgentEvent::Type::Thinking},
        {QStringLiteral("tool_call"), AgentEvent::Type::ToolCall},
        {QStringLiteral("tool_result"), AgentEvent::Type::ToolResult},
        {QStringLiteral("file_change"), AgentEvent::Type::FileChange},
        {QStringLiteral("usage"), AgentEvent::Type::Usage},
        {QStringLiteral("error"), AgentEvent::Type::Error},
        {QStringLiteral("result"), AgentEvent::Type::Result},
    };
    return types.value(name, AgentEvent::Type::Other);
}

} // namespace

AgentUsage AgentUsage::fromJson(const QJsonObject &o, const QJsonValue &costUsd)
{
    AgentUsage u;
    u.inputTokens = qint64(o.value(QStringLiteral("inputTokens")).toDouble());
    u.outputTokens = qint64(o.value(QStringLiteral("outputTokens")).toDouble());
    u.cacheReadTokens = qint64(o.value(QStringLiteral("cacheReadTokens")).toDouble());
    u.cacheWriteTokens = qint64(o.value(QStringLiteral("cacheWriteTokens")).toDouble());
    u.reasoningTokens = qint64(o.value(QStringLiteral("reasoningTokens")).toDouble());
    if (costUsd.isDouble())
        u.costUsd = costUsd.toDouble();
    // Whole, not negative, below 2^53: else not known.
    const auto count = [&o](const char *key) -> std::optional<qint64> {
        const QJsonValue v = o.value(QLatin1String(key));
        const double d = v.toDouble(-1);
        if (!v.isDouble() || !(d >= 0 && d <= 9007199254740992.0) || d != std::floor(d))
            return std::nullopt;
        return qint64(d);
    };
    u.contextTokens = count("contextTokens");
    u.contextWindow = count("contextWindow");
    if (u.contextWindow == 0)
        u.contextWindow.reset();
    return u;
}

AgentNeedsInput AgentNeedsInput::fromJson(const QJsonValue &value)
{
    AgentNeedsInput n;
    const QJsonObject o = value.toObject();
    const QString reason = o.value(QStringLiteral("reason")).toString();
    if (reason == QLatin1String("permission")) {
        n.reason = Reason::Permission;
        for (const QJsonValue &t : o.value(QStringLiteral("tools")).toArray())
            n.tools.append({t.toObject().value(QStringLiteral("name")).toString(),
                            t.toObject().value(QStringLiteral("input"))});
    } else if (reason == QLatin1String("question")) {
        n.reason = Reason::Question;
        n.question = o.value(QStringLiteral("question")).toString();
    }
    return n;
}

QStringList AgentNeedsInput::toolNames() const
{
    QStringList names;
    for (const Tool &t : tools) {
        if (!names.contains(t.name))
            names.append(t.name);
    }
    return names;
}

Result<AgentEvent> AgentEvent::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("agent event"));
    const QString typeName = r.string(QStringLiteral("type"));
    if (!r.ok())
        return r.error();
    const QJsonObject &o = r.object();
    AgentEvent e;
    e.raw = o;
    e.typeName = typeName;
    e.type = typeOf(e.typeName);
    e.turn = o.value(QStringLiteral("turn")).toInt();
    switch (e.type) {
    case Type::Session:
        e.sessionId = o.value(QStringLiteral("sessionId")).toString();
        break;
    case Type::Text:
    case Type::Thinking:
        e.text = o.value(QStringLiteral("text")).toString();
        break;
    case Type::ToolCall:
        e.id = o.value(QStringLiteral("id")).toString();
        e.name = o.value(QStringLiteral("name")).toString();
        e.input = o.value(QStringLiteral("input"));
        break;
    case Type::ToolResult:
        e.id = o.value(QStringLiteral("id")).toString();
        e.name = o.value(QStringLiteral("name")).toString();
        e.output = o.value(QStringLiteral("output")).toString();
        e.isError = o.value(QStringLiteral("isError")).toBool();
        break;
    case Type::FileChange:
        e.path = o.value(QStringLiteral("path")).toString();
        e.changeKind = o.value(QStringLiteral("kind")).toString();
        e.isError = o.value(QStringLiteral("status")).toString() == QLatin1String("failed");
        e.diff = o.value(QStringLiteral("diff")).toString();
        e.content = o.value(QStringLiteral("content")).toString();
        break;
    case Type::Usage:
        e.usage = AgentUsage::fromJson(o, o.value(QStringLiteral("costUsd")));
        break;
    case Type::Error:
        e.text = o.value(QStringLiteral("message")).toString();
        break;
    case Type::Result:
        e.text = o.value(QStringLiteral("result")).toString();
        e.isError = !o.value(QStringLiteral("success")).toBool();
        e.output = o.value(QStringLiteral("error")).toString();
        e.needsInput = AgentNeedsInput::fromJson(o.value(QStringLiteral("needsInput")));
        break;
    case Type::Other:
        break;
    }
    return e;
}

Result<AgentRunResult> AgentRunResult::fromJson(const QJsonValue &value)
{
    FieldReader reader = FieldReader::answer(value, QStringLiteral("agent run result"));
    const bool success = reader.boolean(QStringLiteral("success"));
    if (!reader.ok())
        return reader.error();
    const QJsonObject &o = reader.object();
    AgentRunResult r;
    r.success = success;
    r.result = o.value(QStringLiteral("result")).toString();
    r.error = o.value(QStringLiteral("error")).toString();
    r.sessionId = o.value(QStringLiteral("sessionId")).toString();
    r.usage = AgentUsage::fromJson(o.value(QStringLiteral("usage")).toObject(),
                                   o.value(QStringLiteral("costUsd")));
    r.durationMs = qint64(o.value(QStringLiteral("durationMs")).toDouble());
    if (o.value(QStringLiteral("exitCode")).isDouble())
        r.exitCode = o.value(QStringLiteral("exitCode")).toInt();
    r.timedOut = o.value(QStringLiteral("timedOut")).toBool();
    r.standardOutput = o.value(QStringLiteral("stdout")).toString().toUtf8();
    r.streamId = o.value(QStringLiteral("streamId")).toString();
    r.turns = o.value(QStringLiteral("turns")).toArray();
    r.needsInput = AgentNeedsInput::fromJson(o.value(QStringLiteral("needsInput")));
    return r;
}

Result<AgentCliInfo> AgentCliInfo::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("agent CLI"));
    AgentCliInfo cli;
    cli.type = r.string(QStringLiteral("type"));
    cli.name = r.optionalString(QStringLiteral("name"));
    if (cli.name.isEmpty())
        cli.name = cli.type;
    cli.package = r.optionalString(QStringLiteral("package"));
    cli.version = r.optionalString(QStringLiteral("version"));
    cli.downloadBytes = r.optionalInteger(QStringLiteral("downloadBytes"));
    cli.installed = r.optionalBool(QStringLiteral("installed"));
    cli.installing = r.optionalBool(QStringLiteral("installing"));
    cli.canInstall = r.optionalBool(QStringLiteral("canInstall"));
    cli.dir = r.optionalString(QStringLiteral("dir"));
    if (!r.ok())
        return r.error();
    return cli;
}

Result<AgentRunRecord> AgentRunRecord::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("agent run"));
    AgentRunRecord run;
    run.runId = r.string(QStringLiteral("runId"));
    run.method = r.optionalString(QStringLiteral("method"));
    run.prompt = r.optionalString(QStringLiteral("prompt"));
    run.prompts = r.stringList(QStringLiteral("prompts"), true);
    if (run.prompts.isEmpty() && !run.prompt.isEmpty())
        run.prompts = {run.prompt};
    run.options = r.object().value(QStringLiteral("options")).toObject();
    run.statusName = r.string(QStringLiteral("status"));
    static const QHash<QString, Status> statuses{
        {QStringLiteral("running"), Status::Running},
        {QStringLiteral("succeeded"), Status::Succeeded},
        {QStringLiteral("failed"), Status::Failed},
        {QStringLiteral("cancelled"), Status::Cancelled},
        {QStringLiteral("interrupted"), Status::Interrupted},
    };
    run.status = statuses.value(run.statusName, Status::Unknown);
    run.startedAt = r.dateTime(QStringLiteral("startedAt"));
    run.endedAt = r.optionalDateTime(QStringLiteral("endedAt"));
    const QJsonObject &o = r.object();
    if (o.value(QStringLiteral("durationMs")).isDouble())
        run.durationMs = qint64(o.value(QStringLiteral("durationMs")).toDouble());
    run.sessionId = r.optionalString(QStringLiteral("sessionId"));
    run.usage = AgentUsage::fromJson(o.value(QStringLiteral("usage")).toObject(),
                                     o.value(QStringLiteral("costUsd")));
    run.needsInput = AgentNeedsInput::fromJson(o.value(QStringLiteral("needsInput")));
    if (o.value(QStringLiteral("answer")).isObject()) {
        auto answer = AgentRunResult::fromJson(o.value(QStringLiteral("answer")));
        if (!answer)
            r.failWith(answer.error());
        else
            run.answer = answer.value();
    }
    if (o.value(QStringLiteral("error")).isObject())
        run.error = Error::fromJson(o.value(QStringLiteral("error")));
    run.eventCount = r.optionalInteger(QStringLiteral("eventCount"));
    run.eventsDropped = r.optionalInteger(QStringLiteral("eventsDropped"));
    run.lastEventAt = r.optionalDateTime(QStringLiteral("lastEventAt"));
    run.lastEventType = r.optionalString(QStringLiteral("lastEventType"));
    run.streamId = r.optionalString(QStringLiteral("streamId"));
    if (!r.ok())
        return r.error();
    return run;
}

Result<AgentRunEvents> AgentRunEvents::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("agent run events"));
    AgentRunEvents page;
    page.runId = r.string(QStringLiteral("runId"));
    const QJsonArray events = r.array(QStringLiteral("events"));
    page.last = r.optionalInteger(QStringLiteral("last"));
    page.done = r.optionalBool(QStringLiteral("done"));
    page.more = r.optionalBool(QStringLiteral("more"));
    if (!r.ok())
        return r.error();
    for (const QJsonValue &v : events) {
        const QJsonObject o = v.toObject();
        auto e = AgentEvent::fromJson(o.value(QStringLiteral("event")));
        if (!e || !o.value(QStringLiteral("seq")).isDouble()) {
            r.fail(QStringLiteral("events"), QStringLiteral("must hold {seq, event} objects"));
            return r.error();
        }
        page.seqs.append(qint64(o.value(QStringLiteral("seq")).toDouble()));
        page.events.append(e.value());
    }
    return page;
}

Result<AgentFileChange> AgentFileChange::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("file change"));
    AgentFileChange c;
    c.path = r.string(QStringLiteral("path"));
    const QString kind = r.oneOf(QStringLiteral("kind"),
                                 {QStringLiteral("add"), QStringLiteral("update"),
                                  QStringLiteral("delete")});
    c.kind = kind == QLatin1String("add")      ? Kind::Add
             : kind == QLatin1String("delete") ? Kind::Delete
                                               : Kind::Update;
    const QJsonObject &o = r.object();
    if (o.value(QStringLiteral("sizeBefore")).isDouble())
        c.sizeBefore = qint64(o.value(QStringLiteral("sizeBefore")).toDouble());
    if (o.value(QStringLiteral("sizeAfter")).isDouble())
        c.sizeAfter = qint64(o.value(QStringLiteral("sizeAfter")).toDouble());
    c.revertible = r.optionalBool(QStringLiteral("revertible"));
    c.binary = r.optionalBool(QStringLiteral("binary"));
    c.link = r.optionalBool(QStringLiteral("link"));
    c.diff = r.optionalString(QStringLiteral("diff"));
    c.diffOmitted = r.optionalString(QStringLiteral("diffOmitted"));
    c.added = int(r.optionalInteger(QStringLiteral("added")));
    c.removed = int(r.optionalInteger(QStringLiteral("removed")));
    if (!r.ok())
        return r.error();
    return c;
}

Result<AgentRunChanges> AgentRunChanges::fromJson(const QJsonValue &value)
{
    FieldReader r = FieldReader::answer(value, QStringLiteral("run changes"));
    AgentRunChanges changes;
    changes.runId = r.string(QStringLiteral("runId"));
    changes.done = r.optionalBool(QStringLiteral("done"));
    changes.truncated = r.optionalString(QStringLiteral("truncated"));
    const QJsonObject git = r.object().value(QStringLiteral("git")).toObject();
    changes.gitRoot = git.value(QStringLiteral("root")).toString();
    changes.gitBranch = git.value(QStringLiteral("branch")).toString();
    changes.gitHead = git.value(QStringLiteral("head")).toString();
    if (!r.ok())
        return r.error();
    if (r.has(QStringLiteral("files"))) {
        auto files = listFromJson<AgentFileChange>(r.object(), QStringLiteral("files"));
        if (!files)
            return files.error();
        changes.files = std::move(files).value();
    }
    return changes;
}

QJsonObject AgentRunOptions::toJson() const
{
    QJsonObject o;
    if (!model.isEmpty())
        o.insert(QStringLiteral("model"), model);
    if (!permissionMode.isEmpty())
        o.insert(QStringLiteral("permissionMode"), permissionMode);
    if (maxThinkingTokens)
        o.insert(QStringLiteral("maxThinkingTokens"), double(*maxThinkingTokens));
    if (!systemPrompt.isEmpty())
        o.insert(QStringLiteral("systemPrompt"), systemPrompt);
    if (!allowedTools.isEmpty())
        o.insert(QStringLiteral("allowedTools"), QJsonArray::fromStringList(allowedTools));
    if (!disallowedTools.isEmpty())
        o.insert(QStringLiteral("disallowedTools"), QJsonArray::fromStringList(disallowedTools));
    if (timeoutMs)
        o.insert(QStringLiteral("timeout"), double(*timeoutMs));
    if (!sessionId.isEmpty())
        o.insert(QStringLiteral("sessionId"), sessionId);
    if (newSession)
        o.insert(QStringLiteral("newSession"), true);
    if (!cwd.isEmpty())
        o.insert(QStringLiteral("cwd"), cwd);
    if (!baseUrl.isEmpty())
        o.insert(QStringLiteral("baseUrl"), baseUrl);
    if (!env.isEmpty()) {
        QJsonObject e;
        for (auto it = env.cbegin(); it != env.cend(); ++it)
            e.insert(it.key(), it.value());
        o.insert(QStringLiteral("env"), e);
    }
    return o;
}

} // namespace Sandbox
