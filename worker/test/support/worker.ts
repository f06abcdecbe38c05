// Talking to the Worker under test from inside workerd: REST through SELF.fetch, and /rpc
// WebSockets opened by an upgrade through SELF.fetch (the client side is accepted here).

import { SELF } from 'cloudflare:test';
import { parseJson } from '../../src/jsonrpc';
import { TEST_KEYS } from './keys';

export type AuthMode = 'key' | 'none' | 'bad' | 'other';

export const BASE = 'http://sandbox.test';

let other: Promise<string> | null = null;

/** The "other" session's key: a non-admin key made by the main key, once per test file. */
export function otherKey(): Promise<string> {
  other ??= (async () => {
    const resp = await SELF.fetch(`${BASE}/api/keys`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TEST_KEYS.main}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'other' }),
    });
    const body = (await resp.json()) as { key?: string; admin?: boolean };
    if (resp.status !== 201 || typeof body.key !== 'string' || body.admin !== false) {
      throw new Error(`could not make the other key: ${resp.status} ${JSON.stringify(body)}`);
    }
    return body.key;
  })();
  return other;
}

export async function keyFor(auth: AuthMode): Promise<string | null> {
  switch (auth) {
    case 'key':
      return TEST_KEYS.main;
    case 'other':
      return otherKey();
    case 'bad':
      return TEST_KEYS.bad;
    case 'none':
      return null;
  }
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export async function http(
  method: string,
  path: string,
  opts: { auth?: AuthMode; key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers = new Headers(opts.headers);
  const key = opts.key ?? (await keyFor(opts.auth ?? 'key'));
  if (key !== null) headers.set('Authorization', `Bearer ${key}`);
  let body: BodyInit | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers.set('Content-Type', 'application/json');
  }
  const resp = await SELF.fetch(BASE + path, { method, headers, body });
  const text = await resp.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : parseJson(text);
  } catch {
    parsed = undefined;
  }
  return { status: resp.status, headers: resp.headers, body: parsed, text };
}

export interface Upgrade {
  status: number;
  headers: Headers;
  ws: WebSocket | null;
}

/** Opens /rpc; `headers` carry the credentials (Authorization or Sec-WebSocket-Protocol). */
export async function upgrade(path: string, headers: Record<string, string>): Promise<Upgrade> {
  const resp = await SELF.fetch(BASE + path, { headers: { Upgrade: 'websocket', ...headers } });
  const ws = resp.webSocket;
  if (ws !== null) ws.accept();
  return { status: resp.status, headers: resp.headers, ws };
}

type Message = unknown;

/** A JSON-RPC socket for tests: a queue of incoming messages with waits that time out. */
export class RpcSocket {
  private readonly queue: Message[] = [];
  private waiter: (() => void) | null = null;
  closed: { code: number; reason: string } | null = null;

  constructor(readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const data = typeof ev.data === 'string' ? ev.data : new TextDecoder().decode(ev.data as ArrayBuffer);
      let msg: unknown;
      try {
        msg = parseJson(data);
      } catch {
        msg = { unparseable: data };
      }
      this.queue.push(msg);
      this.wake();
    });
    ws.addEventListener('close', (ev) => {
      this.closed = { code: ev.code, reason: ev.reason };
      this.wake();
    });
  }

  static async open(key: string = TEST_KEYS.main): Promise<RpcSocket> {
    const u = await upgrade('/rpc', { Authorization: `Bearer ${key}` });
    if (u.ws === null) throw new Error(`upgrade refused: ${u.status}`);
    return new RpcSocket(u.ws);
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  send(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }

  /** The next message, or an error after `timeoutMs`. */
  async next(timeoutMs = 30_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.closed) throw new Error(`socket closed (${this.closed.code} ${this.closed.reason})`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return this.queue.shift();
  }

  /** The next message that is not a notification; the notifications passed on the way go to `seen`. */
  async nextAnswer(seen: Record<string, unknown>[] = [], timeoutMs = 30_000): Promise<Message> {
    for (;;) {
      const m = await this.next(timeoutMs);
      if (isNotification(m)) seen.push(m as Record<string, unknown>);
      else return m;
    }
  }

  /** A request/response round trip; notifications on the way go to `seen`. */
  async call(
    method: string,
    params: unknown = {},
    seen: Record<string, unknown>[] = [],
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const id = `t${Math.random().toString(36).slice(2)}`;
    this.send({ jsonrpc: '2.0', id, method, params });
    for (;;) {
      const m = (await this.nextAnswer(seen, timeoutMs)) as Record<string, unknown>;
      if (m.id === id) return m;
    }
  }

  /** result of `call`, or throws with the error object. */
  async result<T = Record<string, unknown>>(method: string, params: unknown = {}, seen?: Record<string, unknown>[]): Promise<T> {
    const m = await this.call(method, params, seen);
    if (m.error !== undefined) throw new Error(`${method}: ${JSON.stringify(m.error)}`);
    return m.result as T;
  }

  close(): void {
    try {
      this.ws.close(1000, 'done');
    } catch {
      // already closed
    }
  }
}

export function isNotification(m: unknown): boolean {
  return typeof m === 'object' && m !== null && !Array.isArray(m) && 'method' in m && !('id' in m);
}
