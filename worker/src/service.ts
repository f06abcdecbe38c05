// The methods of docs/protocol.md section 4, for one authenticated key. REST routes and the
// JSON-RPC socket both call `SandboxService.call`; sandbox work is forwarded to the sandbox's
// engine (engine.ts) and its answers relayed.

import {
  AGENT_TYPES,
  type AgentType,
  BACKEND,
  DEFAULT_SIZE,
  LIMITS,
  SIZES,
  VERSION,
  isAgentType,
  isDatabaseType,
  isSize,
  type SandboxKind,
  type SandboxType,
} from './config';
import {
  ErrorCode,
  InvalidParamsError,
  MethodNotFoundError,
  NotFoundError,
  QuotaExceededError,
  RpcError,
  SandboxError,
  SandboxNotRunningError,
  UnauthorizedError,
} from './errors';
import type { EngineConnection, EngineNotification, EnginePool, EngineTarget } from './engine';
import type { Id, Params } from './jsonrpc';
import type { KeyStore } from './keys';
import { DATABASE_OPS } from './database-methods';
import * as v from './params';
import { type ContainerEgress, type NetworkPolicy, containerEgress, parseNetworkPolicy, privilegedEntries } from './network-policy';
import {
  RUNNING_STATUSES,
  type Registry,
  type SandboxDetails,
  type SandboxRow,
  type SandboxObject,
  toSandboxObject,
} from './registry';
import { randomHex } from './auth';
import { Stream, type StreamTable, type Subscriber, rewriteStreamId } from './streams';

/** Per-WebSocket state (lost on hibernation, like the requests it tracks). */
export interface Connection {
  readonly keyId: string;
  readonly subscriber: Subscriber;
  /** In-flight requests by JSON-encoded id. */
  readonly inflight: Map<string, Inflight>;
}

export interface Inflight {
  /** Cancels the work behind the request (for a forwarded call: rpc.cancel to the engine). */
  cancel: (() => void) | null;
  /** Answers the request -32012 at once. */
  abort: () => void;
}

export interface CallContext {
  keyId: string;
  /** The WebSocket the call came on; null for REST. */
  conn: Connection | null;
  requestId: Id | undefined;
  /** Set by forwarded calls so that rpc.cancel can reach the engine. */
  setCancel(cancel: () => void): void;
}

export interface ServiceHooks {
  /** Where this sandbox's engine is. */
  target(row: SandboxRow): EngineTarget;
  /** Releases the sandbox's container (a no-op when ENGINE_URL stands in). */
  destroyContainer(row: SandboxRow): Promise<void>;
  /** A new engine sandbox for a row whose container came back empty: its saved workspace goes in. */
  restoreWorkspace(row: SandboxRow, engineId: string): Promise<void>;
  /** Closes every WebSocket of a key (after revoking it). */
  closeKeySockets(keyId: string): void;
  /** sandbox.setNetwork: the container's egress settings follow (a no-op with ENGINE_URL). */
  setContainerNetwork(row: SandboxRow, egress: ContainerEgress): Promise<void>;
}

type Handler = (ctx: CallContext, p: Params) => Promise<unknown>;

const FILE_OPS = ['writeFile', 'readFile', 'listFiles', 'mkdir', 'deleteFile', 'stat', 'rename'] as const;

/** Agent runs (4.7); each streams its events when called over a socket. */
const AGENT_RUNS = ['agents.run', 'agents.runConversation', 'agents.runOnRepo'] as const;

function hasStreamId(r: unknown): r is Record<string, unknown> {
  return typeof r === 'object' && r !== null && !Array.isArray(r) && 'streamId' in r;
}

/**
 * An engine error as the caller should see it: the engine's sandbox id, which callers never
 * see, replaced by ours wherever the message names it.
 */
function relayed(e: unknown, row: SandboxRow): unknown {
  const engineId = row.engineId;
  if (!(e instanceof RpcError) || engineId === null) return e;
  const data = e.data === undefined ? undefined : JSON.stringify(e.data);
  if (!e.message.includes(engineId) && !(data?.includes(engineId) ?? false)) return e;
  const swap = (t: string) => t.split(engineId).join(row.id);
  return new RpcError(e.code, swap(e.message), data === undefined ? undefined : JSON.parse(swap(data)));
}

/** A run's answer with our sandbox id in its `error` text (e.g. "sandbox ... has no network"). */
function relayedRun(r: unknown, row: SandboxRow): unknown {
  const engineId = row.engineId;
  if (engineId === null || typeof r !== 'object' || r === null || Array.isArray(r)) return r;
  const o = r as Record<string, unknown>;
  return typeof o.error === 'string' && o.error.includes(engineId) ? { ...o, error: o.error.split(engineId).join(row.id) } : r;
}

