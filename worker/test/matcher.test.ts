// The conformance matcher language (tests/conformance/README.md): a wrong matcher would let
// every backend "pass", so it has its own tests.
import { describe, expect, it } from 'vitest';
import { type Captures, match, substitute } from './support/matcher';

const ok = (m: unknown, v: unknown, c: Captures = {}) => match(m, v, c) === null;

describe('matcher', () => {
  it('matches scalars by value and types by name', () => {
    expect(ok(1, 1)).toBe(true);
    expect(ok(1, '1')).toBe(false);
    expect(ok(null, null)).toBe(true);
    expect(ok('$string', 'x')).toBe(true);
    expect(ok('$string', 1)).toBe(false);
    expect(ok('$integer', 3)).toBe(true);
    expect(ok('$integer', 3.5)).toBe(false);
    expect(ok('$number', 3.5)).toBe(true);
    expect(ok('$boolean', false)).toBe(true);
    expect(ok('$object', [])).toBe(false);
    expect(ok('$object', {})).toBe(true);
    expect(ok('$array', [])).toBe(true);
    expect(ok('$null', null)).toBe(true);
    expect(ok('$null', 0)).toBe(false);
    expect(ok('$any', undefined)).toBe(true);
  });

  it('matches objects by subset and honours $absent', () => {
    expect(ok({ a: 1 }, { a: 1, b: 2 })).toBe(true);
    expect(ok({ a: 1, c: '$any' }, { a: 1 })).toBe(false);
    expect(ok({ b: '$absent' }, { a: 1 })).toBe(true);
    expect(ok({ b: '$absent' }, { b: null })).toBe(false);
  });

  it('matches arrays element-wise with equal length', () => {
    expect(ok([1, '$string'], [1, 'x'])).toBe(true);
    expect(ok([1], [1, 2])).toBe(false);
    expect(ok([{ a: 1 }], [{ a: 1, b: 2 }])).toBe(true);
  });

  it('matches $unordered as a permutation, backtracking when needed', () => {
    expect(ok({ $unordered: ['a', 'b'] }, ['b', 'a'])).toBe(true);
    expect(ok({ $unordered: ['a', 'b'] }, ['a', 'a'])).toBe(false);
    expect(ok({ $unordered: ['$string', 'a'] }, ['a', 'b'])).toBe(true);
    expect(ok({ $unordered: ['a'] }, ['a', 'b'])).toBe(false);
  });

  it('matches $contains as "some element for each"', () => {
    expect(ok({ $contains: [{ id: 2 }] }, [{ id: 1 }, { id: 2 }])).toBe(true);
    expect(ok({ $contains: [{ id: 3 }] }, [{ id: 1 }])).toBe(false);
    expect(ok({ $contains: [] }, [])).toBe(true);
  });

  it('matches $startsWith on strings only', () => {
    expect(ok({ $startsWith: 'sb_' }, 'sb_1')).toBe(true);
    expect(ok({ $startsWith: 'sb_' }, 'st_1')).toBe(false);
    expect(ok({ $startsWith: '1' }, 12)).toBe(false);
  });

  it('captures only when the whole match succeeds', () => {
    const c: Captures = {};
    expect(match({ id: { $capture: 'x' }, n: 2 }, { id: 'sb_1', n: 3 }, c)).not.toBeNull();
    expect(c).toEqual({});
    expect(match({ id: { $capture: 'x' } }, { id: 'sb_1' }, c)).toBeNull();
    expect(c).toEqual({ x: 'sb_1' });
  });

  it('names the path of a mismatch', () => {
    expect(match({ a: { b: [1, 2] } }, { a: { b: [1, 3] } }, {})).toContain('$.a.b[1]');
  });

  it('substitutes captures into strings, whole values and nested params', () => {
    const c = { agent: 'sb_1', n: 5 };
    expect(substitute('/api/agents/${agent}/exec', c)).toBe('/api/agents/sb_1/exec');
    expect(substitute({ id: '${agent}', k: ['${n}'] }, c)).toEqual({ id: 'sb_1', k: [5] });
    expect(substitute('n=${n}', c)).toBe('n=5');
    expect(substitute('echo ${HOME} $X', c)).toBe('echo ${HOME} $X');
  });
});
