// Paths of the shared fixtures for Node-side tests (read from ../shared/fixtures beside the project).
import { resolve } from 'node:path';

export const FIXTURES = resolve(process.cwd(), '../shared/fixtures');
export const TINY = resolve(FIXTURES, 'qwen2-tiny');
export const TINY_MLC = resolve(FIXTURES, 'qwen2-tiny-q4f16_1-MLC');
export const MLC_MANIFEST_05B = resolve(FIXTURES, 'mlc-manifest-qwen2.5-0.5b');
