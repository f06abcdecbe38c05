// A JSON-RPC 2.0 connection over a WebSocket for browsers, Node and Workers: authenticates with
// the subprotocol `sandbox.v1, bearer.KEY` (docs/protocol.md 1.1), reconnects after a drop, and
// resumes live streams from the last `seq` seen (2.3) so that no output is lost or repeated.

export const SUBPROTOCOL = 'sandbox.v1';

/** The part of the WebSocket API the client uses (browser, Node >= 22, `ws`, workerd). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: () => void): void;
  addEventListener(type: 'message', listener: (ev: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (ev: { code: number; reason: string }) => void): void;
  addEventListener(type: 'error', listener: (ev: unknown) => void): void;
}

export type WebSocketFactory = (url: string, protocols: string[]) => WebSocketLike | Promise<WebSocketLike>;

export interface ConnectionOptions {
  url: string;
  auth: string;
  /** Per-request time limit in ms (0: none). Default 30 000. */
  timeout?: number;
  /** Reconnect after a dropped connection. Default true. */
  reconnect?: boolean;
  /** How sockets are made; default `new WebSocket(url, protocols)`. */
  connect?: WebSocketFactory;
  /** Longest wait between reconnect attempts in ms. Default 10 000. */
  maxReconnectDelayMs?: number;
}

/** An error answer of the server, or a failure of the connection (code -32603 / -32001). */
export class SandboxRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'SandboxRpcError';
  }
}

export interface StreamChunk {
  streamId: string;
  seq: number;
  channel: 'stdout' | 'stderr';
  /** Text, or bytes when the chunk was not valid UTF-8. */
  data: string | Uint8Array;
}

/** One `stream.event` of an agent run (docs/protocol.md 4.7): `event.type` says what it is. */
export interface StreamEvent {
  streamId: string;
  seq: number;
  event: { type: string; turn?: number; [field: string]: unknown };
}

export interface StreamHandlers {
  onOutput?: (chunk: StreamChunk) => void;
  /** An agent run's events, in order (resumed after a reconnect like output). */
  onEvent?: (event: StreamEvent) => void;
  /** Called when the backlog lost output after a reconnect: seqs in [from, to] are gone. */
  onGap?: (streamId: string, from: number, to: number) => void;
}

interface Pending {
  method: string;
  resolve(v: unknown): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout> | null;
  stream?: StreamHandlers;
}

interface LiveStream {
  id: string;
  lastSeq: number;
  handlers: StreamHandlers;
  /** The request waiting for this stream's result (resolved by stream.end after a reconnect). */
  waiter: Pending | null;
}

const OPEN = 1;
const UNAUTHORIZED_CLOSE = 4401;

function decodeBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class RpcConnection {
  private ws: WebSocketLike | null = null;
  private opening: Promise<WebSocketLike> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly streams = new Map<string, LiveStream>();
  private closedByUser = false;
  private everOpened = false;
  private attempts = 0;
  private readonly listeners = new Set<(method: string, params: Record<string, unknown>) => void>();

  constructor(private readonly options: ConnectionOptions) {}

  /** Every notification the server sends (after stream bookkeeping). */
  onNotification(fn: (method: string, params: Record<string, unknown>) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get connected(): boolean {
    return this.ws !== null && this.ws.readyState === OPEN;
  }

  private async makeSocket(): Promise<WebSocketLike> {
    const protocols = [SUBPROTOCOL, `bearer.${this.options.auth}`];
    const factory: WebSocketFactory =
      this.options.connect ??
      ((url, p) => {
        const WS = (globalThis as { WebSocket?: new (url: string, protocols: string[]) => WebSocketLike }).WebSocket;
        if (WS === undefined) throw new SandboxRpcError(-32603, 'No WebSocket implementation: pass options.connect');
        return new WS(url, p);
      });
    const ws = await factory(this.options.url, protocols);
    if (ws.readyState !== OPEN) {
      await new Promise<void>((resolve, reject) => {
        ws.addEventListener('open', () => resolve());
        ws.addEventListener('close', (ev) =>
          reject(
            ev.code === UNAUTHORIZED_CLOSE
              ? new SandboxRpcError(-32001, 'Unauthorized')
              : new SandboxRpcError(-32603, `Connection failed (${ev.code})`),
          ),
        );
        ws.addEventListener('error', () => reject(new SandboxRpcError(-32603, 'Connection failed')));
      });
    }
    ws.addEventListener('message', (ev) => this.onMessage(ev.data));
    ws.addEventListener('close', (ev) => this.onClose(ws, ev.code));
    return ws;
  }

  /** The open socket, connecting (or reconnecting) first if needed. */
  private socket(): Promise<WebSocketLike> {
    if (this.ws !== null && this.ws.readyState === OPEN) return Promise.resolve(this.ws);
    if (this.closedByUser) return Promise.reject(new SandboxRpcError(-32603, 'Client closed'));
    this.opening ??= this.makeSocket().then(
      (ws) => {
        this.ws = ws;
        this.opening = null;
        const reopened = this.everOpened;
        this.everOpened = true;
        this.attempts = 0;
        if (reopened) this.resumeStreams(ws);
        return ws;
      },
      (e: unknown) => {
        this.opening = null;
        throw e;
      },
    );
    return this.opening;
  }

  /** Sends a request; `stream` handlers receive the output of a streaming exec. */
  async request<T>(method: string, params: Record<string, unknown>, stream?: StreamHandlers): Promise<T> {
    const ws = await this.socket();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = this.options.timeout ?? 30_000;
      const p: Pending = {
        method,
        resolve: resolve as (v: unknown) => void,
        reject,
        timer: null,
      };
      if (stream) p.stream = stream;
      // A streaming request lives as long as its stream; the time limit is the exec's own.
      if (timeoutMs > 0 && !stream) {
        p.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new SandboxRpcError(-32004, `${method} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(id, p);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  async notify(method: string, params: Record<string, unknown>): Promise<void> {
    (await this.socket()).send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  private onMessage(data: unknown): void {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer);
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    for (const m of Array.isArray(msg) ? msg : [msg]) this.dispatch(m as Record<string, unknown>);
  }

  private dispatch(m: Record<string, unknown>): void {
    if (typeof m !== 'object' || m === null) return;
    if (typeof m.method === 'string' && !('id' in m)) {
      const params = (m.params ?? {}) as Record<string, unknown>;
      if (m.method === 'stream.output' || m.method === 'stream.event' || m.method === 'stream.end') this.onStream(m.method, params);
      for (const l of this.listeners) l(m.method, params);
      return;
    }
    if (typeof m.id !== 'number') return;
    const p = this.pending.get(m.id);
    if (p === undefined) return;
    this.settle(m.id, p);
    if (m.error !== undefined) {
      const e = m.error as { code: number; message: string; data?: unknown };
      p.reject(new SandboxRpcError(e.code, e.message, e.data));
    } else {
      p.resolve(m.result);
    }
  }

  private settle(id: number, p: Pending): void {
    this.pending.delete(id);
    if (p.timer !== null) clearTimeout(p.timer);
    for (const s of this.streams.values()) if (s.waiter === p) s.waiter = null;
  }

  private onStream(method: string, params: Record<string, unknown>): void {
    const streamId = params.streamId;
    const seq = params.seq;
    if (typeof streamId !== 'string' || typeof seq !== 'number') return;
    let s = this.streams.get(streamId);
    if (s === undefined) {
      const p = typeof params.requestId === 'number' ? this.pending.get(params.requestId) : undefined;
      if (p === undefined || p.stream === undefined) return;
      s = { id: streamId, lastSeq: 0, handlers: p.stream, waiter: p };
      this.streams.set(streamId, s);
    }
    if (seq <= s.lastSeq) return; // replayed twice
    s.lastSeq = seq;
    if (method === 'stream.output') {
      const channel = params.channel === 'stderr' ? 'stderr' : 'stdout';
      const data = typeof params.data === 'string' ? params.data : decodeBase64(String(params.dataBase64 ?? ''));
      s.handlers.onOutput?.({ streamId, seq, channel, data });
      return;
    }
    if (method === 'stream.event') {
      const event = params.event;
      if (typeof event === 'object' && event !== null) s.handlers.onEvent?.({ streamId, seq, event: event as StreamEvent['event'] });
      return;
    }
    // stream.end: its result is the request's result, which a reconnect may have lost.
    const w = s.waiter;
    this.streams.delete(streamId);
    if (w !== null) {
      for (const [id, p] of this.pending) if (p === w) this.settle(id, p);
      const error = params.error as { code: number; message: string; data?: unknown } | undefined;
      if (error !== undefined) w.reject(new SandboxRpcError(error.code, error.message, error.data));
      else w.resolve(params.result);
    }
  }

  private onClose(ws: WebSocketLike, code: number): void {
    if (this.ws !== ws) return;
    this.ws = null;
    const lost = new SandboxRpcError(-32603, `Connection lost (${code})`);
    // Requests without a known stream are lost with the connection; streams survive it.
    const waiting = new Set([...this.streams.values()].map((s) => s.waiter));
    for (const [id, p] of this.pending) {
      if (waiting.has(p)) continue;
      this.settle(id, p);
      p.reject(lost);
    }
    if (code === UNAUTHORIZED_CLOSE || this.closedByUser || this.options.reconnect === false) {
      this.failStreams(code === UNAUTHORIZED_CLOSE ? new SandboxRpcError(-32001, 'Unauthorized') : lost);
      return;
    }
    this.scheduleReconnect();
  }

  private failStreams(e: SandboxRpcError): void {
    for (const s of this.streams.values()) {
      if (s.waiter !== null) {
        for (const [id, p] of this.pending) if (p === s.waiter) this.settle(id, p);
        s.waiter.reject(e);
      }
    }
    this.streams.clear();
  }

  private scheduleReconnect(): void {
    const delay = Math.min(this.options.maxReconnectDelayMs ?? 10_000, 250 * 2 ** this.attempts++);
    setTimeout(() => {
      if (this.closedByUser || this.ws !== null) return;
      this.socket().catch((e: unknown) => {
        if (e instanceof SandboxRpcError && e.code === -32001) this.failStreams(e);
        else this.scheduleReconnect();
      });
    }, delay);
  }

  /** After a reconnect: ask for every live stream's notifications after the last seq seen. */
  private resumeStreams(ws: WebSocketLike): void {
    for (const s of this.streams.values()) {
      const resume = (after: number): void => {
        const id = this.nextId++;
        this.pending.set(id, {
          method: 'stream.resume',
          timer: null,
          resolve: () => undefined,
          reject: (e: unknown) => {
            const first = (e as SandboxRpcError).data as { first?: number } | undefined;
            if (e instanceof SandboxRpcError && e.code === -32009 && typeof first?.first === 'number') {
              s.handlers.onGap?.(s.id, after + 1, first.first - 1);
              s.lastSeq = first.first - 1;
              resume(first.first - 1);
            } else if (s.waiter !== null) {
              this.streams.delete(s.id);
              s.waiter.reject(e);
            }
          },
        });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'stream.resume', params: { streamId: s.id, after } }));
      };
      resume(s.lastSeq);
    }
  }

  close(): void {
    this.closedByUser = true;
    const ws = this.ws;
    this.ws = null;
    const e = new SandboxRpcError(-32603, 'Client closed');
    for (const [id, p] of this.pending) {
      this.settle(id, p);
      p.reject(e);
    }
    this.streams.clear();
    try {
      ws?.close(1000, 'bye');
    } catch {
      // already closed
    }
  }
}
