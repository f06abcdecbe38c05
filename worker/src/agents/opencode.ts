// OpenCode (`opencode run --pure --format json`) in a sandbox, with a choice of provider.

import type { ExecResult } from '../types';
import { AgentSandbox, type AgentRunOptions, type AgentRunResult, type AgentSandboxOptions, jsonLines } from './base';

export type OpenCodeProvider = 'anthropic' | 'openai' | 'ollama';

export interface OpenCodeSandboxOptions extends AgentSandboxOptions {
  /** Default 'anthropic'. */
  provider?: OpenCodeProvider;
  /** For ollama: where it listens. */
  baseUrl?: string;
}

const DEFAULT_MODELS: Record<OpenCodeProvider, string> = {
  anthropic: 'anthropic/claude-sonnet-4-20250514',
  openai: 'openai/gpt-4.1',
  ollama: 'ollama/llama3.1',
};

export class OpenCodeSandbox extends AgentSandbox {
  protected readonly cli = 'opencode';
  private readonly opencode: OpenCodeSandboxOptions;

  constructor(options: OpenCodeSandboxOptions) {
    super(options);
    this.opencode = options;
  }

  private get provider(): OpenCodeProvider {
    return this.opencode.provider ?? 'anthropic';
  }

  protected agentEnv(): Record<string, string> {
    const env: Record<string, string> = {
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_SHARE: '1',
    };
    const key = this.options.apiKey;
    if (key && this.provider === 'anthropic') env.ANTHROPIC_API_KEY = key;
    if (key && this.provider === 'openai') env.OPENAI_API_KEY = key;
    const config: Record<string, unknown> = {
      autoupdate: false,
      share: 'disabled',
      permission: { edit: 'allow', bash: 'allow' },
    };
    if (this.provider === 'ollama') {
      config.provider = {
        ollama: {
          npm: '@ai-sdk/openai-compatible',
          options: { baseURL: this.opencode.baseUrl ?? 'http://127.0.0.1:11434/v1' },
          models: { [(this.options.model ?? DEFAULT_MODELS.ollama).replace(/^ollama\//, '')]: {} },
        },
      };
    }
    env.OPENCODE_CONFIG_CONTENT = JSON.stringify(config);
    return env;
  }

  protected argv(prompt: string, o: AgentRunOptions): string[] {
    const argv = ['opencode', 'run', '--pure', '--format', 'json'];
    argv.push('--model', o.model ?? this.options.model ?? DEFAULT_MODELS[this.provider]);
    if (o.sessionId) argv.push('--session', o.sessionId);
    argv.push(prompt);
    return argv;
  }

  protected parse(r: ExecResult): AgentRunResult {
    const events = jsonLines(r.stdout);
    let text: string | null = null;
    let sessionId: string | null = null;
    let cost = 0;
    let usage: unknown = null;
    let failed = false;
    for (const e of events) {
      if (typeof e.sessionID === 'string') sessionId = e.sessionID;
      const part = (e.part ?? {}) as Record<string, unknown>;
      if (e.type === 'text' && typeof part.text === 'string') text = part.text;
      if (e.type === 'step_finish') {
        if (typeof part.cost === 'number') cost += part.cost;
        usage = part.tokens ?? usage;
      }
      if (e.type === 'error') failed = true;
    }
    return {
      success: r.exitCode === 0 && !failed,
      result: text,
      stdout: r.stdout,
      sessionId,
      usage,
      costUsd: cost,
      durationMs: r.durationMs,
      exitCode: r.exitCode,
    };
  }
}

export function createOpenCodeSandbox(options: OpenCodeSandboxOptions): OpenCodeSandbox {
  return new OpenCodeSandbox(options);
}

export { OpenCodeContainer } from '../containers';
export { OPENCODE_WRANGLER_CONFIG } from '../config';
