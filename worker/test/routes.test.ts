// The Worker's REST routes (src/rest.ts) against core/protocol's table: each route of the table
// calls the table's method with the params of its path and query, and the Worker has no route
// the table lacks. conformance.test.ts checks the same routes end to end.

import { describe, expect, it } from 'vitest';
import type { Params } from '../src/jsonrpc';
import { DATABASE_ACTIONS } from '../src/database-methods';
import { ROUTES, handleRest } from '../src/rest';
import { TABLE, type TableRoute, concretePath } from './support/routes';

const QUERY_VALUES = { text: 'a b.txt', integer: 7, flag: true } as const;

function requestFor(route: TableRoute): { req: Request; url: URL } {
  const url = new URL(`http://sandbox.test${concretePath(route, 'sb_1', 'run_2')}`);
  for (const q of route.query) {
    const v = QUERY_VALUES[q.kind];
    url.searchParams.set(q.name, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  const body = route.body === 'json' ? '{}' : route.body === 'raw' ? 'x' : undefined;
  return { req: new Request(url, { method: route.verb, ...(body !== undefined ? { body } : {}) }), url };
}

describe.skipIf(TABLE.length === 0)('REST routes against the table', () => {
  it('has the table', () => {
    expect(TABLE.length).toBeGreaterThan(40);
  });

  for (const route of TABLE) {
    it(`${route.verb} ${route.path} calls ${route.method}`, async () => {
      const calls: [string, Params][] = [];
      const { req, url } = requestFor(route);
      const resp = await handleRest(req, url, async (method, params) => {
        calls.push([method, params]);
        return route.answer === 'raw' ? { content: '', truncated: false } : {};
      });
      expect(resp.status, route.answer === 'raw' ? '' : await resp.clone().text()).toBe(route.status);
      expect(calls.map((c) => c[0])).toEqual([route.method]);
      const params = calls[0]![1];
      if (route.path.includes('{id}')) expect(params.id).toBe('sb_1');
      if (route.path.includes('{runId}')) expect(params.runId).toBe('run_2');
      for (const q of route.query) expect(params[q.name], q.name).toEqual(QUERY_VALUES[q.kind]);
    });
  }

  it('has no route the table lacks', () => {
    for (const r of ROUTES) {
      const inTable = TABLE.some((t) => t.verb === r.method && r.pattern.test(concretePath(t, 'sb_1', 'run_2')));
      expect(inTable, `${r.method} ${r.pattern}`).toBe(true);
    }
    // One pattern serves every database action: each of them is in the table.
    for (const action of DATABASE_ACTIONS) {
      expect(
        TABLE.some((t) => t.verb === 'POST' && t.path === `/api/databases/{id}/${action}` && t.method === `databases.${action}`),
        action,
      ).toBe(true);
    }
  });
});