function now(): string {
  return new Date().toISOString();
}

function newSandboxId(): string {
  return `sb_${randomHex(6)}`;
}

/** An agent CLI as agents.clis describes it (docs/protocol.md 4.7.3): the type's container image ships it. */
function agentCli(type: AgentType): Record<string, unknown> {
  return { type, name: AGENT_CLI_NAMES[type], installed: true, installing: false, canInstall: false, dir: '/opt/agent', source: 'image' };
}

const AGENT_CLI_NAMES: Record<AgentType, string> = { 'claude-code': 'Claude Code', codex: 'Codex', opencode: 'OpenCode' };

export class SandboxService {
  private readonly methods = new Map<string, Handler>();
  /** Live streams per engine connection, to resume them there if it drops. */
  private readonly streamsByConn = new Map<EngineConnection, Set<{ stream: Stream; target: EngineTarget }>>();

  constructor(
    private readonly registry: Registry,
    private readonly keys: KeyStore,
    private readonly pool: EnginePool,
    private readonly streams: StreamTable,
    private readonly hooks: ServiceHooks,
  ) {
    pool.onLost = (c) => this.resumeOnNewConnection(c);
    this.register();
  }

  async call(method: string, params: Params, ctx: CallContext): Promise<unknown> {
    const h = this.methods.get(method);
    if (h === undefined) throw new MethodNotFoundError(method);
    return h(ctx, params);
  }

