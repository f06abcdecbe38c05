// The client of the original design: `createSandboxClient` for everything a key may do, and
// `connectSandbox` for one sandbox by id. JSON-RPC over a WebSocket (browser, Node, Workers).

import type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxBackend } from '../types';
import { RpcConnection, type StreamHandlers, type WebSocketFactory } from './connection';

export { RpcConnection, SandboxRpcError, SUBPROTOCOL } from './connection';
export type { StreamChunk, StreamHandlers, WebSocketFactory, WebSocketLike } from './connection';

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
  type: 'postgres' | 'sqlite' | 'duckdb';
  size?: string;
  database?: string;
  username?: string;
  password?: string;
}

export interface ClientExecOptions extends ExecOptions, StreamHandlers {}

export interface RunOptions {
  model?: string;
  permissionMode?: 'default' | 'acceptEdits' | 'bypassPermissions';
  maxThinkingTokens?: number;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
  timeout?: number;
  sessionId?: string;
}

export interface RunResult {
  success: boolean;
  result: unknown;
  stdout: string;
  sessionId: string | null;
  usage: unknown;
  costUsd: number | null;
  durationMs: number;
  exitCode: number;
}

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
  fields: unknown[];
  command: string;
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
      run(id: string, prompt: string, options: RunOptions = {}): Promise<RunResult> {
        return rpc.request('agents.run', { id, prompt, options });
      },
      cloneRepo(id: string, url: string, options: { branch?: string; shallow?: boolean; path?: string } = {}): Promise<ExecResult> {
        return rpc.request('agents.cloneRepo', { id, url, options });
      },
    },
    databases: {
      create(opts: CreateDatabaseOptions): Promise<Sandbox> {
        return rpc.request('databases.create', { ...opts });
      },
      get(id: string): Promise<Sandbox> {
        return rpc.request('databases.get', { id });
      },
      async list(): Promise<Sandbox[]> {
        return (await rpc.request<{ databases: Sandbox[] }>('databases.list', {})).databases;
      },
      async query<T = Record<string, unknown>>(id: string, sql: string, params: unknown[] = []): Promise<T[]> {
        return (await rpc.request<QueryResult<T>>('databases.query', { id, sql, params })).rows;
      },
      queryWithMetadata<T = Record<string, unknown>>(id: string, sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
        return rpc.request('databases.query', { id, sql, params });
      },
      execute(id: string, sql: string, params: unknown[] = []): Promise<{ rowsAffected: number }> {
        return rpc.request('databases.execute', { id, sql, params });
      },
      stop(id: string): Promise<Sandbox> {
        return rpc.request('databases.stop', { id });
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
