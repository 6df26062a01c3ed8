// Reads the Flow-GRPO batch of the shared fixtures (Node only: node:fs).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FlowGrpoSample } from './grpo.ref';

export interface FlowGrpoFixture {
  eps_low: number;
  eps_high: number;
  beta: number;
  loss: number;
  samples: FlowGrpoSample[];
}

export function loadFlowGrpoFixture(): FlowGrpoFixture {
  const path = fileURLToPath(new URL('../../../../shared/fixtures/qwen2-tiny/expected.json', import.meta.url));
  const json = JSON.parse(readFileSync(path, 'utf8')) as { flowgrpo?: FlowGrpoFixture };
  if (!json.flowgrpo) throw new Error(`${path}: no 'flowgrpo' field`);
  return json.flowgrpo;
}
