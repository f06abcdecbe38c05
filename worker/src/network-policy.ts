// A sandbox's network policy (docs/protocol.md 3.5) on Cloudflare: validated with the same
// grammar as the local engine, kept in its canonical form, and mapped onto the container's egress
// settings (`enableInternet`, `allowedHosts`, `deniedHosts`). Cloudflare matches host names (with
// `*` globs) and knows neither ports nor networks: an allow entry it cannot enforce exactly is
// refused (-32602) rather than widened; a deny entry with a port denies the whole host (stricter).
// Loopback and private allow entries name places a container cannot reach at all: they are kept
// in the policy and have nothing to map to.

import { type AgentType, isAgentType } from './config';
import { InvalidParamsError } from './errors';

/** `false`, `true`, or `{allow?, deny?}` (canonical: see canonicalNetworkPolicy). */
export type NetworkPolicy = boolean | { allow?: string[]; deny?: string[] };

export const MAX_ENTRIES = 256;
export const MAX_ENTRY_CHARS = 300;

/** One parsed entry. */
export interface PolicyEntry {
  kind: 'host' | 'suffix' | 'address' | 'network';
  /** host / suffix: the name (lower case, no trailing dot); address / network: the address. */
  host: string;
  port?: number;
  prefix?: number;
  /** The canonical text. */
  text: string;
}

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f:.]+$/;

function hostName(s: string): string | null {
  let h = s.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h.length === 0 || h.length > 253) return null;
  return h.split('.').every((l) => LABEL.test(l)) ? h : null;
}

function port(s: string): number | null {
  if (!/^[1-9][0-9]{0,4}$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

/** 10.1.2.3/8 -> 10.0.0.0: the network address, as the engine writes it. */
function maskV4(addr: string, prefix: number): string {
  const n = addr.split('.').reduce((a, b) => a * 256 + Number(b), 0);
  const u = n - (n % 2 ** (32 - prefix));
  return [Math.floor(u / 2 ** 24), Math.floor(u / 2 ** 16) % 256, Math.floor(u / 256) % 256, u % 256].join('.');
}

function isIpv6(s: string): boolean {
  return s.includes(':') && IPV6.test(s.toLowerCase()) && s.split('::').length <= 2;
}

/** Parses one entry; throws a message (the caller adds the field). */
export function parseEntry(input: string): PolicyEntry {
  const s = input.trim();
  if (s.length === 0) throw new Error('an empty entry');
  if (s.length > MAX_ENTRY_CHARS) throw new Error(`longer than ${MAX_ENTRY_CHARS} characters`);
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    const addr = close > 0 ? s.slice(1, close).toLowerCase() : '';
    if (!isIpv6(addr)) throw new Error(`'${s}' is not [IPv6] or [IPv6]:port`);
    const rest = s.slice(close + 1);
    if (rest === '') return { kind: 'address', host: addr, text: addr };
    const p = rest.startsWith(':') ? port(rest.slice(1)) : null;
    if (p === null) throw new Error(`'${s}' has a bad port`);
    return { kind: 'address', host: addr, port: p, text: `[${addr}]:${p}` };
  }
  if (s.includes('/')) {
    const slash = s.indexOf('/');
    const addr = s.slice(0, slash);
    const len = s.slice(slash + 1);
    const v4 = IPV4.test(addr);
    const max = v4 ? 32 : 128;
    if ((!v4 && !isIpv6(addr)) || !/^[0-9]{1,3}$/.test(len) || Number(len) > max) {
      throw new Error(`'${s}' is not a network (address/prefix)`);
    }
    const prefix = Number(len);
    const network = v4 ? maskV4(addr, prefix) : addr.toLowerCase();
    return { kind: 'network', host: network, prefix, text: `${network}/${prefix}` };
  }
  if ((s.match(/:/g) ?? []).length > 1) {
    if (!isIpv6(s)) throw new Error(`'${s}' is not an IPv6 address (with a port, write [address]:port)`);
    return { kind: 'address', host: s.toLowerCase(), text: s.toLowerCase() };
  }
  let host = s;
  let p: number | undefined;
  if (s.includes(':')) {
    host = s.slice(0, s.indexOf(':'));
    const parsed = port(s.slice(s.indexOf(':') + 1));
    if (parsed === null) throw new Error(`'${s}' has a bad port (1..65535)`);
    p = parsed;
  }
  const suffix = p === undefined ? '' : `:${p}`;
  if (IPV4.test(host)) return { kind: 'address', host, port: p, text: host + suffix };
  const wildcard = host.startsWith('*.');
  const name = hostName(wildcard ? host.slice(2) : host);
  if (name === null || name.includes('*')) {
    throw new Error(`'${s}' is not a host name, *.domain, address or network (names are ASCII: use punycode)`);
  }
  return { kind: wildcard ? 'suffix' : 'host', host: name, port: p, text: (wildcard ? '*.' : '') + name + suffix };
}

function readList(o: Record<string, unknown>, key: 'allow' | 'deny', field: string): { entries: PolicyEntry[]; star: boolean } {
  const v = o[key];
  if (v === undefined) return { entries: [], star: false };
  const f = `${field}.${key}`;
  if (!Array.isArray(v)) throw new InvalidParamsError(f, `${f} must be an array of strings`);
  if (v.length > MAX_ENTRIES) throw new InvalidParamsError(f, `${f}: at most ${MAX_ENTRIES} entries`);
  const entries: PolicyEntry[] = [];
  let star = false;
  v.forEach((e: unknown, i: number) => {
    const ef = `${f}[${i}]`;
    if (typeof e !== 'string') throw new InvalidParamsError(ef, `${ef} must be a string`);
    if (key === 'allow' && e.trim() === '*') {
      star = true;
      return;
    }
    let parsed: PolicyEntry;
    try {
      parsed = parseEntry(e);
    } catch (err) {
      throw new InvalidParamsError(ef, `${ef}: ${(err as Error).message}`);
    }
    if (!entries.some((x) => x.text === parsed.text)) entries.push(parsed);
  });
  return { entries, star };
}

/** Validates a policy given at the API and answers its canonical form (as the engine shows it). */
export function parseNetworkPolicy(value: unknown, field = 'network'): NetworkPolicy {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidParamsError(field, `${field} must be false, true or {allow:[...], deny:[...]}`);
  }
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== 'allow' && k !== 'deny') throw new InvalidParamsError(`${field}.${k}`, `${field}.${k}: unknown member (allow and deny are known)`);
  }
  const allow = readList(o, 'allow', field);
  const deny = readList(o, 'deny', field);
  const isPublic = allow.star || o.allow === undefined;
  if (!isPublic && allow.entries.length === 0) return false;
  if (isPublic && allow.entries.length === 0 && deny.entries.length === 0) return true;
  const out: { allow?: string[]; deny?: string[] } = {};
  if (allow.entries.length > 0 || !isPublic) out.allow = (isPublic ? ['*'] : []).concat(allow.entries.map((e) => e.text));
  if (deny.entries.length > 0) out.deny = deny.entries.map((e) => e.text);
  return out;
}

