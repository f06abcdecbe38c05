// The registry object: quota (-32003), key isolation, key management, and state that outlives
// requests and connections.
import { env, runInDurableObject } from 'cloudflare:test';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { KeyStore } from '../src/keys';
import { Registry } from '../src/registry';
import type { SandboxDO } from '../src/sandbox-do';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { TEST_KEYS } from './support/keys';
import { RpcSocket, http, otherKey, upgrade } from './support/worker';

const registry = () => env.SANDBOX_DO.getByName('registry') as DurableObjectStub<SandboxDO>;

interface KeyBody {
  id: string;
  name: string;
  admin: boolean;
  createdAt: string;
}

/** The key id of a session (sessions.current answers it). */
async function sessionId(key: string = TEST_KEYS.main): Promise<string> {
  return ((await http('GET', '/api/sessions/current', { key })).body as { id: string }).id;
}

describe('keys', () => {
  it('stores only SHA-256 hashes, never a key', async () => {
    const created = await http('POST', '/api/keys', { body: { name: 'hash-check' } });
    expect(created.status).toBe(201);
    const key = (created.body as { key: string }).key;
    const rows = await runInDurableObject(registry(), (_i, state) => state.storage.sql.exec('SELECT * FROM keys').toArray());
    const dump = JSON.stringify(rows);
    for (const k of [key, TEST_KEYS.main, await otherKey()]) expect(dump).not.toContain(k);
    for (const r of rows) expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('creates, lists and revokes keys; a revoked key is refused and its sockets closed', async () => {
    const c = await http('POST', '/api/keys', { body: { name: 'temp' } });
    const { id, key, name, admin, createdAt } = c.body as KeyBody & { key: string };
    expect(name).toBe('temp');
    expect(admin).toBe(false);
    expect(createdAt).toMatch(/Z$/);
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{40,}$/);

    const list = (await http('GET', '/api/keys')).body as { keys: KeyBody[] };
    expect(list.keys).toContainEqual(expect.objectContaining({ id, name: 'temp', admin: false }));
    expect(JSON.stringify(list)).not.toContain(key);

    // The new key is its own session, and works for the browser subprotocol too.
    const u = await upgrade('/rpc', { 'Sec-WebSocket-Protocol': `sandbox.v1, bearer.${key}` });
    const s = new RpcSocket(u.ws!);
    expect(await s.result('sessions.current')).toMatchObject({ id, name: 'temp', sandboxes: { total: 0 } });

    expect((await http('DELETE', `/api/keys/${id}`)).body).toMatchObject({ revoked: true });
    await expect.poll(() => s.closed?.code ?? null).toBe(4401);
    expect((await http('GET', '/api/sessions/current', { key })).status).toBe(401);
    expect((await upgrade('/rpc', { Authorization: `Bearer ${key}` })).status).toBe(401);
    expect((await http('DELETE', `/api/keys/${id}`)).status).toBe(404);
  });

  it('updates lastUsedAt on use', async () => {
    const { id, key } = (await http('POST', '/api/keys', { body: { name: 'used' } })).body as { id: string; key: string };
    await http('GET', '/api/sessions/current', { key });
    const k = ((await http('GET', '/api/keys')).body as { keys: { id: string; lastUsedAt: string | null }[] }).keys.find(
      (x) => x.id === id,
    );
    expect(k?.lastUsedAt).toMatch(/Z$/);
    await http('DELETE', `/api/keys/${id}`);
  });
});

describe('admin keys (docs/protocol.md 1.2)', () => {
  it('makes the bootstrap key an admin key and a created key one only when asked', async () => {
    const mainId = await sessionId();
    const list = (await http('GET', '/api/keys')).body as { keys: KeyBody[] };
    expect(list.keys).toContainEqual(expect.objectContaining({ id: mainId, admin: true }));

    const bad = await http('POST', '/api/keys', { body: { name: 'x', admin: 'yes' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: -32602, data: { field: 'admin' } } });

    const adm = (await http('POST', '/api/keys', { body: { name: 'second-admin', admin: true } })).body as KeyBody & { key: string };
    expect(adm).toMatchObject({ name: 'second-admin', admin: true });
    // The new admin key manages keys as well: it sees every key, makes and revokes one.
    const seen = (await http('GET', '/api/keys', { key: adm.key })).body as { keys: KeyBody[] };
    expect(seen.keys.map((k) => k.id)).toEqual(expect.arrayContaining([mainId, adm.id]));
    const made = (await http('POST', '/api/keys', { key: adm.key, body: { name: 'by-second' } })).body as KeyBody;
    expect(made.admin).toBe(false);
    expect((await http('DELETE', `/api/keys/${made.id}`, { key: adm.key })).status).toBe(200);
    expect((await http('DELETE', `/api/keys/${adm.id}`)).status).toBe(200);
  });

  it('refuses key management to a non-admin key with -32001 and shows it only itself', async () => {
    const mainId = await sessionId();
    const other = await otherKey();
    const otherId = await sessionId(other);
    const victim = (await http('POST', '/api/keys', { body: { name: 'victim' } })).body as KeyBody & { key: string };

    for (const body of [{ name: 'mine' }, { name: 'mine', admin: true }]) {
      const r = await http('POST', '/api/keys', { key: other, body });
      expect(r.status, JSON.stringify(body)).toBe(401);
      expect(r.body).toMatchObject({ error: { code: -32001 } });
    }
    for (const id of [victim.id, mainId, otherId]) {
      const r = await http('DELETE', `/api/keys/${id}`, { key: other });
      expect(r.status, id).toBe(401);
      expect(r.body).toMatchObject({ error: { code: -32001 } });
    }
    expect((await http('GET', '/api/keys', { key: other })).body).toEqual({
      keys: [expect.objectContaining({ id: otherId, name: 'other', admin: false })],
    });
    // The same over /rpc; the socket stays open and usable.
    const s = await RpcSocket.open(other);
    expect(await s.call('keys.create', { name: 'mine' })).toMatchObject({ error: { code: -32001 } });
    expect(await s.call('keys.revoke', { id: victim.id })).toMatchObject({ error: { code: -32001 } });
    expect(await s.result('keys.list')).toEqual({ keys: [expect.objectContaining({ id: otherId, admin: false })] });
    s.close();
    // Nothing happened: the victim still works and no key was made.
    expect((await http('GET', '/api/sessions/current', { key: victim.key })).status).toBe(200);
    const all = ((await http('GET', '/api/keys')).body as { keys: KeyBody[] }).keys;
    expect(all.filter((k) => k.name === 'mine')).toEqual([]);
    await http('DELETE', `/api/keys/${victim.id}`);
  });

  it('refuses to revoke the last admin key (REST 400, -32602)', async () => {
    const mainId = await sessionId();
    // Admin keys left by other tests would make the main key not the last one.
    for (const k of ((await http('GET', '/api/keys')).body as { keys: KeyBody[] }).keys) {
      if (k.admin && k.id !== mainId) await http('DELETE', `/api/keys/${k.id}`);
    }
    const r = await http('DELETE', `/api/keys/${mainId}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: { code: -32602, data: { field: 'id' } } });
    expect((await http('GET', '/api/sessions/current')).status).toBe(200);
  });

  it('counts only admin keys towards the last one, in the key store', async () => {
    // A separate registry instance, so that only the keys made here exist.
    const stub = env.SANDBOX_DO.getByName('last-key-test') as DurableObjectStub<SandboxDO>;
    const outcome = await runInDurableObject(stub, async (_i, state) => {
      const store = new KeyStore(new Registry(state.storage.sql));
      await store.sync('sk_only_key_0123456789');
      const only = (await store.authenticate('sk_only_key_0123456789'))!.id;
      const code = (f: () => unknown): unknown => {
        try {
          f();
          return null;
        } catch (e) {
          return (e as { code: number }).code;
        }
      };
      const plain = await store.create(only, 'plain');
      const refusedWithPlainLeft = code(() => store.revoke(only, only));
      const plainCannot = code(() => store.revoke(plain.id, only));
      const second = await store.create(only, 'second', true);
      const revokedFirst = code(() => store.revoke(second.id, only)); // no longer the last admin key
      const refusedSecond = code(() => store.revoke(second.id, second.id));
      return {
        refusedWithPlainLeft,
        plainCannot,
        revokedFirst,
        refusedSecond,
        left: store.list(second.id).keys.map((k) => [k.name, k.admin]).sort(),
      };
    });
    expect(outcome).toEqual({
      refusedWithPlainLeft: -32602,
      plainCannot: -32001,
      revokedFirst: null,
      refusedSecond: -32602,
      left: [
        ['plain', false],
        ['second', true],
      ],
    });
  });

  it('drops bootstrap keys that leave API_KEYS and keeps client revocations', async () => {
    const stub = env.SANDBOX_DO.getByName('bootstrap-test') as DurableObjectStub<SandboxDO>;
    const r = await runInDurableObject(stub, async (_i, state) => {
      const store = new KeyStore(new Registry(state.storage.sql));
      await store.sync('sk_a_0123456789,sk_b_0123456789');
      const a = await store.authenticate('sk_a_0123456789');
      const b0 = await store.authenticate('sk_b_0123456789');
      store.revoke(b0!.id, a!.id);
      await store.sync('sk_b_0123456789');
      const b1 = await store.authenticate('sk_b_0123456789');
      await store.sync('sk_a_0123456789,sk_b_0123456789');
      return {
        aAfterRevoke: await store.authenticate('sk_a_0123456789'),
        b1: b1?.admin,
        bGone: (await (async () => {
          await store.sync('sk_a_0123456789');
          return store.authenticate('sk_b_0123456789');
        })()) === null,
      };
    });
    expect(r).toEqual({ aAfterRevoke: null, b1: true, bGone: true });
  });

  it('adds the admin column to a registry made before it existed', async () => {
    const stub = env.SANDBOX_DO.getByName('migration-test') as DurableObjectStub<SandboxDO>;
    const r = await runInDurableObject(stub, async (_i, state) => {
      // The object's constructor made today's table: put back the one of before.
      state.storage.sql.exec('DROP TABLE keys');
      state.storage.sql.exec(`CREATE TABLE keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL, last_used_at TEXT, bootstrap INTEGER NOT NULL DEFAULT 0,
        revoked INTEGER NOT NULL DEFAULT 0)`);
      state.storage.sql.exec(
        "INSERT INTO keys VALUES ('key_old', 'old', 'h1', '2026-01-01T00:00:00.000Z', NULL, 0, 0), ('key_boot', 'bootstrap', 'h2', '2026-01-01T00:00:00.000Z', NULL, 1, 0)",
      );
      const registry = new Registry(state.storage.sql);
      new Registry(state.storage.sql); // a second start finds the column there
      return registry.activeKeys().map((k) => [k.id, k.admin]);
    });
    expect(r).toEqual([
      ['key_boot', true],
      ['key_old', false],
    ]);
  });
});

describe.skipIf(!hasEngine)('sandboxes in the registry', () => {
  beforeAll(() => deleteAllSandboxes());
  afterEach(() => deleteAllSandboxes());
  afterAll(() => deleteAllSandboxes());

  it('hides one key\'s sandbox from another key on every route', async () => {
    const s = await RpcSocket.open();
    const { id } = await s.result<{ id: string }>('agents.create', { type: 'codex', size: 'lite' });
    s.close();
    const o = await RpcSocket.open(await otherKey());
    for (const [method, params] of [
      ['agents.get', { id }],
      ['sandbox.status', { id }],
      ['agents.exec', { id, command: 'true' }],
      ['agents.readFile', { id, path: 'x' }],
      ['agents.stop', { id }],
      ['agents.delete', { id }],
      ['sandbox.delete', { id }],
    ] as const) {
      expect(await o.call(method, params), method).toMatchObject({ error: { code: -32002 } });
    }
    expect(await o.result('agents.list')).toEqual({ agents: [] });
    expect((await http('GET', `/api/agents/${id}/files?path=/workspace`, { auth: 'other' })).status).toBe(404);
    o.close();
    // Still there and running for its owner.
    expect((await http('GET', `/api/agents/${id}`)).body).toMatchObject({ status: 'running' });
  });

  it('keeps state across requests, connections and a restarted object', async () => {
    const created = (await http('POST', '/api/agents', { body: { type: 'opencode', size: 'lite', env: { A: '1' } } })).body as {
      id: string;
    };
    const s = await RpcSocket.open();
    await s.result('agents.writeFile', { id: created.id, path: 'state.txt', content: 'persisted' });
    s.close();
    const row = await runInDurableObject(registry(), (_i, state) =>
      state.storage.sql.exec('SELECT status, env, engine_id FROM sandboxes WHERE id = ?', created.id).one(),
    );
    expect(row).toMatchObject({ status: 'running', engine_id: expect.stringMatching(/^sb_/) });
    const t = await RpcSocket.open();
    expect(await t.result('sandbox.readFile', { id: created.id, path: '/workspace/state.txt' })).toMatchObject({
      content: 'persisted',
    });
    expect(await t.result('sessions.current')).toMatchObject({ sandboxes: { total: 1, running: 1 } });
    t.close();
  });

  it('enforces the running-sandbox quota with -32003 (REST 429) and frees it on stop', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await http('POST', '/api/agents', { body: { type: 'codex', size: 'lite' } });
      expect(r.status, `create #${i + 1}`).toBe(201);
      ids.push((r.body as { id: string }).id);
    }
    const over = await http('POST', '/api/agents', { body: { type: 'codex', size: 'lite' } });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: { code: -32003, data: { quota: 'running', used: 8, limit: 8 } } });
    expect((await http('GET', '/api/sessions/quota')).body).toMatchObject({
      running: { used: 8, limit: 8 },
      memoryMb: { used: 8 * 256 },
      sandboxes: { used: 8 },
    });
    // The other key has its own quota.
    const theirs = await http('POST', '/api/agents', { auth: 'other', body: { type: 'codex', size: 'lite' } });
    expect(theirs.status).toBe(201);

    await http('POST', `/api/agents/${ids[0]}/stop`);
    const again = await http('POST', '/api/agents', { body: { type: 'codex', size: 'lite' } });
    expect(again.status).toBe(201);
    // Starting the stopped one would be the ninth.
    const start = await http('POST', `/api/agents/${ids[0]}/start`);
    expect(start.status).toBe(429);
  });

  it('deletes the sandboxes of a revoked key, in the registry and in the engine', async () => {
    const { id: keyId, key } = (await http('POST', '/api/keys', { body: { name: 'doomed' } })).body as { id: string; key: string };
    const ids: string[] = [];
    for (const size of ['lite', 'lite']) {
      ids.push(((await http('POST', '/api/agents', { key, body: { type: 'codex', size } })).body as { id: string }).id);
    }
    await http('POST', `/api/agents/${ids[1]}/stop`, { key }); // a stopped one goes too
    const engineIds = await runInDurableObject(registry(), (_i, state) =>
      ids.map((id) => state.storage.sql.exec('SELECT engine_id FROM sandboxes WHERE id = ?', id).one().engine_id as string),
    );
    const inEngine = async (engineId: string) =>
      (await fetch(`${inject('engineUrl')}/api/agents/${engineId}`, { headers: { Authorization: `Bearer ${inject('engineKey')}` } }))
        .status;
    for (const e of engineIds) expect(await inEngine(e)).toBe(200);
    const s = await RpcSocket.open(key);

    expect((await http('DELETE', `/api/keys/${keyId}`)).body).toEqual({ id: keyId, revoked: true });
    await expect.poll(() => s.closed?.code ?? null).toBe(4401);
    const left = await runInDurableObject(registry(), (_i, state) =>
      state.storage.sql.exec('SELECT count(*) AS n FROM sandboxes WHERE key_id = ?', keyId).one().n,
    );
    expect(left).toBe(0);
    for (const e of engineIds) expect(await inEngine(e)).toBe(404);
  });

  it('enforces the memory quota with -32003', async () => {
    const s = await RpcSocket.open();
    await s.result('agents.create', { type: 'codex', size: 'standard-4' });
    expect(await s.call('agents.create', { type: 'codex', size: 'standard-2' })).toMatchObject({
      error: { code: -32003, data: { quota: 'memoryMb', used: 12288, limit: 16384 } },
    });
    await s.result('agents.create', { type: 'codex', size: 'standard-1' });
    expect(await s.result('sessions.quota')).toMatchObject({ memoryMb: { used: 16384 } });
    s.close();
  });
});
