#include "sandboxenums.h"

namespace Sandbox {

namespace {

template<typename Enum>
struct WireName
{
    Enum value;
    QStringView wire;
};

constexpr WireName<SandboxKind> kKinds[] = {
    {SandboxKind::Agent, u"agent"},
    {SandboxKind::Database, u"database"},
};

constexpr WireName<SandboxType> kTypes[] = {
    {SandboxType::ClaudeCode, u"claude-code"},
    {SandboxType::OpenCode, u"opencode"},
    {SandboxType::Codex, u"codex"},
    {SandboxType::Postgres, u"postgres"},
    {SandboxType::Sqlite, u"sqlite"},
    {SandboxType::DuckDb, u"duckdb"},
};

constexpr WireName<SandboxStatus> kStatuses[] = {
    {SandboxStatus::Creating, u"creating"}, {SandboxStatus::Starting, u"starting"},
    {SandboxStatus::Running, u"running"},   {SandboxStatus::Sleeping, u"sleeping"},
    {SandboxStatus::Stopped, u"stopped"},   {SandboxStatus::Error, u"error"},
};

template<typename Enum, std::size_t N>
QString wireOf(const WireName<Enum> (&table)[N], Enum value)
{
    for (const WireName<Enum> &row : table) {
        if (row.value == value)
            return row.wire.toString();
    }
    return {};
}

template<typename Enum, std::size_t N>
Enum valueOf(const WireName<Enum> (&table)[N], QStringView wire)
{
    for (const WireName<Enum> &row : table) {
        if (row.wire == wire)
            return row.value;
    }
    return Enum::Unknown;
}

} // namespace

QString toWire(SandboxKind kind)
{
    return wireOf(kKinds, kind);
}

QString toWire(SandboxType type)
{
    return wireOf(kTypes, type);
}

QString toWire(SandboxStatus status)
{
    return wireOf(kStatuses, status);
}

template<>
SandboxKind fromWire<SandboxKind>(QStringView wire)
{
    return valueOf(kKinds, wire);
}

template<>
SandboxType fromWire<SandboxType>(QStringView wire)
{
    return valueOf(kTypes, wire);
}

template<>
SandboxStatus fromWire<SandboxStatus>(QStringView wire)
{
    return valueOf(kStatuses, wire);
}

SandboxKind kindOf(SandboxType type)
{
    switch (type) {
    case SandboxType::ClaudeCode:
    case SandboxType::OpenCode:
    case SandboxType::Codex:
        return SandboxKind::Agent;
    case SandboxType::Postgres:
    case SandboxType::Sqlite:
    case SandboxType::DuckDb:
        return SandboxKind::Database;
    case SandboxType::Unknown:
        break;
    }
    return SandboxKind::Unknown;
}

} // namespace Sandbox
