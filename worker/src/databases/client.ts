// Database sandboxes for Worker authors (the original createPostgresContainer & co.): a
// container holding one engine database sandbox, spoken to with the `databases.*` methods of
// docs/protocol.md 4.3 — the same calls, values and errors as the local engine and the Worker.
// Without a container (wrangler dev, tests) `options.engine` names an engine by URL instead.

import type { DatabaseType, Size } from '../config';
import type { SandboxContainer } from '../containers';
import { type EngineSandbox, getEngineSandbox, getSandbox } from '../engine-sandbox';
import { InvalidParamsError, SandboxError } from '../errors';

export interface DatabaseOptions {
  /** PostgreSQL: the database (default `postgres`); SQLite/DuckDB: the file in /workspace. */
  database?: string;
  /** PostgreSQL only: the role clients use (default `sandbox`). */
  username?: string;
  password?: string;
  size?: Size;
  /**
   * The database's name: its container instance, and its sandbox in the engine. A client made
   * later with the same name (the next request) reaches the same database. Default 'default'.
   */
  name?: string;
  /** The key the container's engine accepts (default: one the container makes and keeps). */
  engineKey?: string;
  /** An engine reached by URL instead of a container (`ENGINE_URL`/`ENGINE_KEY` of wrangler dev). */
  engine?: { url: string; key: string };
  /** Rows per page while query() reads a result (the engine's default 1 000, at most 100 000). */
  pageSize?: number;
  /** Statement timeout of each call in ms (the engine's default 60 000, at most 3 600 000). */
  timeout?: number;
}

export interface Field {
  name: string;
  /** The engine's own type name (`int8`, `DECIMAL(18,4)`, `TEXT`, ...). */
  type: string;
  typeOid?: number;
}

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
  fields: Field[];
  command: string;
  rowsAffected: number;
}

export interface ExecuteResult {
  rowsAffected: number;
  command: string;
}

export type Statement = string | { sql: string; params?: unknown[] };

/** The `execute` of `transaction(async (execute) => ...)`: one statement, in the transaction. */
export type TransactionExecute = <R = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<QueryResult<R>>;

export interface TransactionResult {
  results: { command: string; rowsAffected: number; fields: Field[]; rows: unknown[]; rowCount: number; truncated: boolean }[];
  committed: true;
}

export interface TableInfo {
  schema: string;
  name: string;
  type: 'table' | 'view';
}

export interface TableDescription {
  schema: string;
  table: string;
  columns: { name: string; type: string; nullable: boolean; default: string | null; primaryKey: boolean }[];
  indexes: { name: string; columns: string[]; unique: boolean; primary: boolean; definition: string }[];
}

export type ExportFormat = 'csv' | 'json' | 'parquet';

/** A page of the engine's answer to databases.query / databases.fetch. */
interface Page {
  rows: unknown[];
  rowCount: number;
  fields?: Field[];
  command?: string;
  rowsAffected?: number;
  cursor: string | null;
  hasMore?: boolean;
  done?: boolean;
}

