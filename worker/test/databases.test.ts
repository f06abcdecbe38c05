// Database sandboxes through the Worker (docs/protocol.md 4.3 and 5): every method is forwarded
// to the real local engine, which runs real PostgreSQL, SQLite and DuckDB servers in sandboxes;
// the Worker keeps ids, ownership, quota and status, and relays values, cursors and errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { RpcSocket, http, otherKey } from './support/worker';

type Obj = Record<string, unknown>;

function base64Bytes(s: string): number[] {
  return [...atob(s)].map((c) => c.charCodeAt(0));
}

describe.skipIf(!hasEngine)('a postgres database through the Worker', () => {
  let id = '';
  let sock: RpcSocket;
  const sql = (params: Obj) => http('POST', `/api/databases/${id}/query`, { body: params });

  beforeAll(async () => {
    await deleteAllSandboxes();
    // No type: postgres is the default (4.3.1).
    const r = await http('POST', '/api/databases', {
      body: { size: 'basic', database: 'shop', username: 'clerk', password: 'pw-not-shown' },
    });
    expect(r.status, r.text).toBe(201);
    id = (r.body as { id: string }).id;
    sock = await RpcSocket.open();
  });
  afterAll(async () => {
    sock?.close();
    await deleteAllSandboxes();
  });

  it('answers the Sandbox object with its database and startup time, never the password', async () => {
    const r = await http('GET', `/api/databases/${id}`);
    expect(r.body).toMatchObject({
      id,
      kind: 'database',
      type: 'postgres',
      size: 'basic',
      status: 'running',
      database: { type: 'postgres', database: 'shop', username: 'clerk' },
      startupTimeMs: expect.any(Number),
    });
    expect(r.text).not.toContain('pw-not-shown');
    const list = (await http('GET', '/api/databases')).body as { databases: Obj[] };
    expect(list.databases.map((d) => d.id)).toEqual([id]);
    expect(list.databases[0]).toMatchObject({ database: { database: 'shop' } });
    const q = (await http('GET', '/api/sessions/quota')).body as { running: { used: number } };
    expect(q.running.used).toBe(1);
  });

  it('renames the database: kept, cleared with "", a control character refused, another key sees nothing', async () => {
    const renamed = await sock.result<Obj>('databases.setName', { id, name: ' shop-db ' });
    expect(renamed).toMatchObject({ id, name: 'shop-db', database: { database: 'shop' } });
    expect((await http('GET', `/api/databases/${id}`)).body).toMatchObject({ name: 'shop-db' });
    const bad = await sock.call('sandbox.setName', { id, name: 'a\u0007b' });
    expect(bad.error).toMatchObject({ code: -32602 });
    expect((await sock.call('sandbox.setName', { id })).error).toMatchObject({ code: -32602 });
    // REST: PUT /api/databases/{id}/name, as the engine.
    const put = await http('PUT', `/api/databases/${id}/name`, { body: { name: 'pg-demo' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id, name: 'pg-demo' });
    const badPut = await http('PUT', `/api/databases/${id}/name`, { body: { name: 'x'.repeat(300) } });
    expect(badPut.status).toBe(400);
    expect((await http('PUT', `/api/agents/${id}/name`, { body: { name: 'x' } })).status).toBe(404);
    const cleared = await sock.result<Obj>('sandbox.setName', { id, name: '' });
    expect(cleared.name).toBeUndefined();
    const other = await RpcSocket.open(await otherKey());
    try {
      expect((await other.call('databases.setName', { id, name: 'mine' })).error).toMatchObject({ code: -32002 });
    } finally {
      other.close();
    }
  });

  it('keeps values exact both ways: big integers, numerics, bytes, NaN, arrays, timestamps', async () => {
    await http('POST', `/api/databases/${id}/execute`, {
      body: { sql: 'CREATE TABLE v (big int8, n numeric(10,3), b bytea, f float8, arr int4[], ts timestamptz, j jsonb)' },
    });
    // A bare integer beyond 2^53 in the request text must reach the engine digit for digit.
    sock.sendRaw(
      `{"jsonrpc":"2.0","id":"ins","method":"databases.execute","params":{"id":"${id}",` +
        `"sql":"INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7), ($8, NULL, NULL, NULL, NULL, NULL, NULL)",` +
        `"params":[9007199254740993, "12.5", {"$bytes":"AAH/"}, {"$float":"NaN"}, [1, null, 3],` +
        ` "2024-02-29T23:59:59.123456Z", {"k": [1, 2]}, {"$int":"-9223372036854775808"}]}}`,
    );
    const ins = (await sock.nextAnswer()) as Obj;
    expect(ins).toMatchObject({ id: 'ins', result: { rowsAffected: 2, command: 'INSERT' } });

    const r = await sql({ sql: 'SELECT big, n, b, f, arr, ts, j FROM v ORDER BY n NULLS LAST', rowMode: 'array' });
    expect(r.status, r.text).toBe(200);
    const body = r.body as { rows: unknown[][]; fields: { name: string; type: string }[] };
    expect(body.fields.map((f) => f.type)).toEqual(['int8', 'numeric', 'bytea', 'float8', '_int4', 'timestamptz', 'jsonb']);
    expect(body.rows[0]).toEqual([
      { $int: '9007199254740993' },
      '12.500',
      { $bytes: 'AAH/' },
      { $float: 'NaN' },
      [1, null, 3],
      '2024-02-29T23:59:59.123456Z',
      '{"k": [1, 2]}',
    ]);
    expect(body.rows[1]).toEqual([{ $int: '-9223372036854775808' }, null, null, null, null, null, null]);
    // The REST answer's text carries the digits too (no rounding on the way out).
    expect(r.text).toContain('"9007199254740993"');
  });

  it('pages a big result through cursors, and closes them', async () => {
    const first = await sock.call('databases.query', {
      id,
      sql: 'SELECT g FROM generate_series(1, 25) AS g',
      pageSize: 10,
      rowMode: 'array',
    });
    const r1 = first.result as { rows: unknown[]; hasMore: boolean; cursor: string; rowCount: number };
    expect(r1).toMatchObject({ rowCount: 10, hasMore: true, cursor: expect.any(String) });
    expect(r1.rows[0]).toEqual([1]);
    const p2 = (await http('POST', `/api/databases/${id}/fetch`, { body: { cursor: r1.cursor, pageSize: 10 } })).body as Obj;
    expect(p2).toMatchObject({ rowCount: 10, done: false });
    const p3 = (await sock.call('databases.fetch', { id, cursor: r1.cursor, pageSize: 10 })).result as Obj;
    expect(p3).toMatchObject({ rowCount: 5, done: true, cursor: null });
    expect((p3.rows as unknown[][]).at(-1)).toEqual([25]);
    // A cursor read to the end is gone.
    expect((await sock.call('databases.fetch', { id, cursor: r1.cursor })).error).toMatchObject({ code: -32002 });

    const again = (await sock.call('databases.query', { id, sql: 'SELECT g FROM generate_series(1, 5) g', pageSize: 2 }))
      .result as { cursor: string };
    const closed = await http('POST', `/api/databases/${id}/closeCursor`, { body: { cursor: again.cursor } });
    expect(closed.body).toEqual({ cursor: again.cursor, closed: true });
    expect((await sock.call('databases.fetch', { id, cursor: again.cursor })).error).toMatchObject({ code: -32002 });
  });

  it('commits a transaction whole or rolls it back, naming the failing statement', async () => {
    await http('POST', `/api/databases/${id}/execute`, { body: { sql: 'CREATE TABLE acct (id int PRIMARY KEY, bal int)' } });
    const ok = await http('POST', `/api/databases/${id}/transaction`, {
      body: {
        statements: [
          { sql: 'INSERT INTO acct VALUES ($1, $2)', params: [1, 100] },
          'INSERT INTO acct VALUES (2, 0)',
          { sql: 'UPDATE acct SET bal = bal + $1 WHERE id = 2', params: [40] },
        ],
      },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ committed: true, results: [{ rowsAffected: 1 }, { rowsAffected: 1 }, { rowsAffected: 1 }] });

    const bad = await http('POST', `/api/databases/${id}/transaction`, {
      body: { statements: ['UPDATE acct SET bal = 0 WHERE id = 1', 'INSERT INTO acct VALUES (2, 5)'] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ error: { code: -32014, data: { statementIndex: 1, sqlstate: '23505' } } });
    const rows = (await sql({ sql: 'SELECT id, bal FROM acct ORDER BY id' })).body as { rows: Obj[] };
    expect(rows.rows).toEqual([
      { id: 1, bal: 100 },
      { id: 2, bal: 40 },
    ]);
  });

  it('answers rejected SQL with 422 -32014 and where, and bad params with -32602', async () => {
    const r = await sql({ sql: 'SELECT 1\nFROM FROM' });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error: { code: -32014, data: { position: 15, line: 2, column: 6, sqlstate: '42601' } } });
    const p = await sql({ sql: 'SELECT $1::int', params: 'nope' });
    expect(p.status).toBe(400);
    expect(p.body).toMatchObject({ error: { code: -32602, data: { field: 'params' } } });
  });

  it('serves the administration methods', async () => {
    const call = async (action: string, body: Obj = {}) => {
      const r = await http('POST', `/api/databases/${id}/${action}`, { body });
      return { status: r.status, body: r.body as Obj };
    };
    expect((await call('version')).body).toMatchObject({ type: 'postgres', version: expect.stringMatching(/^PostgreSQL 15/) });
    expect((await call('ping')).body).toMatchObject({ ok: true, latencyMs: expect.any(Number) });
    expect((await call('listTables')).body).toMatchObject({
      tables: expect.arrayContaining([{ schema: 'public', name: 'acct', type: 'table' }]),
    });
    expect((await call('describeTable', { table: 'acct' })).body).toMatchObject({
      table: 'acct',
      columns: [
        { name: 'id', primaryKey: true, nullable: false },
        { name: 'bal', primaryKey: false, nullable: true },
      ],
      indexes: [{ primary: true, unique: true, columns: ['id'] }],
    });
    const missing = await call('describeTable', { table: 'nope' });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { code: -32002 } });
    expect((await call('createDatabase', { name: 'reports' })).body).toEqual({ name: 'reports', created: true });
    const twice = await call('createDatabase', { name: 'reports' });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ error: { code: -32008 } });
    const dbs = (await call('listDatabases')).body as { databases: { name: string; owner: string }[] };
    expect(dbs.databases).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'shop' }), expect.objectContaining({ name: 'reports', owner: 'clerk' })]),
    );
    const csv = (await call('exportData', { table: 'acct' })).body;
    expect(csv).toEqual({ format: 'csv', content: 'id,bal\r\n1,100\r\n2,40\r\n', rowCount: 2 });
    const parquet = await call('exportData', { table: 'acct', format: 'parquet' });
    expect(parquet.status).toBe(501);
    expect(parquet.body).toMatchObject({ error: { code: -32010 } });
    expect((await http('POST', `/api/databases/${id}/vacuum`, { body: {} })).status).toBe(404);
  });

  it('cancels a running statement with rpc.cancel (-32012) and times one out (-32004)', async () => {
    sock.send({ jsonrpc: '2.0', id: 'slow', method: 'databases.query', params: { id, sql: 'SELECT pg_sleep(30)' } });
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    sock.send({ jsonrpc: '2.0', method: 'rpc.cancel', params: { id: 'slow' } });
    const m = (await sock.nextAnswer()) as Obj;
    expect(m).toMatchObject({ id: 'slow', error: { code: -32012 } });
    expect(Date.now() - t0).toBeLessThan(5_000);
    // The engine really stopped it: the database answers at once.
    expect((await sock.call('databases.query', { id, sql: 'SELECT 1 AS one' })).result).toMatchObject({ rows: [{ one: 1 }] });

    const late = await sql({ sql: 'SELECT pg_sleep(10)', timeout: 300 });
    expect(late.status).toBe(504);
    expect(late.body).toMatchObject({ error: { code: -32004, data: { timeoutMs: 300 } } });
  });

  it('stops (409 -32005), starts and restarts with its data intact', async () => {
    expect((await http('POST', `/api/databases/${id}/stop`)).body).toMatchObject({ status: 'stopped' });
    const refused = await sql({ sql: 'SELECT 1' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: { code: -32005 } });
    const started = await http('POST', `/api/databases/${id}/start`);
    expect(started.body).toMatchObject({ status: 'running', startupTimeMs: expect.any(Number), database: { database: 'shop' } });
    expect(((await sql({ sql: 'SELECT count(*)::int AS n FROM acct' })).body as Obj).rows).toEqual([{ n: 2 }]);
    const restarted = await sock.call('databases.restart', { id });
    expect(restarted.result).toMatchObject({ id, status: 'running' });
    expect(((await sql({ sql: 'SELECT bal FROM acct WHERE id = 2' })).body as Obj).rows).toEqual([{ bal: 40 }]);
  });

  it("hides the database from another key on every route", async () => {
    const key = await otherKey();
    for (const [m, p] of [
      ['GET', `/api/databases/${id}`],
      ['POST', `/api/databases/${id}/query`],
      ['POST', `/api/databases/${id}/listTables`],
      ['POST', `/api/databases/${id}/restart`],
      ['DELETE', `/api/databases/${id}`],
    ] as const) {
      const r = await http(m, p, m === 'POST' ? { key, body: { sql: 'SELECT 1' } } : { key });
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.body).toMatchObject({ error: { code: -32002 } });
    }
    expect((await http('GET', '/api/databases', { key })).body).toEqual({ databases: [] });
  });
});

