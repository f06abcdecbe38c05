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

/** `env`: an object of string values with valid variable names. */
export function optEnv(p: Params, field: string, prefix = ''): Record<string, string> | undefined {
  const o = optObject(p, field, prefix);
  if (o === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) {
    if (!ENV_NAME.test(k) || typeof v !== 'string') {
      throw new InvalidParamsError(prefix + field, `${prefix + field} must map variable names to strings`);
    }
    out[k] = v;
  }
  return out;
}

/** An exec `command`: a non-empty string for /bin/sh -c, or a non-empty argv array of strings. */
export function command(p: Params): string | string[] {
  const v = p.command;
  if (typeof v === 'string' && v.length > 0) return v;
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) return v as string[];
  throw new InvalidParamsError('command', 'command must be a non-empty string or array of strings');
}
