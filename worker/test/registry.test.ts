// The registry object: quota (-32003), key isolation, key management, and state that outlives
// requests and connections.
import { env, runInDurableObject } from 'cloudflare:test';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeyStore } from '../src/keys';
import { Registry } from '../src/registry';
import type { SandboxDO } from '../src/sandbox-do';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { TEST_KEYS } from './support/keys';
import { RpcSocket, http, upgrade } from './support/worker';

const registry = () => env.SANDBOX_DO.getByName('registry') as DurableObjectStub<SandboxDO>;

describe('keys', () => {
  it('stores only SHA-256 hashes, never a key', async () => {
    const created = await http('POST', '/api/keys', { body: { name: 'hash-check' } });
    expect(created.status).toBe(201);
    const key = (created.body as { key: string }).key;
    const rows = await runInDurableObject(registry(), (_i, state) => state.storage.sql.exec('SELECT * FROM keys').toArray());
    const dump = JSON.stringify(rows);
    for (const k of [key, TEST_KEYS.main, TEST_KEYS.other]) expect(dump).not.toContain(k);
    for (const r of rows) expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('creates, lists and revokes keys; a revoked key is refused and its sockets closed', async () => {
    const c = await http('POST', '/api/keys', { body: { name: 'temp' } });
    const { id, key, name, createdAt } = c.body as { id: string; key: string; name: string; createdAt: string };
    expect(name).toBe('temp');
    expect(createdAt).toMatch(/Z$/);
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{40,}$/);

    const list = (await http('GET', '/api/keys')).body as { keys: { id: string; lastUsedAt: string | null }[] };
    expect(list.keys.map((k) => k.id)).toContain(id);
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

  it('refuses a key that revokes itself as the last key', async () => {
    // A separate registry instance, so that only the keys made here exist.
    const stub = env.SANDBOX_DO.getByName('last-key-test') as DurableObjectStub<SandboxDO>;
    const outcome = await runInDurableObject(stub, async (_i, state) => {
      const store = new KeyStore(new Registry(state.storage.sql));
      await store.sync('sk_only_key_0123456789');
      const only = store.list().keys[0]!.id;
      let refused: unknown = null;
      try {
        store.revoke(only, only);
      } catch (e) {
        refused = (e as { code: number; data: unknown }).code;
      }
      const second = await store.create('second');
      store.revoke(only, only); // no longer the last key
      return { refused, left: store.list().keys.map((k) => k.id), second: second.id };
    });
    expect(outcome.refused).toBe(-32602);
    expect(outcome.left).toEqual([outcome.second]);
  });

  it('drops bootstrap keys that leave API_KEYS and keeps client revocations', async () => {
    const stub = env.SANDBOX_DO.getByName('bootstrap-test') as DurableObjectStub<SandboxDO>;
    const r = await runInDurableObject(stub, async (_i, state) => {
      const store = new KeyStore(new Registry(state.storage.sql));
      await store.sync('sk_a_0123456789,sk_b_0123456789');
      const a = await store.authenticate('sk_a_0123456789');
      store.revoke('x', a!.id);
      await store.sync('sk_b_0123456789');
      const b1 = await store.authenticate('sk_b_0123456789');
      await store.sync('sk_a_0123456789,sk_b_0123456789');
      return {
        aAfterRevoke: await store.authenticate('sk_a_0123456789'),
        b1: b1 !== null,
        bGone: (await (async () => {
          await store.sync('sk_a_0123456789');
          return store.authenticate('sk_b_0123456789');
        })()) === null,
      };
    });
    expect(r).toEqual({ aAfterRevoke: null, b1: true, bGone: true });
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
    const o = await RpcSocket.open(TEST_KEYS.other);
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

  it('stops the sandboxes of a revoked key', async () => {
    const { id: keyId, key } = (await http('POST', '/api/keys', { body: { name: 'doomed' } })).body as { id: string; key: string };
    const sb = (await http('POST', '/api/agents', { key, body: { type: 'codex', size: 'lite' } })).body as { id: string };
    expect((await http('GET', `/api/agents/${sb.id}`, { key })).body).toMatchObject({ status: 'running' });
    await http('DELETE', `/api/keys/${keyId}`);
    const row = await runInDurableObject(registry(), (_i, state) =>
      state.storage.sql.exec('SELECT status FROM sandboxes WHERE id = ?', sb.id).one(),
    );
    expect(row.status).toBe('stopped');
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
