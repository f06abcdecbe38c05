// Claude Code (`claude -p ... --output-format json`) in a sandbox.

import type { ExecResult } from '../types';
import { AgentSandbox, type AgentRunOptions, type AgentRunResult, type AgentSandboxOptions } from './base';

export type PermissionMode = 'default' | 'acceptEdits' | 'bypassPermissions';

export interface ClaudeCodeSandboxOptions extends AgentSandboxOptions {
  /** Default 'acceptEdits'. */
  permissionMode?: PermissionMode;
  /** Default 0 (off). */
  maxThinkingTokens?: number;
}

export interface ClaudeRunOptions extends AgentRunOptions {
  permissionMode?: PermissionMode;
  maxThinkingTokens?: number;
}

export const CLAUDE_DEFAULT_MODEL = 'claude-sonnet-4-20250514';

export class ClaudeCodeSandbox extends AgentSandbox {
  protected readonly cli = 'claude';
  private readonly claude: ClaudeCodeSandboxOptions;

  constructor(options: ClaudeCodeSandboxOptions) {
    super(options);
    this.claude = options;
  }

  protected agentEnv(): Record<string, string> {
    const env: Record<string, string> = {
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      // bypassPermissions refuses to run as root unless told it is in a sandbox; it is.
      IS_SANDBOX: '1',
    };
    if (this.options.apiKey) env.ANTHROPIC_API_KEY = this.options.apiKey;
    return env;
  }

  protected argv(prompt: string, o: ClaudeRunOptions): string[] {
    const argv = ['claude', '-p', prompt, '--output-format', 'json'];
    argv.push('--permission-mode', o.permissionMode ?? this.claude.permissionMode ?? 'acceptEdits');
    argv.push('--model', o.model ?? this.options.model ?? CLAUDE_DEFAULT_MODEL);
    const thinking = o.maxThinkingTokens ?? this.claude.maxThinkingTokens ?? 0;
    if (thinking > 0) argv.push('--max-thinking-tokens', String(thinking));
    const system = o.systemPrompt ?? this.options.systemPrompt;
    if (system) argv.push('--append-system-prompt', system);
    const allowed = o.allowedTools ?? this.options.allowedTools;
    if (allowed?.length) argv.push('--allowedTools', ...allowed);
    const disallowed = o.disallowedTools ?? this.options.disallowedTools;
    if (disallowed?.length) argv.push('--disallowedTools', ...disallowed);
    if (o.sessionId) argv.push('--resume', o.sessionId);
    return argv;
  }

  protected parse(r: ExecResult): AgentRunResult {
    let out: Record<string, unknown> | null = null;
    try {
      out = JSON.parse(r.stdout) as Record<string, unknown>;
    } catch {
      out = null;
    }
    return {
      success: r.exitCode === 0 && out !== null && out.is_error !== true,
      result: out?.result ?? null,
      stdout: r.stdout,
      sessionId: typeof out?.session_id === 'string' ? out.session_id : null,
      usage: out?.usage ?? null,
      costUsd: typeof out?.total_cost_usd === 'number' ? out.total_cost_usd : null,
      durationMs: typeof out?.duration_ms === 'number' ? out.duration_ms : r.durationMs,
      exitCode: r.exitCode,
    };
  }
}

export function createClaudeCodeSandbox(options: ClaudeCodeSandboxOptions): ClaudeCodeSandbox {
  return new ClaudeCodeSandbox(options);
}

export { ClaudeCodeContainer } from '../containers';
export { CLAUDE_CODE_WRANGLER_CONFIG } from '../config';
