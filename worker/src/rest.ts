// The REST routes of docs/protocol.md section 5, each mapped onto a JSON-RPC method.

import { LIMITS } from './config';
import { DATABASE_ACTIONS } from './database-methods';
import {
  InvalidRequestError,
  MethodNotFoundError,
  ParseError,
  PayloadTooLargeError,
  RpcError,
  errorResponse,
  toRpcError,
} from './errors';
import { type Params, parseJson } from './jsonrpc';

export type Call = (method: string, params: Params) => Promise<unknown>;

export interface Route {
  method: string;
  pattern: RegExp;
  handle(m: RegExpExecArray, req: Request, url: URL, call: Call): Promise<Response>;
}

const ID = '([A-Za-z0-9_-]+)';

function json(v: unknown, status = 200): Response {
  return Response.json(v, { status });
}

/** Reads a JSON object body (empty means `{}`), enforcing the 16 MiB limit. */
export async function readBody(req: Request): Promise<Uint8Array> {
  const len = Number(req.headers.get('Content-Length') ?? '0');
  if (len > LIMITS.maxMessageBytes) {
    // Drain rather than cancel: the sender gets its 413 instead of a broken upload.
    await req.body?.pipeTo(new WritableStream()).catch(() => undefined);
    throw new PayloadTooLargeError('Request body over 16 MiB', LIMITS.maxMessageBytes);
  }
  const buf = new Uint8Array(await req.arrayBuffer());
  if (buf.byteLength > LIMITS.maxMessageBytes) throw new PayloadTooLargeError('Request body over 16 MiB', LIMITS.maxMessageBytes);
  return buf;
}

