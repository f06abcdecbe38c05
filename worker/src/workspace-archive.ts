// A container's workspace across its sleep: a container's disk does not outlive it, so before it
// stops, its engine archives the sandbox's /workspace (`sandbox.archive`, a gzip'd tar handed
// out in chunks) into R2; the next engine sandbox made for the container gets it back
// (`sandbox.restore`) before its first use. Database files live in /workspace too, and the
// engine stops the sandbox first, so a database is archived shut down cleanly.

import type { EngineConnection } from './engine';

/** Bytes per engine call (the engine's maximum is 8 MiB); also R2's part size (5 MiB minimum). */
const CHUNK = 8 * 1024 * 1024;

interface SandboxListing {
  id: string;
  status: string;
  type?: string;
  name?: string;
}

interface ArchiveChunk {
  size: number;
  offset: number;
  length: number;
  contentBase64: string;
  done: boolean;
}

/** Where a container's workspace is kept: per type and sandbox id (or getSandbox name). */
export function workspaceKey(type: string | undefined, sandboxId: string): string {
  return `workspaces/${type ?? 'sandbox'}/${encodeURIComponent(sandboxId)}.tar.gz`;
}

export function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

async function sandboxesOf(conn: EngineConnection): Promise<SandboxListing[]> {
  const agents = (await conn.request('agents.list', {})) as { agents: SandboxListing[] };
  const dbs = (await conn.request('databases.list', {})) as { databases: SandboxListing[] };
  return [...agents.agents, ...dbs.databases];
}

/**
 * Archives the workspace of the engine's sandbox (a container holds one) into `key`, stopping
 * the sandbox first. Answers how many were saved (0 when the engine has none).
 */
export async function saveWorkspace(conn: EngineConnection, bucket: R2Bucket, key: string, label: string): Promise<number> {
  const all = await sandboxesOf(conn);
  const sb = all.find((s) => s.name === label) ?? all[0];
  if (sb === undefined) return 0;
  if (sb.status !== 'stopped' && sb.status !== 'sleeping' && sb.status !== 'error') await conn.request('sandbox.stop', { id: sb.id });

  const first = (await conn.request('sandbox.archive', { id: sb.id, offset: 0, length: CHUNK })) as ArchiveChunk;
  const meta = { customMetadata: { engineType: sb.type ?? '', size: String(first.size), savedAt: new Date().toISOString() } };
  if (first.done) {
    await bucket.put(key, fromBase64(first.contentBase64), meta);
    return 1;
  }
  const upload = await bucket.createMultipartUpload(key, meta);
  try {
    const parts: R2UploadedPart[] = [];
    let chunk = first;
    for (let n = 1; ; n++) {
      parts.push(await upload.uploadPart(n, fromBase64(chunk.contentBase64)));
      if (chunk.done) break;
      chunk = (await conn.request('sandbox.archive', { id: sb.id, offset: chunk.offset + chunk.length, length: CHUNK })) as ArchiveChunk;
    }
    await upload.complete(parts);
  } catch (e) {
    await upload.abort().catch(() => undefined);
    throw e;
  }
  return 1;
}

/**
 * Puts the archive at `key` (if any) into the engine's sandbox `engineId`: stops it, replaces
 * its workspace, starts it again. Answers whether there was an archive.
 */
export async function restoreWorkspace(conn: EngineConnection, bucket: R2Bucket, key: string, engineId: string): Promise<boolean> {
  const obj = await bucket.get(key);
  if (obj === null) return false;
  const status = ((await conn.request('sandbox.status', { id: engineId })) as { status: string }).status;
  if (status !== 'stopped' && status !== 'sleeping' && status !== 'error') await conn.request('sandbox.stop', { id: engineId });

  const reader = obj.body.getReader();
  let offset = 0;
  let pending = new Uint8Array(0);
  const send = async (bytes: Uint8Array, done: boolean) => {
    await conn.request('sandbox.restore', { id: engineId, offset, contentBase64: toBase64(bytes), done });
    offset += bytes.length;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (value !== undefined) {
      const joined = new Uint8Array(pending.length + value.length);
      joined.set(pending);
      joined.set(value, pending.length);
      pending = joined;
      while (pending.length > CHUNK) {
        await send(pending.subarray(0, CHUNK), false);
        pending = pending.slice(CHUNK);
      }
    }
    if (done) break;
  }
  await send(pending, true);
  await conn.request('sandbox.start', { id: engineId });
  return true;
}
