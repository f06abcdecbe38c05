// Authentication of REST and of the /rpc upgrade (docs/protocol.md 1.1).
import { describe, expect, it } from 'vitest';
import { TEST_KEYS } from './support/keys';
import { RpcSocket, http, upgrade } from './support/worker';

describe('REST authentication', () => {
  it('lets /health through without a key', async () => {
    const r = await http('GET', '/health', { auth: 'none' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok', version: expect.any(String), backend: 'cloudflare' });
  });

  it.each([
    ['no key', { auth: 'none' as const }],
    ['a wrong key', { auth: 'bad' as const }],
    ['a malformed header', { auth: 'none' as const, headers: { Authorization: 'Basic abc' } }],
  ])('answers 401 -32001 with WWW-Authenticate for %s', async (_name, opts) => {
    const r = await http('GET', '/api/agents', opts);
    expect(r.status).toBe(401);
    expect(r.headers.get('WWW-Authenticate')).toBe('Bearer');
    expect(r.body).toMatchObject({ error: { code: -32001, message: expect.any(String) } });
  });

  it('refuses a right key in the query string', async () => {
    const r = await http('GET', `/api/sessions/current?key=${TEST_KEYS.main}`, { auth: 'none' });
    expect(r.status).toBe(401);
  });

  it('accepts both configured keys as separate sessions', async () => {
    const a = await http('GET', '/api/sessions/current');
    const b = await http('GET', '/api/sessions/current', { auth: 'other' });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect((a.body as { id: string }).id).not.toBe((b.body as { id: string }).id);
    expect(a.body).toMatchObject({ backend: 'cloudflare', sandboxes: { total: expect.any(Number) } });
  });
});

describe('WebSocket authentication at the upgrade', () => {
  it('opens with Authorization: Bearer', async () => {
    const u = await upgrade('/rpc', { Authorization: `Bearer ${TEST_KEYS.main}` });
    expect(u.status).toBe(101);
    const s = new RpcSocket(u.ws!);
    expect(await s.result('sessions.current')).toMatchObject({ backend: 'cloudflare' });
    s.close();
  });

  it('opens with the browser subprotocol and answers sandbox.v1 only', async () => {
    const u = await upgrade('/rpc', { 'Sec-WebSocket-Protocol': `sandbox.v1, bearer.${TEST_KEYS.main}` });
    expect(u.status).toBe(101);
    expect(u.headers.get('Sec-WebSocket-Protocol')).toBe('sandbox.v1');
    const s = new RpcSocket(u.ws!);
    const via = await s.result<{ id: string }>('sessions.current');
    const direct = (await http('GET', '/api/sessions/current')).body as { id: string };
    expect(via.id).toBe(direct.id);
    s.close();
  });

  it.each([
    ['no credentials', '/rpc', {}],
    ['a wrong key', '/rpc', { Authorization: `Bearer ${TEST_KEYS.bad}` }],
    ['a wrong subprotocol key', '/rpc', { 'Sec-WebSocket-Protocol': `sandbox.v1, bearer.${TEST_KEYS.bad}` }],
    ['the bearer subprotocol without sandbox.v1', '/rpc', { 'Sec-WebSocket-Protocol': `bearer.${TEST_KEYS.main}` }],
    ['the right key in the query', `/rpc?key=${TEST_KEYS.main}`, {}],
    ['the right key in the query next to a header', `/rpc?key=${TEST_KEYS.main}`, { Authorization: `Bearer ${TEST_KEYS.main}` }],
  ])('refuses %s with 401', async (_name, path, headers) => {
    const u = await upgrade(path, headers as Record<string, string>);
    expect(u.status).toBe(401);
    expect(u.ws).toBeNull();
  });
});
