// Whether the real engine is there (see global-setup.ts); engine tests use describe.skipIf.
import { inject } from 'vitest';

export const engineMissing: string = inject('engineMissing');
export const hasEngine = engineMissing === '';
