// Constants of the contract (docs/protocol.md) and of the original @dotdo/sandbox design.

export const PROTOCOL_VERSION = 1;
export const VERSION = '0.1.0';
export const BACKEND = 'cloudflare';

export const AGENT_TYPES = ['claude-code', 'opencode', 'codex'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];
export const DATABASE_TYPES = ['postgres', 'sqlite', 'duckdb'] as const;
export type DatabaseType = (typeof DATABASE_TYPES)[number];
export type SandboxType = AgentType | DatabaseType;
export type SandboxKind = 'agent' | 'database';

export function isAgentType(type: unknown): type is AgentType {
  return typeof type === 'string' && (AGENT_TYPES as readonly string[]).includes(type);
}
export function isDatabaseType(type: unknown): type is DatabaseType {
  return typeof type === 'string' && (DATABASE_TYPES as readonly string[]).includes(type);
}

export interface Limits {
  memoryMb: number;
  cpus: number;
  pids: number;
  diskMb: number;
}

/** Cloudflare's instance types (section 3.1). */
export const SIZES = {
  lite: { memoryMb: 256, cpus: 0.0625, pids: 128, diskMb: 2048 },
  basic: { memoryMb: 1024, cpus: 0.25, pids: 256, diskMb: 4096 },
  'standard-1': { memoryMb: 4096, cpus: 0.5, pids: 512, diskMb: 8192 },
  'standard-2': { memoryMb: 6144, cpus: 1, pids: 1024, diskMb: 12288 },
  'standard-3': { memoryMb: 8192, cpus: 2, pids: 1024, diskMb: 16384 },
  'standard-4': { memoryMb: 12288, cpus: 4, pids: 2048, diskMb: 20480 },
} as const satisfies Record<string, Limits>;
export type Size = keyof typeof SIZES;
export const DEFAULT_SIZE: Size = 'standard-1';
export function isSize(size: unknown): size is Size {
  return typeof size === 'string' && Object.hasOwn(SIZES, size);
}

/** Section 2.2. */
export const LIMITS = {
  maxMessageBytes: 16 * 1024 * 1024,
  maxBatch: 100,
  /** Nesting of arrays and objects in one JSON text (docs/protocol.md 2.5). */
  maxJsonDepth: 128,
  maxConcurrentPerConnection: 256,
  execTimeoutDefaultMs: 300_000,
  execTimeoutMaxMs: 3_600_000,
  streamBacklogBytes: 8 * 1024 * 1024,
  streamBacklogChunks: 8192,
  streamKeepAfterEndMs: 10 * 60 * 1000,
  quotaRunning: 8,
  quotaMemoryMb: 16_384,
  // The contract names `sandboxes.limit` in sessions.quota without a value; this is ours.
  quotaSandboxes: 64,
  defaultSleepAfterMs: 600_000,
} as const;

/** The engine inside each container listens here (dockerfiles/). */
export const ENGINE_PORT = 8080;

/** Shape of the pre-built wrangler configs of the original design. */
export interface ContainerWranglerConfig {
  binding: string;
  className: string;
  image: string;
  defaultPort: number;
  maxInstances: number;
  sleepAfter: string;
  size: Size;
}

export const CLAUDE_CODE_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'CLAUDE_CODE_SANDBOX',
  className: 'ClaudeCodeContainer',
  image: './dockerfiles/Dockerfile.claude-code',
  defaultPort: ENGINE_PORT,
  maxInstances: 5,
  sleepAfter: '10m',
  size: 'standard-1',
};
export const OPENCODE_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'OPENCODE_SANDBOX',
  className: 'OpenCodeContainer',
  image: './dockerfiles/Dockerfile.opencode',
  defaultPort: ENGINE_PORT,
  maxInstances: 5,
  sleepAfter: '10m',
  size: 'standard-1',
};
export const CODEX_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'CODEX_SANDBOX',
  className: 'CodexContainer',
  image: './dockerfiles/Dockerfile.codex',
  defaultPort: ENGINE_PORT,
  maxInstances: 5,
  sleepAfter: '10m',
  size: 'standard-1',
};
export const POSTGRES_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'POSTGRES_CONTAINER',
  className: 'PostgresContainer',
  image: './dockerfiles/Dockerfile.postgres',
  defaultPort: ENGINE_PORT,
  maxInstances: 10,
  sleepAfter: '10m',
  size: 'standard-1',
};
export const SQLITE_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'SQLITE_CONTAINER',
  className: 'SQLiteContainer',
  image: './dockerfiles/Dockerfile.sqlite',
  defaultPort: ENGINE_PORT,
  maxInstances: 10,
  sleepAfter: '10m',
  size: 'basic',
};
export const DUCKDB_WRANGLER_CONFIG: ContainerWranglerConfig = {
  binding: 'DUCKDB_CONTAINER',
  className: 'DuckDBContainer',
  image: './dockerfiles/Dockerfile.duckdb',
  defaultPort: ENGINE_PORT,
  maxInstances: 10,
  sleepAfter: '10m',
  size: 'standard-1',
};

export const WRANGLER_CONFIGS: Record<SandboxType, ContainerWranglerConfig> = {
  'claude-code': CLAUDE_CODE_WRANGLER_CONFIG,
  opencode: OPENCODE_WRANGLER_CONFIG,
  codex: CODEX_WRANGLER_CONFIG,
  postgres: POSTGRES_WRANGLER_CONFIG,
  sqlite: SQLITE_WRANGLER_CONFIG,
  duckdb: DUCKDB_WRANGLER_CONFIG,
};
