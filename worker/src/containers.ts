// One Container class per sandbox type (the original design's class names). Each instance is
// one sandbox: its image runs the engine `sandboxd --listen 0.0.0.0:8080 --isolation container`,
// and the registry (or a Worker author's getSandbox) reaches it through `fetch` (HTTP and the
// /rpc WebSocket) on that port.
//
// - The engine's key: the registry hands each container one of its own; otherwise the container
//   makes one at its first configure() and keeps it. No fixed key exists anywhere.
// - Sleep: when `sleepAfter` runs out, the sandbox's workspace is archived by its engine
//   (`sandbox.archive`) into R2 (binding WORKSPACES), then the container stops; a container's
//   disk does not outlive it. The next engine sandbox made for this container gets it back
//   (`restoreWorkspace`, `sandbox.restore`) before its first use.
// - Without containers (ENGINE_URL set: `wrangler dev`, tests) the instance forwards to that one
//   engine instead of starting a container, so the same code paths run locally.

import { Container } from '@cloudflare/containers';
import { ENGINE_PORT, type SandboxType, isAgentType } from './config';
import { ContainerEngineTarget, EngineConnection, devEngine } from './engine';
import { SandboxError } from './errors';
import { type ContainerEgress, type NetworkPolicy, containerEgress, parseNetworkPolicy } from './network-policy';
import { restoreWorkspace, saveWorkspace, workspaceKey } from './workspace-archive';

/** What the registry or getSandbox tells a container before its first start (kept across restarts). */
export interface ContainerConfig {
  /** The key the engine in this container accepts (SANDBOXD_API_KEY); made by the container if absent. */
  engineKey?: string;
  /** The sandbox this container holds: the registry's id, or the name given to getSandbox. */
  sandboxId: string;
  /** Its type (the container class's), which names its saved workspace. */
  type?: SandboxType;
  /** The sandbox's `sleepAfter` in ms; 0 keeps it awake. */
  sleepAfterMs: number;
  /** The sandbox's network policy (docs/protocol.md 3.5), canonical. */
  network: NetworkPolicy;
  /** What the policy maps to on Cloudflare (network-policy.ts); absent: `network` as a boolean. */
  egress?: ContainerEgress;
  /** getSandbox's default for an agent (no `network` option): SANDBOX_NETWORK replaces it if set. */
  networkIsDefault?: boolean;
}

/** The egress settings of a config: its mapped policy, or plain internet on or off. */
export function egressOf(c: ContainerConfig): ContainerEgress {
  return c.egress ?? { enableInternet: c.network === true };
}

const CONFIG_KEY = 'sandbox-config';
const NEVER_SLEEP_S = 365 * 24 * 3600;

/**
 * Where there are no containers (ENGINE_URL: `wrangler dev` without Docker, the tests), the
 * Container base class is given a container runtime that never runs: fetch() goes to ENGINE_URL
 * instead (below), and nothing starts, stops or signals a container.
 */
// biome-ignore lint/complexity/noBannedTypes: DurableObject's own default for its Props
function withoutContainers(ctx: DurableObjectState<{}>, env: Env): DurableObjectState<{}> {
  if (ctx.container !== undefined || devEngine(env) === null) return ctx;
  const refuse = () => {
    throw new Error('There are no containers here: sandbox work goes to ENGINE_URL');
  };
  const idle = {
    running: false,
    start: refuse,
    monitor: refuse,
    signal: refuse,
    getTcpPort: refuse,
    destroy: async () => undefined,
  };
  Object.defineProperty(ctx, 'container', { value: idle, configurable: true });
  return ctx;
}

/**
 * SANDBOX_ENV (a JSON object of names and values; optional): environment every sandbox made
 * through getSandbox gets, e.g. a model gateway's ANTHROPIC_BASE_URL / OPENAI_BASE_URL. Keys
 * belong in the agent's apiKey option (one run's environment), not here.
 */
