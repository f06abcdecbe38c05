// The API keys the test Worker is configured with (vitest.config.ts sets API_KEYS from these).
export const TEST_KEYS = {
  main: 'sk_test_main_0123456789abcdef',
  other: 'sk_test_other_0123456789abcdef',
  /** Well-formed, never configured. */
  bad: 'sk_test_bad_0123456789abcdefXX',
} as const;