  private register(): void {
    const m = this.methods;
    // Agents (4.1)
    m.set('agents.create', (c, p) => this.create(c, 'agent', p));
    m.set('agents.get', async (c, p) => toSandboxObject(this.owned(c, p, 'agent')));
    m.set('agents.list', async (c) => ({ agents: this.list(c, 'agent') }));
    m.set('agents.exec', (c, p) => this.exec(c, 'agents.exec', this.owned(c, p, 'agent'), p));
    m.set('agents.cloneRepo', (c, p) => this.forward(c, 'agents.cloneRepo', this.owned(c, p, 'agent'), p));
    m.set('agents.stop', (c, p) => this.stop(c, 'agents.stop', this.owned(c, p, 'agent')));
    m.set('agents.start', (c, p) => this.start(c, 'agents.start', this.owned(c, p, 'agent')));
    m.set('agents.delete', (c, p) => this.delete(c, 'agents.delete', this.owned(c, p, 'agent')));
    m.set('agents.setName', async (c, p) => this.setName(c, this.owned(c, p, 'agent'), p));
    // Agent CLIs (4.7.3): every container image ships its type's CLI, so there is nothing to install.
    m.set('agents.clis', async () => ({ clis: AGENT_TYPES.map((type) => agentCli(type)) }));
    m.set('agents.installCli', async (c, p) => {
      const type = p.type;
      if (!isAgentType(type)) throw new InvalidParamsError('type', 'type must be claude-code, opencode or codex');
      v.optObject(p, 'options');
      this.keys.requireAdmin(c.keyId);
      return { ...agentCli(type), dir: '/opt/agent', alreadyInstalled: true, streamId: null };
    });
    // Agent runs (4.7): streamed as stream.event over a socket, like an exec with stream: true.
    for (const run of AGENT_RUNS) {
      m.set(run, (c, p) => {
        const row = this.owned(c, p, 'agent');
        v.runOptions(p);
        return this.run(c, run, row, p);
      });
    }
    // Run history (4.7.1): the engine keeps it; relayed with our ids.
    m.set('agents.runs', (c, p) => this.runHistory(c, 'agents.runs', this.owned(c, p, 'agent'), p));
    m.set('agents.runEvents', (c, p) => this.runHistory(c, 'agents.runEvents', this.owned(c, p, 'agent'), p));
    // What a run changed (4.7.2): the engine in the container records the workspace around each run.
    m.set('agents.runChanges', (c, p) => this.runHistory(c, 'agents.runChanges', this.owned(c, p, 'agent'), p));
    m.set('agents.revertFile', (c, p) => this.runHistory(c, 'agents.revertFile', this.owned(c, p, 'agent'), p));
    // Databases (4.3)
    m.set('databases.create', (c, p) => this.create(c, 'database', p));
    m.set('databases.get', async (c, p) => toSandboxObject(this.owned(c, p, 'database')));
    m.set('databases.list', async (c) => ({ databases: this.list(c, 'database') }));
    m.set('databases.stop', (c, p) => this.stop(c, 'databases.stop', this.owned(c, p, 'database')));
    m.set('databases.start', (c, p) => this.start(c, 'databases.start', this.owned(c, p, 'database')));
    m.set('databases.restart', (c, p) => this.start(c, 'databases.restart', this.owned(c, p, 'database'), true));
    m.set('databases.delete', (c, p) => this.delete(c, 'databases.delete', this.owned(c, p, 'database')));
    m.set('databases.setName', async (c, p) => this.setName(c, this.owned(c, p, 'database'), p));
    for (const op of DATABASE_OPS) {
      m.set(`databases.${op}`, (c, p) => this.forward(c, `databases.${op}`, this.owned(c, p, 'database'), p));
    }
    // Any sandbox by id (4.5)
    m.set('sandbox.status', async (c, p) => toSandboxObject(this.owned(c, p)));
    m.set('sandbox.exec', (c, p) => this.exec(c, 'sandbox.exec', this.owned(c, p), p));
    m.set('sandbox.stop', (c, p) => this.stop(c, 'sandbox.stop', this.owned(c, p)));
    m.set('sandbox.start', (c, p) => this.start(c, 'sandbox.start', this.owned(c, p)));
    m.set('sandbox.delete', (c, p) => this.delete(c, 'sandbox.delete', this.owned(c, p)));
    m.set('sandbox.setName', async (c, p) => this.setName(c, this.owned(c, p), p));
    m.set('sandbox.setNetwork', (c, p) => this.setNetwork(c, this.owned(c, p), p));
    m.set('sandbox.networkLog', (c, p) => this.networkLog(c, this.owned(c, p), p));
    // Watching files (4.5.1): the engine in the sandbox's container watches with inotify; its
    // stream is relayed under our stream id, like an exec's.
    m.set('sandbox.watch', (c, p) => {
      const row = this.owned(c, p);
      v.optPath(p, 'path');
      v.optBool(p, 'recursive');
      if (c.conn === null) throw new InvalidParamsError('id', 'sandbox.watch needs the WebSocket (/rpc): it is a stream');
      return this.relayStream(c, 'sandbox.watch', row, p);
    });
    for (const op of FILE_OPS) {
      m.set(`agents.${op}`, (c, p) => {
        const row = this.owned(c, p, 'agent');
        v.filePaths(p);
        return this.forward(c, `agents.${op}`, row, p);
      });
      m.set(`sandbox.${op}`, (c, p) => {
        const row = this.owned(c, p);
        v.filePaths(p);
        return this.forward(c, `sandbox.${op}`, row, p);
      });
    }
    // Sessions (4.4)
    m.set('sessions.current', async (c) => this.session(c));
    m.set('sessions.quota', async (c) => this.quota(c.keyId));
    // Keys (1.2)
    m.set('keys.create', async (c, p) => {
      this.keys.requireAdmin(c.keyId); // who may ask comes before what is asked, as in the engine
      return this.keys.create(c.keyId, v.optName(p, 'name') ?? 'key', v.optBool(p, 'admin') ?? false);
    });
    m.set('keys.list', async (c) => this.keys.list(c.keyId));
    m.set('keys.revoke', (c, p) => this.revokeKey(c, v.str(p, 'id')));
    // Streams and requests (4.6)
    m.set('stream.resume', (c, p) => this.resume(c, p));
    m.set('stream.watch', (c, p) => this.resume(c, p, 'watch'));
    m.set('stream.cancel', (c, p) => this.cancelStream(c, p));
    m.set('stream.input', (c, p) => this.terminalControl(c, 'stream.input', p));
    m.set('stream.resize', (c, p) => this.terminalControl(c, 'stream.resize', p));
    m.set('rpc.cancel', async (c, p) => this.cancelRequest(c, p));
  }

  // --- network (docs/protocol.md 3.5) ---

  /**
   * A policy given at the API, canonical: -32602 when it is malformed or when Cloudflare's egress
   * settings cannot enforce it as written; -32001 when it opens loopback or private networks
   * and the key is not admin (as on the engine).
   */
  private checkNetwork(c: CallContext, value: unknown, kind: SandboxKind, type: string, env: Record<string, string>): NetworkPolicy {
    const policy = parseNetworkPolicy(value);
    containerEgress(policy, kind, type, env);
    const privileged = privilegedEntries(policy);
    if (privileged.length > 0 && !this.keys.isAdmin(c.keyId)) {
      throw new UnauthorizedError(`only an admin key may open loopback or non-public networks to a sandbox: ${privileged.join(', ')}`);
    }
    return policy;
  }

  private async setNetwork(c: CallContext, row: SandboxRow, p: Params): Promise<SandboxObject> {
    if (p.network === undefined) throw new InvalidParamsError('network', 'network is required: false, true or {allow, deny}');
    const network = this.checkNetwork(c, p.network, row.kind, row.type, row.env);
    if (row.engineId !== null && row.status !== 'stopped') await this.forward(c, 'sandbox.setNetwork', row, { network });
    this.registry.setNetwork(row.id, network);
    row.network = network;
    await this.hooks.setContainerNetwork(row, containerEgress(network, row.kind, row.type, row.env));
    return toSandboxObject(row);
  }

