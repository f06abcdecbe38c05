// SandboxDO: the registry (keys, sandboxes, ownership, quota, sessions) and the home of every
// /rpc WebSocket, accepted with the hibernation API. One instance, named "registry".

import { DurableObject } from 'cloudflare:workers';
import { SUBPROTOCOL, parseSubprotocols, readCredentials } from './auth';
import { LIMITS, WRANGLER_CONFIGS } from './config';
import type { ContainerBinding, ContainerConfig, SandboxContainer } from './containers';
import { ContainerEngineTarget, EnginePool, type EngineTarget, UrlEngineTarget, devEngine } from './engine';
import {
  CancelledError,
  InvalidParamsError,
  InvalidRequestError,
  PayloadTooLargeError,
  RpcError,
  UnauthorizedError,
  errorResponse,
  toRpcError,
} from './errors';
import {
  type Incoming,
  type RpcResponse,
  decodeMessage,
  errorResponseFor,
  isNotification,
  resultResponse,
  utf8Length,
} from './jsonrpc';
import { KeyStore } from './keys';
import { containerEgress } from './network-policy';
import { Registry, type SandboxRow } from './registry';
import { handleRest } from './rest';
import { type CallContext, type Connection, type Inflight, SandboxService } from './service';
import { StreamTable, type Subscriber } from './streams';

interface Attachment {
  keyId: string;
}

const ENGINE_IDLE_MS = 60_000;

