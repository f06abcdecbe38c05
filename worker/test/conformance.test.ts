// Runs every case of ../tests/conformance/cases.json against the Worker, with container
// traffic going to the real local sandboxd started by global-setup.ts. The file is read at
// run time (global-setup provides it), so new cases run without touching this file.

import { describe, expect, inject, it } from 'vitest';
import { parseJson } from '../src/jsonrpc';
import { hasEngine } from './support/engine';
import { TEST_KEYS } from './support/keys';
import { type Captures, match, substitute } from './support/matcher';
import { TABLE, concretePath } from './support/routes';
import { type AuthMode, RpcSocket, http, isNotification, keyFor, upgrade } from './support/worker';

interface Case {
  name: string;
  steps: Step[];
}
type Step = HttpStep | RpcStep | WsStep;
interface HttpStep {
  http: { method: string; path: string; auth?: AuthMode; body?: unknown; rawBody?: string };
  expect: { status: number; body?: unknown };
}
interface RpcStep {
  rpc: ({ send: unknown } | { raw: string }) & { on?: 'second' | 'other' };
  expect: { message?: unknown; nothing?: boolean; stdout?: string; stderr?: string; notifications?: unknown };
}
interface WsStep {
  ws: { auth: 'none' | 'bad' | 'query' | 'subprotocol' };
  expect: { open: boolean };
}

// parseJson keeps integer literals beyond 2^53 exact (a case sends 9007199254740993 as a param).
const file = parseJson(inject('conformanceCasesText')) as { version: number; cases: Case[] };

/** Cases that create sandboxes cannot run without an engine (only allowed outside CI). */
function needsEngine(c: Case): boolean {
  const s = JSON.stringify(c.steps);
  return /"(agents|databases)\.create"/.test(s) || /"method":"POST","path":"\/api\/(agents|databases)"/.test(s);
}

function fail(step: number, what: string): never {
  throw new Error(`step ${step + 1}: ${what}`);
}

/** Opens a separate /rpc socket and tells whether it counts as open (section 1.1). */
async function wsOpens(auth: WsStep['ws']['auth']): Promise<boolean> {
  let path = '/rpc';
  const headers: Record<string, string> = {};
  switch (auth) {
    case 'none':
      break;
    case 'bad':
      headers.Authorization = `Bearer ${TEST_KEYS.bad}`;
      break;
    case 'query':
      path = `/rpc?key=${encodeURIComponent(TEST_KEYS.main)}`;
      break;
    case 'subprotocol':
      headers['Sec-WebSocket-Protocol'] = `sandbox.v1, bearer.${TEST_KEYS.main}`;
      break;
  }
  const u = await upgrade(path, headers);
  if (u.status !== 101 || u.ws === null) return false;
  // Accepted at the HTTP level: refused anyway if closed with 4401 before any message.
  const ws = u.ws;
  const closedEarly = await new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), 200);
    ws.addEventListener('close', (ev) => {
      clearTimeout(t);
      resolve(ev.code === 4401);
    });
    ws.addEventListener('message', () => {
      clearTimeout(t);
      resolve(false);
    });
  });
  try {
    ws.close(1000, 'done');
  } catch {
    // already closed
  }
  return !closedEarly;
}

function requestIdOf(send: unknown): unknown {
  return typeof send === 'object' && send !== null && !Array.isArray(send) ? (send as { id?: unknown }).id : undefined;
}

function streamText(notes: Record<string, unknown>[], requestId: unknown, channel: string): string {
  let out = '';
  for (const n of notes) {
    const p = n.params as Record<string, unknown> | undefined;
    if (n.method === 'stream.output' && p !== undefined && p.requestId === requestId && p.channel === channel) {
      out += typeof p.data === 'string' ? p.data : atob(String(p.dataBase64 ?? ''));
    }
  }
  return out;
}

