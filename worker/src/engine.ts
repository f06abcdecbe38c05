// The Worker's side of a sandbox engine: the local engine `sandboxd` serves docs/protocol.md, and
// so does every container (dockerfiles/ run sandboxd on port 8080). The Worker speaks the same
// JSON-RPC to it over a WebSocket. Where the engine is comes from an EngineTarget:
// - production: the sandbox's own Container Durable Object (`stub.fetch` reaches port 8080),
// - tests and `wrangler dev`: ENGINE_URL + ENGINE_KEY, a real sandboxd on the loopback.

import { ErrorCode, RpcError, SandboxError } from './errors';
import { type Params, parseJson } from './jsonrpc';

export interface EngineNotification {
  method: string;
  params: Params;
}

/** Where one sandbox's engine is and how to open a WebSocket to its /rpc. */
export interface EngineTarget {
  /** Connections are shared per target key. */
  readonly key: string;
  /** Opens an authenticated WebSocket to the engine's /rpc (already accepted). */
  connect(): Promise<WebSocket>;
}

/** An engine reached by URL (sandboxd on the loopback in tests and `wrangler dev`). */
export class UrlEngineTarget implements EngineTarget {
  readonly key: string;

  constructor(
    private readonly url: string,
    private readonly apiKey: string,
  ) {
    this.key = `url:${url}`;
  }

  connect(): Promise<WebSocket> {
    const u = new URL('/rpc', this.url);
    return upgrade((req) => fetch(req), u.toString(), this.apiKey);
  }
}

/** The engine inside a Container Durable Object: its fetch() forwards to the container's port. */
export class ContainerEngineTarget implements EngineTarget {
  readonly key: string;

  /** `prepare` configures the container and answers the key its engine accepts. */
  constructor(
    private readonly stub: { fetch(request: Request): Promise<Response> },
    name: string,
    private readonly prepare: () => Promise<string>,
  ) {
    this.key = `container:${name}`;
  }

  async connect(): Promise<WebSocket> {
    const apiKey = await this.prepare();
    return upgrade((req) => this.stub.fetch(req), 'http://container/rpc', apiKey);
  }
}

/**
 * The one engine that stands in for every container where there are none (`wrangler dev`, the
 * tests): ENGINE_URL and its key ENGINE_KEY. null in production (ENGINE_URL empty). A URL
 * without a key is a configuration error, never a default key.
 */
export function devEngine(env: { ENGINE_URL?: string; ENGINE_KEY?: string }): { url: string; key: string } | null {
  const url = env.ENGINE_URL;
  if (typeof url !== 'string' || url.length === 0) return null;
  const key = env.ENGINE_KEY;
  if (typeof key !== 'string' || key.length === 0) {
    throw new SandboxError('ENGINE_URL is set but ENGINE_KEY is empty: give the key of the engine at ENGINE_URL');
  }
  return { url, key };
}

async function upgrade(
  doFetch: (req: Request) => Promise<Response>,
  url: string,
  apiKey: string,
): Promise<WebSocket> {
  let resp: Response;
  try {
    resp = await doFetch(
      new Request(url, { headers: { Upgrade: 'websocket', Authorization: `Bearer ${apiKey}` } }),
    );
  } catch (e) {
    throw new SandboxError(`The sandbox engine cannot be reached: ${String(e)}`);
  }
  const ws = resp.webSocket;
  if (resp.status !== 101 || ws === null) {
    throw new SandboxError(`The sandbox engine refused the connection (HTTP ${resp.status})`);
  }
  ws.accept();
  return ws;
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  onNotification?: (n: EngineNotification) => void;
}

/**
 * One JSON-RPC connection to an engine, multiplexing calls by id. Stream notifications are
 * routed by `streamId` to the handler registered for the stream, and before that by
 * `requestId` to the handler of the call that started it.
 */
export class EngineConnection {
  private ws: WebSocket | null = null;
  private opening: Promise<WebSocket> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly streamHandlers = new Map<string, (n: EngineNotification) => void>();
  private lastUse = Date.now();
  /** Called once when the connection is lost (not when closed by `close()`). */
  onLost: (() => void) | null = null;

  constructor(readonly target: EngineTarget) {}

  get busy(): boolean {
    return this.pending.size > 0 || this.streamHandlers.size > 0;
  }

  get idleMs(): number {
    return this.busy ? 0 : Date.now() - this.lastUse;
  }

