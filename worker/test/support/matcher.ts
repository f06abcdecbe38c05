// The matcher language of tests/conformance/README.md. `match` answers null on success or a
// message naming the first mismatch (with its path); captures are stored only on success.

export type Captures = Record<string, unknown>;

const TYPE_MATCHERS: Record<string, (v: unknown) => boolean> = {
  $string: (v) => typeof v === 'string',
  $number: (v) => typeof v === 'number',
  $integer: (v) => typeof v === 'number' && Number.isInteger(v),
  $boolean: (v) => typeof v === 'boolean',
  $object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  $array: (v) => Array.isArray(v),
  $null: (v) => v === null,
  $any: () => true,
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function show(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? 'undefined' : s.length > 200 ? `${s.slice(0, 200)}...` : s;
}

/** The single `$operator` key of a matcher object, if it is one. */
function operator(m: Record<string, unknown>): string | null {
  const keys = Object.keys(m);
  if (keys.length === 1 && ['$unordered', '$contains', '$capture', '$startsWith'].includes(keys[0]!)) return keys[0]!;
  return null;
}

/** A number kept exact by parseJson (JSON.rawJSON): compared by its digits. */
function isRaw(v: unknown): boolean {
  return (JSON as unknown as { isRawJSON?: (v: unknown) => boolean }).isRawJSON?.(v) === true;
}

export function match(matcher: unknown, value: unknown, captures: Captures, path = '$'): string | null {
  if (isRaw(matcher) || isRaw(value)) {
    return JSON.stringify(matcher) === JSON.stringify(value) ? null : `${path}: expected ${show(matcher)}, got ${show(value)}`;
  }
  if (typeof matcher === 'string' && Object.hasOwn(TYPE_MATCHERS, matcher)) {
    return TYPE_MATCHERS[matcher]!(value) ? null : `${path}: expected ${matcher}, got ${show(value)}`;
  }
  if (matcher === null || typeof matcher !== 'object') {
    return value === matcher ? null : `${path}: expected ${show(matcher)}, got ${show(value)}`;
  }
  if (Array.isArray(matcher)) {
    if (!Array.isArray(value)) return `${path}: expected an array, got ${show(value)}`;
    if (value.length !== matcher.length) {
      return `${path}: expected ${matcher.length} elements, got ${value.length}: ${show(value)}`;
    }
    const scratch = { ...captures };
    for (let i = 0; i < matcher.length; i++) {
      const e = match(matcher[i], value[i], scratch, `${path}[${i}]`);
      if (e !== null) return e;
    }
    Object.assign(captures, scratch);
    return null;
  }
  const m = matcher as Record<string, unknown>;
  switch (operator(m)) {
    case '$capture':
      captures[m.$capture as string] = value;
      return null;
    case '$startsWith':
      return typeof value === 'string' && value.startsWith(m.$startsWith as string)
        ? null
        : `${path}: expected a string starting with ${show(m.$startsWith)}, got ${show(value)}`;
    case '$unordered': {
      const ms = m.$unordered as unknown[];
      if (!Array.isArray(value)) return `${path}: expected an array, got ${show(value)}`;
      if (value.length !== ms.length) {
        return `${path}: expected ${ms.length} elements in any order, got ${value.length}: ${show(value)}`;
      }
      const result = assign(ms, value, 0, new Set(), captures);
      if (result === null) return `${path}: no ordering of ${show(value)} matches ${show(ms)}`;
      Object.assign(captures, result);
      return null;
    }
    case '$contains': {
      const ms = m.$contains as unknown[];
      if (!Array.isArray(value)) return `${path}: expected an array, got ${show(value)}`;
      const scratch = { ...captures };
      for (const [i, sub] of ms.entries()) {
        let found = false;
        for (const el of value) {
          const trial = { ...scratch };
          if (match(sub, el, trial) === null) {
            Object.assign(scratch, trial);
            found = true;
            break;
          }
        }
        if (!found) return `${path}: no element matches $contains[${i}] ${show(sub)} in ${show(value)}`;
      }
      Object.assign(captures, scratch);
      return null;
    }
    default:
      break;
  }
  if (!isPlainObject(value)) return `${path}: expected an object, got ${show(value)}`;
  const scratch = { ...captures };
  for (const [k, sub] of Object.entries(m)) {
    const p = `${path}.${k}`;
    if (sub === '$absent') {
      if (Object.hasOwn(value, k)) return `${p}: expected to be absent, got ${show(value[k])}`;
      continue;
    }
    if (!Object.hasOwn(value, k)) return `${p}: missing (in ${show(value)})`;
    const e = match(sub, value[k], scratch, p);
    if (e !== null) return e;
  }
  Object.assign(captures, scratch);
  return null;
}

/** Backtracking assignment of matchers to distinct elements (for `$unordered`). */
function assign(ms: unknown[], values: unknown[], i: number, used: Set<number>, captures: Captures): Captures | null {
  if (i === ms.length) return captures;
  for (let j = 0; j < values.length; j++) {
    if (used.has(j)) continue;
    const trial = { ...captures };
    if (match(ms[i], values[j], trial) !== null) continue;
    used.add(j);
    const r = assign(ms, values, i + 1, used, trial);
    used.delete(j);
    if (r !== null) return r;
  }
  return null;
}

/**
 * Replaces `${name}` inside strings by captured values: a string that is exactly one
 * placeholder becomes the captured value itself; elsewhere the value's text is spliced in.
 */
export function substitute<T>(v: T, captures: Captures): T {
  if (typeof v === 'string') {
    const whole = /^\$\{([A-Za-z0-9_]+)\}$/.exec(v);
    if (whole && Object.hasOwn(captures, whole[1]!)) return captures[whole[1]!] as T;
    return v.replace(/\$\{([A-Za-z0-9_]+)\}/g, (all, name: string) => {
      if (!Object.hasOwn(captures, name)) return all;
      const c = captures[name];
      return typeof c === 'string' ? c : JSON.stringify(c);
    }) as T;
  }
  if (Array.isArray(v)) return v.map((x) => substitute(x, captures)) as T;
  if (isPlainObject(v) && !isRaw(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = substitute(x, captures);
    return out as T;
  }
  return v;
}
