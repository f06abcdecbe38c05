// Secrets are not in wrangler.jsonc, so `wrangler types` does not see them; see .dev.vars.example.
declare namespace Cloudflare {
  interface Env {
    /** Comma-separated bootstrap API keys (wrangler secret put API_KEYS). */
    API_KEYS?: string;
  }
}
