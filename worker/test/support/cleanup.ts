// Deletes every sandbox of the test keys, so that each test starts within quota.
import { TEST_KEYS } from './keys';
import { http, otherKey } from './worker';

export async function deleteAllSandboxes(keys?: string[]): Promise<void> {
  for (const key of keys ?? [TEST_KEYS.main, await otherKey()]) {
    for (const kind of ['agents', 'databases'] as const) {
      const r = await http('GET', `/api/${kind}`, { key });
      if (r.status !== 200) continue;
      for (const s of (r.body as Record<string, { id: string }[]>)[kind] ?? []) {
        await http('DELETE', `/api/${kind}/${s.id}`, { key });
      }
    }
  }
}
