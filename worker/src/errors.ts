// Typed errors of the Sandbox protocol (docs/protocol.md section 2.1). Every failure that
// reaches a client is one of these; the code decides the JSON-RPC error and the REST status.

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  Unauthorized: -32001,
  NotFound: -32002,
  QuotaExceeded: -32003,
  Timeout: -32004,
  SandboxNotRunning: -32005,
  PayloadTooLarge: -32006,
  PathNotAllowed: -32007,
  AlreadyExists: -32008,
  StreamGap: -32009,
  NotImplemented: -32010,
  SandboxError: -32011,
  Cancelled: -32012,
  FileError: -32013,
  QueryError: -32014,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const REST_STATUS: Record<number, number> = {
  [-32700]: 400,
  [-32600]: 400,
  [-32601]: 404,
  [-32602]: 400,
  [-32603]: 500,
  [-32001]: 401,
  [-32002]: 404,
  [-32003]: 429,
  [-32004]: 504,
  [-32005]: 409,
  [-32006]: 413,
  [-32007]: 403,
  [-32008]: 409,
  [-32009]: 410,
  [-32010]: 501,
  [-32011]: 500,
  [-32012]: 499,
  [-32013]: 400,
  [-32014]: 422,
};

/** The REST status of an error code (section 2.1); unknown codes are server errors. */
export function restStatus(code: number): number {
  return REST_STATUS[code] ?? 500;
}

export interface ErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** Base class: an error the protocol can carry as `{code, message, data?}`. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }

  toJSON(): ErrorObject {
    const o: ErrorObject = { code: this.code, message: this.message };
    if (this.data !== undefined) o.data = this.data;
    return o;
  }

  get status(): number {
    return restStatus(this.code);
  }
}

export class ParseError extends RpcError {
  constructor(message = 'Parse error') {
    super(ErrorCode.ParseError, message);
    this.name = 'ParseError';
  }
}
export class InvalidRequestError extends RpcError {
  constructor(message = 'Invalid Request') {
    super(ErrorCode.InvalidRequest, message);
    this.name = 'InvalidRequestError';
  }
}
export class MethodNotFoundError extends RpcError {
  constructor(method: string) {
    super(ErrorCode.MethodNotFound, `Method not found: ${method}`);
    this.name = 'MethodNotFoundError';
  }
}
export class InvalidParamsError extends RpcError {
  constructor(field: string, message?: string) {
    super(ErrorCode.InvalidParams, message ?? `Invalid params: ${field}`, { field });
    this.name = 'InvalidParamsError';
  }
}
export class InternalError extends RpcError {
  constructor(message = 'Internal error') {
    super(ErrorCode.InternalError, message);
    this.name = 'InternalError';
  }
}
export class UnauthorizedError extends RpcError {
  constructor(message = 'Unauthorized') {
    super(ErrorCode.Unauthorized, message);
    this.name = 'UnauthorizedError';
  }
}
export class NotFoundError extends RpcError {
  constructor(what: string) {
    super(ErrorCode.NotFound, `Not found: ${what}`);
    this.name = 'NotFoundError';
  }
}
export class QuotaExceededError extends RpcError {
  constructor(message: string, data?: unknown) {
    super(ErrorCode.QuotaExceeded, message, data);
    this.name = 'QuotaExceededError';
  }
}
export class SandboxNotRunningError extends RpcError {
  constructor(id: string, status: string) {
    super(ErrorCode.SandboxNotRunning, `Sandbox ${id} is not running (${status})`, { status });
    this.name = 'SandboxNotRunningError';
  }
}
export class PayloadTooLargeError extends RpcError {
  constructor(message: string, limit?: number) {
    super(ErrorCode.PayloadTooLarge, message, limit === undefined ? undefined : { limit });
    this.name = 'PayloadTooLargeError';
  }
}
export class StreamGapError extends RpcError {
  constructor(first: number) {
    super(ErrorCode.StreamGap, 'The stream backlog no longer holds the requested output', { first });
    this.name = 'StreamGapError';
  }
}
export class NotImplementedError extends RpcError {
  constructor(what: string) {
    super(ErrorCode.NotImplemented, `Not implemented: ${what}`);
    this.name = 'NotImplementedError';
  }
}
export class SandboxError extends RpcError {
  constructor(message: string, data?: unknown) {
    super(ErrorCode.SandboxError, message, data);
    this.name = 'SandboxError';
  }
}
export class CancelledError extends RpcError {
  constructor() {
    super(ErrorCode.Cancelled, 'Request cancelled');
    this.name = 'CancelledError';
  }
}

/** Any thrown value as a protocol error; unexpected ones become -32603 without leaking details. */
export function toRpcError(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  console.error('internal error', e);
  return new InternalError();
}

/** A REST error response: `{"error":{code,message,data?}}` with the mapped status. */
export function errorResponse(e: RpcError, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  if (e.code === ErrorCode.Unauthorized) h.set('WWW-Authenticate', 'Bearer');
  return Response.json({ error: e.toJSON() }, { status: e.status, headers: h });
}
