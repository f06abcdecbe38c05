import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';
import { TEST_KEYS } from './test/support/keys.ts';

// Tests run inside workerd with the real wrangler.jsonc. The global setup starts a real
// `sandboxd`; its URL and key become the Worker's ENGINE_URL/ENGINE_KEY, so container traffic
// goes to that engine. API_KEYS holds the tests' one bootstrap (admin) key; the tests make
// further, non-admin keys through keys.create (test/support/worker.ts).

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: './src/index.ts',
      wrangler: { configPath: './wrangler.jsonc' },
      miniflare: {
        bindings: {
          API_KEYS: TEST_KEYS.main,
          ENGINE_URL: inject('engineUrl'),
          ENGINE_KEY: inject('engineKey'),
          // Sandboxes made through getSandbox reach the mock model APIs (the original examples).
          SANDBOX_ENV: JSON.stringify(
            inject('mockUrl') ? { ANTHROPIC_BASE_URL: inject('mockUrl'), OPENAI_BASE_URL: `${inject('mockUrl')}/v1` } : {},
          ),
          // ... which is on this computer's loopback: only an exact allow entry reaches it (3.5).
          SANDBOX_NETWORK: inject('mockUrl') ? JSON.stringify({ allow: ['*', new URL(inject('mockUrl')).host] }) : '',
        },
      },
    })),
  ],
  test: {
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One engine and one registry object for the whole run: keep the files sequential.
    fileParallelism: false,
  },
});
