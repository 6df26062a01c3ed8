// The set-ups the Node tests share: the qwen2-tiny fixture as the planner (our runtime, byte tokenizer), for
// the agent and training tests and the planner engine's own.
import { join } from 'node:path';
import type { GpuContext } from '../../src/gpu/device';
import { loadAdapter, loadCheckpoint } from '../../src/engine/load-checkpoint';
import { directorySource } from '../../src/io/sources';
import { PlannerEngine } from '../../src/engine/planner-engine';
import { Qwen2Runtime } from '../../src/engine/runtime';
import { Tokenizer } from '../../src/engine/tokenizer/tokenizer';
import { byteTokenizerConfig, byteTokenizerJson } from './byte-tokenizer';
import { gpuFor } from './gpu';
import { TINY } from './qwen2-fixture';

/** The qwen2-tiny runtime and a PlannerEngine over it (destroy the runtime when done). */
export async function tinyPlanner(ctx: GpuContext): Promise<{ rt: Qwen2Runtime; planner: PlannerEngine }> {
  const ckpt = await loadCheckpoint(directorySource(TINY));
  // Agent prompts are longer than the fixture's 512 positions; RoPE has no table, so a longer context is only
  // a matter of KV-cache size.
  const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 2048, maxBatchRows: 2048 });
  ckpt.release();
  const planner = new PlannerEngine(rt, new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() }), 'qwen2-tiny');
  return { rt, planner };
}

/**
 * The PlannerEngine the engine tests share: qwen2-tiny on the packed path with a 256-position context and
 * the fixture's adapter loaded as 'fixture' (not active).
 */
export async function fixturePlannerEngine(): Promise<PlannerEngine> {
  const ctx = await gpuFor('packed');
  const ckpt = await loadCheckpoint(directorySource(TINY));
  const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 256 });
  await rt.addAdapter('fixture', await loadAdapter(directorySource(join(TINY, 'adapter')), ckpt.config));
  const tok = new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });
  return new PlannerEngine(rt, tok, 'qwen2-tiny');
}
