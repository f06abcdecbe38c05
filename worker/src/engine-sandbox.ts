// For Worker authors: one sandbox held by a container (or by an engine at a URL), spoken to
// over docs/protocol.md. This is what `sandbox` means for the agent and database classes:
//   const sandbox = getSandbox(env.CLAUDE_CODE_SANDBOX, 'my-session')
// (the original design's two arguments; the type follows from the container class).

import { AGENT_TYPES, DATABASE_TYPES, type SandboxType, type Size } from './config';
import type { ContainerConfig, SandboxContainer } from './containers';
import { ContainerEngineTarget, EngineConnection, type EngineTarget, UrlEngineTarget } from './engine';
import { InvalidParamsError, SandboxError } from './errors';
import type { Params } from './jsonrpc';
import { type NetworkPolicy, parseNetworkPolicy } from './network-policy';
import type { ExecOptions, ExecResult, FileEntry, SandboxBackend } from './types';

export interface EngineSandboxOptions {
  /** Default: the type of the container class (getSandbox), else required. */
  type?: SandboxType;
  size?: Size;
  env?: Record<string, string>;
  /** The network policy (docs/protocol.md 3.5): false, true or {allow, deny}. */
  network?: NetworkPolicy;
  /** ms of idleness before the container sleeps; default 600 000. */
  sleepAfter?: number;
  /** Extra creation params (databases: database, username, password). */
  extra?: Record<string, unknown>;
  /**
   * The sandbox's name in its engine. With a name, a new handle finds the sandbox an earlier
   * one made (same name and type) instead of making another: a database keeps its data from
   * one request to the next. getSandbox names it after its container.
   */
  name?: string;
}

/** What a container adds to a sandbox handle: its type, its Worker's defaults, its saved workspace. */
export interface ContainerHooks {
  /** The container class's type (when the handle was not given one), SANDBOX_ENV and SANDBOX_NETWORK. */
  defaults(): Promise<{ type: SandboxType | null; env: Record<string, string>; network?: NetworkPolicy }>;
  /** Called with the engine's id of a sandbox the handle made: the saved workspace goes in. */
  created(engineId: string): Promise<unknown>;
}

export class EngineSandbox implements SandboxBackend {
  private readonly conn: EngineConnection;
  private engineId: Promise<string> | null = null;
  /** The engine's answer to the create (a database's `startupTimeMs`, `database`), once made. */
  created: Record<string, unknown> | null = null;

  constructor(
    target: EngineTarget,
    private readonly options: EngineSandboxOptions,
    private readonly container: ContainerHooks | null = null,
  ) {
    this.conn = new EngineConnection(target);
  }

  /** The sandbox's type: given, or the type of the container it was asked for. */
  async type(): Promise<SandboxType> {
    if (this.options.type !== undefined) return this.options.type;
    const t = this.container === null ? null : (await this.container.defaults()).type;
    if (t === null) throw new SandboxError('The sandbox type is unknown: this container class holds any type; pass { type }');
    return t;
  }

  /** agents or databases. */
  async kind(): Promise<'agents' | 'databases'> {
    return (DATABASE_TYPES as readonly string[]).includes(await this.type()) ? 'databases' : 'agents';
  }

  /**
   * The engine's id of this sandbox: on first use, the one of this name (started again if it
   * was stopped), or else a new one.
   */
  id(): Promise<string> {
    this.engineId ??= (async () => {
      const type = await this.type();
      const kind = await this.kind();
      const name = this.options.name;
      if (name !== undefined) {
        const list = (await this.conn.request(`${kind}.list`, {})) as Record<string, Record<string, unknown>[]>;
        const found = (list[kind] ?? []).find((s) => s.name === name && s.type === type);
        if (found !== undefined && typeof found.id === 'string') {
          const id = found.id;
          const info = found.status === 'stopped' ? await this.conn.request(`${kind}.start`, { id }) : found;
          this.created = info as Record<string, unknown>;
          return id;
        }
      }
      const defaults = this.container === null ? null : await this.container.defaults();
      const r = (await this.conn.request(`${kind}.create`, {
        type,
        ...(this.options.size ? { size: this.options.size } : {}),
        env: { ...defaults?.env, ...this.options.env },
        // Agent sandboxes have the network unless told otherwise (the deployment's SANDBOX_NETWORK).
        network: this.options.network ?? (kind === 'agents' ? (defaults?.network ?? true) : false),
        ...(this.options.sleepAfter !== undefined ? { sleepAfter: this.options.sleepAfter } : {}),
        ...(name !== undefined ? { name } : {}),
        ...this.options.extra,
      })) as { id: string };
      this.created = r as unknown as Record<string, unknown>;
      if (this.container !== null) await this.container.created(r.id);
      return r.id;
    })().catch((e: unknown) => {
      this.engineId = null;
      throw e;
    });
    return this.engineId;
  }

