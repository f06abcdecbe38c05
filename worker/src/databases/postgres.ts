import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions } from './client';

/** PostgreSQL 15: version, listTables, describeTable, listDatabases, createDatabase and the rest of DatabaseClient. */
export class PostgresClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer> | null, options: DatabaseOptions = {}) {
    super(namespace, 'postgres', options);
  }
}

/** `namespace`: the PostgresContainer binding; null with `options.engine` (an engine by URL). */
export function createPostgresContainer(
  namespace: DurableObjectNamespace<SandboxContainer> | null,
  options: DatabaseOptions = {},
): PostgresClient {
  return new PostgresClient(namespace, options);
}

export { PostgresContainer } from '../containers';
export { POSTGRES_WRANGLER_CONFIG } from '../config';
