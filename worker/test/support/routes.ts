// core/protocol's REST route table (build/conformance/routes.json, provided by global-setup.ts).

import { inject } from 'vitest';

export interface TableRoute {
  verb: string;
  path: string;
  method: string;
  body: 'none' | 'json' | 'raw';
  query: { name: string; kind: 'text' | 'integer' | 'flag' }[];
  status: number;
  answer: 'json' | 'raw';
}

const text = inject('restRoutesText');

/** The table's routes; empty when the build did not export it (then the checks are skipped). */
export const TABLE: TableRoute[] = text === '' ? [] : (JSON.parse(text) as { routes: TableRoute[] }).routes;

/** The route's path with ids that name no sandbox and no run. */
export function concretePath(route: TableRoute, id = 'sb_routecheck', runId = 'run_routecheck'): string {
  return route.path.replace('{id}', id).replace('{runId}', runId);
}
