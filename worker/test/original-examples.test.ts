// Every code example of the original @dotdo/sandbox README, run as it is written, against this
// Worker and the real engine. There are no containers here: each Container object forwards to
// the test's engine (ENGINE_URL); the agents' model APIs are the mock (tests/mocks), which the
// sandboxes reach through SANDBOX_ENV. What had to change in an example is marked `// (test)`:
// the import paths (this package's modules; `getSandbox` is ours where the original imported
// @cloudflare/sandbox's), the client's transport (this Worker instead of wss://sandbox.do), and
// rows or files an example takes for granted, made before it runs. Where an example meets what
// the product does differently (an agent made through the registry calls the real model API,
// which this machine cannot reach; a DuckDB without httpfs cannot read https://), the test
// asserts the error a user gets. The mock is on this computer's loopback, so SANDBOX_NETWORK
// (vitest.config.ts) lets getSandbox's agents reach it.
import { SELF, env as testEnv } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgentSandbox, isAgentType } from '../src/agents/index';
import { ClaudeCodeSandbox, createClaudeCodeSandbox } from '../src/agents/claude-code';
import { createCodexSandbox } from '../src/agents/codex';
import { createOpenCodeSandbox } from '../src/agents/opencode';
import { type WebSocketLike, connectSandbox, createSandboxClient, SANDBOX_DO_URL } from '../src/client/index';
import { createDuckDBContainer } from '../src/databases/duckdb';
import { PostgresContainer, createPostgresContainer } from '../src/databases/postgres';
import { createSQLiteContainer } from '../src/databases/sqlite';
import { getSandbox } from '../src/engine-sandbox';
import {
  CLAUDE_CODE_WRANGLER_CONFIG,
  CODEX_WRANGLER_CONFIG,
  DUCKDB_WRANGLER_CONFIG,
  OPENCODE_WRANGLER_CONFIG,
  POSTGRES_WRANGLER_CONFIG,
  SQLITE_WRANGLER_CONFIG,
} from '../src/lib';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { TEST_KEYS } from './support/keys';
import { http } from './support/worker';

const hasMock = inject('mockUrl') !== '';
const RUN_TIMEOUT = 300_000;

// The Worker's env as the examples read it: the container bindings, and the keys a deployment
// would set as secrets (any value reaches the mock). `env.SANDBOX` / `env.API_KEY` (the factory
// example) name a binding and key of the author's choice.
const env = {
  ...testEnv,
  ANTHROPIC_API_KEY: 'sk-ant-example',
  OPENAI_API_KEY: 'sk-openai-example',
  API_KEY: 'sk-ant-example',
  SANDBOX: testEnv.CLAUDE_CODE_SANDBOX,
};
type Env = typeof env;

/** The examples' sessionId: one container (and sandbox) per test. */
function session(name: string): string {
  return `example-${name}-${Math.random().toString(36).slice(2, 8)}`;
}

/** (test) The client's transport to this Worker, instead of a socket to wss://sandbox.do. */
const toThisWorker = {
  connect: async (_url: string, protocols: string[]): Promise<WebSocketLike> => {
    const resp = await SELF.fetch('http://sandbox.test/rpc', {
      headers: { Upgrade: 'websocket', 'Sec-WebSocket-Protocol': protocols.join(', ') },
    });
    const ws = resp.webSocket!;
    ws.accept();
    return ws as unknown as WebSocketLike;
  },
};

