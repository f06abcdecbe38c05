// The client of the original design: `createSandboxClient` for everything a key may do, and
// `connectSandbox` for one sandbox by id. JSON-RPC over a WebSocket (browser, Node, Workers).

import type { ExecOptions, ExecResult, FileEntry, RunUsage, Sandbox, SandboxBackend } from '../types';
import { RpcConnection, type StreamHandlers, type WebSocketFactory } from './connection';

export { RpcConnection, SandboxRpcError, SUBPROTOCOL } from './connection';
export type { StreamChunk, StreamEvent, StreamHandlers, WebSocketFactory, WebSocketLike } from './connection';

/** The hosted Worker's endpoint (the original default). */
export const SANDBOX_DO_URL = 'wss://sandbox.do/rpc';

export interface SandboxClientOptions {
  /** `wss://HOST/rpc`; default SANDBOX_DO_URL. */
  url?: string;
  /** The API key; sent as the subprotocol `bearer.KEY`, never in the URL. */
  auth: string;
  /** Per-request time limit in ms. Default 30 000. */
  timeout?: number;
  /** Reconnect (and resume streams) after a drop. Default true. */
  reconnect?: boolean;
  /** How to open the socket (Node without a global WebSocket: `(u, p) => new WS(u, p)` from `ws`). */
  connect?: WebSocketFactory;
}

export interface CreateAgentOptions {
  type: 'claude-code' | 'opencode' | 'codex';
  size?: string;
  env?: Record<string, string>;
  network?: boolean;
  sleepAfter?: number;
  name?: string;
}

export interface CreateDatabaseOptions {
  /** Default postgres. */
  type?: 'postgres' | 'sqlite' | 'duckdb';
  size?: string;
  database?: string;
  username?: string;
  password?: string;
  sleepAfter?: number;
  name?: string;
}

/** databases.query options (4.3.2): rows per page, statement timeout, objects or arrays. */
export interface QueryOptions {
  pageSize?: number;
  timeout?: number;
  rowMode?: 'object' | 'array';
}

export interface ClientExecOptions extends ExecOptions, StreamHandlers {}

export interface RunOptions {
  model?: string;
  permissionMode?: 'default' | 'acceptEdits' | 'bypassPermissions' | 'plan';
  maxThinkingTokens?: number;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
  timeout?: number;
  /** Continue this conversation (else the sandbox's last one, unless `newSession`). */
  sessionId?: string;
  newSession?: boolean;
  cwd?: string;
  /** The model API endpoint for this run. */
  baseUrl?: string;
  /** More environment for this run only (e.g. an API key); never stored. */
  env?: Record<string, string>;
}

export type { RunUsage } from '../types';

export interface RunResult {
  success: boolean;
  /** The agent's final text. */
  result: unknown;
  stdout: string;
  sessionId: string | null;
  usage: RunUsage | null;
  costUsd: number | null;
  durationMs: number;
  exitCode: number;
  timedOut?: boolean;
  error?: string | null;
  streamId?: string | null;
}

/** An agent run's live events and gaps (over the socket every run streams, 2.3 and 4.7). */
export type RunHandlers = Pick<StreamHandlers, 'onEvent' | 'onGap'>;

export interface ReadFileOptions {
  encoding?: 'utf8' | 'base64';
  offset?: number;
  length?: number;
}

export interface WriteFileOptions {
  encoding?: 'utf8' | 'base64';
  mode?: number;
  parents?: boolean;
}

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
  fields: { name: string; type: string; typeOid?: number }[];
  command: string;
  rowsAffected: number;
  /** Set while more rows may follow: databases.fetch reads them. */
  cursor: string | null;
  hasMore: boolean;
}

export interface FetchResult<T> {
  rows: T[];
  rowCount: number;
  done: boolean;
  cursor: string | null;
}

