import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions } from './client';

/** DuckDB 1.4: analytics; exportData also writes parquet, exportToFile writes into /workspace. */
export class DuckDBClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer> | null, options: DatabaseOptions = {}) {
    super(namespace, 'duckdb', options);
  }
}

/** `namespace`: the DuckDBContainer binding; null with `options.engine` (an engine by URL). */
export function createDuckDBContainer(
  namespace: DurableObjectNamespace<SandboxContainer> | null,
  options: DatabaseOptions = {},
): DuckDBClient {
  return new DuckDBClient(namespace, options);
}

export { DuckDBContainer } from '../containers';
export { DUCKDB_WRANGLER_CONFIG } from '../config';
