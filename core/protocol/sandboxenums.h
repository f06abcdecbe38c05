#pragma once

#include <QString>
#include <QStringView>

namespace Sandbox {

// The closed sets of docs/protocol.md 3.1 as enums, so that code compares values the compiler
// checks instead of strings. The wire keeps its strings: toWire() gives them back exactly, and
// fromWire() maps a string no value spells (a newer server, a typo) to Unknown.

// A sandbox's `kind`.
enum class SandboxKind : quint8 {
    Unknown,
    Agent,    // "agent"
    Database, // "database"
};

// A sandbox's `type`.
enum class SandboxType : quint8 {
    Unknown,
    ClaudeCode, // "claude-code"
    OpenCode,   // "opencode"
    Codex,      // "codex"
    Postgres,   // "postgres"
    Sqlite,     // "sqlite"
    DuckDb,     // "duckdb"
};

// A sandbox's `status`.
enum class SandboxStatus : quint8 {
    Unknown,
    Creating, // "creating": first start
    Starting, // "starting": waking from sleeping or error
    Running,  // "running"
    Sleeping, // "sleeping": stopped by sleepAfter or an engine restart; the next call starts it
    Stopped,  // "stopped": by stop; calls answer -32005 until start
    Error,    // "error": failed, or its supervisor died; the next call starts it again
};

// The wire string of a value; an empty string for Unknown.
QString toWire(SandboxKind kind);
QString toWire(SandboxType type);
QString toWire(SandboxStatus status);

// The value a wire string spells, or Unknown: fromWire<SandboxStatus>(info.status).
template<typename Enum>
Enum fromWire(QStringView wire) = delete;
template<>
SandboxKind fromWire<SandboxKind>(QStringView wire);
template<>
SandboxType fromWire<SandboxType>(QStringView wire);
template<>
SandboxStatus fromWire<SandboxStatus>(QStringView wire);

// The kind a type belongs to: Agent for the agent CLIs, Database for the database servers.
SandboxKind kindOf(SandboxType type);

} // namespace Sandbox
