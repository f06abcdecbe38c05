// The SandboxDO's SQLite registry: keys, sandboxes and stream routes. Pure data access; the
// rules (ownership, quota, status changes) live in service.ts.

import { type SandboxKind, type SandboxType, type Size, SIZES, type Limits } from './config';
import type { NetworkPolicy } from './network-policy';

export type SandboxStatus = 'creating' | 'running' | 'sleeping' | 'stopped' | 'error';

export interface KeyRow {
  id: string;
  name: string;
  hash: string;
  createdAt: string;
  lastUsedAt: string | null;
  bootstrap: boolean;
  /** Bootstrap keys (API_KEYS) are admin; a created key only if made with `admin: true`. */
  admin: boolean;
}

export interface SandboxRow {
  id: string;
  keyId: string;
  kind: SandboxKind;
  type: SandboxType;
  size: Size;
  status: SandboxStatus;
  error: string | null;
  name: string | null;
  createdAt: string;
  lastActiveAt: string;
  sleepAfter: number;
  network: NetworkPolicy;
  /** Names and values; only the names ever leave the registry. */
  env: Record<string, string>;
  /** Extra creation params kept to re-create the engine's sandbox (database name, user...). */
  extra: Record<string, unknown>;
  /** The id of this sandbox inside its engine, null until created there. */
  engineId: string | null;
  /** The key the Worker uses towards this sandbox's container engine. */
  engineKey: string;
  /** What the engine reported that the Sandbox object shows (databases: `database`, `startupTimeMs`). */
  details: SandboxDetails;
}

/** Fields a database's Sandbox object gains (docs/protocol.md 4.3.1). */
export interface SandboxDetails {
  database?: { type: string; database: string; username?: string };
  /** ms from the create (or last start) request to a server that answers. */
  startupTimeMs?: number;
}

/** The Sandbox object of docs/protocol.md 3.1. */
export interface SandboxObject {
  id: string;
  kind: SandboxKind;
  type: SandboxType;
  size: Size;
  status: SandboxStatus;
  createdAt: string;
  lastActiveAt: string;
  sleepAfter: number;
  network: NetworkPolicy;
  env: string[];
  limits: Limits;
  name?: string;
  error?: string;
  database?: { type: string; database: string; username?: string };
  startupTimeMs?: number;
}

export function toSandboxObject(r: SandboxRow): SandboxObject {
  const o: SandboxObject = {
    id: r.id,
    kind: r.kind,
    type: r.type,
    size: r.size,
    status: r.status,
    createdAt: r.createdAt,
    lastActiveAt: r.lastActiveAt,
    sleepAfter: r.sleepAfter,
    network: r.network,
    env: Object.keys(r.env),
    limits: { ...SIZES[r.size] },
  };
  if (r.name !== null) o.name = r.name;
  if (r.status === 'error' && r.error !== null) o.error = r.error;
  if (r.kind === 'database') {
    o.database = r.details.database ?? { type: r.type, database: defaultDatabaseName(r) };
    if (r.details.startupTimeMs !== undefined) o.startupTimeMs = r.details.startupTimeMs;
  }
  return o;
}

/** The database a row names when the engine did not say (before it answered). */
function defaultDatabaseName(r: SandboxRow): string {
  const given = r.extra.database;
  if (typeof given === 'string') return given;
  return r.type === 'sqlite' ? 'main.db' : r.type === 'duckdb' ? 'main.duckdb' : 'postgres';
}

export const RUNNING_STATUSES: readonly SandboxStatus[] = ['creating', 'running'];

type Row = Record<string, SqlStorageValue>;

function keyFromRow(r: Row): KeyRow {
  return {
    id: r.id as string,
    name: r.name as string,
    hash: r.hash as string,
    createdAt: r.created_at as string,
    lastUsedAt: (r.last_used_at as string | null) ?? null,
    bootstrap: r.bootstrap === 1,
    admin: r.bootstrap === 1 || r.admin === 1,
  };
}

/** The `network` column: 0 / 1 for false / true (as before policies), a policy object as JSON. */
function networkToColumn(n: NetworkPolicy): number | string {
  return typeof n === 'boolean' ? (n ? 1 : 0) : JSON.stringify(n);
}

function networkFromColumn(v: SqlStorageValue | undefined): NetworkPolicy {
  return typeof v === 'string' ? (JSON.parse(v) as NetworkPolicy) : v === 1;
}

