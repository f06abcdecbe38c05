// OpenCode in a sandbox: the original OpenCodeSandbox on the engine's agents.run, with a choice of
// provider (the engine's OpenCode adapter configures it: docs/protocol.md 4.7).

import { InvalidParamsError } from '../errors';
import { AgentSandbox, type AgentRunOptions, type AgentSandboxOptions } from './base';

export type OpenCodeProvider = 'anthropic' | 'openai' | 'ollama';
const PROVIDERS: readonly string[] = ['anthropic', 'openai', 'ollama'];

export interface OpenCodeSandboxOptions extends AgentSandboxOptions {
  /** Default 'anthropic'. 'ollama' needs no key; its endpoint is `baseUrl` (default http://127.0.0.1:11434/v1). */
  provider?: OpenCodeProvider;
}

export class OpenCodeSandbox extends AgentSandbox {
  protected readonly type = 'opencode' as const;
  protected readonly cli = 'opencode';
  private readonly provider: OpenCodeProvider;

  constructor(options: OpenCodeSandboxOptions) {
    super(options);
    const provider = options.provider ?? 'anthropic';
    if (!PROVIDERS.includes(provider)) {
      throw new InvalidParamsError('provider', `provider is one of ${PROVIDERS.join(', ')}, not ${String(provider)}`);
    }
    this.provider = provider;
  }

  protected keyEnv(): Record<string, string> {
    const key = this.options.apiKey;
    if (!key) return {};
    if (this.provider === 'anthropic') return { ANTHROPIC_API_KEY: key };
    return { OPENAI_API_KEY: key };
  }

  protected typeOptions(_o: AgentRunOptions): Record<string, unknown> {
    // The sandbox is the isolation: OpenCode may edit and run commands without asking.
    return { provider: this.provider, permissionMode: 'bypassPermissions' };
  }
}

export function createOpenCodeSandbox(options: OpenCodeSandboxOptions): OpenCodeSandbox {
  return new OpenCodeSandbox(options);
}

export { OpenCodeContainer } from '../containers';
export { OPENCODE_WRANGLER_CONFIG } from '../config';