  private async networkLog(c: CallContext, row: SandboxRow, p: Params): Promise<unknown> {
    // The engine keeps the denials it saw (none in a container: Cloudflare refuses there).
    let denied: unknown = [];
    if (row.engineId !== null && row.status === 'running') {
      const r = (await this.forward(c, 'sandbox.networkLog', row, p)) as { denied?: unknown };
      if (Array.isArray(r?.denied)) denied = r.denied;
    }
    return { id: row.id, network: row.network, denied };
  }

  // --- lookups ---

  /** The caller's sandbox `p.id` (of `kind`, if given); anything else is not found. */
  private owned(c: CallContext, p: Params, kind?: SandboxKind): SandboxRow {
    const id = v.str(p, 'id');
    const row = this.registry.sandbox(c.keyId, id);
    if (row === null || (kind !== undefined && row.kind !== kind)) throw new NotFoundError(`sandbox ${id}`);
    return row;
  }

  private list(c: CallContext, kind: SandboxKind): SandboxObject[] {
    return this.registry.sandboxes(c.keyId, kind).map(toSandboxObject);
  }

  /** A new name for the caller's sandbox ("" clears it), kept in the registry (4.2, 4.5). */
  private setName(c: CallContext, row: SandboxRow, p: Params): SandboxObject {
    if (typeof p.name !== 'string') throw new InvalidParamsError('name', 'name must be a string ("" clears it)');
    const name = (v.optName(p, 'name') ?? '').trim();
    this.registry.setName(row.id, name === '' ? null : name);
    const renamed = this.registry.sandbox(c.keyId, row.id);
    if (renamed === null) throw new NotFoundError(`sandbox ${row.id}`);
    return toSandboxObject(renamed);
  }

  // --- sessions and quota ---

  private session(c: CallContext): unknown {
    const key = this.registry.key(c.keyId);
    const all = this.registry.sandboxes(c.keyId);
    return {
      id: c.keyId,
      name: key?.name ?? '',
      createdAt: key?.createdAt ?? now(),
      backend: BACKEND,
      version: VERSION,
      sandboxes: { total: all.length, running: all.filter((s) => RUNNING_STATUSES.includes(s.status)).length },
    };
  }

  quota(keyId: string): {
    running: { used: number; limit: number };
    memoryMb: { used: number; limit: number };
    sandboxes: { used: number; limit: number };
  } {
    const all = this.registry.sandboxes(keyId);
    const running = all.filter((s) => RUNNING_STATUSES.includes(s.status));
    return {
      running: { used: running.length, limit: LIMITS.quotaRunning },
      memoryMb: { used: running.reduce((n, s) => n + SIZES[s.size].memoryMb, 0), limit: LIMITS.quotaMemoryMb },
      sandboxes: { used: all.length, limit: LIMITS.quotaSandboxes },
    };
  }

  /** Throws -32003 unless one more running sandbox of `memoryMb` (and, if new, one more sandbox) fits. */
  private checkQuota(keyId: string, memoryMb: number, isNew: boolean): void {
    const q = this.quota(keyId);
    if (isNew && q.sandboxes.used + 1 > q.sandboxes.limit) {
      throw new QuotaExceededError(`At most ${q.sandboxes.limit} sandboxes per key`, { quota: 'sandboxes', ...q.sandboxes });
    }
    if (q.running.used + 1 > q.running.limit) {
      throw new QuotaExceededError(`At most ${q.running.limit} running sandboxes per key`, { quota: 'running', ...q.running });
    }
    if (q.memoryMb.used + memoryMb > q.memoryMb.limit) {
      throw new QuotaExceededError(`At most ${q.memoryMb.limit} MiB of running sandboxes per key`, {
        quota: 'memoryMb',
        ...q.memoryMb,
      });
    }
  }

  // --- lifecycle ---

