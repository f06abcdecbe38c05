// Claude Code in a sandbox: the original ClaudeCodeSandbox on the engine's agents.run.

import { InvalidParamsError } from '../errors';
import { AgentSandbox, type AgentRunOptions, type AgentSandboxOptions } from './base';

export type PermissionMode = 'default' | 'acceptEdits' | 'bypassPermissions';
const PERMISSION_MODES: readonly string[] = ['default', 'acceptEdits', 'bypassPermissions', 'plan'];

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

function checkPermissionMode(mode: unknown, field: string): void {
  if (mode !== undefined && !PERMISSION_MODES.includes(mode as string)) {
    throw new InvalidParamsError(field, `${field} is one of ${PERMISSION_MODES.join(', ')}, not ${String(mode)}`);
  }
}

export class ClaudeCodeSandbox extends AgentSandbox {
  protected readonly type = 'claude-code' as const;
  protected readonly cli = 'claude';
  private readonly claude: ClaudeCodeSandboxOptions;

  constructor(options: ClaudeCodeSandboxOptions) {
    super(options);
    checkPermissionMode(options.permissionMode, 'permissionMode');
    this.claude = options;
  }

  protected keyEnv(): Record<string, string> {
    return this.options.apiKey ? { ANTHROPIC_API_KEY: this.options.apiKey } : {};
  }

  protected typeOptions(o: ClaudeRunOptions): Record<string, unknown> {
    checkPermissionMode(o.permissionMode, 'options.permissionMode');
    return {
      permissionMode: o.permissionMode ?? this.claude.permissionMode ?? 'acceptEdits',
      model: o.model ?? this.options.model ?? CLAUDE_DEFAULT_MODEL,
      maxThinkingTokens: o.maxThinkingTokens ?? this.claude.maxThinkingTokens ?? 0,
    };
  }
}

export function createClaudeCodeSandbox(options: ClaudeCodeSandboxOptions): ClaudeCodeSandbox {
  return new ClaudeCodeSandbox(options);
}

export { ClaudeCodeContainer } from '../containers';
export { CLAUDE_CODE_WRANGLER_CONFIG } from '../config';