function unbase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export class DatabaseClient {
  protected sandbox: EngineSandbox | null = null;
  private startupTime: number | null = null;
  private serverStartupTime: number | null = null;

  constructor(
    private readonly namespace: DurableObjectNamespace<SandboxContainer> | null,
    readonly type: DatabaseType,
    protected readonly options: DatabaseOptions = {},
  ) {
    if (namespace === null && options.engine === undefined) {
      throw new InvalidParamsError('namespace', 'A database needs a container namespace or options.engine');
    }
    if (options.engine !== undefined && !options.engine.key) {
      throw new InvalidParamsError('engine.key', "options.engine needs the engine's key: there is no default key");
    }
  }

  /** Starts the container and its database server; resolves once the server answers queries. */
  async connect(): Promise<void> {
    if (this.sandbox !== null) return;
    const started = Date.now();
    const extra: Record<string, unknown> = {};
    for (const k of ['database', 'username', 'password'] as const) if (this.options[k] !== undefined) extra[k] = this.options[k];
    const name = this.options.name ?? 'default';
    const opts = { type: this.type, extra, name, ...(this.options.size ? { size: this.options.size } : {}) };
    const sb =
      this.options.engine !== undefined
        ? getEngineSandbox(this.options.engine.url, this.options.engine.key, opts)
        : getSandbox(this.namespace!, name, {
            ...opts,
            ...(this.options.engineKey !== undefined ? { engineKey: this.options.engineKey } : {}),
          });
    try {
      await sb.id();
    } catch (e) {
      sb.close();
      throw e;
    }
    this.sandbox = sb;
    this.startupTime = Date.now() - started;
    const reported = sb.created?.startupTimeMs;
    this.serverStartupTime = typeof reported === 'number' ? reported : null;
  }

  /**
   * ms the first connect() took: the container's start plus the database server's, until it
   * answered queries (the original API's cold start). null before connect().
   */
  getStartupTime(): number | null {
    return this.startupTime;
  }

  /** The server's own part of the start, as the engine measured it (`startupTimeMs` of 4.3.1). */
  getServerStartupTime(): number | null {
    return this.serverStartupTime;
  }

  private async db(): Promise<EngineSandbox> {
    await this.connect();
    return this.sandbox!;
  }

  /** Any databases.* method with this database's id (and the configured timeout) filled in. */
  async call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const p = this.options.timeout !== undefined && params.timeout === undefined ? { ...params, timeout: this.options.timeout } : params;
    return (await this.db()).call<T>(method, p);
  }

  /** The rows of one statement, every page of them (the engine hands them out by cursor). */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.queryWithMetadata<T>(sql, params)).rows;
  }

  /** rows, rowCount (all pages), fields, command, rowsAffected of one statement. */
  async queryWithMetadata<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
    const first = await this.call<Page>('databases.queryWithMetadata', {
      sql,
      params,
      ...(this.options.pageSize !== undefined ? { pageSize: this.options.pageSize } : {}),
    });
    const rows = [...first.rows] as T[];
    let cursor = first.cursor;
    try {
      while (cursor !== null) {
        const page: Page = await this.call<Page>('databases.fetch', {
          cursor,
          ...(this.options.pageSize !== undefined ? { pageSize: this.options.pageSize } : {}),
        });
        for (const r of page.rows) rows.push(r as T);
        cursor = page.done === true ? null : page.cursor;
      }
    } catch (e) {
      if (cursor !== null) await this.call('databases.closeCursor', { cursor }).catch(() => undefined);
      throw e;
    }
    return {
      rows,
      rowCount: rows.length,
      fields: first.fields ?? [],
      command: first.command ?? '',
      rowsAffected: first.rowsAffected ?? 0,
    };
  }

  /** A statement, or (without params) a script of several; no rows. */
  execute(sql: string, params: unknown[] = []): Promise<ExecuteResult> {
    return this.call('databases.execute', params.length > 0 ? { sql, params } : { sql });
  }

  /**
   * Statements that commit together or not at all.
   *
   * - `transaction([stmt, ...])` runs them in order in one call (databases.transaction) and
   *   answers every statement's result.
   * - `transaction(async (execute) => { ... })`, the original form: an interactive transaction
   *   (databases.begin). Each `execute(sql, params)` runs its statement at once, inside the
   *   transaction, and resolves with that statement's result (rows, rowCount, fields, command,
   *   rowsAffected), so a later statement can use an earlier one's answer. When the callback
   *   returns, the transaction commits; if it throws, or a statement fails, everything is rolled
   *   back and the promise rejects (a failed statement with its -32014 error).
   */
  transaction(statements: Statement[]): Promise<TransactionResult>;
  transaction<T>(fn: (execute: TransactionExecute) => Promise<T>): Promise<T>;
  async transaction<T>(arg: Statement[] | ((execute: TransactionExecute) => Promise<T>)): Promise<TransactionResult | T> {
    if (Array.isArray(arg)) return this.call<TransactionResult>('databases.transaction', { statements: arg });
    const { transaction } = await this.call<{ transaction: string }>('databases.begin');
    let ended = false;
    const execute: TransactionExecute = async <R = Record<string, unknown>>(sql: string, params: unknown[] = []) => {
      if (ended) throw new InvalidParamsError('transaction', 'this transaction has ended: execute only inside its callback');
      try {
        const r = await this.call<Page>('databases.query', { sql, params, transaction });
        return {
          rows: r.rows as R[],
          rowCount: r.rowCount,
          fields: r.fields ?? [],
          command: r.command ?? '',
          rowsAffected: r.rowsAffected ?? 0,
        };
      } catch (e) {
        ended = true; // the engine rolled it back
        throw e;
      }
    };
    let value: T;
    try {
      value = await arg(execute);
    } catch (e) {
      if (!ended) {
        ended = true;
        await this.call('databases.rollback', { transaction }).catch(() => undefined);
      }
      throw e;
    }
    if (ended) throw new SandboxError('the transaction was rolled back: one of its statements failed');
    ended = true;
    await this.call('databases.commit', { transaction });
    return value;
  }

  /** The server's version text, e.g. "PostgreSQL 15.18 ...", "SQLite 3.40.1", "DuckDB v1.4.4". */
  async version(): Promise<string> {
    return (await this.call<{ version: string }>('databases.version')).version;
  }

  /** true when the server answers (never throws). */
  async ping(): Promise<boolean> {
    try {
      return (await this.call<{ ok: boolean }>('databases.ping')).ok === true;
    } catch {
      return false;
    }
  }

  async listTables(): Promise<TableInfo[]> {
    return (await this.call<{ tables: TableInfo[] }>('databases.listTables')).tables;
  }

  /** Columns and indexes; rejects with -32002 when there is no such table. */
  describeTable(table: string, schema?: string): Promise<TableDescription> {
    return this.call('databases.describeTable', schema === undefined ? { table } : { table, schema });
  }

  /** PostgreSQL: `{name, owner, sizeBytes}`; SQLite and DuckDB: `{name, file}`. */
  async listDatabases(): Promise<Record<string, unknown>[]> {
    return (await this.call<{ databases: Record<string, unknown>[] }>('databases.listDatabases')).databases;
  }

  /** PostgreSQL only (-32010 otherwise); -32008 if it exists. */
  async createDatabase(name: string): Promise<void> {
    await this.call('databases.createDatabase', { name });
  }

  /**
   * A table's rows: CSV (RFC 4180, header row, CRLF) or JSON text; parquet (DuckDB) as bytes.
   * At most 12 MiB (-32006 beyond): bigger tables go to a file with exportToFile (DuckDB).
   */
  async exportData(table: string, format: 'csv' | 'json', options?: { schema?: string }): Promise<string>;
  async exportData(table: string, format: 'parquet', options?: { schema?: string }): Promise<Uint8Array>;
  async exportData(table: string, format?: ExportFormat, options?: { schema?: string }): Promise<string | Uint8Array>;
  async exportData(table: string, format: ExportFormat = 'csv', options: { schema?: string } = {}): Promise<string | Uint8Array> {
    const r = await this.call<{ content?: string; contentBase64?: string }>('databases.exportData', { table, format, ...options });
    return r.contentBase64 !== undefined ? unbase64(r.contentBase64) : (r.content ?? '');
  }

  /** DuckDB: writes the table to a file inside /workspace (-32010 on other engines). */
  exportToFile(table: string, path: string, format: ExportFormat = 'parquet', options: { schema?: string } = {}) {
    return this.call<{ format: ExportFormat; path: string; rowCount: number }>('databases.exportData', {
      table,
      format,
      path,
      ...options,
    });
  }

  /** Lets go of the connection; the database and its data stay (in its container). */
  async close(): Promise<void> {
    this.sandbox?.close();
    this.sandbox = null;
  }
}