function splitExec(options: ClientExecOptions | undefined): { opts: ExecOptions; handlers: StreamHandlers | undefined } {
  if (options === undefined) return { opts: {}, handlers: undefined };
  const { onOutput, onGap, ...opts } = options;
  const handlers: StreamHandlers = {};
  if (onOutput) handlers.onOutput = onOutput;
  if (onGap) handlers.onGap = onGap;
  return { opts, handlers: opts.stream === true ? handlers : undefined };
}

/** File and exec methods under a prefix (`agents.` or `sandbox.`). */
function fileOps(rpc: RpcConnection, prefix: string) {
  return {
    exec(id: string, command: string | string[], options?: ClientExecOptions): Promise<ExecResult> {
      const { opts, handlers } = splitExec(options);
      return rpc.request(`${prefix}exec`, { id, command, options: opts }, handlers);
    },
    async writeFile(id: string, path: string, content: string, options: WriteFileOptions = {}): Promise<{ path: string; size: number }> {
      return rpc.request(`${prefix}writeFile`, { id, path, content, ...options });
    },
    /** The file's content (text, or base64 with `encoding: 'base64'`). */
    async readFile(id: string, path: string, options: ReadFileOptions = {}): Promise<string> {
      const r = await rpc.request<{ content: string }>(`${prefix}readFile`, { id, path, ...options });
      return r.content;
    },
    listFiles(
      id: string,
      path?: string,
      options: { recursive?: boolean } = {},
    ): Promise<{ path: string; entries: FileEntry[]; truncated: boolean }> {
      return rpc.request(`${prefix}listFiles`, { id, ...(path === undefined ? {} : { path }), ...options });
    },
    mkdir(id: string, path: string, options: { parents?: boolean } = {}): Promise<{ path: string }> {
      return rpc.request(`${prefix}mkdir`, { id, path, ...options });
    },
    deleteFile(id: string, path: string, options: { recursive?: boolean } = {}): Promise<{ path: string; deleted: true }> {
      return rpc.request(`${prefix}deleteFile`, { id, path, ...options });
    },
    stat(id: string, path: string): Promise<FileEntry> {
      return rpc.request(`${prefix}stat`, { id, path });
    },
    rename(id: string, from: string, to: string): Promise<{ from: string; to: string }> {
      return rpc.request(`${prefix}rename`, { id, from, to });
    },
    stop(id: string): Promise<Sandbox> {
      return rpc.request(`${prefix}stop`, { id });
    },
    start(id: string): Promise<Sandbox> {
      return rpc.request(`${prefix}start`, { id });
    },
    delete(id: string): Promise<{ id: string; deleted: true }> {
      return rpc.request(`${prefix}delete`, { id });
    },
  };
}