describe.skipIf(!hasEngine || !hasMock)('the original README, example by example', () => {
  beforeAll(() => deleteAllSandboxes());
  afterAll(() => deleteAllSandboxes());

  it('Quick Start: Coding Agent in a Worker', async () => {
    const worker = {
      async fetch(_request: Request, env: Env): Promise<Response> { // (test) `request` unused: `_`
        // Create sandbox from container binding
        const sandbox = getSandbox(env.CLAUDE_CODE_SANDBOX, 'my-session')

        const claude = createClaudeCodeSandbox({
          sandbox,
          apiKey: env.ANTHROPIC_API_KEY,
          permissionMode: 'acceptEdits',
        })

        await claude.init()

        const result = await claude.run('Create a REST API with Express')

        await claude.close()

        return Response.json({ output: result.result })
      },
    };
    const response = await worker.fetch(new Request('http://example.test/'), env);
    expect(await response.json()).toEqual({ output: 'Mock reply.' });
  }, RUN_TIMEOUT);

  it('Quick Start: Database Container in a Worker', async () => {
    // (test) The rows the example reads.
    const setup = createPostgresContainer(env.POSTGRES_CONTAINER);
    await setup.execute('CREATE TABLE users (id serial PRIMARY KEY, name text, active boolean)');
    await setup.execute("INSERT INTO users (name, active) VALUES ('Ada', true), ('Bob', false)");
    await setup.close();

    const worker = {
      async fetch(_request: Request, env: Env): Promise<Response> { // (test) `request` unused: `_`
        const pg = createPostgresContainer(env.POSTGRES_CONTAINER)

        await pg.connect()

        const users = await pg.query<{ id: number; name: string }>(
          'SELECT * FROM users WHERE active = $1',
          [true]
        )

        await pg.close()

        return Response.json({ users })
      },
    };
    const response = await worker.fetch(new Request('http://example.test/'), env);
    expect(await response.json()).toEqual({ users: [{ id: 1, name: 'Ada', active: true }] });
  });

  it('Quick Start: RPC Client (Browser/Node.js)', async () => {
    const client = createSandboxClient({
      auth: TEST_KEYS.main, // (test) 'your-api-key'
      ...toThisWorker, // (test)
    })

    // Create and use a sandbox
    const instance = await client.agents.create({ type: 'claude-code' })
    const result = await client.agents.run(instance.id, 'Hello world')

    console.log(result.stdout)
    // Its model calls go through the engine's model gateway to the real API (no key, and no
    // mock for sandboxes made through the registry): the run fails and says why.
    expect(result).toMatchObject({ success: false, error: expect.any(String) });
    client.close();
  });

  it('ClaudeCodeSandbox', async () => {
    const sessionId = session('claude');
    // Using factory function
    const claude = createClaudeCodeSandbox({
      sandbox: getSandbox(env.CLAUDE_CODE_SANDBOX, sessionId),
      apiKey: env.ANTHROPIC_API_KEY,
      permissionMode: 'acceptEdits',
      model: 'claude-sonnet-4-20250514',
      workingDirectory: '/workspace',
    })

    // Or using class directly
    const sandbox = getSandbox(env.CLAUDE_CODE_SANDBOX, sessionId); // (test) the `sandbox` it names
    const claude2 = new ClaudeCodeSandbox({
      sandbox,
      apiKey: env.ANTHROPIC_API_KEY,
      permissionMode: 'bypassPermissions',
      maxThinkingTokens: 10000,
    })
    expect(claude2).toBeInstanceOf(ClaudeCodeSandbox);

    // Initialize (starts container, verifies claude CLI)
    await claude.init()

    // Run a prompt
    const result = await claude.run('Build a todo app with React', {
      timeout: 600000, // 10 minutes
    })

    // Access results
    console.log(result.success)      // boolean
    console.log(result.result)       // parsed JSON output
    console.log(result.stdout)       // raw stdout
    console.log(result.sessionId)    // for conversation continuity
    expect(result).toMatchObject({ success: true, result: 'Mock reply.', sessionId: expect.any(String) });
    expect(result.stdout).toContain('"type":"result"');

    // Execute shell commands directly
    await claude.writeFile('/workspace/package.json', '{"name":"todo","private":true}'); // (test) a project
    const execResult = await claude.exec('npm install')
    expect(execResult.exitCode).toBe(0);

    // Clone and work on a repository
    const repoResult = await claude.runOnRepo(
      'https://github.com/user/repo',
      'Add unit tests for the auth module',
      { branch: 'main', shallow: true }
    )
    // No GitHub from here: the clone fails, and the run says so (git's words) without running.
    expect(repoResult).toMatchObject({ success: false, error: expect.stringMatching(/clone|github/i) });

    // Multi-turn conversation
    const results = await claude.runConversation([
      'Create a new Express server',
      'Add authentication middleware',
      'Write tests for the auth routes',
    ])
    expect(results.map((r) => r.success)).toEqual([true, true, true]);
    expect(new Set(results.map((r) => r.sessionId)).size).toBe(1);

    // File operations
    await claude.writeFile('/workspace/config.json', JSON.stringify({ port: 3000 }))
    const content = await claude.readFile('/workspace/package.json')
    const files = await claude.listFiles('/workspace')
    expect(JSON.parse(content)).toMatchObject({ name: 'todo' });
    expect(files.map((f) => f.name)).toEqual(expect.arrayContaining(['config.json', 'package.json']));

    // Clean up
    await claude.close()
  }, RUN_TIMEOUT);

  it('OpenCodeSandbox', async () => {
    const sessionId = session('opencode');
    const opencode = createOpenCodeSandbox({
      sandbox: getSandbox(env.OPENCODE_SANDBOX, sessionId),
      provider: 'anthropic', // or 'openai', 'ollama'
      apiKey: env.ANTHROPIC_API_KEY,
    })

    await opencode.init()
    const result = await opencode.run('Refactor this codebase to use TypeScript')
    await opencode.close()
    expect(result).toMatchObject({ success: true, result: 'Mock reply.' });
  }, RUN_TIMEOUT);

  it('CodexSandbox', async () => {
    const sessionId = session('codex');
    const codex = createCodexSandbox({
      sandbox: getSandbox(env.CODEX_SANDBOX, sessionId),
      apiKey: env.OPENAI_API_KEY,
      approvalMode: 'full-auto',
    })

    await codex.init()
    const result = await codex.run('Generate a Python script to process CSV files')
    await codex.close()
    expect(result).toMatchObject({ success: true, result: 'Mock reply.' });
    // The modes that would ask a person first are refused, not run as full-auto.
    expect(() => createCodexSandbox({ sandbox: getSandbox(env.CODEX_SANDBOX, sessionId), approvalMode: 'suggest' })).toThrow(
      /full-auto/,
    );
  }, RUN_TIMEOUT);

  it('Factory Function', async () => {
    const sessionId = session('factory');
    const type = 'claude-code' // or 'opencode', 'codex'

    let made: unknown = null; // (test) what the example makes
    if (isAgentType(type)) {
      const agent = createAgentSandbox(type, {
        sandbox: getSandbox(env.SANDBOX, sessionId),
        apiKey: env.API_KEY,
      })
      made = agent;
    }
    expect(made).toBeInstanceOf(ClaudeCodeSandbox);
  });

  it('PostgresContainer', async () => {
    const pg = createPostgresContainer(env.POSTGRES_CONTAINER, {
      database: 'myapp',
      username: 'postgres',
      password: 'secret',
      name: session('pg'), // (test) a database of its own, not the Quick Start's
    })

    // Connect (waits for container startup)
    await pg.connect()

    // Check startup time
    console.log(`Cold start: ${pg.getStartupTime()}ms`)
    expect(pg.getStartupTime()).toBeGreaterThanOrEqual(0);

    // Execute DDL
    await pg.execute(`
      CREATE TABLE users (
        id SERIAL PRIMARY KEY,
        email TEXT UNIQUE NOT NULL,
        name TEXT
      )
    `)

    // Insert with parameters (SQL injection safe)
    await pg.execute(
      'INSERT INTO users (email, name) VALUES ($1, $2)',
      ['alice@example.com', 'Alice']
    )

    // Query with typed results
    interface User {
      id: number
      email: string
      name: string
    }
    const users = await pg.query<User>('SELECT * FROM users WHERE id = $1', [1])
    expect(users).toEqual([{ id: 1, email: 'alice@example.com', name: 'Alice' }]);

    // Query with full metadata
    const result = await pg.queryWithMetadata<User>('SELECT * FROM users')
    console.log(result.rows)     // User[]
    console.log(result.rowCount) // number
    console.log(result.fields)   // column metadata
    console.log(result.command)  // 'SELECT'
    expect(result).toMatchObject({ rowCount: 1, command: 'SELECT' });
    expect(result.fields.map((f) => f.name)).toEqual(['id', 'email', 'name']);

    // (test) The accounts the transaction example moves money between.
    await pg.execute('CREATE TABLE accounts (id int PRIMARY KEY, balance int)');
    await pg.execute('INSERT INTO accounts VALUES (1, 500), (2, 0)');

    // Transactions
    await pg.transaction(async (execute) => {
      await execute('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [100, 1])
      await execute('UPDATE accounts SET balance = balance + $1 WHERE id = $2', [100, 2])
      // Auto-commits on success, auto-rollback on error
    })
    expect(await pg.query('SELECT id, balance FROM accounts ORDER BY id')).toEqual([
      { id: 1, balance: 400 },
      { id: 2, balance: 100 },
    ]);

    // Database administration
    const version = await pg.version()
    const tables = await pg.listTables()
    const columns = await pg.describeTable('users')
    const databases = await pg.listDatabases()
    await pg.createDatabase('newdb')
    expect(version).toMatch(/^PostgreSQL 15/);
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['users', 'accounts']));
    expect(columns.columns.map((c) => c.name)).toEqual(['id', 'email', 'name']);
    expect(databases.map((d) => d.name)).toContain('myapp');
    expect((await pg.listDatabases()).map((d) => d.name)).toContain('newdb');

    // Health check
    const isHealthy = await pg.ping()
    expect(isHealthy).toBe(true);

    // Clean up
    await pg.close()
    expect(PostgresContainer).toBeTypeOf('function');
  });

  it('SQLiteContainer', async () => {
    const sqlite = createSQLiteContainer(env.SQLITE_CONTAINER, {
      database: '/data/app.db',
    })

    await sqlite.connect()

    // SQLite operations
    await sqlite.execute('CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)')
    await sqlite.execute('INSERT INTO tasks (title) VALUES (?)', ['Learn containers'])

    const tasks = await sqlite.query<{ id: number; title: string }>(
      'SELECT * FROM tasks'
    )
    expect(tasks).toEqual([{ id: 1, title: 'Learn containers' }]);

    // SQLite-specific features
    const tableInfo = await sqlite.tableInfo('tasks')
    const tables = await sqlite.listTables()
    expect(tableInfo.map((c) => [c.name, c.primaryKey])).toEqual([
      ['id', true],
      ['title', false],
    ]);
    expect(tables.map((t) => t.name)).toContain('tasks');

    await sqlite.close()
  });

  it('DuckDBContainer', async () => {
    const duckdb = createDuckDBContainer(env.DUCKDB_CONTAINER)

    await duckdb.connect()

    // Create and query tables
    await duckdb.execute(`
      CREATE TABLE events (
        event_type VARCHAR,
        user_id VARCHAR,
        timestamp TIMESTAMP,
        properties JSON
      )
    `)
    // (test) Events to count.
    await duckdb.execute(
      "INSERT INTO events VALUES ('click', 'u1', '2026-01-01 10:00', '{}'), ('click', 'u2', '2026-01-01 10:01', '{}'), ('view', 'u1', '2026-01-01 10:02', '{}')",
    );

    // Analytics queries
    const stats = await duckdb.query(`
      SELECT event_type, COUNT(*) as count
      FROM events
      GROUP BY event_type
      ORDER BY count DESC
    `)
    expect(stats).toEqual([
      { event_type: 'click', count: 2 },
      { event_type: 'view', count: 1 },
    ]);

    // Load from Parquet files (DuckDB specialty)
    const parquetData = duckdb.query(`
      SELECT * FROM read_parquet('https://example.com/data.parquet')
    `)
    // This database has no network, and libduckdb (from npm) has no httpfs: the error says both.
    await expect(parquetData).rejects.toMatchObject({
      code: -32014,
      message: expect.stringMatching(/httpfs extension is not available.*network policy does not allow example\.com/s),
    });

    // Export data
    const csvExport = await duckdb.exportData('events', 'csv')
    expect(csvExport.split('\r\n')[0]).toBe('event_type,user_id,timestamp,properties');

    await duckdb.close()
  });

  it('RPC Client', async () => {
    const client = createSandboxClient({
      url: 'wss://sandbox.do/rpc',  // or custom endpoint
      auth: TEST_KEYS.main, // (test) 'your-api-key'
      timeout: 30000,
      reconnect: true,
      ...toThisWorker, // (test)
    })
    expect(SANDBOX_DO_URL).toBe('wss://sandbox.do/rpc');

    // Agent operations
    const agent = await client.agents.create({
      type: 'claude-code',
      size: 'standard-2',
      env: { DEBUG: 'true' },
    })

    const status = await client.agents.get(agent.id)
    const agents = await client.agents.list()
    expect(status).toMatchObject({ id: agent.id, size: 'standard-2', env: ['DEBUG'] });
    expect(agents.map((a) => a.id)).toContain(agent.id);

    const result = await client.agents.run(agent.id, 'Create a hello world app', {
      model: 'claude-sonnet-4-20250514',
      permissionMode: 'acceptEdits',
      timeout: 300000,
    })
    expect(result).toMatchObject({ success: false, error: expect.any(String) }); // the real API, unreachable here

    await client.agents.writeFile(agent.id, '/workspace/package.json', '{"name":"hello","private":true}'); // (test)
    const execResult = await client.agents.exec(agent.id, 'npm install', {
      cwd: '/workspace',
      timeout: 60000,
    })
    expect(execResult.exitCode).toBe(0);

    await client.agents.writeFile(agent.id, '/workspace/config.json', '{}')
    const content = await client.agents.readFile(agent.id, '/workspace/package.json')
    expect(JSON.parse(content)).toMatchObject({ name: 'hello' });

    // A sandbox made without network cannot clone: the egress proxy refuses github.com, and git
    // says so.
    const clone = await client.agents.cloneRepo(agent.id, 'https://github.com/user/repo', {
      branch: 'main',
      shallow: true,
    })
    expect(clone).toMatchObject({ exitCode: 128, stderr: expect.stringMatching(/CONNECT tunnel failed, response 403/) });

    await client.agents.stop(agent.id)

    // Database operations
    const db = await client.databases.create({
      type: 'postgres',
      size: 'standard-1',
    })
    // (test) The table the example reads and updates.
    await client.databases.execute(db.id, 'CREATE TABLE users (id int PRIMARY KEY, active bool)');
    await client.databases.execute(db.id, 'INSERT INTO users VALUES (123, true)');

    const rows = await client.databases.query<{ id: number }>(
      db.id,
      'SELECT * FROM users WHERE active = $1',
      [true]
    )
    expect(rows).toEqual([{ id: 123, active: true }]);

    const { rowsAffected } = await client.databases.execute(
      db.id,
      'UPDATE users SET active = $1 WHERE id = $2',
      [false, 123]
    )
    expect(rowsAffected).toBe(1);

    await client.databases.stop(db.id)

    // Session management
    const session = await client.sessions.current()
    const quota = await client.sessions.quota()
    expect(session).toMatchObject({ backend: 'cloudflare' });
    expect(quota).toMatchObject({ running: { limit: 8 } });

    // Connect directly to a specific sandbox
    const sandbox = connectSandbox(agent.id /* (test) 'sandbox-id' */, { auth: TEST_KEYS.main, ...toThisWorker })
    await client.agents.start(agent.id); // (test) it was stopped above
    expect((await sandbox.exec('ls -la')).stdout).toContain('package.json');
    const status2 = await sandbox.status()
    expect(status2).toMatchObject({ id: agent.id, status: 'running' });
    await sandbox.stop()
    sandbox.close();
    client.close();
  });

  it('REST API', async () => {
    // Health check
    expect(await (await SELF.fetch('http://sandbox.test/health')).json()).toMatchObject({ status: 'ok' });
    // List agents
    expect((await http('GET', '/api/agents')).status).toBe(200);
    // Create agent
    const created = await http('POST', '/api/agents', { body: { type: 'claude-code', size: 'standard-2' } });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }).id;
    // Get agent
    expect((await http('GET', `/api/agents/${id}`)).body).toMatchObject({ id, type: 'claude-code' });
    // Run prompt (made without network: the run says it cannot reach its model)
    const run = await http('POST', `/api/agents/${id}/run`, {
      body: { prompt: 'Create a hello world app', options: { timeout: 300000 } },
    });
    expect(run.body).toMatchObject({ success: false });
    // Execute command
    await http('PUT', `/api/agents/${id}/files/content?path=package.json`, { rawBody: '{"name":"rest","private":true}' }); // (test)
    const exec = await http('POST', `/api/agents/${id}/exec`, { body: { command: 'npm install', options: { cwd: '/workspace' } } });
    expect(exec.body).toMatchObject({ exitCode: 0 });
    // Stop agent (the original's DELETE: deletes it)
    expect((await http('DELETE', `/api/agents/${id}`)).body).toEqual({ id, deleted: true });

    // Database operations
    expect((await http('GET', '/api/databases')).status).toBe(200);
    const db = (await http('POST', '/api/databases', { body: { type: 'sqlite', size: 'lite' } })).body as { id: string };
    expect((await http('GET', `/api/databases/${db.id}`)).body).toMatchObject({ id: db.id, kind: 'database' });
    expect((await http('POST', `/api/databases/${db.id}/execute`, { body: { sql: 'CREATE TABLE t (n int)' } })).status).toBe(200);
    expect((await http('POST', `/api/databases/${db.id}/query`, { body: { sql: 'SELECT ? + 1 AS n', params: [1] } })).body).toMatchObject({
      rows: [{ n: 2 }],
    });
    expect((await http('DELETE', `/api/databases/${db.id}`)).body).toEqual({ id: db.id, deleted: true });

    // Session info
    expect((await http('GET', '/api/sessions/current')).body).toMatchObject({ backend: 'cloudflare' });
    expect((await http('GET', '/api/sessions/quota')).body).toMatchObject({ running: { limit: 8 } });
  });

  it('Wrangler Configuration: the bindings and classes of the example exist', () => {
    // The example's [[containers]] and [[durable_objects.bindings]], as this Worker names them.
    for (const binding of ['CLAUDE_CODE_SANDBOX', 'POSTGRES_CONTAINER', 'SANDBOX_DO'] as const) {
      expect(testEnv[binding]).toBeDefined();
    }
    expect(CLAUDE_CODE_WRANGLER_CONFIG).toMatchObject({
      binding: 'CLAUDE_CODE_SANDBOX',
      className: 'ClaudeCodeContainer',
      image: './dockerfiles/Dockerfile.claude-code',
      maxInstances: 5,
      defaultPort: 8080,
      sleepAfter: '10m',
    });
  });

  it('Pre-built wrangler configs', () => {
    for (const c of [CLAUDE_CODE_WRANGLER_CONFIG, OPENCODE_WRANGLER_CONFIG, CODEX_WRANGLER_CONFIG, SQLITE_WRANGLER_CONFIG, DUCKDB_WRANGLER_CONFIG]) {
      expect(c.defaultPort).toBe(8080);
    }
    console.log(POSTGRES_WRANGLER_CONFIG)
    expect(POSTGRES_WRANGLER_CONFIG).toEqual({
      binding: 'POSTGRES_CONTAINER',
      className: 'PostgresContainer',
      image: './dockerfiles/Dockerfile.postgres',
      defaultPort: 8080,
      maxInstances: 10,
      sleepAfter: '10m',
      size: 'standard-1',
    });
  });
});
