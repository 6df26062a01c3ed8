// Entry of the Node Python worker thread: loads the TypeScript worker through tsx in this thread, since a
// worker thread does not always inherit its parent's loader (under Vitest it does not).
import { register } from 'tsx/esm/api';

register();
await import('./python.node-worker.ts');
