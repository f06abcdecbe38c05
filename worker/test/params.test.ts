// The checks every backend makes at its door (docs/protocol.md 2.2), as the Worker makes them.
import { describe, expect, it } from 'vitest';
import { InvalidParamsError } from '../src/errors';
import { command, filePaths, isRefusedEnvName, runOptions } from '../src/params';

function fieldOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof InvalidParamsError) return (e.data as { field?: string } | undefined)?.field;
    throw e;
  }
  return undefined;
}

describe('params at the door', () => {
  it('refuses every LD_* and glibc\'s unsecure list, but TMPDIR', () => {
    for (const n of ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_ANYTHING', 'GCONV_PATH', 'GETCONF_DIR', 'HOSTALIASES', 'LOCALDOMAIN', 'LOCPATH', 'MALLOC_TRACE', 'NIS_PATH', 'NLSPATH', 'RESOLV_HOST_CONF', 'RES_OPTIONS']) {
      expect(isRefusedEnvName(n), n).toBe(true);
    }
    for (const n of ['TMPDIR', 'PATH', 'HOME', 'XLD_PRELOAD', 'ld_preload']) expect(isRefusedEnvName(n), n).toBe(false);
  });

  it('bounds argv like the kernel does: one argument, the whole', () => {
    expect(command({ command: ['echo', 'hi'] })).toEqual(['echo', 'hi']);
    expect(fieldOf(() => command({ command: 'x'.repeat(200 * 1024) }))).toBe('command');
    expect(fieldOf(() => command({ command: ['echo', 'x'.repeat(200 * 1024)] }))).toBe('command');
    expect(fieldOf(() => command({ command: Array.from({ length: 12 }, () => 'b'.repeat(100 * 1024)) }))).toBe('command');
    expect(fieldOf(() => command({ command: Array.from({ length: 200000 }, () => 'a') }))).toBe('command');
  });

  it('refuses refused env, long paths and long cwd in runs and file operations', () => {
    expect(fieldOf(() => runOptions({ options: { env: { LD_PRELOAD: '/x.so' } } }))).toBe('options.env.LD_PRELOAD');
    expect(fieldOf(() => runOptions({ options: { cwd: 'p'.repeat(5000) } }))).toBe('options.cwd');
    expect(fieldOf(() => runOptions({ options: { env: { GREETING: 'hi' }, cwd: 'src' } }))).toBeUndefined();
    expect(fieldOf(() => filePaths({ path: 'p'.repeat(5000) }))).toBe('path');
    expect(fieldOf(() => filePaths({ from: 'a', to: 'p'.repeat(5000) }))).toBe('to');
    expect(fieldOf(() => filePaths({ path: 'a\0b' }))).toBe('path');
    // Each says which rule the path broke, as the engine does.
    expect(() => filePaths({ path: 'a\0b' })).toThrow('path must not contain a NUL character (U+0000)');
    expect(() => filePaths({ path: 'p'.repeat(5000) })).toThrow('path must be a path of at most 4096 bytes');
  });
});
