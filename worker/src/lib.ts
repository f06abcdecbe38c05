// The package's library API (the original @dotdo/sandbox names): container classes, factories,
// pre-built wrangler configs, the client. The Worker itself is src/index.ts.

export {
  CLAUDE_CODE_WRANGLER_CONFIG,
  OPENCODE_WRANGLER_CONFIG,
  CODEX_WRANGLER_CONFIG,
  POSTGRES_WRANGLER_CONFIG,
  SQLITE_WRANGLER_CONFIG,
  DUCKDB_WRANGLER_CONFIG,
  WRANGLER_CONFIGS,
  SIZES,
  LIMITS,
  AGENT_TYPES,
  DATABASE_TYPES,
  isAgentType,
  isDatabaseType,
  type ContainerWranglerConfig,
  type AgentType,
  type DatabaseType,
  type SandboxType,
  type Size,
} from './config';
export {
  SandboxContainer,
  ClaudeCodeContainer,
  OpenCodeContainer,
  CodexContainer,
  PostgresContainer,
  SQLiteContainer,
  DuckDBContainer,
  type ContainerConfig,
} from './containers';
export { SandboxDO } from './sandbox-do';
export { EngineSandbox, getSandbox, getEngineSandbox, type EngineSandboxOptions } from './engine-sandbox';
export * from './agents/index';
export {
  DatabaseClient,
  type DatabaseOptions,
  type QueryResult,
  type ExecuteResult,
  type Field,
  type Statement,
  type TransactionResult,
  type TableInfo,
  type TableDescription,
  type ExportFormat,
} from './databases/client';
export { PostgresClient, createPostgresContainer } from './databases/postgres';
export { SQLiteClient, createSQLiteContainer } from './databases/sqlite';
export { DuckDBClient, createDuckDBContainer } from './databases/duckdb';
export { createSandboxClient, connectSandbox, SANDBOX_DO_URL, type SandboxClient, type SandboxClientOptions } from './client/index';
export * from './errors';
export type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxBackend } from './types';
