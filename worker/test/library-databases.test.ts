/// <reference types="vite/client" />
// The original database API for Worker authors (createPostgresContainer & co.) against the real
// local engine: the classes speak databases.* exactly as they do to a container's engine, here
// reached by URL (`options.engine`, as under wrangler dev).
import { env } from 'cloudflare:test';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineConnection, UrlEngineTarget, devEngine } from '../src/engine';
import { getEngineSandbox } from '../src/engine-sandbox';
import { RpcError } from '../src/errors';
import { createDuckDBContainer, createPostgresContainer, createSQLiteContainer } from '../src/lib';
import { hasEngine } from './support/engine';

const engine = () => ({ url: env.ENGINE_URL, key: env.ENGINE_KEY });
const NAME = `lib-${Math.random().toString(36).slice(2, 8)}`;

/** Deletes what these tests made in the engine (their names start with NAME). */
async function cleanup(): Promise<void> {
  const conn = new EngineConnection(new UrlEngineTarget(env.ENGINE_URL, env.ENGINE_KEY));
  const { databases } = (await conn.request('databases.list', {})) as { databases: { id: string; name?: string }[] };
  for (const d of databases) if (d.name?.startsWith(NAME)) await conn.request('databases.delete', { id: d.id });
  conn.close();
}

async function rejection(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

describe.skipIf(!hasEngine)('createPostgresContainer (original API) on the engine', () => {
  afterAll(cleanup);
  const pg = () =>
    createPostgresContainer(null, {
      engine: engine(),
      name: `${NAME}-pg`,
      database: 'myapp',
      username: 'app',
      password: 'secret',
      size: 'basic',
      pageSize: 7,
    });

  it('connects, reports its startup time, and runs the original examples', async () => {
    const db = pg();
    expect(db.getStartupTime()).toBeNull();
    await db.connect();
    expect(db.getStartupTime()).toBeGreaterThanOrEqual(0);
    expect(db.getServerStartupTime()).toBeGreaterThan(0);

    await db.execute('CREATE TABLE users (id SERIAL PRIMARY KEY, email TEXT UNIQUE NOT NULL, name TEXT, active bool)');
    expect(await db.execute('INSERT INTO users (email, name, active) VALUES ($1, $2, $3)', ['alice@example.com', 'Alice', true]))
      .toEqual({ rowsAffected: 1, command: 'INSERT' });
    // A script of several statements (no params).
    await db.execute("INSERT INTO users (email, name, active) VALUES ('bob@x', 'Bob', false); INSERT INTO users (email) VALUES ('c@x')");
    expect(await db.query<{ id: number; name: string }>('SELECT id, name FROM users WHERE active = $1', [true])).toEqual([
      { id: 1, name: 'Alice' },
    ]);
    const meta = await db.queryWithMetadata('SELECT * FROM users ORDER BY id');
    expect(meta).toMatchObject({ rowCount: 3, command: 'SELECT' });
    expect(meta.fields.map((f) => [f.name, f.type])).toEqual([
      ['id', 'int4'],
      ['email', 'text'],
      ['name', 'text'],
      ['active', 'bool'],
    ]);
    await db.close();
  });

  it('reads every page of a result bigger than a page', async () => {
    const db = pg();
    const rows = await db.query<{ g: number }>('SELECT g FROM generate_series(1, 20) AS g');
    expect(rows.map((r) => r.g)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    await db.close();
  });

  it('finds its database again by name, with the data of an earlier client', async () => {
    const db = pg();
    expect(await db.query('SELECT count(*)::int AS n FROM users')).toEqual([{ n: 3 }]);
    await db.close();
  });

  it('gives each execute of a transaction callback its own result, commits it whole, and rolls it back on a failing statement', async () => {
    const db = pg();
    await db.execute('CREATE TABLE accounts (id int PRIMARY KEY, balance int CHECK (balance >= 0))');
    await db.execute('INSERT INTO accounts VALUES (1, 100), (2, 0)');
    const value = await db.transaction(async (execute) => {
      const a = await execute('UPDATE accounts SET balance = balance - $1 WHERE id = $2 RETURNING balance', [60, 1]);
      // A later statement uses an earlier one's answer, and sees its change.
      const left = (a.rows[0] as { balance: number }).balance;
      const b = await execute('UPDATE accounts SET balance = balance + $1 WHERE id = $2', [100 - left, 2]);
      const seen = await execute<{ total: number }>('SELECT sum(balance)::int AS total FROM accounts');
      return [a.command, a.rowsAffected, left, b.rowsAffected, seen.rows[0]!.total];
    });
    expect(value).toEqual(['UPDATE', 1, 40, 1, 100]);
    const overdraw = await rejection(
      db.transaction(async (execute) => {
        await execute('UPDATE accounts SET balance = balance + $1 WHERE id = $2', [60, 2]);
        await execute('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [60, 1]);
      }),
    );
    expect(overdraw.code).toBe(-32014);
    expect(overdraw.data).toMatchObject({ sqlstate: '23514' });
    expect(overdraw.message).toMatch(/rolled back/);
    // A callback that throws rolls back what its statements did.
    await expect(
      db.transaction(async (execute) => {
        expect((await execute('DELETE FROM accounts')).rowsAffected).toBe(2);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.query('SELECT id, balance FROM accounts ORDER BY id')).toEqual([
      { id: 1, balance: 40 },
      { id: 2, balance: 60 },
    ]);
    const arr = await db.transaction(['INSERT INTO accounts VALUES (3, 1)', { sql: 'SELECT balance FROM accounts WHERE id = $1', params: [3] }]);
    expect(arr).toMatchObject({ committed: true, results: [{ rowsAffected: 1 }, { rows: [{ balance: 1 }] }] });
    await db.close();
  });

  it('administers: version, tables, columns, databases, ping', async () => {
    const db = pg();
    expect(await db.version()).toMatch(/^PostgreSQL 15\./);
    expect(await db.listTables()).toEqual(
      expect.arrayContaining([
        { schema: 'public', name: 'users', type: 'table' },
        { schema: 'public', name: 'accounts', type: 'table' },
      ]),
    );
    const users = await db.describeTable('users');
    expect(users.columns.map((c) => [c.name, c.primaryKey])).toEqual([
      ['id', true],
      ['email', false],
      ['name', false],
      ['active', false],
    ]);
    expect(users.indexes.some((i) => i.unique && i.columns.join() === 'email')).toBe(true);
    expect((await rejection(db.describeTable('nope'))).code).toBe(-32002);
    await db.createDatabase('newdb');
    expect((await rejection(db.createDatabase('newdb'))).code).toBe(-32008);
    expect((await db.listDatabases()).map((d) => d.name)).toEqual(expect.arrayContaining(['myapp', 'newdb']));
    expect(await db.ping()).toBe(true);
    // Bad SQL rejects with the engine's error and where it is.
    const bad = await rejection(db.query('SELECT 1\nFROM FROM'));
    expect(bad).toMatchObject({ code: -32014, data: { line: 2, column: 6 } });
    await db.close();
  });
});

describe.skipIf(!hasEngine)('createSQLiteContainer and createDuckDBContainer on the engine', () => {
  afterAll(cleanup);

  it('SQLite: the original example, tableInfo and listTables', async () => {
    const sqlite = createSQLiteContainer(null, { engine: engine(), name: `${NAME}-sqlite`, database: '/workspace/data/app.db', size: 'lite' });
    await sqlite.connect();
    await sqlite.execute('CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)');
    await sqlite.execute('INSERT INTO tasks (title) VALUES (?)', ['Learn containers']);
    expect(await sqlite.query<{ id: number; title: string }>('SELECT * FROM tasks')).toEqual([{ id: 1, title: 'Learn containers' }]);
    expect((await sqlite.tableInfo('tasks')).map((c) => [c.name, c.type, c.primaryKey])).toEqual([
      ['id', 'INTEGER', true],
      ['title', 'TEXT', false],
    ]);
    expect(await sqlite.listTables()).toEqual([{ schema: 'main', name: 'tasks', type: 'table' }]);
    expect(await sqlite.version()).toMatch(/^SQLite 3\./);
    expect((await rejection(sqlite.createDatabase('x'))).code).toBe(-32010);
    await sqlite.close();
  });

  it('DuckDB: analytics, CSV and parquet export, export to a file', async () => {
    const duck = createDuckDBContainer(null, { engine: engine(), name: `${NAME}-duck`, size: 'basic' });
    await duck.connect();
    await duck.execute(`CREATE TABLE events (event_type VARCHAR, user_id VARCHAR, ts TIMESTAMP, properties JSON)`);
    await duck.execute(
      `INSERT INTO events VALUES ('click', 'u1', TIMESTAMP '2024-02-29 23:59:59', '{"a": 1}'),
        ('click', 'u2', TIMESTAMP '2024-03-01 00:00:00', NULL), ('view', 'u1', TIMESTAMP '2024-03-01 00:00:01', '[]')`,
    );
    const stats = await duck.query('SELECT event_type, COUNT(*) AS count FROM events GROUP BY event_type ORDER BY count DESC');
    expect(stats).toEqual([
      { event_type: 'click', count: 2 },
      { event_type: 'view', count: 1 },
    ]);
    const csv = await duck.exportData('events', 'csv');
    expect(csv.split('\r\n')[0]).toBe('event_type,user_id,ts,properties');
    expect(csv).toContain('click,u1,2024-02-29T23:59:59,');
    const json = JSON.parse(await duck.exportData('events', 'json')) as unknown[];
    expect(json).toHaveLength(3);
    const parquet = await duck.exportData('events', 'parquet');
    expect(new TextDecoder().decode(parquet.subarray(0, 4))).toBe('PAR1');
    expect(await duck.exportToFile('events', 'events.parquet')).toMatchObject({ rowCount: 3 });
    expect(await duck.query("SELECT count(*) AS n FROM read_parquet('/workspace/events.parquet')")).toEqual([{ n: 3 }]);
    await duck.close();
  });
});

describe('no fixed engine key anywhere', () => {
  it('refuses an engine by URL without its key', () => {
    expect(() => createSQLiteContainer(null, { engine: { url: 'http://127.0.0.1:1', key: '' } })).toThrow(/key/);
    expect(() => getEngineSandbox('http://127.0.0.1:1', '', { type: 'sqlite' })).toThrow(/key/);
  });

  it('refuses ENGINE_URL without ENGINE_KEY', () => {
    expect(() => devEngine({ ENGINE_URL: 'http://127.0.0.1:1', ENGINE_KEY: '' })).toThrow(/ENGINE_KEY/);
    expect(devEngine({ ENGINE_URL: '', ENGINE_KEY: '' })).toBeNull();
  });

  it('has no default key in the code', async () => {
    const sources = import.meta.glob('../src/**/*.ts', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
    expect(Object.keys(sources).length).toBeGreaterThan(10);
    for (const [file, text] of Object.entries(sources)) expect(`${file}: ${/sk_engine_default/.test(text)}`).toBe(`${file}: false`);
  });
});