  private async create(c: CallContext, kind: SandboxKind, p: Params): Promise<SandboxObject> {
    // A database's type defaults to postgres (4.3.1); an agent's must be given.
    const type = kind === 'database' && (p.type === undefined || p.type === null) ? 'postgres' : p.type;
    if (kind === 'agent' ? !isAgentType(type) : !isDatabaseType(type)) {
      throw new InvalidParamsError(
        'type',
        kind === 'agent' ? 'type must be claude-code, opencode or codex' : 'type must be postgres, sqlite or duckdb',
      );
    }
    const size = p.size ?? DEFAULT_SIZE;
    if (!isSize(size)) throw new InvalidParamsError('size', `size must be one of ${Object.keys(SIZES).join(', ')}`);
    const env = v.optEnv(p, 'env') ?? {};
    const network = this.checkNetwork(c, p.network, kind, type as string, env);
    const sleepAfter = v.optInt(p, 'sleepAfter', 0, 7 * 24 * 3600 * 1000) ?? LIMITS.defaultSleepAfterMs;
    const name = v.optName(p, 'name') ?? null;
    const extra: Record<string, unknown> = {};
    if (kind === 'database') {
      for (const f of ['database', 'username', 'password']) {
        const val = v.optStr(p, f);
        if (val !== undefined) extra[f] = val;
      }
    }
    this.checkQuota(c.keyId, SIZES[size].memoryMb, true);

    const t = now();
    const row: SandboxRow = {
      id: newSandboxId(),
      keyId: c.keyId,
      kind,
      type: type as SandboxType,
      size,
      status: 'creating',
      error: null,
      name,
      createdAt: t,
      lastActiveAt: t,
      sleepAfter,
      network,
      env,
      extra,
      engineId: null,
      engineKey: `sk_${randomHex(24)}`,
      details: {},
    };
    this.registry.insertSandbox(row);
    const started = Date.now();
    try {
      row.engineId = await this.createInEngine(row);
    } catch (e) {
      this.registry.deleteSandbox(row.id);
      await this.hooks.destroyContainer(row).catch(() => undefined);
      throw relayed(e, row);
    }
    this.registry.setEngineId(row.id, row.engineId);
    this.registry.setStatus(row.id, 'running');
    row.status = 'running';
    if (kind === 'database') this.setStartupTime(row, started);
    return toSandboxObject(row);
  }

  /** Records the time from the request that started a database to a server that answers. */
  private setStartupTime(row: SandboxRow, started: number): void {
    // Our own clock: it includes the container's start, which the engine inside cannot see.
    row.details = { ...row.details, startupTimeMs: Math.max(0, Date.now() - started) };
    this.registry.setDetails(row.id, row.details);
  }

  /** Creates the engine's own sandbox for `row` and answers its engine id. */
  private async createInEngine(row: SandboxRow): Promise<string> {
    const params: Params = {
      type: row.type,
      size: row.size,
      env: row.env,
      network: row.network,
      sleepAfter: row.sleepAfter,
      ...row.extra,
    };
    if (row.name !== null) params.name = row.name;
    const method = row.kind === 'agent' ? 'agents.create' : 'databases.create';
    const r = (await this.engine(row).request(method, params)) as { id?: unknown; database?: unknown };
    if (typeof r?.id !== 'string') throw new SandboxError('The sandbox engine answered without an id');
    const db = r.database as SandboxDetails['database'] | undefined;
    if (row.kind === 'database' && typeof db === 'object' && db !== null && typeof db.database === 'string') {
      // What the engine made of the params (defaults, a normalised file name).
      row.details = { ...row.details, database: db };
      this.registry.setDetails(row.id, row.details);
    }
    return r.id;
  }

  private engine(row: SandboxRow): EngineConnection {
    return this.pool.get(this.hooks.target(row));
  }

  /** A sandbox that can take work: stopped/failed ones answer -32005, a sleeping one wakes. */
  private requireRunning(row: SandboxRow): void {
    if (row.status === 'running') return;
    if (row.status === 'sleeping') {
      this.registry.setStatus(row.id, 'running');
      row.status = 'running';
      return;
    }
    throw new SandboxNotRunningError(row.id, row.status);
  }

  private async stop(c: CallContext, method: string, row: SandboxRow): Promise<SandboxObject> {
    if (row.status !== 'stopped' && row.engineId !== null) {
      try {
        await this.engine(row).request(method, { id: row.engineId });
      } catch (e) {
        // A container that already went away has nothing left to stop.
        if (!(e instanceof RpcError) || (e.code !== ErrorCode.NotFound && e.code !== ErrorCode.SandboxNotRunning)) {
          throw relayed(e, row);
        }
      }
    }
    this.registry.setStatus(row.id, 'stopped');
    this.registry.touchSandbox(row.id, now());
    return toSandboxObject(this.registry.sandbox(c.keyId, row.id)!);
  }

  /**
   * start (or, with `restart`, restart even a running sandbox): quota first, then the engine;
   * an engine that lost the sandbox (a new container) makes it again.
   */
  private async start(c: CallContext, method: string, row: SandboxRow, restart = false): Promise<SandboxObject> {
    const running = RUNNING_STATUSES.includes(row.status);
    if (restart || !running) {
      if (!running && row.status !== 'sleeping') this.checkQuota(c.keyId, SIZES[row.size].memoryMb, false);
      const started = Date.now();
      try {
        if (row.engineId === null) throw new RpcError(ErrorCode.NotFound, 'no engine sandbox');
        await this.engine(row).request(method, { id: row.engineId });
      } catch (e) {
        if (!(e instanceof RpcError) || e.code !== ErrorCode.NotFound) throw relayed(e, row);
        // The container lost its engine state (a new instance): make the sandbox again.
        row.engineId = await this.recreateInEngine(row);
      }
      this.registry.setStatus(row.id, 'running');
      if (row.kind === 'database') this.setStartupTime(row, started);
    }
    this.registry.touchSandbox(row.id, now());
    return toSandboxObject(this.registry.sandbox(c.keyId, row.id)!);
  }

