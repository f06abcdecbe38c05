// The network policy on the Worker (docs/protocol.md 3.5): the same grammar and canonical form as
// the engine, its mapping onto Cloudflare's container egress settings, and that mapping enforced
// by @cloudflare/containers' own outbound gate (ContainerProxy) here in workerd. Through the
// API: create and setNetwork with a policy, refused when Cloudflare could not enforce it.

import { ContainerProxy } from '@cloudflare/containers';
import { env } from 'cloudflare:test';
import { inject } from 'vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineConnection, UrlEngineTarget } from '../src/engine';
import { getSandbox } from '../src/engine-sandbox';
import { containerEgress, parseNetworkPolicy, privilegedEntries } from '../src/network-policy';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { RpcSocket, otherKey } from './support/worker';

type Obj = Record<string, unknown>;

describe('the policy grammar', () => {
  it('keeps the canonical forms the engine shows', () => {
    expect(parseNetworkPolicy(undefined)).toBe(false);
    expect(parseNetworkPolicy(true)).toBe(true);
    expect(parseNetworkPolicy({ allow: [] })).toBe(false);
    expect(parseNetworkPolicy({ deny: [] })).toBe(true);
    expect(parseNetworkPolicy({ allow: ['Example.COM', 'example.com', '*.npmjs.org:443'] })).toEqual({
      allow: ['example.com', '*.npmjs.org:443'],
    });
    expect(parseNetworkPolicy({ allow: ['*', '10.1.2.3/8'], deny: ['evil.test'] })).toEqual({
      allow: ['*', '10.0.0.0/8'],
      deny: ['evil.test'],
    });
  });

  it('refuses what is not an entry, naming the field', () => {
    for (const bad of ['', 'a b', '*.', 'x:0', 'x:70000', '10.0.0.0/33', '[::1', 'exa*mple.com']) {
      expect(() => parseNetworkPolicy({ allow: [bad] })).toThrowError(/network\.allow\[0\]/);
    }
    expect(() => parseNetworkPolicy('yes')).toThrowError(/false, true/);
    expect(() => parseNetworkPolicy({ allow: ['a'], other: [] })).toThrowError(/network\.other/);
    expect(() => parseNetworkPolicy({ allow: new Array(257).fill('a.test') })).toThrowError();
  });

  it('names the entries that open loopback or private networks', () => {
    expect(privilegedEntries({ allow: ['127.0.0.1:8080', 'example.com', '10.0.0.0/8', '8.8.8.8'] })).toEqual([
      '127.0.0.1:8080',
      '10.0.0.0/8',
    ]);
    expect(privilegedEntries(true)).toEqual([]);
  });
});

describe('the mapping onto container egress settings', () => {
  it('maps false, true, lists and denials', () => {
    expect(containerEgress(false, 'database', 'postgres')).toEqual({ enableInternet: false, allowedHosts: [] });
    expect(containerEgress(true, 'database', 'postgres')).toEqual({ enableInternet: true });
    expect(containerEgress({ allow: ['registry.npmjs.org', '*.pypi.org'] }, 'database', 'postgres')).toEqual({
      enableInternet: false,
      allowedHosts: ['registry.npmjs.org', '*.pypi.org'],
    });
    expect(containerEgress({ deny: ['evil.test:443', '*.evil.test'] }, 'database', 'postgres')).toEqual({
      enableInternet: true,
      deniedHosts: ['evil.test', '*.evil.test'],
    });
  });

  it("lets an agent reach its provider's host unless denied", () => {
    expect(containerEgress(false, 'agent', 'claude-code')).toEqual({ enableInternet: false, allowedHosts: ['api.anthropic.com'] });
    expect(containerEgress(false, 'agent', 'codex', { OPENAI_BASE_URL: 'https://llm.example.com/v1' })).toEqual({
      enableInternet: false,
      allowedHosts: ['llm.example.com'],
    });
    expect(containerEgress({ allow: ['a.test'], deny: ['api.openai.com'] }, 'agent', 'opencode')).toEqual({
      enableInternet: false,
      allowedHosts: ['a.test'],
      deniedHosts: ['api.openai.com'],
    });
  });

  it('refuses what Cloudflare cannot enforce as written (never widens it)', () => {
    expect(() => containerEgress({ allow: ['example.com:443'] }, 'database', 'postgres')).toThrowError(/port/);
    expect(() => containerEgress({ allow: ['203.0.113.0/24'] }, 'database', 'postgres')).toThrowError(/network/);
    expect(() => containerEgress({ deny: ['203.0.113.0/24'] }, 'database', 'postgres')).toThrowError(/network/);
    // Loopback and private entries name nothing a container can reach: nothing to map.
    expect(containerEgress({ allow: ['127.0.0.1:8080'] }, 'database', 'postgres')).toEqual({ enableInternet: false, allowedHosts: [] });
  });
});

