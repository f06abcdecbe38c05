// Client-facing streams (docs/protocol.md 2.3). The engine numbers a stream's notifications; the
// Worker relays them 1:1 under its own stream id, keeps a bounded backlog for `stream.resume`,
// and delivers to whichever connection of the owning key subscribed last, and to the other
// connections of the key that watch it (`stream.watch`).

import { LIMITS } from './config';
import { type ErrorObject, NotFoundError, RpcError, StreamGapError } from './errors';
import type { Id, Params } from './jsonrpc';
import { utf8Length } from './jsonrpc';

export interface Subscriber {
  send(text: string): void;
  readonly open: boolean;
}

interface Entry {
  seq: number;
  text: string;
  bytes: number;
}

export class Stream {
  readonly backlog: Entry[] = [];
  private bytes = 0;
  lastSeq = 0;
  done = false;
  endedAt = 0;
  result: unknown = undefined;
  /** A stream whose request failed (e.g. cancelled) ends with `error` instead of `result`. */
  error: RpcError | null = null;
  subscriber: Subscriber | null;
  /** Other connections of the key that follow the stream without taking it (stream.watch). */
  readonly watchers = new Set<Subscriber>();
  private readonly endWaiters: (() => void)[] = [];

  constructor(
    readonly id: string,
    readonly keyId: string,
    readonly sandboxId: string,
    readonly engineStreamId: string,
    readonly requestId: Id,
    subscriber: Subscriber | null,
  ) {
    this.subscriber = subscriber;
  }

  /** The oldest seq still held (lastSeq + 1 when nothing is held). */
  get firstSeq(): number {
    return this.backlog.length > 0 ? this.backlog[0]!.seq : this.lastSeq + 1;
  }

  /** Takes one engine notification of this stream, rewritten to the Worker's ids. */
  push(method: string, engineParams: Params): void {
    const seq = typeof engineParams.seq === 'number' ? engineParams.seq : this.lastSeq + 1;
    if (seq <= this.lastSeq) return; // a duplicate after an engine-side resume
    const params: Params = { ...engineParams, streamId: this.id, seq, requestId: this.requestId };
    if (method === 'stream.end') {
      if (params.error !== undefined) {
        const e = params.error as ErrorObject;
        this.error = new RpcError(e.code, e.message, e.data);
      } else {
        params.result = rewriteStreamId(params.result, this.id);
      }
      const result = params.result;
      this.done = true;
      this.endedAt = Date.now();
      this.result = result;
    }
    const text = JSON.stringify({ jsonrpc: '2.0', method, params });
    const entry = { seq, text, bytes: utf8Length(text) };
    this.backlog.push(entry);
    this.bytes += entry.bytes;
    this.lastSeq = seq;
    while (
      this.backlog.length > 1 &&
      (this.backlog.length > LIMITS.streamBacklogChunks || this.bytes > LIMITS.streamBacklogBytes)
    ) {
      this.bytes -= this.backlog.shift()!.bytes;
    }
    this.deliver(text);
    for (const w of [...this.watchers]) this.deliverTo(w, text);
    if (this.done) {
      this.watchers.clear();
      for (const w of this.endWaiters.splice(0)) w();
    }
  }

  private deliver(text: string): void {
    const s = this.subscriber;
    if (s === null) return;
    if (!s.open) {
      this.subscriber = null;
      return;
    }
    try {
      s.send(text);
    } catch {
      this.subscriber = null;
    }
  }

  /**
   * stream.resume: checks the backlog still holds everything after `after`, answers through
   * `answer`, then replays the rest to the new subscriber before any new notification.
   */
  resume(after: number, subscriber: Subscriber, answer: (result: unknown) => void): void {
    if (after < this.lastSeq && after + 1 < this.firstSeq) throw new StreamGapError(this.firstSeq);
    answer({ streamId: this.id, after, last: this.lastSeq, done: this.done });
    this.subscriber = subscriber;
    this.watchers.delete(subscriber); // it follows the stream as its own now: once
    for (const e of this.backlog) if (e.seq > after) this.deliver(e.text);
  }

  /**
   * stream.watch: like resume, but `watcher` follows the stream besides its subscriber. The
   * subscriber itself watching resumes it.
   */
  watch(after: number, watcher: Subscriber, answer: (result: unknown) => void): void {
    if (watcher === this.subscriber) {
      this.resume(after, watcher, answer);
      return;
    }
    if (after < this.lastSeq && after + 1 < this.firstSeq) throw new StreamGapError(this.firstSeq);
    answer({ streamId: this.id, after, last: this.lastSeq, done: this.done });
    this.watchers.delete(watcher);
    for (const e of this.backlog) if (e.seq > after) this.deliverTo(watcher, e.text);
    if (!this.done) this.watchers.add(watcher);
  }

  private deliverTo(w: Subscriber, text: string): void {
    if (!w.open) {
      this.watchers.delete(w);
      return;
    }
    try {
      w.send(text);
    } catch {
      this.watchers.delete(w);
    }
  }

  /** Settles like the request that started the stream, once stream.end is in. */
  async ended(): Promise<unknown> {
    if (!this.done) await new Promise<void>((resolve) => this.endWaiters.push(resolve));
    if (this.error !== null) throw this.error;
    return this.result;
  }

  expired(now: number): boolean {
    return this.done && now - this.endedAt > LIMITS.streamKeepAfterEndMs;
  }
}

export function rewriteStreamId(result: unknown, streamId: string): unknown {
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const r = result as Record<string, unknown>;
    if (typeof r.streamId === 'string') return { ...r, streamId };
  }
  return result;
}

/** The live streams of one SandboxDO, by the Worker's stream id. */
export class StreamTable {
  private readonly streams = new Map<string, Stream>();

  add(s: Stream): void {
    this.streams.set(s.id, s);
  }

  /** A stream of `keyId`; another key's stream is not found. */
  get(keyId: string, id: string): Stream {
    const s = this.streams.get(id);
    if (s === undefined || s.keyId !== keyId) throw new NotFoundError(`stream ${id}`);
    return s;
  }

  find(keyId: string, id: string): Stream | null {
    const s = this.streams.get(id);
    return s !== undefined && s.keyId === keyId ? s : null;
  }

  /** Streams not yet ended, e.g. to resume them on the engine after a dropped connection. */
  live(): Stream[] {
    return [...this.streams.values()].filter((s) => !s.done);
  }

  dropSubscriber(sub: Subscriber): void {
    for (const s of this.streams.values()) {
      if (s.subscriber === sub) s.subscriber = null;
      s.watchers.delete(sub);
    }
  }

  prune(now = Date.now()): void {
    for (const [id, s] of this.streams) if (s.expired(now)) this.streams.delete(id);
  }

  get size(): number {
    return this.streams.size;
  }
}
