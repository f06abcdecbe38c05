// What the three agent classes share: a sandbox, a working directory, exec with the agent's
// environment, repositories and conversations. Each subclass knows only its CLI's flags and
// output format.

import type { ExecOptions, ExecResult, FileEntry, SandboxBackend } from '../types';

export interface AgentRunOptions {
  timeout?: number;
  model?: string;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
  /** Continue this conversation. */
  sessionId?: string;
}

export interface AgentRunResult {
  success: boolean;
  /** The agent's final answer (parsed JSON output where the CLI gives one). */
  result: unknown;
  stdout: string;
  sessionId: string | null;
  usage: unknown;
  costUsd: number | null;
  durationMs: number;
  exitCode: number;
}

export interface AgentSandboxOptions {
  sandbox: SandboxBackend;
  apiKey?: string;
  model?: string;
  workingDirectory?: string;
  /** ms; the original design's default is 300 000. */
  commandTimeout?: number;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
}

export abstract class AgentSandbox {
  readonly sandbox: SandboxBackend;
  protected readonly options: AgentSandboxOptions;
  protected readonly cwd: string;
  protected readonly timeout: number;

  constructor(options: AgentSandboxOptions) {
    this.sandbox = options.sandbox;
    this.options = options;
    this.cwd = options.workingDirectory ?? '/workspace';
    this.timeout = options.commandTimeout ?? 300_000;
  }

  /** The CLI's name, for init(). */
  protected abstract readonly cli: string;
  /** The environment every run gets (API keys, telemetry off). */
  protected abstract agentEnv(): Record<string, string>;
  /** The argv of one run. */
  protected abstract argv(prompt: string, options: AgentRunOptions): string[];
  /** The run's result from the CLI's output. */
  protected abstract parse(exec: ExecResult): AgentRunResult;

  /** Starts the sandbox and checks that the CLI is there. */
  async init(): Promise<void> {
    const r = await this.sandbox.exec([this.cli, '--version'], { timeout: 60_000 });
    if (r.exitCode !== 0) throw new Error(`${this.cli} is not available in the sandbox: ${r.stderr || r.stdout}`);
  }

  async run(prompt: string, options: AgentRunOptions = {}): Promise<AgentRunResult> {
    const r = await this.sandbox.exec(this.argv(prompt, options), {
      cwd: this.cwd,
      timeout: options.timeout ?? this.timeout,
      env: this.agentEnv(),
    });
    return this.parse(r);
  }

  exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.sandbox.exec(command, { cwd: this.cwd, timeout: this.timeout, ...options });
  }

  /** Clones `url` into the working directory (shallow by default) and runs `prompt` there. */
  async runOnRepo(
    url: string,
    prompt: string,
    options: { branch?: string; shallow?: boolean; path?: string } & AgentRunOptions = {},
  ): Promise<AgentRunResult> {
    const dir = options.path ?? url.replace(/\.git$/, '').split('/').pop() ?? 'repo';
    const argv = ['git', 'clone'];
    if (options.shallow ?? true) argv.push('--depth', '1');
    if (options.branch) argv.push('--branch', options.branch);
    argv.push('--', url, dir);
    const clone = await this.exec(argv);
    if (clone.exitCode !== 0) throw new Error(`git clone failed: ${clone.stderr}`);
    const r = await this.sandbox.exec(this.argv(prompt, options), {
      cwd: `${this.cwd}/${dir}`,
      timeout: options.timeout ?? this.timeout,
      env: this.agentEnv(),
    });
    return this.parse(r);
  }

  /** Runs prompts one after another in one conversation. */
  async runConversation(prompts: string[], options: AgentRunOptions = {}): Promise<AgentRunResult[]> {
    const results: AgentRunResult[] = [];
    let sessionId = options.sessionId;
    for (const p of prompts) {
      const r = await this.run(p, sessionId === undefined ? options : { ...options, sessionId });
      results.push(r);
      sessionId = r.sessionId ?? sessionId;
    }
    return results;
  }

  writeFile(path: string, content: string): Promise<{ path: string; size: number }> {
    return this.sandbox.writeFile(path, content, { parents: true });
  }

  readFile(path: string): Promise<string> {
    return this.sandbox.readFile(path);
  }

  async listFiles(path = this.cwd): Promise<FileEntry[]> {
    return (await this.sandbox.listFiles(path)).entries;
  }

  async close(): Promise<void> {
    await this.sandbox.close?.();
  }
}

/** Parses JSON lines, skipping what is not JSON. */
export function jsonLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      out.push(JSON.parse(t) as Record<string, unknown>);
    } catch {
      // a partial line
    }
  }
  return out;
}