  private async socket(): Promise<WebSocket> {
    if (this.ws !== null) return this.ws;
    if (this.opening === null) {
      this.opening = this.target.connect().then(
        (ws) => {
          this.ws = ws;
          this.opening = null;
          ws.addEventListener('message', (ev) => this.onMessage(ev.data));
          ws.addEventListener('close', (ev) => this.onClose(`closed (${ev.code} ${ev.reason})`));
          ws.addEventListener('error', () => this.onClose('failed'));
          return ws;
        },
        (e: unknown) => {
          this.opening = null;
          throw e;
        },
      );
    }
    return this.opening;
  }

  /** Sends a request and resolves with its result; an engine error rejects with that RpcError. */
  async call(
    method: string,
    params: Params,
    onNotification?: (n: EngineNotification) => void,
  ): Promise<{ id: number; result: Promise<unknown> }> {
    const ws = await this.socket();
    const id = this.nextId++;
    this.lastUse = Date.now();
    const result = new Promise<unknown>((resolve, reject) => {
      const p: Pending = { resolve, reject };
      if (onNotification) p.onNotification = onNotification;
      this.pending.set(id, p);
    });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return { id, result };
  }

  /** call() and wait for the result. */
  async request(method: string, params: Params, onNotification?: (n: EngineNotification) => void): Promise<unknown> {
    const { result } = await this.call(method, params, onNotification);
    return result;
  }

  async notify(method: string, params: Params): Promise<void> {
    const ws = await this.socket();
    ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /** Routes a stream's notifications (after a resume, or once its id is known). */
  subscribe(streamId: string, handler: (n: EngineNotification) => void): void {
    this.streamHandlers.set(streamId, handler);
  }

  unsubscribe(streamId: string): void {
    this.streamHandlers.delete(streamId);
    this.lastUse = Date.now();
  }

  private onMessage(data: unknown): void {
    if (typeof data !== 'string') return;
    let msg: unknown;
    try {
      msg = parseJson(data);
    } catch {
      return;
    }
    for (const m of Array.isArray(msg) ? msg : [msg]) this.dispatch(m as Record<string, unknown>);
  }

  private dispatch(m: Record<string, unknown>): void {
    if (typeof m !== 'object' || m === null) return;
    if (typeof m.method === 'string' && !Object.hasOwn(m, 'id')) {
      const n: EngineNotification = { method: m.method, params: (m.params ?? {}) as Params };
      const streamId = n.params.streamId;
      if (typeof streamId === 'string') {
        let h = this.streamHandlers.get(streamId);
        if (h === undefined && typeof n.params.requestId === 'number') {
          const p = this.pending.get(n.params.requestId);
          if (p?.onNotification) {
            h = p.onNotification;
            this.streamHandlers.set(streamId, h);
          }
        }
        h?.(n);
        if (n.method === 'stream.end') this.unsubscribe(streamId);
      }
      return;
    }
    if (typeof m.id !== 'number') return;
    const p = this.pending.get(m.id);
    if (p === undefined) return;
    this.pending.delete(m.id);
    this.lastUse = Date.now();
    if (m.error !== undefined) {
      const e = m.error as { code?: unknown; message?: unknown; data?: unknown };
      p.reject(
        new RpcError(
          typeof e.code === 'number' ? e.code : ErrorCode.SandboxError,
          typeof e.message === 'string' ? e.message : 'engine error',
          e.data,
        ),
      );
    } else {
      p.resolve(m.result);
    }
  }

  private onClose(why: string): void {
    if (this.ws === null) return;
    this.ws = null;
    const err = new SandboxError(`The connection to the sandbox engine ${why}`);
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.onLost?.();
  }

  close(): void {
    const ws = this.ws;
    this.ws = null;
    this.onLost = null;
    const err = new SandboxError('The connection to the sandbox engine was closed');
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.streamHandlers.clear();
    try {
      ws?.close(1000, 'idle');
    } catch {
      // already closed
    }
  }
}

/** Shares one connection per target and closes the idle ones, so that the DO can hibernate. */
export class EnginePool {
  private readonly conns = new Map<string, EngineConnection>();

  get(target: EngineTarget): EngineConnection {
    let c = this.conns.get(target.key);
    if (c === undefined) {
      c = new EngineConnection(target);
      const conn = c;
      c.onLost = () => {
        if (this.conns.get(target.key) === conn) this.conns.delete(target.key);
        this.onLost?.(conn);
      };
      this.conns.set(target.key, c);
    }
    return c;
  }

  /** Called with a connection that dropped (streams on it may be resumed on a new one). */
  onLost: ((c: EngineConnection) => void) | null = null;

  closeIdle(maxIdleMs: number): number {
    for (const [k, c] of this.conns) {
      if (!c.busy && c.idleMs > maxIdleMs) {
        c.close();
        this.conns.delete(k);
      }
    }
    return this.conns.size;
  }

  drop(key: string): void {
    this.conns.get(key)?.close();
    this.conns.delete(key);
  }
}
