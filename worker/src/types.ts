// Shapes of docs/protocol.md section 3, shared by the client and the library classes.

export type { SandboxObject as Sandbox } from './registry';

export interface ExecOptions {
  cwd?: string;
  timeout?: number;
  env?: Record<string, string>;
  stream?: boolean;
  maxOutputBytes?: number;
  stdin?: string;
}

export interface ExecResult {
  exitCode: number;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  streamId: string | null;
}

export interface FileEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mode: number;
  mtime: string;
  target: string | null;
}

/**
 * What the agent and database classes need from "a sandbox": the engine's exec and file
 * methods for one sandbox. `connectSandbox` (client) and `getSandbox` (a container from a
 * Worker) both provide it.
 */
export interface SandboxBackend {
  /** Any method of the contract for this sandbox (its `id` filled in), e.g. `agents.run`. */
  call<T>(method: string, params?: Record<string, unknown>): Promise<T>;
  exec(command: string | string[], options?: ExecOptions): Promise<ExecResult>;
  writeFile(
    path: string,
    content: string,
    options?: { encoding?: 'utf8' | 'base64'; mode?: number; parents?: boolean },
  ): Promise<{ path: string; size: number }>;
  readFile(path: string, options?: { encoding?: 'utf8' | 'base64'; offset?: number; length?: number }): Promise<string>;
  listFiles(path?: string, options?: { recursive?: boolean }): Promise<{ path: string; entries: FileEntry[]; truncated: boolean }>;
  /** Frees what the handle holds (connections); the sandbox itself lives on. */
  close?(): void | Promise<void>;
}

/** The token use of an agent run, as agents.run answers it (docs/protocol.md 4.7). */
export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** The model's context on the run's latest call, and its window; null where the CLI does not say. */
  contextTokens?: number | null;
  contextWindow?: number | null;
}
