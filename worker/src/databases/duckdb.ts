import type { SandboxContainer } from '../containers';
import { DatabaseClient, type DatabaseOptions } from './client';

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export class DuckDBClient extends DatabaseClient {
  constructor(namespace: DurableObjectNamespace<SandboxContainer>, options: DatabaseOptions = {}) {
    super(namespace, 'duckdb', options);
  }

  async listTables(): Promise<string[]> {
    const rows = await this.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name",
    );
    return rows.map((r) => r.table_name);
  }

  /** A table's rows as CSV or JSON text. */
  async exportData(table: string, format: 'csv' | 'json' = 'csv'): Promise<string> {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(table)) throw new Error(`Invalid table name: ${table}`);
    const r = await this.queryWithMetadata<Record<string, unknown>>(`SELECT * FROM ${table}`);
    if (format === 'json') return JSON.stringify(r.rows);
    const names = r.fields.length > 0 ? r.fields.map((f) => f.name) : Object.keys(r.rows[0] ?? {});
    const lines = [names.map(csvCell).join(',')];
    for (const row of r.rows) lines.push(names.map((n) => csvCell(row[n])).join(','));
    return lines.join('\n') + '\n';
  }
}

export function createDuckDBContainer(
  namespace: DurableObjectNamespace<SandboxContainer>,
  options: DatabaseOptions = {},
): DuckDBClient {
  return new DuckDBClient(namespace, options);
}

export { DuckDBContainer } from '../containers';
export { DUCKDB_WRANGLER_CONFIG } from '../config';
