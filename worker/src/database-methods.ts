// The database methods (docs/protocol.md 4.3), listed once: the service forwards them to the
// engine, the REST routes offer those that stand alone.

/** The database methods (4.3.2-4.3.7) the engine answers as they are, with our id swapped for its. */
export const DATABASE_OPS = [
  'query',
  'queryWithMetadata',
  'execute',
  'fetch',
  'closeCursor',
  'transaction',
  'begin',
  'commit',
  'rollback',
  'version',
  'ping',
  'listTables',
  'describeTable',
  'listDatabases',
  'createDatabase',
  'exportData',
] as const;

/** An open transaction belongs to its socket: begin/commit/rollback have no REST route. */
const SOCKET_ONLY: ReadonlySet<string> = new Set(['begin', 'commit', 'rollback']);

/** Section 5: POST /api/databases/{id}/ACTION, by the method's name (with the lifecycle's restart). */
export const DATABASE_ACTIONS: readonly string[] = [...DATABASE_OPS.filter((op) => !SOCKET_ONLY.has(op)), 'restart'];
