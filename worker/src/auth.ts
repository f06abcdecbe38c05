// API keys: extraction from a request (header or WebSocket subprotocol), hashing and comparison.
// Keys are kept only as SHA-256 hashes; comparisons run in constant time over every stored hash.

export const SUBPROTOCOL = 'sandbox.v1';
const BEARER_PROTOCOL_PREFIX = 'bearer.';
/** Query parameters that would carry a key in a URL; their presence alone refuses the request. */
const KEY_QUERY_PARAMS = ['key', 'apikey', 'api_key', 'token', 'access_token', 'auth'];

export type KeySource = 'header' | 'subprotocol';

export interface PresentedKey {
  key: string;
  source: KeySource;
}

/** Result of reading the credentials of a request; `refused` means a key was put in the URL. */
export type Credentials = { refused: true } | { refused: false; presented: PresentedKey | null };

export function readCredentials(request: Request): Credentials {
  const url = new URL(request.url);
  for (const name of url.searchParams.keys()) {
    if (KEY_QUERY_PARAMS.includes(name.toLowerCase())) return { refused: true };
  }
  const auth = request.headers.get('Authorization');
  if (auth !== null) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return { refused: false, presented: m ? { key: m[1]!, source: 'header' } : null };
  }
  const protocols = parseSubprotocols(request.headers.get('Sec-WebSocket-Protocol'));
  if (protocols.includes(SUBPROTOCOL)) {
    const bearer = protocols.find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
    if (bearer !== undefined && bearer.length > BEARER_PROTOCOL_PREFIX.length) {
      return { refused: false, presented: { key: bearer.slice(BEARER_PROTOCOL_PREFIX.length), source: 'subprotocol' } };
    }
  }
  return { refused: false, presented: null };
}

export function parseSubprotocols(header: string | null): string[] {
  if (header === null) return [];
  return header
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The subprotocol list a browser offers: `sandbox.v1, bearer.KEY`. */
export function subprotocolsFor(key: string): string[] {
  return [SUBPROTOCOL, BEARER_PROTOCOL_PREFIX + key];
}

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export async function hashKey(key: string): Promise<string> {
  return toHex(await sha256(key));
}

/** Constant-time equality of two equally long byte strings (false for different lengths). */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * Finds the entry whose hash equals `hash` by comparing against every candidate in constant
 * time, so that neither the position nor the common prefix of a match shows in the timing.
 */
export function findByHash<T extends { hash: string }>(candidates: T[], hash: Uint8Array): T | null {
  let found: T | null = null;
  for (const c of candidates) {
    if (timingSafeEqual(fromHex(c.hash), hash) && found === null) found = c;
  }
  return found;
}

function randomBase64Url(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** A new API key: only token characters, so that it can travel as a WebSocket subprotocol. */
export function generateKey(): string {
  return `sk_${randomBase64Url(32)}`;
}