export function createSandboxClient(options: SandboxClientOptions) {
  const rpc = new RpcConnection({
    url: options.url ?? SANDBOX_DO_URL,
    auth: options.auth,
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(options.reconnect !== undefined ? { reconnect: options.reconnect } : {}),
    ...(options.connect !== undefined ? { connect: options.connect } : {}),
  });
  return {
    rpc,
    /** Any method of docs/protocol.md by name. */
    call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
      return rpc.request<T>(method, params);
    },
    agents: {
      ...fileOps(rpc, 'agents.'),
      create(opts: CreateAgentOptions): Promise<Sandbox> {
        return rpc.request('agents.create', { ...opts });
      },
      get(id: string): Promise<Sandbox> {
        return rpc.request('agents.get', { id });
      },
      async list(): Promise<Sandbox[]> {
        return (await rpc.request<{ agents: Sandbox[] }>('agents.list', {})).agents;
      },
      /**
       * Runs the sandbox's agent CLI on `prompt` (4.7). The run streams its events to
       * `handlers.onEvent` and survives a dropped connection; it has no client-side time limit
       * (its own is `options.timeout`).
       */
      run(id: string, prompt: string, options: RunOptions = {}, handlers: RunHandlers = {}): Promise<RunResult> {
        return rpc.request('agents.run', { id, prompt, options }, { ...handlers });
      },
      /** Prompts in order in one conversation; the last turn's answer with every turn's in `turns`. */
      runConversation(
        id: string,
        prompts: string[],
        options: RunOptions = {},
        handlers: RunHandlers = {},
      ): Promise<RunResult & { turns: RunResult[] }> {
        return rpc.request('agents.runConversation', { id, prompts, options }, { ...handlers });
      },
      /** Clones `url` (shallow by default) and runs `prompt` there in a new session. */
      runOnRepo(
        id: string,
        url: string,
        prompt: string,
        options: RunOptions & { branch?: string; shallow?: boolean; path?: string } = {},
        handlers: RunHandlers = {},
      ): Promise<RunResult & { clone?: ExecResult }> {
        return rpc.request('agents.runOnRepo', { id, url, prompt, options }, { ...handlers });
      },
      cloneRepo(id: string, url: string, options: { branch?: string; shallow?: boolean; path?: string } = {}): Promise<ExecResult> {
        return rpc.request('agents.cloneRepo', { id, url, options });
      },
    },
    databases: {
      create(opts: CreateDatabaseOptions = {}): Promise<Sandbox> {
        return rpc.request('databases.create', { ...opts });
      },
      get(id: string): Promise<Sandbox> {
        return rpc.request('databases.get', { id });
      },
      async list(): Promise<Sandbox[]> {
        return (await rpc.request<{ databases: Sandbox[] }>('databases.list', {})).databases;
      },
      /** The first page's rows (`queryWithMetadata` gives the cursor for the rest). */
      async query<T = Record<string, unknown>>(id: string, sql: string, params: unknown[] = [], options: QueryOptions = {}): Promise<T[]> {
        return (await rpc.request<QueryResult<T>>('databases.query', { id, sql, params, ...options })).rows;
      },
      queryWithMetadata<T = Record<string, unknown>>(
        id: string,
        sql: string,
        params: unknown[] = [],
        options: QueryOptions = {},
      ): Promise<QueryResult<T>> {
        return rpc.request('databases.queryWithMetadata', { id, sql, params, ...options });
      },
      /** The next page of a cursor; `done: true` on the last. */
      fetch<T = Record<string, unknown>>(id: string, cursor: string, options: Omit<QueryOptions, 'rowMode'> = {}): Promise<FetchResult<T>> {
        return rpc.request('databases.fetch', { id, cursor, ...options });
      },
      closeCursor(id: string, cursor: string): Promise<{ cursor: string; closed: boolean }> {
        return rpc.request('databases.closeCursor', { id, cursor });
      },
      /** A statement, or (without params) a script of several statements. */
      execute(id: string, sql: string, params: unknown[] = [], options: { timeout?: number } = {}): Promise<{ rowsAffected: number; command: string }> {
        return rpc.request('databases.execute', params.length > 0 ? { id, sql, params, ...options } : { id, sql, ...options });
      },
      /** Statements that commit together or not at all (-32014 with data.statementIndex). */
      transaction(
        id: string,
        statements: (string | { sql: string; params?: unknown[] })[],
        options: { timeout?: number; rowMode?: 'object' | 'array' } = {},
      ): Promise<{ results: (QueryResult<unknown> & { truncated: boolean })[]; committed: true }> {
        return rpc.request('databases.transaction', { id, statements, ...options });
      },
      version(id: string): Promise<{ type: string; version: string }> {
        return rpc.request('databases.version', { id });
      },
      ping(id: string): Promise<{ ok: boolean; latencyMs: number; error: string | null }> {
        return rpc.request('databases.ping', { id });
      },
      async listTables(id: string): Promise<{ schema: string; name: string; type: 'table' | 'view' }[]> {
        return (await rpc.request<{ tables: [] }>('databases.listTables', { id })).tables;
      },
      describeTable(id: string, table: string, schema?: string): Promise<Record<string, unknown>> {
        return rpc.request('databases.describeTable', schema === undefined ? { id, table } : { id, table, schema });
      },
      async listDatabases(id: string): Promise<Record<string, unknown>[]> {
        return (await rpc.request<{ databases: [] }>('databases.listDatabases', { id })).databases;
      },
      createDatabase(id: string, name: string): Promise<{ name: string; created: true }> {
        return rpc.request('databases.createDatabase', { id, name });
      },
      exportData(
        id: string,
        table: string,
        options: { format?: 'csv' | 'json' | 'parquet'; schema?: string; path?: string } = {},
      ): Promise<{ format: string; content?: string; contentBase64?: string; path?: string; rowCount: number }> {
        return rpc.request('databases.exportData', { id, table, ...options });
      },
      stop(id: string): Promise<Sandbox> {
        return rpc.request('databases.stop', { id });
      },
      start(id: string): Promise<Sandbox> {
        return rpc.request('databases.start', { id });
      },
      restart(id: string): Promise<Sandbox> {
        return rpc.request('databases.restart', { id });
      },
      delete(id: string): Promise<{ id: string; deleted: true }> {
        return rpc.request('databases.delete', { id });
      },
    },
    sessions: {
      current(): Promise<{
        id: string;
        name: string;
        createdAt: string;
        backend: 'local' | 'cloudflare';
        version: string;
        sandboxes: { total: number; running: number };
      }> {
        return rpc.request('sessions.current', {});
      },
      quota(): Promise<Record<'running' | 'memoryMb' | 'sandboxes', { used: number; limit: number }>> {
        return rpc.request('sessions.quota', {});
      },
    },
    keys: {
      /** Admin keys only; the new key is an admin key only with `admin: true`. */
      create(
        name: string,
        options: { admin?: boolean } = {},
      ): Promise<{ id: string; name: string; admin: boolean; key: string; createdAt: string }> {
        return rpc.request('keys.create', options.admin === undefined ? { name } : { name, admin: options.admin });
      },
      /** Every key for an admin key, only itself for any other. */
      async list(): Promise<{ id: string; name: string; admin: boolean; createdAt: string; lastUsedAt?: string | null }[]> {
        return (await rpc.request<{ keys: [] }>('keys.list', {})).keys;
      },
      revoke(id: string): Promise<{ revoked: true }> {
        return rpc.request('keys.revoke', { id });
      },
    },
    streams: {
      cancel(streamId: string): Promise<unknown> {
        return rpc.request('stream.cancel', { streamId });
      },
    },
    close(): void {
      rpc.close();
    },
  };
}

