// One Container class per sandbox type (the original design's class names). Each instance is
// one sandbox: its image runs the engine `sandboxd --listen 0.0.0.0:8080 --isolation container`,
// and the registry reaches it through `fetch` (HTTP and the /rpc WebSocket) on that port.

import { Container } from '@cloudflare/containers';
import { ENGINE_PORT } from './config';

/** What the registry tells a container before its first start (kept across restarts). */
export interface ContainerConfig {
  /** The key the engine in this container accepts (SANDBOXD_API_KEY). */
  engineKey: string;
  /** The registry's id of the sandbox this container holds. */
  sandboxId: string;
  /** The sandbox's `sleepAfter` in ms; 0 keeps it awake. */
  sleepAfterMs: number;
  /** `network: true` gives the container internet access. */
  network: boolean;
}

const CONFIG_KEY = 'sandbox-config';
const NEVER_SLEEP_S = 365 * 24 * 3600;

export class SandboxContainer extends Container<Env> {
  override defaultPort = ENGINE_PORT;
  override sleepAfter: string | number = '10m';
  override enableInternet = false;

  // biome-ignore lint/complexity/noBannedTypes: DurableObject's own default for its Props
  constructor(ctx: DurableObjectState<{}>, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const c = await ctx.storage.get<ContainerConfig>(CONFIG_KEY);
      if (c !== undefined) this.apply(c);
    });
  }

  /** Called by the registry (RPC) before it first talks to the engine. */
  async configure(config: ContainerConfig): Promise<void> {
    await this.ctx.storage.put(CONFIG_KEY, config);
    this.apply(config);
  }

  private apply(c: ContainerConfig): void {
    this.envVars = { SANDBOXD_API_KEY: c.engineKey, SANDBOXD_SANDBOX_ID: c.sandboxId };
    this.sleepAfter = c.sleepAfterMs > 0 ? Math.max(1, Math.round(c.sleepAfterMs / 1000)) : NEVER_SLEEP_S;
    this.enableInternet = c.network;
  }

  /** sleepAfter ran out: tell the registry (status `sleeping`), then stop the container. */
  override async onActivityExpired(): Promise<void> {
    const c = await this.ctx.storage.get<ContainerConfig>(CONFIG_KEY);
    if (c !== undefined) {
      await this.env.SANDBOX_DO.getByName('registry')
        .markSleeping(c.sandboxId)
        .catch((e: unknown) => console.warn('markSleeping failed', e));
    }
    await this.stop();
  }
}

export class ClaudeCodeContainer extends SandboxContainer {}
export class OpenCodeContainer extends SandboxContainer {}
export class CodexContainer extends SandboxContainer {}
export class PostgresContainer extends SandboxContainer {}
export class SQLiteContainer extends SandboxContainer {}
export class DuckDBContainer extends SandboxContainer {}

export type ContainerBinding =
  | 'CLAUDE_CODE_SANDBOX'
  | 'OPENCODE_SANDBOX'
  | 'CODEX_SANDBOX'
  | 'POSTGRES_CONTAINER'
  | 'SQLITE_CONTAINER'
  | 'DUCKDB_CONTAINER';