async function jsonBody(req: Request): Promise<Params> {
  const text = new TextDecoder().decode(await readBody(req));
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = parseJson(text);
  } catch {
    throw new ParseError('Body is not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new InvalidRequestError('Body must be a JSON object');
  return v as Params;
}

function flag(url: URL, name: string): boolean | undefined {
  const v = url.searchParams.get(name);
  if (v === null) return undefined;
  return v === '1' || v === 'true';
}

function query(url: URL, name: string): Params {
  const v = url.searchParams.get(name);
  return v === null ? {} : { [name]: v };
}

function pick(body: Params, ...fields: string[]): Params {
  const out: Params = {};
  for (const f of fields) if (body[f] !== undefined) out[f] = body[f];
  return out;
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function unbase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Numeric query items as numbers (anything else stays text, for -32602 to name it). */
function queryIntegers(url: URL, ...names: string[]): Params {
  const out: Params = {};
  for (const name of names) {
    const v = url.searchParams.get(name);
    if (v === null) continue;
    out[name] = /^-?[0-9]+$/.test(v) ? Number(v) : v;
  }
  return out;
}

function r(method: string, pattern: string, handle: Route['handle']): Route {
  return { method, pattern: new RegExp(`^${pattern}$`), handle };
}

/** Routes shared by agents and databases (by kind prefix). */
function lifecycle(kind: 'agents' | 'databases'): Route[] {
  const base = `/api/${kind}`;
  return [
    r('GET', base, async (_m, _q, _u, call) => json(await call(`${kind}.list`, {}))),
    r('POST', base, async (_m, req, _u, call) => json(await call(`${kind}.create`, await jsonBody(req)), 201)),
    r('GET', `${base}/${ID}`, async (m, _q, _u, call) => json(await call(`${kind}.get`, { id: m[1] }))),
    r('DELETE', `${base}/${ID}`, async (m, _q, _u, call) => json(await call(`${kind}.delete`, { id: m[1] }))),
    r('POST', `${base}/${ID}/stop`, async (m, _q, _u, call) => json(await call(`${kind}.stop`, { id: m[1] }))),
    r('POST', `${base}/${ID}/start`, async (m, _q, _u, call) => json(await call(`${kind}.start`, { id: m[1] }))),
    r('PUT', `${base}/${ID}/name`, async (m, req, _u, call) =>
      json(await call(`${kind}.setName`, { ...pick(await jsonBody(req), 'name'), id: m[1] })),
    ),
    // 3.5 and 4.9: the policy and the recent denials, or a new policy.
    r('GET', `${base}/${ID}/network`, async (m, _q, _u, call) => json(await call('sandbox.networkLog', { id: m[1] }))),
    r('PUT', `${base}/${ID}/network`, async (m, req, _u, call) =>
      json(await call('sandbox.setNetwork', { ...(await jsonBody(req)), id: m[1] })),
    ),
  ];
}

/** Every route, in matching order (checked against core/protocol's table by test/routes.test.ts). */
export const ROUTES: Route[] = [
  ...lifecycle('agents'),
  r('POST', `/api/agents/${ID}/run`, async (m, req, _u, call) =>
    json(await call('agents.run', { ...pick(await jsonBody(req), 'prompt', 'options'), id: m[1] })),
  ),
  r('POST', `/api/agents/${ID}/cloneRepo`, async (m, req, _u, call) =>
    json(await call('agents.cloneRepo', { ...(await jsonBody(req)), id: m[1] })),
  ),
  r('GET', `/api/agents/${ID}/runs`, async (m, _q, url, call) =>
    json(await call('agents.runs', { id: m[1], ...queryIntegers(url, 'limit') })),
  ),
  r('GET', `/api/agents/${ID}/runs/([A-Za-z0-9_]+)/events`, async (m, _q, url, call) =>
    json(await call('agents.runEvents', { id: m[1], runId: m[2], ...queryIntegers(url, 'after', 'limit') })),
  ),
  r('GET', `/api/agents/${ID}/runs/([A-Za-z0-9_]+)/changes`, async (m, _q, _u, call) =>
    json(await call('agents.runChanges', { id: m[1], runId: m[2] })),
  ),
  r('POST', `/api/agents/${ID}/runs/([A-Za-z0-9_]+)/revert`, async (m, req, _u, call) =>
    json(await call('agents.revertFile', { ...pick(await jsonBody(req), 'path'), id: m[1], runId: m[2] })),
  ),
  r('POST', `/api/agents/${ID}/exec`, async (m, req, _u, call) => {
    const body = await jsonBody(req);
    const params: Params = { ...pick(body, 'command', 'options'), id: m[1] };
    const options = body.options;
    if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
      params.options = { ...(options as Params), stream: false };
    }
    return json(await call('agents.exec', params));
  }),
  r('GET', `/api/agents/${ID}/files`, async (m, _q, url, call) => {
    const p: Params = { id: m[1], ...query(url, 'path') };
    const recursive = flag(url, 'recursive');
    if (recursive !== undefined) p.recursive = recursive;
    return json(await call('agents.listFiles', p));
  }),
  r('DELETE', `/api/agents/${ID}/files`, async (m, _q, url, call) => {
    const p: Params = { id: m[1], ...query(url, 'path') };
    const recursive = flag(url, 'recursive');
    if (recursive !== undefined) p.recursive = recursive;
    return json(await call('agents.deleteFile', p));
  }),
  r('GET', `/api/agents/${ID}/files/content`, async (m, _q, url, call) => {
    // Read page by page (each readFile at most 16 MiB) and answer the raw bytes.
    const parts: Uint8Array[] = [];
    let offset = 0;
    for (;;) {
      const res = (await call('agents.readFile', { id: m[1], ...query(url, 'path'), encoding: 'base64', offset })) as {
        content: string;
        truncated?: boolean;
      };
      const bytes = unbase64(res.content);
      parts.push(bytes);
      offset += bytes.length;
      if (res.truncated !== true || bytes.length === 0) break;
    }
    return new Response(new Blob(parts), { headers: { 'Content-Type': 'application/octet-stream' } });
  }),
  r('PUT', `/api/agents/${ID}/files/content`, async (m, req, url, call) => {
    const bytes = await readBody(req);
    const p: Params = { id: m[1], ...query(url, 'path'), content: base64(bytes), encoding: 'base64' };
    const parents = flag(url, 'parents');
    if (parents !== undefined) p.parents = parents;
    return json(await call('agents.writeFile', p));
  }),
  r('GET', `/api/agents/${ID}/files/stat`, async (m, _q, url, call) =>
    json(await call('agents.stat', { id: m[1], ...query(url, 'path') })),
  ),
  r('POST', `/api/agents/${ID}/files/mkdir`, async (m, req, _u, call) =>
    json(await call('agents.mkdir', { ...pick(await jsonBody(req), 'path', 'parents'), id: m[1] })),
  ),
  r('POST', `/api/agents/${ID}/files/rename`, async (m, req, _u, call) =>
    json(await call('agents.rename', { ...pick(await jsonBody(req), 'from', 'to'), id: m[1] })),
  ),
  ...lifecycle('databases'),
  // POST /api/databases/{id}/ACTION: the body is the method's params, with the id from the path.
  r('POST', `/api/databases/${ID}/(${DATABASE_ACTIONS.join('|')})`, async (m, req, _u, call) =>
    json(await call(`databases.${m[2]}`, { ...(await jsonBody(req)), id: m[1] })),
  ),
  r('GET', '/api/sessions/current', async (_m, _q, _u, call) => json(await call('sessions.current', {}))),
  r('GET', '/api/sessions/quota', async (_m, _q, _u, call) => json(await call('sessions.quota', {}))),
  r('GET', '/api/keys', async (_m, _q, _u, call) => json(await call('keys.list', {}))),
  r('POST', '/api/keys', async (_m, req, _u, call) => json(await call('keys.create', await jsonBody(req)), 201)),
  r('DELETE', `/api/keys/${ID}`, async (m, _q, _u, call) => json(await call('keys.revoke', { id: m[1] }))),
];

/** Answers an authenticated REST request through `call`; errors become `{"error":{...}}`. */
export async function handleRest(req: Request, url: URL, call: Call): Promise<Response> {
  try {
    for (const route of ROUTES) {
      if (route.method !== req.method) continue;
      const m = route.pattern.exec(url.pathname);
      if (m !== null) return await route.handle(m, req, url, call);
    }
    throw new MethodNotFoundError(`${req.method} ${url.pathname}`);
  } catch (e) {
    // Answered before the body was read (no such route): let go of it first.
    if (req.body !== null && !req.bodyUsed) await req.body.pipeTo(new WritableStream()).catch(() => undefined);
    return errorResponse(e instanceof RpcError ? e : toRpcError(e));
  }
}