export class SandboxDO extends DurableObject<Env> {
  private readonly registry: Registry;
  private readonly keys: KeyStore;
  private readonly pool = new EnginePool();
  private readonly streams = new StreamTable();
  private readonly service: SandboxService;
  private readonly connections = new WeakMap<WebSocket, Connection>();
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.registry = new Registry(ctx.storage.sql);
    this.keys = new KeyStore(this.registry);
    this.service = new SandboxService(this.registry, this.keys, this.pool, this.streams, {
      target: (row) => this.target(row),
      destroyContainer: (row) => this.destroyContainer(row),
      restoreWorkspace: (row, engineId) => this.restoreWorkspace(row, engineId),
      setContainerNetwork: async (row, egress) => {
        if (devEngine(this.env) !== null) return;
        await this.containerStub(row).setNetwork(row.network, egress);
      },
      closeKeySockets: (keyId) => {
        for (const ws of this.ctx.getWebSockets(keyId)) {
          try {
            ws.close(4401, 'unauthorized');
          } catch {
            // already closed
          }
        }
      },
    });
  }

  override async fetch(request: Request): Promise<Response> {
    await this.keys.sync(this.env.API_KEYS);
    const url = new URL(request.url);
    const creds = readCredentials(request);
    if (creds.refused) return errorResponse(new UnauthorizedError('API keys are not accepted in URLs'));
    const key = creds.presented === null ? null : await this.keys.authenticate(creds.presented.key);
    if (key === null) return errorResponse(new UnauthorizedError('Missing or invalid API key'));

    if (url.pathname === '/rpc') {
      if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket') {
        return errorResponse(new InvalidRequestError('/rpc takes a WebSocket upgrade'));
      }
      const pair = new WebSocketPair();
      const client = pair[0];
      const server = pair[1];
      this.ctx.acceptWebSocket(server, [key.id]);
      server.serializeAttachment({ keyId: key.id } satisfies Attachment);
      const headers = new Headers();
      if (parseSubprotocols(request.headers.get('Sec-WebSocket-Protocol')).includes(SUBPROTOCOL)) {
        headers.set('Sec-WebSocket-Protocol', SUBPROTOCOL);
      }
      return new Response(null, { status: 101, webSocket: client, headers });
    }

    const ctx = this.context(key.id, null, undefined);
    return handleRest(request, url, (method, params) => this.service.call(method, params, ctx));
  }

  // --- the WebSocket side (hibernation API) ---

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const conn = this.connection(ws);
    if (this.registry.key(conn.keyId) === null) {
      ws.close(4401, 'unauthorized');
      return;
    }
    await this.keys.sync(this.env.API_KEYS);
    const size = typeof message === 'string' ? utf8Length(message) : message.byteLength;
    if (size > LIMITS.maxMessageBytes) {
      this.send(ws, errorResponseFor(null, new PayloadTooLargeError('Message over 16 MiB', LIMITS.maxMessageBytes)));
      return;
    }
    const text = typeof message === 'string' ? message : new TextDecoder().decode(message);
    const decoded = decodeMessage(text);
    this.ensureSweeper();
    if (!decoded.batch) {
      const r = await this.handle(conn, decoded.item);
      if (r !== null) this.send(ws, r);
      return;
    }
    const answers = (await Promise.all(decoded.items.map((i) => this.handle(conn, i)))).filter(
      (r): r is RpcResponse => r !== null,
    );
    if (answers.length > 0) this.send(ws, answers);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.dropConnection(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.dropConnection(ws);
  }

  /** RPC from a container whose sleepAfter ran out. */
  async markSleeping(sandboxId: string): Promise<void> {
    const row = this.registry.sandboxById(sandboxId);
    if (row !== null && row.status === 'running') this.registry.setStatus(sandboxId, 'sleeping');
  }

  private connection(ws: WebSocket): Connection {
    let c = this.connections.get(ws);
    if (c === undefined) {
      const att = ws.deserializeAttachment() as Attachment;
      const subscriber: Subscriber = {
        send: (text) => ws.send(text),
        get open() {
          return ws.readyState === WebSocket.OPEN;
        },
      };
      c = { keyId: att.keyId, subscriber, inflight: new Map() };
      this.connections.set(ws, c);
    }
    return c;
  }

  private dropConnection(ws: WebSocket): void {
    const c = this.connections.get(ws);
    if (c !== undefined) {
      this.streams.dropSubscriber(c.subscriber);
      this.connections.delete(ws);
    }
  }

  private send(ws: WebSocket, v: unknown): void {
    try {
      ws.send(JSON.stringify(v));
    } catch {
      // the client went away; its streams keep their backlog
    }
  }

  /** Runs one decoded element; null when nothing is to be answered (a notification). */
  private async handle(conn: Connection, item: Incoming): Promise<RpcResponse | null> {
    if ('response' in item) return item.response;
    const req = item.request;
    const notify = isNotification(req);
    const id = req.id ?? null;
    const tag = notify ? null : JSON.stringify(id);
    try {
      if (req.positionalParams) throw new InvalidParamsError('params', 'params must be a named object');
      if (tag !== null && conn.inflight.size >= LIMITS.maxConcurrentPerConnection) {
        throw new PayloadTooLargeError('Too many concurrent requests on this connection', LIMITS.maxConcurrentPerConnection);
      }
      let abort: () => void = () => undefined;
      const cancelled = new Promise<never>((_, reject) => {
        abort = () => reject(new CancelledError());
      });
      const entry: Inflight = { cancel: null, abort };
      if (tag !== null) conn.inflight.set(tag, entry);
      try {
        const ctx = this.context(conn.keyId, conn, req.id, (c) => (entry.cancel = c));
        const result = await Promise.race([this.service.call(req.method, req.params, ctx), cancelled]);
        return notify ? null : resultResponse(id, result);
      } finally {
        if (tag !== null && conn.inflight.get(tag) === entry) conn.inflight.delete(tag);
      }
    } catch (e) {
      if (notify) return null;
      const err = e instanceof RpcError ? e : toRpcError(e);
      return errorResponseFor(id, err);
    }
  }

  private context(
    keyId: string,
    conn: Connection | null,
    requestId: CallContext['requestId'],
    setCancel: (c: () => void) => void = () => undefined,
  ): CallContext {
    return { keyId, conn, requestId, setCancel };
  }

  // --- engines ---

  private target(row: SandboxRow): EngineTarget {
    const dev = devEngine(this.env);
    if (dev !== null) return new UrlEngineTarget(dev.url, dev.key);
    const stub = this.containerStub(row);
    const config: ContainerConfig = {
      engineKey: row.engineKey,
      sandboxId: row.id,
      type: row.type,
      sleepAfterMs: row.sleepAfter,
      network: row.network,
      egress: containerEgress(row.network, row.kind, row.type, row.env),
    };
    return new ContainerEngineTarget(stub, row.id, async () => (await stub.configure(config)).engineKey);
  }

  /** A new engine sandbox for `row` (its container came back empty): its saved workspace goes in. */
  private async restoreWorkspace(row: SandboxRow, engineId: string): Promise<void> {
    if (devEngine(this.env) !== null && this.env.WORKSPACES === undefined) return;
    await this.containerStub(row).restoreWorkspace(engineId);
  }

  private containerStub(row: SandboxRow): DurableObjectStub<SandboxContainer> {
    const binding = WRANGLER_CONFIGS[row.type].binding as ContainerBinding;
    const ns = this.env[binding] as unknown as DurableObjectNamespace<SandboxContainer>;
    return ns.getByName(row.id);
  }

  private async destroyContainer(row: SandboxRow): Promise<void> {
    this.pool.drop(`container:${row.id}`);
    if (devEngine(this.env) !== null && this.env.WORKSPACES === undefined) return;
    await this.containerStub(row).destroy();
  }

  /** Closes idle engine connections and expired streams, so that the object can hibernate. */
  private ensureSweeper(): void {
    if (this.sweeper !== null) return;
    this.sweeper = setInterval(() => {
      const open = this.pool.closeIdle(ENGINE_IDLE_MS);
      this.streams.prune();
      this.registry.pruneStreams(Date.now() - LIMITS.execTimeoutMaxMs - LIMITS.streamKeepAfterEndMs);
      if (open === 0 && this.streams.size === 0 && this.sweeper !== null) {
        clearInterval(this.sweeper);
        this.sweeper = null;
      }
    }, 15_000);
  }
}