  private async delete(_c: CallContext, method: string, row: SandboxRow): Promise<{ id: string; deleted: true }> {
    this.registry.setStatus(row.id, 'stopped');
    if (row.engineId !== null) {
      try {
        await this.engine(row).request(method, { id: row.engineId });
      } catch (e) {
        if (!(e instanceof RpcError) || e.code !== ErrorCode.NotFound) {
          console.warn(`delete ${row.id}: the engine answered`, e);
        }
      }
    }
    await this.hooks.destroyContainer(row).catch((e: unknown) => console.warn(`delete ${row.id}: container`, e));
    this.registry.deleteSandbox(row.id);
    return { id: row.id, deleted: true };
  }

  // --- forwarded work ---

  /** Sends `method` to the sandbox's engine with the engine's id in place of ours. */
  private async forward(c: CallContext, method: string, row: SandboxRow, p: Params): Promise<unknown> {
    this.requireRunning(row);
    const conn = this.engine(row);
    const send = async (engineId: string): Promise<unknown> => {
      const { id, result } = await conn.call(method, { ...p, id: engineId });
      c.setCancel(() => void conn.notify('rpc.cancel', { id }).catch(() => undefined));
      return result;
    };
    this.registry.touchSandbox(row.id, now());
    try {
      try {
        return await send(row.engineId ?? '');
      } catch (e) {
        if (!(e instanceof RpcError) || e.code !== ErrorCode.NotFound || !(await this.engineLost(row))) throw e;
        return await send(row.engineId!);
      }
    } catch (e) {
      throw relayed(e, row);
    }
  }

  /**
   * After a "not found" from the engine: true if the engine no longer has the sandbox itself
   * (a container that came back empty), in which case it is made again and the call may be
   * retried; false if the sandbox is there and "not found" was about a file or stream.
   */
  private async engineLost(row: SandboxRow): Promise<boolean> {
    if (row.engineId !== null) {
      try {
        await this.engine(row).request('sandbox.status', { id: row.engineId });
        return false;
      } catch (e) {
        if (!(e instanceof RpcError) || e.code !== ErrorCode.NotFound) return false;
      }
    }
    row.engineId = await this.recreateInEngine(row);
    return true;
  }

  /** Makes the sandbox of `row` again in a new container's engine, with its saved workspace. */
  private async recreateInEngine(row: SandboxRow): Promise<string> {
    const engineId = await this.createInEngine(row);
    this.registry.setEngineId(row.id, engineId);
    await this.hooks.restoreWorkspace(row, engineId);
    return engineId;
  }

  private async exec(c: CallContext, method: string, row: SandboxRow, p: Params): Promise<unknown> {
    v.command(p);
    const options = v.optObject(p, 'options') ?? {};
    v.optInt(options, 'timeout', 1, LIMITS.execTimeoutMaxMs, 'options.');
    v.optInt(options, 'maxOutputBytes', 0, 64 * 1024 * 1024, 'options.');
    v.optPath(options, 'cwd', 'options.');
    v.optEnv(options, 'env', 'options.');
    const pty = v.optObject(options, 'pty', 'options.');
    if (pty !== undefined) {
      // A terminal (docs/protocol.md 4.8) always streams, so only over a socket; the engine
      // checks its size and name.
      if (c.conn === null) throw new InvalidParamsError('options.pty', 'options.pty: needs the WebSocket (/rpc): a terminal is a stream');
      v.optInt(pty, 'cols', 1, 1000, 'options.pty.');
      v.optInt(pty, 'rows', 1, 500, 'options.pty.');
      v.optStr(pty, 'term');
      return this.relayStream(c, method, row, { ...p, options: { ...options, stream: true } });
    }
    const wantStream = v.optBool(options, 'stream') ?? false;
    // REST ignores `stream`: without a socket there is nobody to stream to.
    const stream = wantStream && c.conn !== null;
    const params: Params = { ...p, options: { ...options, stream } };
    if (!stream) return this.forward(c, method, row, params);
    return this.relayStream(c, method, row, params);
  }

