// Key management (docs/protocol.md 1.2) and authentication against the registry.

import { findByHash, generateKey, hashKey, randomHex, sha256 } from './auth';
import { InvalidParamsError, NotFoundError, UnauthorizedError } from './errors';
import type { KeyRow, Registry } from './registry';

export interface KeyInfo {
  id: string;
  name: string;
  admin: boolean;
  createdAt: string;
  lastUsedAt: string | null;
}

function info(k: KeyRow): KeyInfo {
  return { id: k.id, name: k.name, admin: k.admin, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt };
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

  /** Whether `id` is an active admin key: a bootstrap key, or one created with `admin: true`. */
  isAdmin(id: string): boolean {
    return this.registry.key(id)?.admin === true;
  }

  /** keys.create: admin keys only; a new key is an admin key only when asked for. */
  async create(callerId: string, name: string, admin = false): Promise<Omit<KeyInfo, 'lastUsedAt'> & { key: string }> {
    this.requireAdmin(callerId);
    const key = generateKey();
    const row = { id: `key_${randomHex(6)}`, name, hash: await hashKey(key), createdAt: new Date().toISOString(), admin };
    this.registry.insertKey(row);
    return { id: row.id, name: row.name, admin, key, createdAt: row.createdAt };
  }

  /** keys.list: every key for an admin key, only itself for any other. */
  list(callerId: string): { keys: KeyInfo[] } {
    const all = this.registry.activeKeys();
    const admin = all.some((k) => k.id === callerId && k.admin);
    return { keys: all.filter((k) => admin || k.id === callerId).map(info) };
  }

  /** keys.revoke: admin keys only; the last admin key stays (or nobody could manage keys). */
  revoke(callerId: string, id: string): void {
    this.requireAdmin(callerId);
    const k = this.registry.key(id);
    if (k === null) throw new NotFoundError(`key ${id}`);
    if (k.admin && this.registry.activeKeys().filter((x) => x.admin).length <= 1) {
      throw new InvalidParamsError('id', 'The last admin key cannot be revoked');
    }
    this.registry.revokeKey(id);
  }

  /** Throws -32001 unless `callerId` is an admin key. */
  requireAdmin(callerId: string): void {
    if (!this.isAdmin(callerId)) throw new UnauthorizedError('Only an admin key can manage other keys');
  }
}
