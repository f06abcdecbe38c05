// Key management (docs/protocol.md 1.2) and authentication against the registry.

import { findByHash, generateKey, hashKey, randomHex, sha256 } from './auth';
import { InvalidParamsError, NotFoundError } from './errors';
import type { KeyRow, Registry } from './registry';

export interface KeyInfo {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

function info(k: KeyRow): KeyInfo {
  return { id: k.id, name: k.name, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt };
}

/** The id of a bootstrap key is derived from its hash, so it stays stable across deploys. */
export function bootstrapKeyId(hash: string): string {
  return `key_${hash.slice(0, 12)}`;
}

export class KeyStore {
  private syncedFrom: string | null = null;

  constructor(private readonly registry: Registry) {}

  /** Brings the bootstrap keys in line with API_KEYS (comma separated), once per distinct value. */
  async sync(apiKeys: string | undefined): Promise<void> {
    const value = apiKeys ?? '';
    if (this.syncedFrom === value) return;
    const keys = [];
    for (const k of value.split(',').map((s) => s.trim()).filter((s) => s.length > 0)) {
      const hash = await hashKey(k);
      keys.push({ id: bootstrapKeyId(hash), hash });
    }
    this.registry.syncBootstrapKeys(keys, new Date().toISOString());
    this.syncedFrom = value;
  }

  /** The active key matching `key`, compared in constant time against every stored hash. */
  async authenticate(key: string): Promise<KeyRow | null> {
    const hash = await sha256(key);
    const found = findByHash(this.registry.activeKeys(), hash);
    if (found !== null) this.registry.touchKey(found.id, new Date().toISOString());
    return found;
  }

  async create(name: string): Promise<Omit<KeyInfo, 'lastUsedAt'> & { key: string }> {
    const key = generateKey();
    const row = { id: `key_${randomHex(6)}`, name, hash: await hashKey(key), createdAt: new Date().toISOString() };
    this.registry.insertKey(row);
    return { id: row.id, name: row.name, key, createdAt: row.createdAt };
  }

  list(): { keys: KeyInfo[] } {
    return { keys: this.registry.activeKeys().map(info) };
  }

  /** Revokes `id`; refuses to revoke the caller's own key when it is the last one. */
  revoke(callerId: string, id: string): void {
    const k = this.registry.key(id);
    if (k === null) throw new NotFoundError(`key ${id}`);
    if (id === callerId && this.registry.activeKeys().length <= 1) {
      throw new InvalidParamsError('id', 'The last key cannot revoke itself');
    }
    this.registry.revokeKey(id);
  }
}
