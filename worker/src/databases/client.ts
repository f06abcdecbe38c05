// Database sandboxes for Worker authors: a container holding one engine database sandbox,
// queried through `databases.query` / `databases.execute` of docs/protocol.md. Until the engine
// offers databases these calls answer -32010 (not implemented).

import type { DatabaseType, Size } from '../config';
import type { SandboxContainer } from '../containers';
import { type EngineSandbox, getSandbox } from '../engine-sandbox';

export interface DatabaseOptions {
  database?: string;
  username?: string;
  password?: string;
  size?: Size;
  /** The container instance (one database per name). Default 'default'. */
  name?: string;
  /** The key the container's engine accepts; keep it secret and stable per name. */
  engineKey?: string;
}

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
  fields: { name: string; type?: string }[];
  command: string;
}

export class DatabaseClient {
  protected sandbox: EngineSandbox | null = null;
  private startupTime: number | null = null;

  constructor(
    private readonly namespace: DurableObjectNamespace<SandboxContainer>,
    readonly type: DatabaseType,
    protected readonly options: DatabaseOptions = {},
  ) {}

  /** Starts the container and its database (waits for startup). */
  async connect(): Promise<void> {
    if (this.sandbox !== null) return;
    const started = Date.now();
    const extra: Record<string, unknown> = {};
    for (const k of ['database', 'username', 'password'] as const) if (this.options[k] !== undefined) extra[k] = this.options[k];
    const sb = getSandbox(this.namespace, this.options.name ?? 'default', {
      type: this.type,
      engineKey: this.options.engineKey ?? 'sk_engine_default',
      extra,
      ...(this.options.size ? { size: this.options.size } : {}),
    });
    await sb.id();
    this.sandbox = sb;
    this.startupTime = Date.now() - started;
  }

  /** ms the first connect() took (the cold start). */
  getStartupTime(): number | null {
    return this.startupTime;
  }

  private async db(): Promise<EngineSandbox> {
    await this.connect();
    return this.sandbox!;
  }

  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.queryWithMetadata<T>(sql, params)).rows;
  }

  async queryWithMetadata<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
    return (await this.db()).call('databases.query', { sql, params });
  }

  async execute(sql: string, params: unknown[] = []): Promise<{ rowsAffected: number }> {
    return (await this.db()).call('databases.execute', { sql, params });
  }

  /** BEGIN, the callback's statements, COMMIT; ROLLBACK if it throws. */
  async transaction<T>(fn: (execute: (sql: string, params?: unknown[]) => Promise<{ rowsAffected: number }>) => Promise<T>): Promise<T> {
    await this.execute('BEGIN');
    try {
      const r = await fn((sql, params) => this.execute(sql, params ?? []));
      await this.execute('COMMIT');
      return r;
    } catch (e) {
      await this.execute('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }

  async ping(): Promise<boolean> {
    try {
      await this.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.sandbox?.close();
    this.sandbox = null;
  }
}