  /**
   * agents.run / runConversation / runOnRepo. The engine streams every run it is asked over a
   * socket (and the Worker always asks over one): on our socket the events are relayed under our
   * stream id; for REST they are dropped and the answer says `streamId: null`, as the engine's
   * own REST answer does.
   */
  private async run(c: CallContext, method: string, row: SandboxRow, p: Params): Promise<unknown> {
    if (c.conn !== null) return relayedRun(await this.relayStream(c, method, row, p), row);
    const r = relayedRun(await this.forward(c, method, row, p), row);
    return hasStreamId(r) ? { ...r, streamId: null } : r;
  }

  /**
   * agents.runs / runEvents / runChanges / revertFile: the engine's answer with our sandbox id wherever the engine's
   * appears (ids, error texts) and each run's stream named by our id (null when we never relayed
   * it, e.g. a run made over REST).
   */
  private async runHistory(c: CallContext, method: string, row: SandboxRow, p: Params): Promise<unknown> {
    const r = await this.forward(c, method, row, p);
    const engineId = row.engineId;
    const swapped =
      engineId === null ? r : (JSON.parse(JSON.stringify(r).split(engineId).join(row.id)) as unknown);
    if (method !== 'agents.runs' || typeof swapped !== 'object' || swapped === null) return swapped;
    const o = swapped as { runs?: unknown };
    if (!Array.isArray(o.runs)) return swapped;
    const runs = (o.runs as Array<Record<string, unknown>>).map((run) => {
      const engineStream = run.streamId;
      if (typeof engineStream !== 'string') return run;
      return { ...run, streamId: this.registry.streamOfEngine(c.keyId, row.id, engineStream) };
    });
    return { ...o, runs };
  }

  /**
   * Forwards a call that the engine answers with a stream (its notifications carry the call's
   * request id, then their stream id): relays them to the caller's socket under a stream id of
   * ours with the engine's seq, keeps the backlog for stream.resume, and answers the call's
   * result with our stream id in it.
   */
  private async relayStream(c: CallContext, method: string, row: SandboxRow, params: Params): Promise<unknown> {
    this.requireRunning(row);
    const target = this.hooks.target(row);
    const conn = this.pool.get(target);
    const keyId = c.keyId;
    const subscriber = c.conn!.subscriber;
    let s: Stream | null = null;
    const ensure = (engineStreamId: string): Stream => {
      if (s === null) {
        s = new Stream(`st_${randomHex(12)}`, keyId, row.id, engineStreamId, c.requestId ?? null, subscriber);
        this.streams.add(s);
        this.registry.insertStream({
          id: s.id,
          keyId,
          sandboxId: row.id,
          engineStreamId,
          createdAt: Date.now(),
        });
        this.track(conn, s, target);
      }
      return s;
    };
    this.registry.touchSandbox(row.id, now());
    let endSeen = false;
    const onNote = (n: EngineNotification): void => {
      if (typeof n.params.streamId !== 'string') return;
      if (n.method === 'stream.end') endSeen = true;
      ensure(n.params.streamId).push(n.method, n.params);
    };
    const { id, result } = await conn.call(method, { ...params, id: row.engineId }, onNote);
    c.setCancel(() => void conn.notify('rpc.cancel', { id }).catch(() => undefined));
    let r: unknown;
    try {
      r = await result;
    } catch (e) {
      // The engine connection dropped: the stream is resumed on a new one and its end answers.
      const live = s as Stream | null;
      if (live === null || !(e instanceof SandboxError)) throw relayed(e, row);
      return live.ended();
    }
    const engineStreamId = (r as { streamId?: unknown })?.streamId;
    if (typeof engineStreamId !== 'string') return r;
    const ours = ensure(engineStreamId);
    // A stream that goes on after its answer (a watch, 4.5.1) is followed by its id from here on.
    if (!endSeen) conn.subscribe(engineStreamId, onNote);
    return rewriteStreamId(r, ours.id);
  }

  private track(conn: EngineConnection, stream: Stream, target: EngineTarget): void {
    let set = this.streamsByConn.get(conn);
    if (set === undefined) {
      set = new Set();
      this.streamsByConn.set(conn, set);
    }
    const entry = { stream, target };
    set.add(entry);
    const forget = () => {
      set.delete(entry);
      if (set.size === 0) this.streamsByConn.delete(conn);
    };
    stream.ended().then(forget, forget);
  }

  /** A dropped engine connection: resume its live streams on a new one from their last seq. */
  private resumeOnNewConnection(lost: EngineConnection): void {
    const entries = this.streamsByConn.get(lost);
    this.streamsByConn.delete(lost);
    if (entries === undefined) return;
    for (const { stream, target } of entries) {
      if (stream.done) continue;
      const conn = this.pool.get(target);
      this.track(conn, stream, target);
      conn.subscribe(stream.engineStreamId, (n) => stream.push(n.method, n.params));
      conn
        .request('stream.resume', { streamId: stream.engineStreamId, after: stream.lastSeq })
        .catch((e: unknown) => {
          console.warn(`stream ${stream.id}: resume on the engine failed`, e);
          stream.push('stream.end', {
            seq: stream.lastSeq + 1,
            error: e instanceof RpcError ? e.toJSON() : { code: ErrorCode.SandboxError, message: String(e) },
          });
        });
    }
  }

