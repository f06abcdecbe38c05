// JSON-RPC 2.0 codec with the exact error behaviour of docs/protocol.md section 2.

import { ErrorCode, type ErrorObject, RpcError } from './errors';
import { LIMITS } from './config';

export type Id = string | number | null;
export type Params = Record<string, unknown>;

export interface RpcRequest {
  /** Absent for a notification. */
  id?: Id;
  method: string;
  params: Params;
  /** `params` was given as an array: valid JSON-RPC, but this contract takes named params only. */
  positionalParams: boolean;
}

export interface RpcResponse {
  jsonrpc: '2.0';
  id: Id;
  result?: unknown;
  error?: ErrorObject;
}

export interface RpcNotification {
  jsonrpc: '2.0';
  method: string;
  params: Params;
}

/** One element of an incoming message: a request to run, or an answer already decided. */
export type Incoming = { request: RpcRequest } | { response: RpcResponse };

export type Decoded =
  | { batch: false; item: Incoming }
  | { batch: true; items: Incoming[] };

export function isNotification(r: RpcRequest): boolean {
  return !Object.hasOwn(r, 'id');
}

export function resultResponse(id: Id, result: unknown): RpcResponse {
  return { jsonrpc: '2.0', id, result };
}

export function errorResponseFor(id: Id, e: RpcError | ErrorObject): RpcResponse {
  const error = e instanceof RpcError ? e.toJSON() : e;
  return { jsonrpc: '2.0', id, error };
}

function err(id: Id, code: number, message: string): { response: RpcResponse } {
  return { response: errorResponseFor(id, { code, message }) };
}

interface RawJson {
  rawJSON(text: string): unknown;
  isRawJSON(v: unknown): boolean;
}
const RAW = JSON as unknown as Partial<RawJson>;

/**
 * What JSON.parse lets through but docs/protocol.md 2.5 refuses, as the engine does: nesting
 * deeper than LIMITS.maxJsonDepth, and \u escapes that are lone surrogates. Throws a SyntaxError
 * (a parse error) for either; one pass, outside strings only brackets count.
 */
function checkStrictJson(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x22) inString = false;
      else if (c === 0x5c) {
        if (text.charCodeAt(i + 1) === 0x75) {
          const unit = parseInt(text.slice(i + 2, i + 6), 16);
          if (unit >= 0xdc00 && unit <= 0xdfff) throw new SyntaxError('a lone low surrogate in a \\u escape');
          if (unit >= 0xd800 && unit <= 0xdbff) {
            const next = text.slice(i + 6, i + 8) === '\\u' ? parseInt(text.slice(i + 8, i + 12), 16) : NaN;
            if (!(next >= 0xdc00 && next <= 0xdfff)) {
              throw new SyntaxError('a high surrogate in a \\u escape without its low surrogate');
            }
            i += 6;
          }
          i += 5;
        } else {
          i += 1;
        }
      }
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > LIMITS.maxJsonDepth) throw new SyntaxError(`nested too deeply (more than ${LIMITS.maxJsonDepth} levels)`);
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
}

/**
 * JSON.parse that keeps integers beyond ±(2^53-1) exact: such a literal becomes a raw JSON value
 * (JSON.rawJSON), which JSON.stringify writes out digit for digit. A database param
 * `9007199254740993` thus reaches the engine as it was sent (docs/protocol.md 4.3.5), instead of
 * being rounded to the nearest double on the way through.
 */
export function parseJson(text: string): unknown {
  checkStrictJson(text);
  const raw = RAW.rawJSON;
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (typeof value !== 'number') return value;
    // A number a double cannot hold is refused (2.5): beyond its range, or a non-zero literal
    // that underflows to zero.
    const src = context?.source;
    if (!Number.isFinite(value) || (value === 0 && src !== undefined && /^-?[0.]*[1-9]/.test(src))) {
      throw new SyntaxError(`a number a double cannot hold: ${src ?? value}`);
    }
    if (Number.isSafeInteger(value)) return value;
    return raw !== undefined && src !== undefined && /^-?\d+$/.test(src) ? raw(src) : value;
  });
}

/** A number kept exact by parseJson, as a plain (rounded) number; anything else as it is. */
export function plainNumber(v: unknown): unknown {
  return RAW.isRawJSON?.(v) === true ? Number(JSON.stringify(v)) : v;
}

function isValidId(v: unknown): v is Id {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** Validates one element (of a batch or alone). */
export function decodeElement(v: unknown): Incoming {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return err(null, ErrorCode.InvalidRequest, 'Invalid Request: not an object');
  }
  const o = v as Record<string, unknown>;
  const hasId = Object.hasOwn(o, 'id');
  if (hasId) o.id = plainNumber(o.id);
  const idReadable = hasId && isValidId(o.id);
  const id: Id = idReadable ? (o.id as Id) : null;
  if (hasId && !idReadable) {
    return err(null, ErrorCode.InvalidRequest, 'Invalid Request: id must be a string, number or null');
  }
  if (o.jsonrpc !== '2.0') return err(id, ErrorCode.InvalidRequest, 'Invalid Request: jsonrpc must be "2.0"');
  if (typeof o.method !== 'string') {
    return err(id, ErrorCode.InvalidRequest, 'Invalid Request: method must be a string');
  }
  let params: Params = {};
  let positionalParams = false;
  if (Object.hasOwn(o, 'params')) {
    const p = o.params;
    if (Array.isArray(p)) positionalParams = true;
    else if (typeof p === 'object' && p !== null) params = p as Params;
    else return err(id, ErrorCode.InvalidRequest, 'Invalid Request: params must be an object');
  }
  const request: RpcRequest = { method: o.method, params, positionalParams };
  if (hasId) request.id = id;
  return { request };
}

/** Decodes one WebSocket text message (its size already checked by the caller). */
export function decodeMessage(text: string): Decoded {
  let v: unknown;
  try {
    v = parseJson(text);
  } catch {
    return { batch: false, item: err(null, ErrorCode.ParseError, 'Parse error') };
  }
  if (Array.isArray(v)) {
    if (v.length === 0) {
      return { batch: false, item: err(null, ErrorCode.InvalidRequest, 'Invalid Request: empty batch') };
    }
    if (v.length > LIMITS.maxBatch) {
      return {
        batch: false,
        item: {
          response: errorResponseFor(null, {
            code: ErrorCode.PayloadTooLarge,
            message: `Batch holds more than ${LIMITS.maxBatch} requests`,
            data: { limit: LIMITS.maxBatch },
          }),
        },
      };
    }
    return { batch: true, items: v.map(decodeElement) };
  }
  return { batch: false, item: decodeElement(v) };
}

export function notification(method: string, params: Params): RpcNotification {
  return { jsonrpc: '2.0', method, params };
}

/** UTF-8 length of a string without allocating. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