  /** Any sandbox method of the contract, with this sandbox's id filled in. */
  async call<T>(method: string, params: Params = {}): Promise<T> {
    return (await this.conn.request(method, { ...params, id: await this.id() })) as T;
  }

  exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.call('sandbox.exec', { command, options: { ...options, stream: false } });
  }

  writeFile(path: string, content: string, options: { encoding?: 'utf8' | 'base64'; mode?: number; parents?: boolean } = {}) {
    return this.call<{ path: string; size: number }>('sandbox.writeFile', { path, content, ...options });
  }

  async readFile(path: string, options: { encoding?: 'utf8' | 'base64'; offset?: number; length?: number } = {}): Promise<string> {
    return (await this.call<{ content: string }>('sandbox.readFile', { path, ...options })).content;
  }

  listFiles(path?: string, options: { recursive?: boolean } = {}) {
    return this.call<{ path: string; entries: FileEntry[]; truncated: boolean }>('sandbox.listFiles', {
      ...(path === undefined ? {} : { path }),
      ...options,
    });
  }

  close(): void {
    this.conn.close();
  }
}

/**
 * The sandbox `name` of a container namespace (one of the *Container classes), as the original
 * design's `getSandbox(env.CLAUDE_CODE_SANDBOX, 'my-session')`: one container per name, holding
 * one sandbox of the class's type (`options.type` when the class is not one of ours). The
 * container makes the key its engine accepts and keeps it; `options.engineKey` sets one instead.
 */
export function getSandbox(
  namespace: DurableObjectNamespace<SandboxContainer>,
  name: string,
  options: Partial<EngineSandboxOptions> & { engineKey?: string } = {},
): EngineSandbox {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidParamsError('name', 'getSandbox needs a sandbox name');
  // A bad policy is refused here, with the entry it is about, not at the first call.
  if (options.network !== undefined) options = { ...options, network: parseNetworkPolicy(options.network) };
  const stub = namespace.getByName(name);
  let type = options.type;
  const config = (t: SandboxType | undefined): ContainerConfig => ({
    ...(options.engineKey !== undefined ? { engineKey: options.engineKey } : {}),
    sandboxId: name,
    ...(t !== undefined ? { type: t } : {}),
    sleepAfterMs: options.sleepAfter ?? 600_000,
    network: options.network ?? (t === undefined || (AGENT_TYPES as readonly string[]).includes(t)),
    ...(options.network === undefined && (t === undefined || (AGENT_TYPES as readonly string[]).includes(t)) ? { networkIsDefault: true } : {}),
  });
  let configured: Promise<{ engineKey: string; env: Record<string, string>; network: NetworkPolicy }> | null = null;
  const prepare = () =>
    (configured ??= (async () => {
      if (type === undefined) type = (await stub.containerType()) ?? undefined;
      return stub.configure(config(type));
    })());
  const target = new ContainerEngineTarget(stub, name, async () => (await prepare()).engineKey);
  return new EngineSandbox(
    target,
    { ...options, name: options.name ?? name },
    {
      defaults: async () => {
        const { env, network } = await prepare();
        return { type: type ?? null, env, network };
      },
      created: (engineId) => stub.restoreWorkspace(engineId),
    },
  );
}

/** A sandbox in an engine reached by URL (a local `sandboxd`: tests, `wrangler dev`). */
export function getEngineSandbox(url: string, apiKey: string, options: EngineSandboxOptions): EngineSandbox {
  if (!apiKey) throw new InvalidParamsError('apiKey', 'An engine by URL needs its key: there is no default key');
  return new EngineSandbox(new UrlEngineTarget(url, apiKey), options);
}
