// Secrets are not in wrangler.jsonc, so `wrangler types` does not see them; see .dev.vars.example.
declare namespace Cloudflare {
  interface Env {
    /** Comma-separated bootstrap API keys (wrangler secret put API_KEYS). */
    API_KEYS?: string;
    /** JSON object: environment of every sandbox made through getSandbox (src/containers.ts). */
    SANDBOX_ENV?: string;
    /** JSON network policy of agent sandboxes made through getSandbox (src/containers.ts). */
    SANDBOX_NETWORK?: string;
  }
}
