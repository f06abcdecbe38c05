// OpenAI Codex CLI (`codex exec --json`) in a sandbox. Our sandbox is the boundary, so Codex's
// own sandbox is bypassed (it cannot nest inside ours).

import type { ExecResult } from '../types';
import { AgentSandbox, type AgentRunOptions, type AgentRunResult, type AgentSandboxOptions, jsonLines } from './base';

export type CodexApprovalMode = 'suggest' | 'auto-edit' | 'full-auto';

export interface CodexSandboxOptions extends AgentSandboxOptions {
  /** Kept for the original API; inside our sandbox every mode runs without prompts. */
  approvalMode?: CodexApprovalMode;
}

export class CodexSandbox extends AgentSandbox {
  protected readonly cli = 'codex';

  protected agentEnv(): Record<string, string> {
    return this.options.apiKey ? { OPENAI_API_KEY: this.options.apiKey } : {};
  }

  protected argv(prompt: string, o: AgentRunOptions): string[] {
    const argv = ['codex', 'exec', '--skip-git-repo-check', '--json', '--dangerously-bypass-approvals-and-sandbox'];
    const model = o.model ?? this.options.model;
    if (model) argv.push('--model', model);
    if (o.sessionId) argv.push('resume', o.sessionId);
    argv.push(prompt);
    return argv;
  }

  protected parse(r: ExecResult): AgentRunResult {
    let sessionId: string | null = null;
    let text: string | null = null;
    let usage: unknown = null;
    let failedChange = false;
    for (const e of jsonLines(r.stdout)) {
      if (e.type === 'thread.started' && typeof e.thread_id === 'string') sessionId = e.thread_id;
      if (e.type === 'turn.completed') usage = e.usage ?? null;
      const item = (e.item ?? {}) as Record<string, unknown>;
      if (e.type === 'item.completed' && item.type === 'agent_message' && typeof item.text === 'string') text = item.text;
      if (e.type === 'item.completed' && item.type === 'file_change' && item.status === 'failed') failedChange = true;
    }
    return {
      // Codex exits 0 even when a file change failed: the events tell.
      success: r.exitCode === 0 && !failedChange && usage !== null,
      result: text,
      stdout: r.stdout,
      sessionId,
      usage,
      costUsd: null,
      durationMs: r.durationMs,
      exitCode: r.exitCode,
    };
  }
}

export function createCodexSandbox(options: CodexSandboxOptions): CodexSandbox {
  return new CodexSandbox(options);
}

export { CodexContainer } from '../containers';
export { CODEX_WRANGLER_CONFIG } from '../config';