function sandboxFromRow(r: Row): SandboxRow {
  return {
    id: r.id as string,
    keyId: r.key_id as string,
    kind: r.kind as SandboxKind,
    type: r.type as SandboxType,
    size: r.size as Size,
    status: r.status as SandboxStatus,
    error: (r.error as string | null) ?? null,
    name: (r.name as string | null) ?? null,
    createdAt: r.created_at as string,
    lastActiveAt: r.last_active_at as string,
    sleepAfter: r.sleep_after as number,
    network: networkFromColumn(r.network),
    env: JSON.parse(r.env as string) as Record<string, string>,
    extra: JSON.parse(r.extra as string) as Record<string, unknown>,
    engineId: (r.engine_id as string | null) ?? null,
    engineKey: r.engine_key as string,
    details: typeof r.details === 'string' ? (JSON.parse(r.details) as SandboxDetails) : {},
  };
}

export class Registry {
  private readonly sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
    this.migrate();
  }

  private migrate(): void {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        bootstrap INTEGER NOT NULL DEFAULT 0,
        -- 1: an admin key made by keys.create (bootstrap keys are admin whatever this says)
        admin INTEGER NOT NULL DEFAULT 0,
        -- 0 active, 1 revoked by a client, 2 a bootstrap key no longer listed in API_KEYS
        revoked INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE IF NOT EXISTS sandboxes (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        type TEXT NOT NULL,
        size TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        name TEXT,
        created_at TEXT NOT NULL,
        last_active_at TEXT NOT NULL,
        sleep_after INTEGER NOT NULL,
        network INTEGER NOT NULL,
        env TEXT NOT NULL,
        extra TEXT NOT NULL,
        engine_id TEXT,
        engine_key TEXT NOT NULL,
        details TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX IF NOT EXISTS sandboxes_by_key ON sandboxes (key_id);
      CREATE TABLE IF NOT EXISTS streams (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        sandbox_id TEXT NOT NULL,
        engine_stream_id TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
    `);
    // Registries made before admin keys existed: add the column (its default, 0, is right for
    // every created key of that time; bootstrap keys are admin by their own column).
    const columns = this.sql.exec("SELECT name FROM pragma_table_info('keys')").toArray().map((r) => r.name);
    if (!columns.includes('admin')) this.sql.exec('ALTER TABLE keys ADD COLUMN admin INTEGER NOT NULL DEFAULT 0');
    // Registries made before database sandboxes: their rows have no details yet.
    const sbColumns = this.sql.exec("SELECT name FROM pragma_table_info('sandboxes')").toArray().map((r) => r.name);
    if (!sbColumns.includes('details')) this.sql.exec("ALTER TABLE sandboxes ADD COLUMN details TEXT NOT NULL DEFAULT '{}'");
  }

  // --- keys ---

  /** Makes the registry's bootstrap keys exactly those of API_KEYS (keeping client revocations). */
  syncBootstrapKeys(keys: { id: string; hash: string }[], now: string): void {
    const hashes = new Set(keys.map((k) => k.hash));
    for (const k of keys) {
      this.sql.exec(
        `INSERT INTO keys (id, name, hash, created_at, bootstrap, revoked) VALUES (?, 'bootstrap', ?, ?, 1, 0)
         ON CONFLICT(hash) DO UPDATE SET revoked = CASE WHEN revoked = 2 THEN 0 ELSE revoked END`,
        k.id,
        k.hash,
        now,
      );
    }
    for (const r of this.sql.exec('SELECT id, hash FROM keys WHERE bootstrap = 1 AND revoked = 0').toArray()) {
      if (!hashes.has(r.hash as string)) this.sql.exec('UPDATE keys SET revoked = 2 WHERE id = ?', r.id);
    }
  }

  activeKeys(): KeyRow[] {
    return this.sql.exec('SELECT * FROM keys WHERE revoked = 0 ORDER BY created_at, id').toArray().map(keyFromRow);
  }

  key(id: string): KeyRow | null {
    const r = this.sql.exec('SELECT * FROM keys WHERE id = ? AND revoked = 0', id).toArray()[0];
    return r ? keyFromRow(r) : null;
  }

  insertKey(k: { id: string; name: string; hash: string; createdAt: string; admin: boolean }): void {
    this.sql.exec(
      'INSERT INTO keys (id, name, hash, created_at, bootstrap, admin, revoked) VALUES (?, ?, ?, ?, 0, ?, 0)',
      k.id,
      k.name,
      k.hash,
      k.createdAt,
      k.admin ? 1 : 0,
    );
  }

  revokeKey(id: string): void {
    this.sql.exec('UPDATE keys SET revoked = 1 WHERE id = ?', id);
  }

  touchKey(id: string, now: string): void {
    this.sql.exec('UPDATE keys SET last_used_at = ? WHERE id = ?', now, id);
  }

  // --- sandboxes ---

  insertSandbox(s: SandboxRow): void {
    this.sql.exec(
      `INSERT INTO sandboxes (id, key_id, kind, type, size, status, error, name, created_at, last_active_at,
         sleep_after, network, env, extra, engine_id, engine_key, details)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      s.id,
      s.keyId,
      s.kind,
      s.type,
      s.size,
      s.status,
      s.error,
      s.name,
      s.createdAt,
      s.lastActiveAt,
      s.sleepAfter,
      networkToColumn(s.network),
      JSON.stringify(s.env),
      JSON.stringify(s.extra),
      s.engineId,
      s.engineKey,
      JSON.stringify(s.details),
    );
  }

  /** The sandbox `id` if `keyId` owns it; another key's sandbox is indistinguishable from none. */
  sandbox(keyId: string, id: string): SandboxRow | null {
    const r = this.sql.exec('SELECT * FROM sandboxes WHERE id = ? AND key_id = ?', id, keyId).toArray()[0];
    return r ? sandboxFromRow(r) : null;
  }

  sandboxById(id: string): SandboxRow | null {
    const r = this.sql.exec('SELECT * FROM sandboxes WHERE id = ?', id).toArray()[0];
    return r ? sandboxFromRow(r) : null;
  }

  sandboxes(keyId: string, kind?: SandboxKind): SandboxRow[] {
    const rows =
      kind === undefined
        ? this.sql.exec('SELECT * FROM sandboxes WHERE key_id = ? ORDER BY created_at, id', keyId)
        : this.sql.exec('SELECT * FROM sandboxes WHERE key_id = ? AND kind = ? ORDER BY created_at, id', keyId, kind);
    return rows.toArray().map(sandboxFromRow);
  }

  setStatus(id: string, status: SandboxStatus, error: string | null = null): void {
    this.sql.exec('UPDATE sandboxes SET status = ?, error = ? WHERE id = ?', status, error, id);
  }

  setNetwork(id: string, network: NetworkPolicy): void {
    this.sql.exec('UPDATE sandboxes SET network = ? WHERE id = ?', networkToColumn(network), id);
  }

  setEngineId(id: string, engineId: string | null): void {
    this.sql.exec('UPDATE sandboxes SET engine_id = ? WHERE id = ?', engineId, id);
  }

  setDetails(id: string, details: SandboxDetails): void {
    this.sql.exec('UPDATE sandboxes SET details = ? WHERE id = ?', JSON.stringify(details), id);
  }

  setName(id: string, name: string | null): void {
    this.sql.exec('UPDATE sandboxes SET name = ? WHERE id = ?', name, id);
  }

  touchSandbox(id: string, now: string): void {
    this.sql.exec('UPDATE sandboxes SET last_active_at = ? WHERE id = ?', now, id);
  }

  deleteSandbox(id: string): void {
    this.sql.exec('DELETE FROM sandboxes WHERE id = ?', id);
    this.sql.exec('DELETE FROM streams WHERE sandbox_id = ?', id);
  }

  // --- streams (routes only; the backlog lives in memory and in the engine) ---

  insertStream(s: { id: string; keyId: string; sandboxId: string; engineStreamId: string; createdAt: number }): void {
    this.sql.exec(
      'INSERT OR REPLACE INTO streams (id, key_id, sandbox_id, engine_stream_id, created_at) VALUES (?, ?, ?, ?, ?)',
      s.id,
      s.keyId,
      s.sandboxId,
      s.engineStreamId,
      s.createdAt,
    );
  }

  stream(keyId: string, id: string): { sandboxId: string; engineStreamId: string } | null {
    const r = this.sql.exec('SELECT * FROM streams WHERE id = ? AND key_id = ?', id, keyId).toArray()[0];
    return r ? { sandboxId: r.sandbox_id as string, engineStreamId: r.engine_stream_id as string } : null;
  }

  /** Our id of an engine's stream of a sandbox (a run's stream named by agents.runs), if kept. */
  streamOfEngine(keyId: string, sandboxId: string, engineStreamId: string): string | null {
    const r = this.sql
      .exec(
        'SELECT id FROM streams WHERE key_id = ? AND sandbox_id = ? AND engine_stream_id = ?',
        keyId,
        sandboxId,
        engineStreamId,
      )
      .toArray()[0];
    return r ? (r.id as string) : null;
  }

  pruneStreams(olderThan: number): void {
    this.sql.exec('DELETE FROM streams WHERE created_at < ?', olderThan);
  }
}
