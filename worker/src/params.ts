// Validation of named params; each failure is -32602 with `data.field` naming the offender.

import { InvalidParamsError } from './errors';
import type { Params } from './jsonrpc';

export function str(p: Params, field: string): string {
  const v = p[field];
  if (typeof v !== 'string' || v.length === 0) throw new InvalidParamsError(field, `${field} must be a non-empty string`);
  return v;
}

export function optStr(p: Params, field: string): string | undefined {
  const v = p[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new InvalidParamsError(field, `${field} must be a string`);
  return v;
}

export function optBool(p: Params, field: string): boolean | undefined {
  const v = p[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new InvalidParamsError(field, `${field} must be a boolean`);
  return v;
}

export function optInt(p: Params, field: string, min: number, max: number, prefix = ''): number | undefined {
  const v = p[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new InvalidParamsError(prefix + field, `${prefix + field} must be an integer in [${min}, ${max}]`);
  }
  return v;
}

export function optObject(p: Params, field: string, prefix = ''): Params | undefined {
  const v = p[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new InvalidParamsError(prefix + field, `${prefix + field} must be an object`);
  return v as Params;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** docs/protocol.md 2.2: what every backend takes at its door. */
export const INPUT_LIMITS = {
  maxEnvVariables: 1024,
  maxEnvBytes: 256 * 1024,
  maxArgumentBytes: 131071,
  maxArgvBytes: 1024 * 1024,
  maxPathBytes: 4096,
  maxNameBytes: 256,
} as const;

/** glibc's UNSECURE_ENVVARS but TMPDIR; with every LD_* they are refused, never stripped. */
const UNSECURE_ENV = new Set([
  'GCONV_PATH', 'GETCONF_DIR', 'HOSTALIASES', 'LOCALDOMAIN', 'LOCPATH',
  'MALLOC_TRACE', 'NIS_PATH', 'NLSPATH', 'RESOLV_HOST_CONF', 'RES_OPTIONS',
]);

export function isRefusedEnvName(name: string): boolean {
  return name.startsWith('LD_') || UNSECURE_ENV.has(name);
}

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** `env`: an object of string values with valid, allowed variable names, within the size limits. */
export function optEnv(p: Params, field: string, prefix = ''): Record<string, string> | undefined {
  const o = optObject(p, field, prefix);
  if (o === undefined) return undefined;
  const where = prefix + field;
  const entries = Object.entries(o);
  if (entries.length > INPUT_LIMITS.maxEnvVariables) {
    throw new InvalidParamsError(where, `${where} must hold at most ${INPUT_LIMITS.maxEnvVariables} variables`);
  }
  const out: Record<string, string> = {};
  let total = 0;
  for (const [k, v] of entries) {
    const f = `${where}.${k}`;
    if (!ENV_NAME.test(k)) {
      throw new InvalidParamsError(f, `${f}: a variable's name is letters, digits and '_', not starting with a digit`);
    }
    if (isRefusedEnvName(k)) {
      throw new InvalidParamsError(f, `${f} is refused: LD_* and the variables glibc ignores for setuid programs cannot be set`);
    }
    if (typeof v !== 'string' || v.includes('\0')) throw new InvalidParamsError(f, `${f} must be a string without NUL`);
    const bytes = k.length + 1 + utf8Bytes(v);
    if (bytes > INPUT_LIMITS.maxArgumentBytes) {
      throw new InvalidParamsError(f, `${f}: NAME=VALUE must be at most ${INPUT_LIMITS.maxArgumentBytes} bytes`);
    }
    total += bytes + 1;
    out[k] = v;
  }
  if (total > INPUT_LIMITS.maxEnvBytes) {
    throw new InvalidParamsError(where, `${where} must be at most ${INPUT_LIMITS.maxEnvBytes / 1024} KiB in all`);
  }
  return out;
}

/** A path in a sandbox: at most 4096 bytes, no NUL. */
export function optPath(p: Params, field: string, prefix = ''): string | undefined {
  const s = optStr(p, field);
  if (s !== undefined && utf8Bytes(s) > INPUT_LIMITS.maxPathBytes) {
    throw new InvalidParamsError(prefix + field, `${prefix + field} must be a path of at most ${INPUT_LIMITS.maxPathBytes} bytes`);
  }
  if (s?.includes('\0')) {
    throw new InvalidParamsError(prefix + field, `${prefix + field} must not contain a NUL character (U+0000)`);
  }
  return s;
}

/** The paths a file operation names (`path`, `from`, `to`): each at most 4096 bytes, no NUL. */
export function filePaths(p: Params): void {
  for (const f of ['path', 'from', 'to']) optPath(p, f);
}

/** What an agent run (4.7) hands to the sandbox: `options.env`, `options.cwd`, `options.path`. */
export function runOptions(p: Params): void {
  const o = optObject(p, 'options');
  if (o === undefined) return;
  optEnv(o, 'env', 'options.');
  optPath(o, 'cwd', 'options.');
  optPath(o, 'path', 'options.');
}

/** C0 and C1 control characters and DEL, as Qt's QChar::Other_Control counts them. */
function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/** A name people read (a sandbox's, a key's): at most 256 bytes, no control characters. */
export function optName(p: Params, field: string): string | undefined {
  const s = optStr(p, field);
  if (s !== undefined && (utf8Bytes(s) > INPUT_LIMITS.maxNameBytes || hasControlCharacter(s))) {
    throw new InvalidParamsError(field, `${field} must be at most ${INPUT_LIMITS.maxNameBytes} bytes, without control characters`);
  }
  return s;
}

/**
 * An exec `command`: a non-empty string for /bin/sh -c, or a non-empty argv array of strings, within
 * the kernel's limits (one argument, the whole argv counting 8 bytes a pointer).
 */
export function command(p: Params): string | string[] {
  const v = p.command;
  const tooLong = (s: string) => utf8Bytes(s) > INPUT_LIMITS.maxArgumentBytes;
  if (typeof v === 'string' && v.length > 0) {
    if (tooLong(v)) throw new InvalidParamsError('command', `the shell command must be at most ${INPUT_LIMITS.maxArgumentBytes} bytes`);
    return v;
  }
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) {
    const argv = v as string[];
    if (argv.some(tooLong)) throw new InvalidParamsError('command', `one argument must be at most ${INPUT_LIMITS.maxArgumentBytes} bytes`);
    const total = argv.reduce((n, a) => n + utf8Bytes(a) + 1 + 8, 0);
    if (total > INPUT_LIMITS.maxArgvBytes) throw new InvalidParamsError('command', `argv must be at most ${INPUT_LIMITS.maxArgvBytes / 1024} KiB in all`);
    return argv;
  }
  throw new InvalidParamsError('command', 'command must be a non-empty string or array of strings');
}
