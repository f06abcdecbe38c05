import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions } from './client';

export class PostgresClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer>, options: DatabaseOptions = {}) {
    super(namespace, 'postgres', options);
  }

  async version(): Promise<string> {
    const [r] = await this.query<{ version: string }>('SELECT version() AS version');
    return r?.version ?? '';
  }

  async listTables(): Promise<string[]> {
    const rows = await this.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    return rows.map((r) => r.table_name);
  }

  describeTable(table: string): Promise<{ column_name: string; data_type: string; is_nullable: string }[]> {
    return this.query(
      "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
      [table],
    );
  }

  async listDatabases(): Promise<string[]> {
    const rows = await this.query<{ datname: string }>('SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY datname');
    return rows.map((r) => r.datname);
  }

  async createDatabase(name: string): Promise<void> {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Invalid database name: ${name}`);
    await this.execute(`CREATE DATABASE "${name}"`);
  }
}

export function createPostgresContainer(
  namespace: DurableObjectNamespace<SandboxContainer>,
  options: DatabaseOptions = {},
): PostgresClient {
  return new PostgresClient(namespace, options);
}

export { PostgresContainer } from '../containers';
export { POSTGRES_WRANGLER_CONFIG } from '../config';