  // --- streams and requests ---

  /**
   * stream.resume, or stream.watch (docs/protocol.md 2.3): the same answer and replay; a watch
   * follows the stream besides the connection that has it.
   */
  private async resume(c: CallContext, p: Params, how: 'resume' | 'watch' = 'resume'): Promise<unknown> {
    const streamId = v.str(p, 'streamId');
    const after = v.optInt(p, 'after', 0, Number.MAX_SAFE_INTEGER) ?? 0;
    if (c.conn === null) throw new InvalidParamsError('streamId', `stream.${how} needs a WebSocket`);
    const sub = c.conn.subscriber;
    const s = this.streams.find(c.keyId, streamId);
    if (s !== null) {
      let answer: unknown;
      if (how === 'watch') s.watch(after, sub, (a) => (answer = a));
      else s.resume(after, sub, (a) => (answer = a));
      return answer;
    }
    // Not in memory (the registry object was restarted): the engine still holds the backlog.
    const { route, row } = this.streamTarget(c.keyId, streamId);
    const target = this.hooks.target(row);
    const conn = this.pool.get(target);
    const stream = new Stream(streamId, c.keyId, row.id, route.engineStreamId, null, how === 'watch' ? null : sub);
    if (how === 'watch') stream.watchers.add(sub);
    this.streams.add(stream);
    this.track(conn, stream, target);
    conn.subscribe(route.engineStreamId, (n) => stream.push(n.method, n.params));
    const r = (await conn.request('stream.resume', { streamId: route.engineStreamId, after })) as Params;
    return { ...r, streamId };
  }

  private async cancelStream(c: CallContext, p: Params): Promise<unknown> {
    return this.toStreamEngine(c.keyId, v.str(p, 'streamId'), 'stream.cancel', {});
  }

  /**
   * stream.input / stream.resize (docs/protocol.md 4.8): to the engine under its own stream id;
   * the engine says whether the stream is a terminal and checks the bytes and the size.
   */
  private async terminalControl(c: CallContext, method: string, p: Params): Promise<unknown> {
    return this.toStreamEngine(c.keyId, v.str(p, 'streamId'), method, p);
  }

  /** Where a stream runs: its route (in memory, else the registry's) and its sandbox's row. */
  private streamTarget(keyId: string, streamId: string): { route: { sandboxId: string; engineStreamId: string }; row: SandboxRow } {
    const route = this.streams.find(keyId, streamId) ?? this.registry.stream(keyId, streamId);
    if (route === null) throw new NotFoundError(`stream ${streamId}`);
    const row = this.registry.sandbox(keyId, route.sandboxId);
    if (row === null) throw new NotFoundError(`stream ${streamId}`);
    return { route, row };
  }

  /** A call about a stream, to the engine that runs it under its own stream id; the answer under the caller's. */
  private async toStreamEngine(keyId: string, streamId: string, method: string, p: Params): Promise<unknown> {
    const { route, row } = this.streamTarget(keyId, streamId);
    const r = (await this.engine(row).request(method, { ...p, streamId: route.engineStreamId })) as Params;
    return typeof r === 'object' && r !== null ? { ...r, streamId } : r;
  }

  /** rpc.cancel: the caller's own in-flight request on this connection answers -32012. */
  private cancelRequest(c: CallContext, p: Params): { cancelled: true } {
    const id = p.id;
    if (!(typeof id === 'string' || typeof id === 'number')) throw new InvalidParamsError('id');
    const tag = JSON.stringify(id);
    const entry = c.requestId !== undefined && JSON.stringify(c.requestId) === tag ? undefined : c.conn?.inflight.get(tag);
    if (entry === undefined) throw new NotFoundError(`request ${tag}`);
    c.conn!.inflight.delete(tag);
    entry.cancel?.();
    entry.abort();
    return { cancelled: true };
  }

  // --- keys ---

  private async revokeKey(c: CallContext, id: string): Promise<{ id: string; revoked: true }> {
    this.keys.revoke(c.keyId, id);
    this.hooks.closeKeySockets(id);
    // Nobody can reach the key's sandboxes any more: delete them, as the local engine does.
    for (const row of this.registry.sandboxes(id)) {
      await this.delete({ ...c, keyId: id }, 'sandbox.delete', row).catch((e: unknown) =>
        console.warn(`revoke ${id}: deleting ${row.id}`, e),
      );
    }
    return { id, revoked: true };
  }
}
