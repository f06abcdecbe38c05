// Agent runs through the Worker (docs/protocol.md 4.7): agents.run, runConversation and runOnRepo
// are forwarded to the engine, over a socket as streams. Without the agent CLIs (or without an
// engine that runs agents yet) what matters is that the Worker answers exactly what the engine
// itself answers for the same call in the same kind of sandbox, with its own ids.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EngineConnection, UrlEngineTarget } from '../src/engine';
import { RpcError } from '../src/errors';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { RpcSocket, http } from './support/worker';

type Obj = Record<string, unknown>;

const CALLS: [string, Obj][] = [
  ['agents.run', { prompt: 'say hi', options: { timeout: 60_000 } }],
  ['agents.runConversation', { prompts: ['one', 'two'] }],
  ['agents.runOnRepo', { url: 'https://example.invalid/repo.git', prompt: 'fix it' }],
];

// The size of both sandboxes of a relayed call, the engine's and the Worker's (the same kind, as
// the comparison needs): each call starts Claude Code's CLI, which needs seconds of CPU to start.
const RELAY_SIZE = 'standard-1';

/** What the engine answers `method` in a fresh sandbox of its own, as the Worker should relay it. */
async function engineAnswer(method: string, params: Obj, workerId: string): Promise<Obj> {
  const engine = new EngineConnection(new UrlEngineTarget(inject('engineUrl'), inject('engineKey')));
  const direct = (await engine.request('agents.create', { type: 'claude-code', size: RELAY_SIZE })) as { id: string };
  const ours = (t: string) => t.split(direct.id).join(workerId);
  try {
    const r = (await engine.request(method, { ...params, id: direct.id })) as Obj;
    return { result: { success: r.success, ...(typeof r.error === 'string' ? { error: ours(r.error) } : {}) } };
  } catch (e) {
    if (!(e instanceof RpcError)) throw e;
    return { error: { code: e.code, message: ours(e.message) } };
  } finally {
    await engine.request('agents.delete', { id: direct.id }).catch(() => undefined);
    engine.close();
  }
}

describe.skipIf(!hasEngine)('agent runs through the Worker', () => {
  let id = '';
  beforeAll(async () => {
    await deleteAllSandboxes();
    const r = await http('POST', '/api/agents', { body: { type: 'claude-code', size: RELAY_SIZE } });
    id = (r.body as { id: string }).id;
  });
  afterAll(() => deleteAllSandboxes());

  // Each case runs the CLI twice (the engine's answer, then the Worker's); a run whose CLI
  // retries an unreachable API took 3-8 s here at RELAY_SIZE (20-45 s at lite): 180 s for the two.
  for (const [method, params] of CALLS) {
    it(`relays the engine's own answer to ${method} over /rpc`, async () => {
      const expected = await engineAnswer(method, params, id);
      const s = await RpcSocket.open();
      const notes: Obj[] = [];
      const got = await s.call(method, { ...params, id }, notes, 120_000);
      s.close();
      expect(got).toMatchObject(expected);
      if (got.result !== undefined) {
        // A run that streamed did so under our stream id, ending with the same answer.
        const streamId = (got.result as Obj).streamId;
        if (typeof streamId === 'string') {
          expect(streamId).toMatch(/^st_/);
          expect(notes.every((n) => (n.params as Obj).streamId === streamId)).toBe(true);
        }
      }
    }, 180_000);
  }

  // A real run of the real Claude Code CLI, with its model API at a closed port: it fails within
  // seconds, but streams real events on the way. Engines that cannot run agents (no CLIs, or
  // an engine before agent runs) skip it, at run time.
  it('streams a real run as stream.event under our stream id, ending with the answer', async (ctx) => {
    const secret = 'sk-ant-not-a-real-key-0123456789';
    const c = await http('POST', '/api/agents', {
      body: {
        type: 'claude-code',
        size: 'standard-1',
        network: true,
        env: { ANTHROPIC_API_KEY: secret, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
      },
    });
    const runId = (c.body as { id: string }).id;
    const s = await RpcSocket.open();
    const notes: Obj[] = [];
    s.send({ jsonrpc: '2.0', id: 'run-1', method: 'agents.run', params: { id: runId, prompt: 'say hi', options: { timeout: 120_000 } } });
    const answer = (await s.nextAnswer(notes, 150_000)) as Obj;
    const err = answer.error as { code: number } | undefined;
    if (err !== undefined && [-32601, -32010, -32011].includes(err.code)) {
      s.close();
      ctx.skip();
    }
    const result = answer.result as Obj;
    expect(result).toMatchObject({ success: false, streamId: expect.stringMatching(/^st_/) });
    while (!notes.some((n) => n.method === 'stream.end')) notes.push((await s.next(30_000)) as Obj);
    s.close();
    const params = notes.map((n) => n.params as Obj);
    expect(params.map((p) => p.seq)).toEqual(params.map((_, i) => i + 1));
    for (const p of params) expect(p).toMatchObject({ streamId: result.streamId, requestId: 'run-1' });
    const events = notes.filter((n) => n.method === 'stream.event').map((n) => (n.params as Obj).event as Obj);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['session', 'result']));
    expect(notes.at(-1)).toMatchObject({ method: 'stream.end', params: { result } });
    // Keys never leave the engine, nor the Worker.
    expect(JSON.stringify([answer, notes])).not.toContain(secret);
    // Over REST the same run answers once, without a stream.
    const rest = await http('POST', `/api/agents/${runId}/run`, { body: { prompt: 'again', options: { timeout: 120_000 } } });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ success: false, streamId: null });
    // Both runs are kept by the engine and listed with our ids: the socket's run under our
    // stream id, the REST run without one; their events as they were streamed.
    const history = await http('GET', `/api/agents/${runId}/runs`);
    expect(history.status).toBe(200);
    const runs = (history.body as { id: string; runs: Obj[] }).runs;
    expect((history.body as { id: string }).id).toBe(runId);
    expect(runs.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(runs[0]).toMatchObject({ prompt: 'again', streamId: null });
    expect(runs[1]).toMatchObject({ prompt: 'say hi', streamId: result.streamId, eventCount: events.length });
    const s2 = await RpcSocket.open();
    const kept = (await s2.call('agents.runEvents', { id: runId, runId: runs[1]!.runId })) as Obj;
    s2.close();
    expect(((kept.result as Obj).events as Obj[]).map((e) => e.event)).toEqual(events);
    expect(JSON.stringify([history.body, kept])).not.toContain(secret);
  }, 300_000);

  it('refuses a run in another kind of sandbox or an unknown one with -32002', async () => {
    const db = (await http('POST', '/api/databases', { body: { type: 'sqlite', size: 'lite' } })).body as { id: string };
    const s = await RpcSocket.open();
    expect(await s.call('agents.run', { id: 'sb_000000000000', prompt: 'x' })).toMatchObject({ error: { code: -32002 } });
    expect(await s.call('agents.run', { id: db.id, prompt: 'x' })).toMatchObject({ error: { code: -32002 } });
    s.close();
    const rest = await http('POST', `/api/agents/${db.id}/run`, { body: { prompt: 'x' } });
    expect(rest.status).toBe(404);
  });
});