describe.skipIf(!hasEngine)('sqlite and duckdb databases through the Worker', () => {
  beforeAll(() => deleteAllSandboxes());
  afterAll(() => deleteAllSandboxes());

  it('serves a sqlite file inside /workspace, and refuses postgres-only work with 501', async () => {
    const r = await http('POST', '/api/databases', { body: { type: 'sqlite', size: 'lite', database: '/workspace/data/app.db' } });
    expect(r.status, r.text).toBe(201);
    const db = r.body as { id: string };
    expect(r.body).toMatchObject({ type: 'sqlite', database: { type: 'sqlite', database: 'data/app.db' } });
    const call = (action: string, body: Obj = {}) => http('POST', `/api/databases/${db.id}/${action}`, { body });
    await call('execute', { sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO t (title) VALUES (\'a\'), (\'b\')' });
    expect((await call('queryWithMetadata', { sql: 'SELECT id, title FROM t ORDER BY id' })).body).toMatchObject({
      rows: [
        { id: 1, title: 'a' },
        { id: 2, title: 'b' },
      ],
      rowCount: 2,
      command: 'SELECT',
      fields: [
        { name: 'id', type: 'INTEGER' },
        { name: 'title', type: 'TEXT' },
      ],
    });
    expect((await call('version')).body).toMatchObject({ type: 'sqlite', version: expect.stringMatching(/^SQLite 3/) });
    expect((await call('listDatabases')).body).toMatchObject({ databases: [{ file: expect.stringContaining('data/app.db') }] });
    const pgOnly = await call('createDatabase', { name: 'x' });
    expect(pgOnly.status).toBe(501);
    expect(pgOnly.body).toMatchObject({ error: { code: -32010 } });
    // The file is the sandbox's own, in its /workspace (sandbox.* works on a sandbox of any kind).
    const sock = await RpcSocket.open();
    const stat = await sock.call('sandbox.stat', { id: db.id, path: 'data/app.db' });
    sock.close();
    expect(stat.result).toMatchObject({ path: '/workspace/data/app.db', type: 'file' });
    expect((await http('DELETE', `/api/databases/${db.id}`)).body).toEqual({ id: db.id, deleted: true });
  });

  it('exports a duckdb table as parquet', async () => {
    const r = await http('POST', '/api/databases', { body: { type: 'duckdb', size: 'basic' } });
    expect(r.status, r.text).toBe(201);
    const db = r.body as { id: string };
    expect(r.body).toMatchObject({ database: { type: 'duckdb', database: 'main.duckdb' }, startupTimeMs: expect.any(Number) });
    const call = (action: string, body: Obj = {}) => http('POST', `/api/databases/${db.id}/${action}`, { body });
    await call('execute', { sql: 'CREATE TABLE ev AS SELECT range AS i, range * 2.5 AS x FROM range(1000)' });
    const agg = await call('query', { sql: 'SELECT count(*) AS n, sum(i)::HUGEINT * 1000000000000 AS big FROM ev' });
    expect(agg.body).toMatchObject({ rows: [{ n: 1000, big: { $int: '499500000000000000' } }] });
    const pq = (await call('exportData', { table: 'ev', format: 'parquet' })).body as { contentBase64: string; rowCount: number };
    expect(pq).toMatchObject({ format: 'parquet', rowCount: 1000 });
    expect(base64Bytes(pq.contentBase64).slice(0, 4)).toEqual([...'PAR1'].map((c) => c.charCodeAt(0)));
    expect((await http('DELETE', `/api/databases/${db.id}`)).status).toBe(200);
  });
});
