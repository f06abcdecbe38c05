// The Worker: /health answers here; everything else (REST under /api, the /rpc WebSocket) goes
// to the registry Durable Object, which authenticates and serves it.

import { BACKEND, VERSION } from './config';

export { SandboxDO } from './sandbox-do';
export {
  ClaudeCodeContainer,
  OpenCodeContainer,
  CodexContainer,
  PostgresContainer,
  SQLiteContainer,
  DuckDBContainer,
} from './containers';

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/health' && request.method === 'GET') {
      return Response.json({ status: 'ok', version: VERSION, backend: BACKEND });
    }
    return env.SANDBOX_DO.getByName('registry').fetch(request);
  },
} satisfies ExportedHandler<Env>;
