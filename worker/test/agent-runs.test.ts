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

/** What the engine answers `method` in a fresh sandbox of its own, as the Worker should relay it. */
async function engineAnswer(method: string, params: Obj, workerId: string): Promise<Obj> {
  const engine = new EngineConnection(new UrlEngineTarget(inject('engineUrl'), inject('engineKey')));
  const direct = (await engine.request('agents.create', { type: 'claude-code', size: 'lite' })) as { id: string };
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
    const r = await http('POST', '/api/agents', { body: { type: 'claude-code', size: 'lite' } });
    id = (r.body as { id: string }).id;
  });
  afterAll(() => deleteAllSandboxes());

  for (const [method, params] of CALLS) {
    it(`relays the engine's own answer to ${method} over /rpc`, async () => {
      const expected = await engineAnswer(method, params, id);
      const s = await RpcSocket.open();
      const notes: Obj[] = [];
      const got = await s.call(method, { ...params, id }, notes);
      s.close();
      expect(got).toMatchObject(expected);
      if (got.result !== undefined) {
        // A run that streamed did so under our stream id, ending with the same answer.
        const streamId = (got.result as Obj).streamId;
        if (streamId !== null) {
          expect(streamId).toMatch(/^st_/);
          expect(notes.every((n) => (n.params as Obj).streamId === streamId)).toBe(true);
        }
      }
    });
  }

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
