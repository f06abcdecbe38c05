import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions, type TableDescription } from './client';

/** SQLite 3: a file inside the sandbox's /workspace (`database`, default `main.db`). */
export class SQLiteClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer> | null, options: DatabaseOptions = {}) {
    super(namespace, 'sqlite', options);
  }

  /** The original API's name for a table's columns (describeTable's `columns`). */
  async tableInfo(table: string): Promise<TableDescription['columns']> {
    return (await this.describeTable(table)).columns;
  }
}

/** `namespace`: the SQLiteContainer binding; null with `options.engine` (an engine by URL). */
export function createSQLiteContainer(
  namespace: DurableObjectNamespace<SandboxContainer> | null,
  options: DatabaseOptions = {},
): SQLiteClient {
  return new SQLiteClient(namespace, options);
}

export { SQLiteContainer } from '../containers';
export { SQLITE_WRANGLER_CONFIG } from '../config';