/** The host of an agent type's model API (the provider's, or the one in its env). */
export function providerHost(type: AgentType, env: Record<string, string>): string {
  const variable = type === 'claude-code' ? 'ANTHROPIC_BASE_URL' : 'OPENAI_BASE_URL';
  const fallback = type === 'claude-code' ? 'api.anthropic.com' : 'api.openai.com';
  try {
    const u = new URL(env[variable] ?? '');
    if (u.protocol === 'http:' || u.protocol === 'https:') return u.hostname.toLowerCase();
  } catch {
    // no or a bad URL: the provider's
  }
  return fallback;
}

/** What a container's egress settings become. */
export interface ContainerEgress {
  enableInternet: boolean;
  allowedHosts?: string[];
  deniedHosts?: string[];
}

const LOOPBACK_OR_PRIVATE_V4 = [/^127\./, /^10\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./, /^169\.254\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./];

function isUnreachableFromACloudContainer(e: PolicyEntry): boolean {
  if (e.kind === 'address' || e.kind === 'network') {
    if (e.host.includes(':')) return e.host === '::1' || /^f[cd]/.test(e.host) || e.host.startsWith('fe80');
    return LOOPBACK_OR_PRIVATE_V4.some((r) => r.test(e.host));
  }
  return false;
}

/** The entries of a policy that open loopback or non-public networks (an admin key's to give). */
export function privilegedEntries(policy: NetworkPolicy): string[] {
  if (typeof policy !== 'object') return [];
  return (policy.allow ?? []).filter((text) => text !== '*' && isUnreachableFromACloudContainer(parseEntry(text)));
}

/**
 * Maps a canonical policy onto Cloudflare's container egress settings. Agent sandboxes may reach
 * their provider's API host whatever the policy, unless `deny` names it (as on the local engine
 * without its model gateway, which a container does not have).
 */
export function containerEgress(policy: NetworkPolicy, kind: string, type: string, env: Record<string, string> = {}, field = 'network'): ContainerEgress {
  const o = typeof policy === 'object' ? policy : {};
  const isPublic = policy === true || (typeof policy === 'object' && (o.allow === undefined || o.allow.includes('*')));
  const denied: string[] = [];
  (o.deny ?? []).forEach((text, i) => {
    const e = parseEntry(text);
    if (e.kind === 'network') {
      throw new InvalidParamsError(`${field}.deny[${i}]`, `${field}.deny[${i}]: the Cloudflare backend cannot deny a network (${e.text}); name its hosts`);
    }
    // No ports on Cloudflare: a deny of host:port denies the host (stricter, never looser).
    const h = e.kind === 'suffix' ? `*.${e.host}` : e.host;
    if (!denied.includes(h)) denied.push(h);
  });
  const allowed: string[] = [];
  (o.allow ?? []).forEach((text, i) => {
    if (text === '*') return;
    const e = parseEntry(text);
    if (isUnreachableFromACloudContainer(e)) return;
    const ef = `${field}.allow[${i}]`;
    if (e.port !== undefined) throw new InvalidParamsError(ef, `${ef}: the Cloudflare backend cannot limit an allow entry to a port; allow '${e.kind === 'suffix' ? '*.' : ''}${e.host}'`);
    if (e.kind === 'network') throw new InvalidParamsError(ef, `${ef}: the Cloudflare backend cannot allow a network (${e.text}); name its hosts`);
    const h = e.kind === 'suffix' ? `*.${e.host}` : e.host;
    if (!allowed.includes(h)) allowed.push(h);
  });
  const out: ContainerEgress = { enableInternet: isPublic };
  if (!isPublic) {
    if (kind === 'agent' && isAgentType(type)) {
      const provider = providerHost(type, env);
      if (!denied.includes(provider) && !allowed.includes(provider)) allowed.push(provider);
    }
    // An empty list would still be a gate that lets nothing through, which is what we want.
    out.allowedHosts = allowed;
  }
  if (denied.length > 0) out.deniedHosts = denied;
  return out;
}
