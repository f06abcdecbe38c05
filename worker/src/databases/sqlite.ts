import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions } from './client';

export class SQLiteClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer>, options: DatabaseOptions = {}) {
    super(namespace, 'sqlite', options);
  }

  async listTables(): Promise<string[]> {
    const rows = await this.query<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    );
    return rows.map((r) => r.name);
  }

  tableInfo(table: string): Promise<{ cid: number; name: string; type: string; notnull: number; pk: number }[]> {
    return this.query('SELECT * FROM pragma_table_info(?)', [table]);
  }
}

export function createSQLiteContainer(
  namespace: DurableObjectNamespace<SandboxContainer>,
  options: DatabaseOptions = {},
): SQLiteClient {
  return new SQLiteClient(namespace, options);
}

export { SQLiteContainer } from '../containers';
export { SQLITE_WRANGLER_CONFIG } from '../config';
