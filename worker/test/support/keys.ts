// The API keys of the tests. vitest.config.ts sets API_KEYS to `main` alone: the one bootstrap,
// admin key. The second session ("other") is an ordinary key that `main` makes through
// keys.create (support/worker.ts, otherKey()), so that it is a non-admin key, as in the engine's
// conformance runner.
export const TEST_KEYS = {
  main: 'sk_test_main_0123456789abcdef',
  /** Well-formed, never configured. */
  bad: 'sk_test_bad_0123456789abcdefXX',
} as const;
