// A container's workspace across its sleep, under miniflare: there are no containers here, so
// each Container object forwards to the test's one real engine (ENGINE_URL), and "the container
// came back empty" is an engine sandbox that is gone. What is real: the Container object's sleep
// hook, the engine's archive of the stopped sandbox, R2 (miniflare's), and the restore into the
// next sandbox made for the same container.
import { env, runInDurableObject } from 'cloudflare:test';
import { afterAll, describe, expect, it } from 'vitest';
import type { SandboxContainer } from '../src/containers';
import { EngineConnection, UrlEngineTarget } from '../src/engine';
import { getSandbox } from '../src/lib';
import { workspaceKey } from '../src/workspace-archive';
import { hasEngine } from './support/engine';

const NAME = `sleep-${Math.random().toString(36).slice(2, 8)}`;

function engine(): EngineConnection {
  return new EngineConnection(new UrlEngineTarget(env.ENGINE_URL, env.ENGINE_KEY));
}

async function deleteNamed(prefix: string): Promise<void> {
  const conn = engine();
  for (const kind of ['agents', 'databases'] as const) {
    const list = (await conn.request(`${kind}.list`, {})) as Record<string, { id: string; name?: string }[]>;
    for (const s of list[kind] ?? []) if (s.name?.startsWith(prefix)) await conn.request(`${kind}.delete`, { id: s.id });
  }
  conn.close();
}

describe.skipIf(!hasEngine)('a container workspace survives its sleep (R2)', () => {
  afterAll(() => deleteNamed(NAME));

  it('is archived when the container sleeps and restored into the next sandbox of the container', async () => {
    const name = `${NAME}-agent`;
    const sb = getSandbox(env.CLAUDE_CODE_SANDBOX, name);
    await sb.writeFile('/workspace/notes/today.md', '# kept across sleep\n', { parents: true });
    await sb.exec('mkdir -p src && echo "print(1)" > src/app.py && ln -s app.py src/link.py');
    const firstId = await sb.id();
    sb.close();

    // sleepAfter ran out: the hook archives the stopped sandbox's workspace into R2.
    const stub = env.CLAUDE_CODE_SANDBOX.getByName(name);
    await runInDurableObject(stub, async (instance: SandboxContainer) => {
      await instance.onActivityExpired();
    });
    const saved = await env.WORKSPACES.head(workspaceKey('claude-code', name));
    expect(saved).not.toBeNull();
    expect(saved!.size).toBeGreaterThan(100);

    // The container comes back empty: its engine has no such sandbox any more.
    await deleteNamed(name);

    const again = getSandbox(env.CLAUDE_CODE_SANDBOX, name);
    expect(await again.id()).not.toBe(firstId);
    expect(await again.readFile('/workspace/notes/today.md')).toBe('# kept across sleep\n');
    const r = await again.exec('cat src/app.py && readlink src/link.py');
    expect(r.stdout).toBe('print(1)\napp.py\n');
    again.close();
  });

  it('keeps a database: rows committed before the sleep are there after it', async () => {
    const name = `${NAME}-db`;
    const { createSQLiteContainer } = await import('../src/lib');
    const db = createSQLiteContainer(env.SQLITE_CONTAINER, { name, database: '/data/app.db' });
    await db.execute('CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)');
    await db.execute('INSERT INTO tasks (title) VALUES (?)', ['before the sleep']);
    await db.close();

    await runInDurableObject(env.SQLITE_CONTAINER.getByName(name), async (instance: SandboxContainer) => {
      await instance.onActivityExpired();
    });
    await deleteNamed(name);

    const after = createSQLiteContainer(env.SQLITE_CONTAINER, { name, database: '/data/app.db' });
    expect(await after.query('SELECT title FROM tasks')).toEqual([{ title: 'before the sleep' }]);
    await after.close();
  });

  it('is deleted with its sandbox', async () => {
    const name = `${NAME}-gone`;
    const sb = getSandbox(env.CLAUDE_CODE_SANDBOX, name);
    await sb.exec('echo x > x');
    sb.close();
    const stub = env.CLAUDE_CODE_SANDBOX.getByName(name);
    await runInDurableObject(stub, (instance: SandboxContainer) => instance.onActivityExpired());
    expect(await env.WORKSPACES.head(workspaceKey('claude-code', name))).not.toBeNull();
    await runInDurableObject(stub, (instance: SandboxContainer) => instance.destroy());
    expect(await env.WORKSPACES.head(workspaceKey('claude-code', name))).toBeNull();
    await deleteNamed(name);
  });
});
