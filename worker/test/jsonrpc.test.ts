// The JSON-RPC 2.0 codec (docs/protocol.md 2) on its own, then through the live socket.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeMessage, parseJson, utf8Length } from '../src/jsonrpc';
import { RpcSocket } from './support/worker';

describe('decodeMessage', () => {
  it.each([
    ['text that is not JSON', '{"a":', -32700],
    ['an empty batch', '[]', -32600],
    ['a number', '42', -32600],
    ['null', 'null', -32600],
  ])('answers %s as a whole with id null', (_n, text, code) => {
    const d = decodeMessage(text);
    expect(d.batch).toBe(false);
    expect(!d.batch && 'response' in d.item && d.item.response).toMatchObject({ id: null, error: { code } });
  });

  it('keeps integers beyond 2^53 digit for digit, and everything else as JSON.parse does', () => {
    const text = '{"a":9007199254740993,"b":[-9223372036854775808,1.5,4.9e-324,42],"c":"9007199254740993","d":12.50}';
    const v = parseJson(text) as { a: unknown; b: unknown[]; c: string; d: number };
    expect(JSON.stringify(v)).toBe('{"a":9007199254740993,"b":[-9223372036854775808,1.5,5e-324,42],"c":"9007199254740993","d":12.5}');
    expect(v.b[3]).toBe(42);
    expect(v.c).toBe('9007199254740993');
    // A big request id still reads as an id (a number, rounded as any JSON-RPC peer would).
    const d = decodeMessage('{"jsonrpc":"2.0","id":9007199254740993,"method":"x","params":{"n":9007199254740993}}');
    expect(!d.batch && 'request' in d.item && typeof d.item.request.id).toBe('number');
    expect(!d.batch && 'request' in d.item && JSON.stringify(d.item.request.params)).toBe('{"n":9007199254740993}');
  });

  it.each([
    ['a number beyond a double', '[1e400]'],
    ['a non-zero number that underflows to zero', '[1e-400]'],
    ['a lone high surrogate escape', '["\\ud800"]'],
    ['a lone low surrogate escape', '["\\udc00x"]'],
    ['a high surrogate followed by no low one', '["\\ud800\\u0041"]'],
    ['nesting deeper than 128', '['.repeat(129) + ']'.repeat(129)],
  ])('refuses what RFC 8259 leaves open and the protocol refuses (2.5): %s', (_n, text) => {
    expect(() => parseJson(text)).toThrow(SyntaxError);
    const d = decodeMessage(text);
    expect(!d.batch && 'response' in d.item && d.item.response).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('takes what the strict rules allow: a surrogate pair, an escaped backslash before u, depth 128', () => {
    expect(parseJson('["\\ud834\\udd1e"]')).toEqual(['\u{1d11e}']);
    expect(parseJson('["\\\\ud800"]')).toEqual(['\\ud800']);
    expect(parseJson('['.repeat(128) + ']'.repeat(128))).toBeInstanceOf(Array);
    expect(parseJson('[0, -0, 0e5, 0.0]')).toEqual([0, -0, 0, 0]);
  });

  it('keeps a readable id on an invalid request', () => {
    const d = decodeMessage('{"jsonrpc":"1.0","id":7,"method":"x"}');
    expect(!d.batch && 'response' in d.item && d.item.response).toMatchObject({ id: 7, error: { code: -32600 } });
  });

  it('tells notifications (no id) from requests with id null', () => {
    const n = decodeMessage('{"jsonrpc":"2.0","method":"m"}');
    const r = decodeMessage('{"jsonrpc":"2.0","id":null,"method":"m"}');
    expect(!n.batch && 'request' in n.item && Object.hasOwn(n.item.request, 'id')).toBe(false);
    expect(!r.batch && 'request' in r.item && r.item.request.id).toBeNull();
  });

  it('refuses scalar params but takes positional ones as a request (answered -32602 later)', () => {
    const s = decodeMessage('{"jsonrpc":"2.0","id":1,"method":"m","params":5}');
    expect(!s.batch && 'response' in s.item && s.item.response.error?.code).toBe(-32600);
    const p = decodeMessage('{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}');
    expect(!p.batch && 'request' in p.item && p.item.request.positionalParams).toBe(true);
  });

  it('answers a batch over 100 requests with one -32006', () => {
    const batch = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'm' }));
    const d = decodeMessage(JSON.stringify(batch));
    expect(!d.batch && 'response' in d.item && d.item.response).toMatchObject({ id: null, error: { code: -32006 } });
    expect(decodeMessage(JSON.stringify(batch.slice(0, 100))).batch).toBe(true);
  });

  it('counts UTF-8 bytes', () => {
    expect(utf8Length('aé€😀')).toBe(1 + 2 + 3 + 4);
  });
});

describe('JSON-RPC over /rpc', () => {
  let s: RpcSocket;
  beforeEach(async () => {
    s = await RpcSocket.open();
  });
  afterEach(() => s.close());

  it('answers a batch of exactly 100 requests with 100 answers', async () => {
    const batch = Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'sessions.quota', params: {} }));
    s.send(batch);
    const m = (await s.next()) as { id: number }[];
    expect(m).toHaveLength(100);
    expect(new Set(m.map((x) => x.id)).size).toBe(100);
  });

  it('refuses a batch of 101 with a single -32006 and keeps the socket', async () => {
    s.send(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'sessions.quota', params: {} })));
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32006 } });
    expect(await s.result('sessions.current')).toMatchObject({ backend: 'cloudflare' });
  });

  it('refuses a message over 16 MiB with -32006 and keeps the socket open', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sessions.current', params: { pad: 'x'.repeat(16 * 1024 * 1024) } });
    s.sendRaw(big);
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32006 } });
    expect(await s.result('sessions.current')).toMatchObject({ backend: 'cloudflare' });
  });

  it('answers params given by position with -32602', async () => {
    s.send({ jsonrpc: '2.0', id: 'p', method: 'sessions.current', params: [] });
    expect(await s.next()).toMatchObject({ id: 'p', error: { code: -32602 } });
  });

  it('answers a notification of an unknown method with nothing', async () => {
    s.send({ jsonrpc: '2.0', method: 'no.such.method', params: {} });
    s.send({ jsonrpc: '2.0', id: 'after', method: 'sessions.current', params: {} });
    expect(await s.next()).toMatchObject({ id: 'after', result: { backend: 'cloudflare' } });
  });

  it('answers binary frames like text', async () => {
    s.ws.send(new TextEncoder().encode(JSON.stringify({ jsonrpc: '2.0', id: 'bin', method: 'sessions.current' })));
    expect(await s.next()).toMatchObject({ id: 'bin', result: { backend: 'cloudflare' } });
  });
});
