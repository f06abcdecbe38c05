// Any agent by type.

import { type AgentType, isAgentType } from '../config';
import type { AgentSandbox } from './base';
import { type ClaudeCodeSandboxOptions, ClaudeCodeSandbox } from './claude-code';
import { type CodexSandboxOptions, CodexSandbox } from './codex';
import { type OpenCodeSandboxOptions, OpenCodeSandbox } from './opencode';

export { isAgentType, AGENT_TYPES, type AgentType } from '../config';
export * from './base';
export * from './claude-code';
export * from './opencode';
export * from './codex';

export type AgentSandboxOptionsFor<T extends AgentType> = T extends 'claude-code'
  ? ClaudeCodeSandboxOptions
  : T extends 'opencode'
    ? OpenCodeSandboxOptions
    : CodexSandboxOptions;

export function createAgentSandbox<T extends AgentType>(type: T, options: AgentSandboxOptionsFor<T>): AgentSandbox {
  if (!isAgentType(type)) throw new Error(`Unknown agent type: ${String(type)}`);
  switch (type) {
    case 'claude-code':
      return new ClaudeCodeSandbox(options as ClaudeCodeSandboxOptions);
    case 'opencode':
      return new OpenCodeSandbox(options as OpenCodeSandboxOptions);
    default:
      return new CodexSandbox(options as CodexSandboxOptions);
  }
}