export function sandboxEnv(env: { SANDBOX_ENV?: string }): Record<string, string> {
  const text = env.SANDBOX_ENV;
  if (typeof text !== 'string' || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SandboxError('SANDBOX_ENV must be a JSON object of names and string values');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) {
    throw new SandboxError('SANDBOX_ENV must be a JSON object of names and string values');
  }
  return parsed as Record<string, string>;
}

/**
 * SANDBOX_NETWORK (a JSON network policy, docs/protocol.md 3.5; optional): the policy of agent
 * sandboxes made through getSandbox without a `network` option of their own (else `true`), e.g.
 * `{"allow":["*","10.0.0.5:8080"]}` for a model server on a private network.
 */
export function sandboxNetwork(env: { SANDBOX_NETWORK?: string }): NetworkPolicy | undefined {
  const text = env.SANDBOX_NETWORK;
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SandboxError('SANDBOX_NETWORK must be a network policy in JSON: false, true or {"allow":[...],"deny":[...]}');
  }
  try {
    return parseNetworkPolicy(parsed, 'SANDBOX_NETWORK');
  } catch (e) {
    throw new SandboxError(`SANDBOX_NETWORK: ${(e as Error).message}`);
  }
}

function newEngineKey(): string {
  const b = new Uint8Array(24);
  crypto.getRandomValues(b);
  return `sk_${[...b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
}

export class SandboxContainer extends Container<Env> {
  override defaultPort = ENGINE_PORT;
  override sleepAfter: string | number = '10m';
  override enableInternet = false;

  // biome-ignore lint/complexity/noBannedTypes: DurableObject's own default for its Props
  constructor(ctx: DurableObjectState<{}>, env: Env) {
    super(withoutContainers(ctx, env), env);
    void ctx.blockConcurrencyWhile(async () => {
      const c = await ctx.storage.get<ContainerConfig>(CONFIG_KEY);
      if (c !== undefined) this.apply(c);
    });
  }

  /**
   * Called by the registry or getSandbox before it first talks to the engine. Answers the key the
   * engine accepts: the one given, else the one this container made earlier, else a new one.
   */
  async configure(config: ContainerConfig): Promise<{ engineKey: string; env: Record<string, string>; network: NetworkPolicy }> {
    const dev = devEngine(this.env);
    const stored = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    const engineKey = dev !== null ? dev.key : (config.engineKey ?? stored?.engineKey ?? newEngineKey());
    const c: ContainerConfig = { ...stored, ...config, engineKey };
    const deployed = config.networkIsDefault === true ? sandboxNetwork(this.env) : undefined;
    if (deployed !== undefined) c.network = deployed;
    // On Cloudflare the container's own egress settings hold the policy (none without containers):
    // an allow/deny list maps onto them; a boolean is enableInternet alone.
    // (The registry maps its own; getSandbox leaves it to this.)
    if (config.egress === undefined) {
      delete c.egress; // an earlier policy's
      if (dev === null && c.type !== undefined && (deployed !== undefined || typeof c.network === 'object')) {
        c.egress = containerEgress(c.network, isAgentType(c.type) ? 'agent' : 'database', c.type, {}, deployed !== undefined ? 'SANDBOX_NETWORK' : 'network');
      }
    }
    await this.ctx.storage.put(CONFIG_KEY, c);
    this.apply(c);
    return { engineKey, env: sandboxEnv(this.env), network: c.network };
  }

  private apply(c: ContainerConfig): void {
    if (c.engineKey !== undefined) this.envVars = { SANDBOXD_API_KEY: c.engineKey, SANDBOXD_SANDBOX_ID: c.sandboxId };
    this.sleepAfter = c.sleepAfterMs > 0 ? Math.max(1, Math.round(c.sleepAfterMs / 1000)) : NEVER_SLEEP_S;
    const egress = egressOf(c);
    this.enableInternet = egress.enableInternet;
    this.allowedHosts = egress.allowedHosts;
    this.deniedHosts = egress.deniedHosts;
  }

  /**
   * sandbox.setNetwork: the new settings, for this start and the next. Cloudflare reads
   * `enableInternet` when the container starts; the host lists change at once (a public policy
   * becomes the allow-list `*`, so that a running container gets the internet without a restart).
   */
  async setNetwork(network: NetworkPolicy, egress: ContainerEgress): Promise<void> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    if (c === undefined) return; // never configured: configure() brings the settings
    const next: ContainerConfig = { ...c, network, egress };
    await this.ctx.storage.put(CONFIG_KEY, next);
    this.apply(next);
    await this.setAllowedHosts(egress.allowedHosts ?? (egress.enableInternet ? ['*'] : []));
    await this.setDeniedHosts(egress.deniedHosts ?? []);
  }

  /**
   * RPC: the type of sandbox this class holds (getSandbox's second argument is only a name); null:
   * any type, named by whoever configures it.
   */
  async containerType(): Promise<SandboxType | null> {
    return null;
  }

  /** The engine: this container's, or the one engine at ENGINE_URL when there are no containers. */
  override async fetch(request: Request): Promise<Response> {
    const dev = devEngine(this.env);
    if (dev === null) return super.fetch(request);
    const u = new URL(request.url);
    return fetch(new Request(new URL(u.pathname + u.search, dev.url), request));
  }

  private async engine(): Promise<EngineConnection | null> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    if (c?.engineKey === undefined) return null;
    const key = c.engineKey;
    return new EngineConnection(new ContainerEngineTarget({ fetch: (r) => this.fetch(r) }, `self:${c.sandboxId}`, async () => key));
  }

  /**
   * Puts this container's saved workspace (if any) into the engine's sandbox `engineId`, which
   * must be new: it is stopped, filled, and started again. Answers whether there was one.
   */
  async restoreWorkspace(engineId: string): Promise<boolean> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    const bucket = this.env.WORKSPACES;
    if (c === undefined || bucket === undefined) return false;
    const conn = await this.engine();
    if (conn === null) return false;
    try {
      return await restoreWorkspace(conn, bucket, workspaceKey(c.type, c.sandboxId), engineId);
    } finally {
      conn.close();
    }
  }

  /** Saves the workspace of every sandbox of this container's engine (one, normally) to R2. */
  async saveWorkspace(): Promise<number> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    const bucket = this.env.WORKSPACES;
    if (c === undefined || bucket === undefined) return 0;
    const conn = await this.engine();
    if (conn === null) return 0;
    try {
      return await saveWorkspace(conn, bucket, workspaceKey(c.type, c.sandboxId), c.sandboxId);
    } finally {
      conn.close();
    }
  }

  /** sleepAfter ran out: save the workspace, tell the registry (status `sleeping`), stop. */
  override async onActivityExpired(): Promise<void> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    if (c !== undefined) {
      await this.saveWorkspace().catch((e: unknown) => console.warn(`saving the workspace of ${c.sandboxId} failed`, e));
      await this.env.SANDBOX_DO.getByName('registry')
        .markSleeping(c.sandboxId)
        .catch((e: unknown) => console.warn('markSleeping failed', e));
    }
    if (devEngine(this.env) === null) await this.stop();
  }

  /** The sandbox was deleted: its container and its saved workspace go. */
  override async destroy(): Promise<void> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    if (c !== undefined) await this.env.WORKSPACES?.delete(workspaceKey(c.type, c.sandboxId));
    await this.ctx.storage.delete(CONFIG_KEY);
    if (devEngine(this.env) === null) await super.destroy();
  }
}

export class ClaudeCodeContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'claude-code';
  }
}
export class OpenCodeContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'opencode';
  }
}
export class CodexContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'codex';
  }
}
export class PostgresContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'postgres';
  }
}
export class SQLiteContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'sqlite';
  }
}
export class DuckDBContainer extends SandboxContainer {
  override async containerType(): Promise<SandboxType | null> {
    return 'duckdb';
  }
}

export type ContainerBinding =
  | 'CLAUDE_CODE_SANDBOX'
  | 'OPENCODE_SANDBOX'
  | 'CODEX_SANDBOX'
  | 'POSTGRES_CONTAINER'
  | 'SQLITE_CONTAINER'
  | 'DUCKDB_CONTAINER';