async function runCase(c: Case): Promise<void> {
  const captures: Captures = {};
  const sockets = new Map<string, RpcSocket>();
  /** Every notification each socket got, for `expect.notifications`. */
  const seenBy = new Map<RpcSocket, Record<string, unknown>[]>();
  try {
    for (const [i, step] of c.steps.entries()) {
      if ('http' in step) {
        const h = substitute(step.http, captures);
        const r = await http(h.method, h.path, {
          auth: h.auth ?? 'key',
          ...(h.body !== undefined ? { body: h.body } : {}),
          ...(h.rawBody !== undefined ? { rawBody: h.rawBody } : {}),
        });
        if (r.status !== step.expect.status) fail(i, `${h.method} ${h.path}: status ${r.status}, expected ${step.expect.status}: ${r.text}`);
        if (step.expect.body !== undefined) {
          const e = match(substitute(step.expect.body, captures), r.body, captures);
          if (e !== null) fail(i, `${h.method} ${h.path}: ${e}`);
        }
      } else if ('ws' in step) {
        const open = await wsOpens(step.ws.auth);
        if (open !== step.expect.open) fail(i, `ws auth=${step.ws.auth}: open=${open}, expected ${step.expect.open}`);
      } else {
        // "on": a second connection of the key ("second") or one of the other key ("other").
        const on = step.rpc.on ?? 'main';
        let socket = sockets.get(on);
        if (socket === undefined) {
          socket = await RpcSocket.open((await keyFor(on === 'other' ? 'other' : 'key'))!);
          sockets.set(on, socket);
          seenBy.set(socket, []);
        }
        const notes = seenBy.get(socket)!;
        let requestId: unknown;
        if ('raw' in step.rpc) socket.sendRaw(substitute(step.rpc.raw, captures));
        else {
          const send = substitute(step.rpc.send, captures);
          requestId = requestIdOf(send);
          socket.send(send);
        }
        if (step.expect.nothing === true) {
          socket.send({ jsonrpc: '2.0', id: 'sentinel', method: 'sessions.current', params: {} });
          const m = await socket.nextAnswer(notes);
          const e = match({ id: 'sentinel', result: '$object' }, m, {});
          if (e !== null) fail(i, `expected no answer, got ${JSON.stringify(m)}`);
          continue;
        }
        // Long enough for an agent run whose CLI retries an unreachable API (20-45 s here), as
        // tests/conformance/tst_conformance.cpp waits.
        const m = await socket.nextAnswer(notes, 120_000);
        if (step.expect.message !== undefined) {
          const e = match(substitute(step.expect.message, captures), m, captures);
          if (e !== null) fail(i, e);
        }
        if (step.expect.stdout !== undefined || step.expect.stderr !== undefined) {
          // stream.end is the last notification of the stream; it may trail the answer.
          const ended = () =>
            notes.some((n) => n.method === 'stream.end' && (n.params as Record<string, unknown>)?.requestId === requestId);
          while (!ended()) {
            const n = await socket.next(10_000);
            if (isNotification(n)) notes.push(n as Record<string, unknown>);
            else fail(i, `unexpected message while waiting for stream.end: ${JSON.stringify(n)}`);
          }
          if (step.expect.stdout !== undefined) {
            expect(streamText(notes, requestId, 'stdout'), `step ${i + 1}: streamed stdout`).toBe(step.expect.stdout);
          }
          if (step.expect.stderr !== undefined) {
            expect(streamText(notes, requestId, 'stderr'), `step ${i + 1}: streamed stderr`).toBe(step.expect.stderr);
          }
        }
        if (step.expect.notifications !== undefined) {
          // Everything this socket got so far, once a later request is answered (a replay may
          // follow the answer).
          socket.send({ jsonrpc: '2.0', id: 'sentinel', method: 'sessions.current', params: {} });
          const s = await socket.nextAnswer(notes);
          if (match({ id: 'sentinel', result: '$object' }, s, {}) !== null) fail(i, `unexpected ${JSON.stringify(s)}`);
          const e = match(substitute(step.expect.notifications, captures), notes, captures);
          if (e !== null) fail(i, `notifications: ${e}`);
        }
      }
    }
  } finally {
    for (const s of sockets.values()) s.close();
  }
}

describe(`conformance (tests/conformance/cases.json, version ${file.version})`, () => {
  it('has cases', () => {
    expect(file.cases.length).toBeGreaterThan(0);
  });
  for (const c of file.cases) {
    it.skipIf(!hasEngine && needsEngine(c))(c.name, () => runCase(c), 180_000);
  }
});

// Every route of core/protocol's table (what sandboxd serves and the C++ client sends, exported
// at build time) reaches a method here too: any answer but "no route" (-32601). The ids name no
// sandbox and JSON bodies are not objects, so nothing changes. tst_conformance does the same
// against sandboxd.
describe.skipIf(TABLE.length === 0)('the REST route table (build/conformance/routes.json)', () => {
  for (const route of TABLE) {
    it(`${route.verb} ${route.path}`, async () => {
      const path = concretePath(route);
      const rawBody = route.body === 'json' ? '[]' : route.body === 'raw' ? 'x' : undefined;
      const r = await http(route.verb, path, rawBody !== undefined ? { rawBody } : {});
      const code = (r.body as { error?: { code?: unknown } } | undefined)?.error?.code;
      expect(code, `${route.verb} ${path}: ${r.status} ${r.text}`).not.toBe(-32601);
    });
  }
});
