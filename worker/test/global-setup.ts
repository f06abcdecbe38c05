// Runs in Node before the workerd test pool starts: spawns a real local engine (`sandboxd`) on
// an ephemeral loopback port and hands its URL and key to the Worker (ENGINE_URL/ENGINE_KEY)
// through vitest's provide/inject. Container traffic of every test goes there.
//
// SANDBOXD_BIN overrides the binary (default ../build/bin/sandboxd). Without the binary the
// engine tests are skipped locally, but with CI set the run fails.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    engineUrl: string;
    engineKey: string;
    engineMissing: string;
    /** The text of cases.json: parsed in workerd, where big integer literals stay exact. */
    conformanceCasesText: string;
    /** core/protocol's REST route table as JSON (build/conformance/routes.json); '' without it. */
    restRoutesText: string;
    /** The mock model APIs (tests/mocks), http://127.0.0.1:PORT; '' without the binary. */
    mockUrl: string;
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const STARTUP_TIMEOUT_MS = 30_000;

function waitForListening(child: ChildProcess, pattern = /sandboxd listening on (http:\/\/\S+)/): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      reject(new Error(`sandboxd did not report listening within ${STARTUP_TIMEOUT_MS} ms\n${out}${err}`));
    }, STARTUP_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1]!);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`sandboxd exited early (code ${code}, signal ${signal})\n${out}${err}`));
    });
  });
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // The conformance cases are read here, in Node, at every run.
  const casesPath = join(here, '..', '..', 'tests', 'conformance', 'cases.json');
  project.provide('conformanceCasesText', readFileSync(casesPath, 'utf8'));
  // The route table the engine and the C++ client use, exported by the build (ROUTES_JSON
  // overrides): the Worker must serve every route of it, and no other.
  const routesPath = resolve(process.env.ROUTES_JSON ?? join(here, '..', '..', 'build', 'conformance', 'routes.json'));
  if (existsSync(routesPath)) {
    project.provide('restRoutesText', readFileSync(routesPath, 'utf8'));
  } else {
    const why = `${routesPath} not found (build the target conformance_routes_json, or set ROUTES_JSON)`;
    if (process.env.CI) throw new Error(`${why}; CI requires the route checks to run`);
    console.warn(`[global-setup] ${why}: the route checks are skipped`);
    project.provide('restRoutesText', '');
  }

  // The mock model server (the one fake: model APIs) for agent runs of the original examples.
  const mockBin = resolve(process.env.MOCK_MODEL_SERVER_BIN ?? join(here, '..', '..', 'build', 'tests', 'mocks', 'mock-model-server'));
  let mock: ChildProcess | null = null;
  if (existsSync(mockBin)) {
    mock = spawn(mockBin, [], { stdio: ['ignore', 'pipe', 'pipe'] });
    project.provide('mockUrl', await waitForListening(mock, /mock model server listening on (http:\/\/\S+)/));
  } else {
    if (process.env.CI) throw new Error(`mock-model-server not found at ${mockBin}; CI requires the agent tests to run`);
    project.provide('mockUrl', '');
  }
  const stopMock = () => {
    if (mock !== null && mock.exitCode === null) mock.kill('SIGTERM');
  };

  const bin = resolve(process.env.SANDBOXD_BIN ?? join(here, '..', '..', 'build', 'bin', 'sandboxd'));
  if (!existsSync(bin)) {
    const why = `sandboxd not found at ${bin} (build it, or set SANDBOXD_BIN)`;
    if (process.env.CI) throw new Error(`${why}; CI requires the engine tests to run`);
    console.warn(`[global-setup] ${why}: engine tests are skipped`);
    project.provide('engineUrl', '');
    project.provide('engineKey', '');
    project.provide('engineMissing', why);
    return async () => stopMock();
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-worker-test-'));
  // One engine key carries the sandboxes of every Worker key here, so the engine's own per-key
  // quota is raised: the quota under test is the Worker's (SandboxDO).
  // Plain workspace directories, as in the Worker's containers (--isolation container): the
  // workspace archive of a container's sleep is made of those.
  const args = ['--listen', '127.0.0.1:0', '--data-dir', dataDir, '--max-running', '64', '--max-memory-mb', '1048576', '--no-disk-limit'];
  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (process.env.SANDBOXD_LOG) child.stderr!.pipe(process.stderr);
  let url: string;
  try {
    url = await waitForListening(child);
  } catch (e) {
    child.kill('SIGKILL');
    stopMock();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const key = readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
  project.provide('engineUrl', url);
  project.provide('engineKey', key);
  project.provide('engineMissing', '');

  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    stopMock();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
