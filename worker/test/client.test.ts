// The TypeScript client (createSandboxClient, connectSandbox) against the Worker: it
// authenticates with the subprotocol, reconnects after a drop and resumes streams.
import { SELF, env } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StreamChunk, type WebSocketLike, SandboxRpcError, connectSandbox, createSandboxClient } from '../src/client/index';
import { createAgentSandbox, getEngineSandbox, isAgentType } from '../src/lib';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { TEST_KEYS } from './support/keys';

/** Opens sockets through SELF, recording the offered subprotocols and every socket made. */
function harness() {
  const offered: string[][] = [];
  const sockets: WebSocket[] = [];
  const connect = async (_url: string, protocols: string[]): Promise<WebSocketLike> => {
    offered.push(protocols);
    const resp = await SELF.fetch('http://sandbox.test/rpc', {
      headers: { Upgrade: 'websocket', 'Sec-WebSocket-Protocol': protocols.join(', ') },
    });
    const ws = resp.webSocket;
    if (ws === null) {
      // What a browser sees for a refused upgrade: a close before open.
      return {
        readyState: 0,
        send() {},
        close() {},
        addEventListener(type: string, fn: (ev: { code: number; reason: string }) => void) {
          if (type === 'close') setTimeout(() => fn({ code: 1006, reason: `HTTP ${resp.status}` }), 0);
        },
      } as unknown as WebSocketLike;
    }
    ws.accept();
    sockets.push(ws);
    return ws as unknown as WebSocketLike;
  };
  return { offered, sockets, connect };
}

describe('createSandboxClient', () => {
  it('authenticates with the subprotocol, never the URL', async () => {
    const h = harness();
    const client = createSandboxClient({ url: 'wss://sandbox.test/rpc', auth: TEST_KEYS.main, connect: h.connect });
    expect(await client.sessions.current()).toMatchObject({ backend: 'cloudflare', id: expect.stringMatching(/^key_/) });
    expect(h.offered[0]).toEqual(['sandbox.v1', `bearer.${TEST_KEYS.main}`]);
    expect(await client.sessions.quota()).toMatchObject({ running: { limit: 8 } });
    client.close();
  });

  it('rejects with the server error as SandboxRpcError', async () => {
    const h = harness();
    const client = createSandboxClient({ auth: TEST_KEYS.main, connect: h.connect });
    const e = await client.agents.get('sb_000000000000').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SandboxRpcError);
    expect(e).toMatchObject({ code: -32002 });
    const p = await client.agents.create({ type: 'vim' as never }).catch((x: unknown) => x);
    expect(p).toMatchObject({ code: -32602, data: { field: 'type' } });
    client.close();
  });

  it('fails without reconnecting when the key is refused', async () => {
    const h = harness();
    const client = createSandboxClient({ auth: TEST_KEYS.bad, connect: h.connect });
    await expect(client.sessions.current()).rejects.toMatchObject({ code: -32603 });
    client.close();
  });

  it('knows the agent types', () => {
    expect(isAgentType('codex')).toBe(true);
    expect(isAgentType('vim')).toBe(false);
  });
});

