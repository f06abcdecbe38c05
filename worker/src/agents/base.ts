// What the three agent classes share: the original @dotdo/sandbox API (init, run, exec,
// runOnRepo, runConversation, files, close) on the engine's own agent runs (`agents.run`,
// docs/protocol.md 4.7). The engine's adapter builds the CLI's command line, reads its events and
// decides success; these classes only map the original option names onto the run's options.
// Each subclass knows its type, its defaults and its key's environment variable.

import type { AgentType } from '../config';
import { InvalidParamsError, SandboxError } from '../errors';
import type { ExecOptions, ExecResult, FileEntry, RunUsage, SandboxBackend } from '../types';

export interface AgentRunOptions {
  /** ms; default the class's `commandTimeout` (300 000). */
  timeout?: number;
  model?: string;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
  /** Continue this conversation (else the sandbox's last one, unless `newSession`). */
  sessionId?: string;
  newSession?: boolean;
  /** Working directory of this run (default the class's `workingDirectory`). */
  cwd?: string;
  /** More environment for this run only. */
  env?: Record<string, string>;
}

/** The token use of an agent's run. */
export type AgentUsage = RunUsage;

/** The engine's answer to agents.run (4.7). */
export interface AgentRunResult {
  success: boolean;
  /** The agent's final answer. */
  result: string | null;
  /** The CLI's raw JSON lines. */
  stdout: string;
  /** For conversation continuity. */
  sessionId: string | null;
  usage: AgentUsage | null;
  costUsd: number | null;
  durationMs: number;
  exitCode: number | null;
  timedOut: boolean;
  /** Why, when success is false. */
  error: string | null;
}

export interface AgentSandboxOptions {
  /** getSandbox(env.X, 'session'), or connectSandbox(id, ...) from the client. */
  sandbox: SandboxBackend;
  /** The model API's key (ANTHROPIC_API_KEY / OPENAI_API_KEY of each run; never stored). */
  apiKey?: string;
  model?: string;
  /** Default '/workspace'. */
  workingDirectory?: string;
  /** ms; the original design's default is 300 000. */
  commandTimeout?: number;
  systemPrompt?: string;
  allowedTools?: string[];
  disallowedTools?: string[];
  /** The model API's endpoint (a gateway, a local model); default the provider's own. */
  baseUrl?: string;
}

export abstract class AgentSandbox {
  readonly sandbox: SandboxBackend;
  protected readonly options: AgentSandboxOptions;
  protected readonly cwd: string;
  protected readonly timeout: number;

  constructor(options: AgentSandboxOptions) {
    if (options === undefined || options.sandbox === undefined) throw new InvalidParamsError('sandbox', 'An agent needs a sandbox: getSandbox(env.X, sessionId)');
    this.sandbox = options.sandbox;
    this.options = options;
    this.cwd = options.workingDirectory ?? '/workspace';
    this.timeout = options.commandTimeout ?? 300_000;
  }

  /** The engine's agent type. */
  protected abstract readonly type: AgentType;
  /** The CLI's name (for messages). */
  protected abstract readonly cli: string;
  /** The run options of this class's own settings (permission mode, thinking tokens, ...). */
  protected abstract typeOptions(options: AgentRunOptions): Record<string, unknown>;
  /** The environment that carries the API key (and the provider's endpoint) to the CLI. */
  protected abstract keyEnv(): Record<string, string>;

  /** Starts the sandbox and checks that it is an agent of this type with its CLI in place. */
  async init(): Promise<void> {
    const info = await this.sandbox.call<{ type?: string; kind?: string }>('sandbox.status');
    if (info.type !== this.type) {
      throw new SandboxError(`This sandbox is a ${info.type ?? info.kind ?? 'unknown'} sandbox, not ${this.type}: give ${this.constructor.name} a sandbox of its own container class`);
    }
    // The engine runs the CLI from /opt/agent (4.7).
    const r = await this.sandbox.exec(['test', '-x', `/opt/agent/node_modules/.bin/${this.cli}`], { timeout: 60_000 });
    if (r.exitCode !== 0) throw new SandboxError(`The ${this.cli} CLI is not installed in this sandbox's engine`);
  }

  /** The options of one agents.run: the class's settings, overridden by the run's. */
  protected runOptions(options: AgentRunOptions): Record<string, unknown> {
    const o: Record<string, unknown> = {
      timeout: options.timeout ?? this.timeout,
      cwd: options.cwd ?? this.cwd,
      ...this.typeOptions(options),
    };
    const model = options.model ?? this.options.model;
    if (model !== undefined) o.model = model;
    const system = options.systemPrompt ?? this.options.systemPrompt;
    if (system !== undefined) o.systemPrompt = system;
    const allowed = options.allowedTools ?? this.options.allowedTools;
    if (allowed !== undefined) o.allowedTools = allowed;
    const disallowed = options.disallowedTools ?? this.options.disallowedTools;
    if (disallowed !== undefined) o.disallowedTools = disallowed;
    if (options.sessionId !== undefined) o.sessionId = options.sessionId;
    if (options.newSession !== undefined) o.newSession = options.newSession;
    if (this.options.baseUrl !== undefined) o.baseUrl = this.options.baseUrl;
    const env = { ...this.keyEnv(), ...options.env };
    if (Object.keys(env).length > 0) o.env = env;
    return o;
  }

  /** Runs `prompt` once with the sandbox's CLI (agents.run): the engine's answer. */
  run(prompt: string, options: AgentRunOptions = {}): Promise<AgentRunResult> {
    return this.sandbox.call<AgentRunResult>('agents.run', { prompt, options: this.runOptions(options) });
  }

  exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.sandbox.exec(command, { cwd: this.cwd, timeout: this.timeout, ...options });
  }

  /** Clones `url` (shallow by default) and runs `prompt` in the clone, in a new session. */
  runOnRepo(
    url: string,
    prompt: string,
    options: { branch?: string; shallow?: boolean; path?: string } & AgentRunOptions = {},
  ): Promise<AgentRunResult & { path?: string }> {
    const { branch, shallow, path, ...run } = options;
    return this.sandbox.call('agents.runOnRepo', {
      url,
      prompt,
      options: {
        ...this.runOptions(run),
        ...(branch !== undefined ? { branch } : {}),
        ...(shallow !== undefined ? { shallow } : {}),
        ...(path !== undefined ? { path } : {}),
      },
    });
  }

  /** Runs prompts one after another in one conversation; one result per prompt. */
  async runConversation(prompts: string[], options: AgentRunOptions = {}): Promise<AgentRunResult[]> {
    const r = await this.sandbox.call<AgentRunResult & { turns: AgentRunResult[] }>('agents.runConversation', {
      prompts,
      options: this.runOptions(options),
    });
    return r.turns;
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

  /** Lets go of the connection; the sandbox and its workspace stay (in its container). */
  async close(): Promise<void> {
    await this.sandbox.close?.();
  }
}