// The library's own outbound gate, given the settings the mapping made: what Cloudflare runs for
// every request a container sends.
describe("@cloudflare/containers' outbound gate with the mapped settings", () => {
  const gate = (policy: unknown) => {
    const egress = containerEgress(parseNetworkPolicy(policy), 'database', 'postgres');
    const ctx = { props: { className: 'PostgresContainer', containerId: 'c1', ...egress } };
    return new ContainerProxy(ctx as never, {} as never);
  };
  const disallowed = async (proxy: ContainerProxy, url: string) => {
    const r = await proxy.fetch(new Request(url));
    return r.status === 520 && (await r.text()) === 'Origin is disallowed';
  };

  it('refuses a host outside the list and a denied host', async () => {
    expect(await disallowed(gate(false), 'http://example.com/')).toBe(true);
    expect(await disallowed(gate({ allow: ['registry.npmjs.org'] }), 'http://example.com/')).toBe(true);
    expect(await disallowed(gate({ allow: ['*.npmjs.org'] }), 'http://npmjs.org.evil.test/')).toBe(true);
    expect(await disallowed(gate({ deny: ['evil.test'] }), 'http://evil.test/x')).toBe(true);
    expect(await disallowed(gate({ deny: ['*.evil.test'] }), 'http://a.b.evil.test/x')).toBe(true);
  });

  it.skipIf(!hasEngine)('lets an allowed host through', async () => {
    // The one host these tests can reach: the local engine (its /health answers without a key),
    // by name (an address on loopback names nothing a container could reach: it maps to nothing).
    const url = new URL('/health', inject('engineUrl'));
    url.hostname = 'localhost';
    expect(await disallowed(gate(false), url.toString())).toBe(true);
    const proxy = gate({ allow: ['localhost'] });
    const r = await proxy.fetch(new Request(url));
    expect(r.status).toBe(200);
  });
});

describe.skipIf(!hasEngine)('the policy through the API', () => {
  afterAll(() => deleteAllSandboxes());

  it('creates with a policy, shows it canonical, changes it with sandbox.setNetwork', async () => {
    const s = await RpcSocket.open();
    const created = (await s.call('databases.create', {
      type: 'sqlite',
      size: 'lite',
      network: { allow: ['Registry.npmjs.org'], deny: ['evil.test'] },
    })) as Obj;
    expect(created.error).toBeUndefined();
    const sb = created.result as Obj;
    expect(sb.network).toEqual({ allow: ['registry.npmjs.org'], deny: ['evil.test'] });

    const changed = (await s.call('sandbox.setNetwork', { id: sb.id, network: true })) as Obj;
    expect(changed.error).toBeUndefined();
    expect((changed.result as Obj).network).toBe(true);
    const status = (await s.call('sandbox.status', { id: sb.id })) as Obj;
    expect((status.result as Obj).network).toBe(true);
    // The engine got it too.
    const log = (await s.call('sandbox.networkLog', { id: sb.id })) as Obj;
    expect(log.result).toMatchObject({ id: sb.id, network: true, denied: [] });
    s.close();
  });

  it('refuses a policy Cloudflare could not enforce, and loopback for a non-admin key', async () => {
    const s = await RpcSocket.open();
    const port = (await s.call('databases.create', { type: 'sqlite', size: 'lite', network: { allow: ['example.com:443'] } })) as Obj;
    expect(port.error).toMatchObject({ code: -32602 });
    s.close();
    const other = await RpcSocket.open(await otherKey());
    const loop = (await other.call('databases.create', { type: 'sqlite', size: 'lite', network: { allow: ['127.0.0.1:8080'] } })) as Obj;
    expect(loop.error).toMatchObject({ code: -32001 });
    other.close();
  });
});

// The library's getSandbox takes the same policy as the API, not only a boolean.
describe.skipIf(!hasEngine)('getSandbox with a policy', () => {
  it('gives the sandbox the allow and deny lists, and refuses a malformed one at once', async () => {
    const name = `policy-${Math.random().toString(36).slice(2, 8)}`;
    const sb = getSandbox(env.CLAUDE_CODE_SANDBOX, name, { network: { allow: ['Registry.npmjs.org'], deny: ['evil.test'] } });
    const id = await sb.id();
    const conn = new EngineConnection(new UrlEngineTarget(env.ENGINE_URL, env.ENGINE_KEY));
    const status = (await conn.request('sandbox.status', { id })) as Obj;
    expect(status.network).toEqual({ allow: ['registry.npmjs.org'], deny: ['evil.test'] });
    await conn.request('agents.delete', { id });
    conn.close();
    sb.close();
    expect(() => getSandbox(env.CLAUDE_CODE_SANDBOX, `${name}-bad`, { network: { allow: ['http://x/'] } })).toThrow(/network/);
  });
});