describe.skipIf(!hasEngine)('client with the engine', () => {
  beforeAll(() => deleteAllSandboxes());
  afterAll(() => deleteAllSandboxes());

  it('creates, execs, writes and reads through agents.* and connectSandbox', async () => {
    const h = harness();
    const client = createSandboxClient({ auth: TEST_KEYS.main, connect: h.connect });
    const agent = await client.agents.create({ type: 'claude-code', size: 'lite', env: { WHO: 'client' } });
    expect((await client.agents.list()).map((a) => a.id)).toContain(agent.id);
    expect(await client.agents.exec(agent.id, 'echo $WHO')).toMatchObject({ exitCode: 0, stdout: 'client\n' });
    await client.agents.writeFile(agent.id, '/workspace/c.json', '{}');
    expect(await client.agents.readFile(agent.id, 'c.json')).toBe('{}');

    const sb = connectSandbox(agent.id, { auth: TEST_KEYS.main, client });
    expect(await sb.status()).toMatchObject({ id: agent.id, status: 'running' });
    expect((await sb.listFiles('/workspace')).entries.map((e) => e.name)).toContain('c.json');
    expect(await sb.stop()).toMatchObject({ status: 'stopped' });
    await expect(sb.exec('true')).rejects.toMatchObject({ code: -32005 });
    expect(await sb.start()).toMatchObject({ status: 'running' });
    expect(await sb.delete()).toEqual({ id: agent.id, deleted: true });
    client.close();
  });

  it('streams output and, after a dropped connection, resumes it and still resolves the exec', async () => {
    const h = harness();
    const client = createSandboxClient({ auth: TEST_KEYS.main, connect: h.connect });
    const agent = await client.agents.create({ type: 'codex', size: 'lite' });
    const chunks: StreamChunk[] = [];
    let dropped = false;
    const done = client.agents.exec(agent.id, 'for i in 1 2 3 4 5; do echo s$i; sleep 0.3; done; exit 4', {
      stream: true,
      onOutput: (c) => {
        chunks.push(c);
        if (!dropped) {
          dropped = true;
          h.sockets[0]!.close(1001, 'simulated drop');
        }
      },
    });
    const result = await done;
    expect(result).toMatchObject({ exitCode: 4, streamId: expect.stringMatching(/^st_/) });
    expect(h.sockets.length).toBeGreaterThanOrEqual(2);
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i + 1));
    expect(chunks.map((c) => c.data).join('')).toBe('s1\ns2\ns3\ns4\ns5\n');
    client.close();
  });

  it('serves databases.*: create, SQL with typed values, cursors, transactions, administration', async () => {
    const client = createSandboxClient({ auth: TEST_KEYS.main, connect: harness().connect });
    const db = await client.databases.create({ type: 'sqlite', size: 'lite', database: 'c.db' });
    expect(db).toMatchObject({ kind: 'database', type: 'sqlite', database: { database: 'c.db' }, startupTimeMs: expect.any(Number) });
    expect(await client.databases.execute(db.id, 'CREATE TABLE t (n INTEGER, b BLOB); INSERT INTO t VALUES (1, x\'00ff\')')).toMatchObject({
      rowsAffected: 1,
    });
    expect(await client.databases.query(db.id, 'SELECT n, b FROM t WHERE n = ?', [1])).toEqual([{ n: 1, b: { $bytes: 'AP8=' } }]);
    const tx = await client.databases.transaction(db.id, [{ sql: 'INSERT INTO t (n) VALUES (?)', params: [2] }, 'INSERT INTO t (n) VALUES (3)']);
    expect(tx).toMatchObject({ committed: true });
    const page = await client.databases.queryWithMetadata<number[]>(db.id, 'SELECT n FROM t ORDER BY n', [], { pageSize: 2, rowMode: 'array' });
    expect(page).toMatchObject({ rows: [[1], [2]], hasMore: true });
    expect(await client.databases.fetch(db.id, page.cursor!)).toMatchObject({ rows: [[3]], done: true }); // the cursor keeps its rowMode
    expect(await client.databases.listTables(db.id)).toEqual([{ schema: 'main', name: 't', type: 'table' }]);
    await expect(client.databases.query(db.id, 'SELECT nope FROM t')).rejects.toMatchObject({ code: -32014 });
    expect(await client.databases.restart(db.id)).toMatchObject({ status: 'running' });
    expect((await client.databases.ping(db.id)).ok).toBe(true);
    expect(await client.databases.delete(db.id)).toEqual({ id: db.id, deleted: true });
    client.close();
  });

  it('lets Worker code use an engine sandbox directly (getEngineSandbox + agent classes)', async () => {
    const sandbox = getEngineSandbox(env.ENGINE_URL, env.ENGINE_KEY, { type: 'claude-code', size: 'lite' });
    const agent = createAgentSandbox('claude-code', { sandbox, apiKey: 'sk-ant-test' });
    expect(await agent.exec('pwd')).toMatchObject({ exitCode: 0, stdout: '/workspace\n' });
    await agent.writeFile('/workspace/notes/a.txt', 'library');
    expect(await agent.readFile('notes/a.txt')).toBe('library');
    expect((await agent.listFiles('/workspace/notes')).map((e) => e.name)).toEqual(['a.txt']);
    const engineId = await sandbox.id();
    await sandbox.call('sandbox.delete');
    expect(engineId).toMatch(/^sb_/);
    await agent.close();
  });
});
