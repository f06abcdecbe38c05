// For Worker authors: one sandbox held by a container (or by an engine at a URL), spoken to
// over docs/protocol.md. This is what `sandbox` means for the agent and database classes:
//   const sandbox = getSandbox(env.CLAUDE_CODE_SANDBOX, 'my-session', { type: 'claude-code', engineKey })

import type { SandboxType, Size } from './config';
import type { ContainerConfig, SandboxContainer } from './containers';
import { ContainerEngineTarget, EngineConnection, type EngineTarget, UrlEngineTarget } from './engine';
import type { Params } from './jsonrpc';
import type { ExecOptions, ExecResult, FileEntry, SandboxBackend } from './types';

export interface EngineSandboxOptions {
  type: SandboxType;
  size?: Size;
  env?: Record<string, string>;
  network?: boolean;
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

export class EngineSandbox implements SandboxBackend {
  private readonly conn: EngineConnection;
  private engineId: Promise<string> | null = null;
  /** The engine's answer to the create (a database's `startupTimeMs`, `database`), once made. */
  created: Record<string, unknown> | null = null;

  constructor(
    target: EngineTarget,
    private readonly options: EngineSandboxOptions,
  ) {
    this.conn = new EngineConnection(target);
  }

  /**
   * The engine's id of this sandbox: on first use, the one of this name (started again if it
   * was stopped), or else a new one.
   */
  id(): Promise<string> {
    this.engineId ??= (async () => {
      const kind = ['postgres', 'sqlite', 'duckdb'].includes(this.options.type) ? 'databases' : 'agents';
      const name = this.options.name;
      if (name !== undefined) {
        const list = (await this.conn.request(`${kind}.list`, {})) as Record<string, Record<string, unknown>[]>;
        const found = (list[kind] ?? []).find((s) => s.name === name && s.type === this.options.type);
        if (found !== undefined && typeof found.id === 'string') {
          const id = found.id;
          const info = found.status === 'stopped' ? await this.conn.request(`${kind}.start`, { id }) : found;
          this.created = info as Record<string, unknown>;
          return id;
        }
      }
      const r = (await this.conn.request(`${kind}.create`, {
        type: this.options.type,
        ...(this.options.size ? { size: this.options.size } : {}),
        env: this.options.env ?? {},
        network: this.options.network ?? false,
        ...(this.options.sleepAfter !== undefined ? { sleepAfter: this.options.sleepAfter } : {}),
        ...(name !== undefined ? { name } : {}),
        ...this.options.extra,
      })) as { id: string };
      this.created = r as unknown as Record<string, unknown>;
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
 * The sandbox in container `name` of a container namespace (one of the *Container classes).
 * `engineKey` is the key that container's engine accepts: keep it secret and stable per name.
 */
export function getSandbox(
  namespace: DurableObjectNamespace<SandboxContainer>,
  name: string,
  options: EngineSandboxOptions & { engineKey: string },
): EngineSandbox {
  const stub = namespace.getByName(name);
  const config: ContainerConfig = {
    engineKey: options.engineKey,
    sandboxId: name,
    sleepAfterMs: options.sleepAfter ?? 600_000,
    network: options.network ?? false,
  };
  let configured: Promise<void> | null = null;
  const target = new ContainerEngineTarget(stub, name, options.engineKey, () => (configured ??= stub.configure(config)));
  return new EngineSandbox(target, { ...options, name: options.name ?? name });
}

/** A sandbox in an engine reached by URL (a local `sandboxd`: tests, `wrangler dev`). */
export function getEngineSandbox(url: string, apiKey: string, options: EngineSandboxOptions): EngineSandbox {
  return new EngineSandbox(new UrlEngineTarget(url, apiKey), options);
}