export type SandboxClient = ReturnType<typeof createSandboxClient>;

/** One sandbox of any kind by id (the `sandbox.*` methods); also a SandboxBackend for the agent classes. */
export function connectSandbox(id: string, options: SandboxClientOptions & { client?: SandboxClient }) {
  const client = options.client ?? createSandboxClient(options);
  const ops = fileOps(client.rpc, 'sandbox.');
  const handle = {
    id,
    client,
    call: <T>(method: string, params: Record<string, unknown> = {}): Promise<T> => client.rpc.request(method, { ...params, id }),
    exec: (command: string | string[], opts?: ClientExecOptions) => ops.exec(id, command, opts),
    status: (): Promise<Sandbox> => client.rpc.request('sandbox.status', { id }),
    stop: () => ops.stop(id),
    start: () => ops.start(id),
    delete: () => ops.delete(id),
    writeFile: (path: string, content: string, o?: WriteFileOptions) => ops.writeFile(id, path, content, o),
    readFile: (path: string, o?: ReadFileOptions) => ops.readFile(id, path, o),
    listFiles: (path?: string, o?: { recursive?: boolean }) => ops.listFiles(id, path, o),
    mkdir: (path: string, o?: { parents?: boolean }) => ops.mkdir(id, path, o),
    deleteFile: (path: string, o?: { recursive?: boolean }) => ops.deleteFile(id, path, o),
    stat: (path: string) => ops.stat(id, path),
    rename: (from: string, to: string) => ops.rename(id, from, to),
    close: () => {
      if (options.client === undefined) client.close();
    },
  };
  return handle satisfies SandboxBackend;
}
