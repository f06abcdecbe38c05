// OpenAI Codex CLI in a sandbox: the original CodexSandbox on the engine's agents.run. Our
// sandbox is the boundary: Codex's own sandbox cannot nest inside it, and a non-interactive run
// has nobody to approve anything, so Codex runs without approvals ('full-auto'). The modes that
// would ask first ('suggest', 'auto-edit') are refused, not silently run as 'full-auto'.

import { InvalidParamsError } from '../errors';
import { AgentSandbox, type AgentRunOptions, type AgentSandboxOptions } from './base';

export type CodexApprovalMode = 'suggest' | 'auto-edit' | 'full-auto';

export interface CodexSandboxOptions extends AgentSandboxOptions {
  /** Default 'full-auto', the only mode a run without a person can honour. */
  approvalMode?: CodexApprovalMode;
}

function checkApprovalMode(mode: unknown, field: string): void {
  if (mode === undefined || mode === 'full-auto') return;
  if (mode === 'suggest' || mode === 'auto-edit') {
    throw new InvalidParamsError(
      field,
      `approvalMode '${mode}' asks a person to approve ${mode === 'suggest' ? 'every change' : 'every command'}, ` +
        "which a sandboxed, non-interactive Codex run cannot do: use 'full-auto' (the sandbox is the isolation)",
    );
  }
  throw new InvalidParamsError(field, `approvalMode is 'suggest', 'auto-edit' or 'full-auto', not ${String(mode)}`);
}

export class CodexSandbox extends AgentSandbox {
  protected readonly type = 'codex' as const;
  protected readonly cli = 'codex';

  constructor(options: CodexSandboxOptions) {
    super(options);
    checkApprovalMode(options.approvalMode, 'approvalMode');
  }

  protected keyEnv(): Record<string, string> {
    return this.options.apiKey ? { OPENAI_API_KEY: this.options.apiKey } : {};
  }

  protected typeOptions(o: AgentRunOptions & { approvalMode?: CodexApprovalMode }): Record<string, unknown> {
    checkApprovalMode(o.approvalMode, 'options.approvalMode');
    return { permissionMode: 'bypassPermissions' };
  }
}

export function createCodexSandbox(options: CodexSandboxOptions): CodexSandbox {
  return new CodexSandbox(options);
}

export { CodexContainer } from '../containers';
export { CODEX_WRANGLER_CONFIG } from '../config';
