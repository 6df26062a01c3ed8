// The set-ups the Node tests share: the qwen2-tiny fixture as the planner (our runtime, byte tokenizer), for
// the agent and training tests and the planner engine's own, and a multiplication tool the scripted executor
// calls.
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GpuContext } from '../../src/gpu/device';
import { loadAdapter, loadCheckpoint } from '../../src/engine/io/checkpoint';
import { directorySource } from '../../src/engine/io/sources';
import { PlannerEngine } from '../../src/engine/planner-engine';
import { Qwen2Runtime } from '../../src/engine/runtime';
import { Tokenizer } from '../../src/engine/tokenizer/tokenizer';
import type { Tool } from '../../src/tools/types';
import { byteTokenizerConfig, byteTokenizerJson } from './byte-tokenizer';
import { gpuFor } from './gpu';
import { TINY } from './qwen2-fixture';

export const multiplyTool: Tool = {
  card: {
    name: 'Multiply_Tool',
    description: 'Multiplies a by b.',
    input: { type: 'object', properties: { a: { type: 'number', description: 'a' }, b: { type: 'number', description: 'b' } }, required: ['a', 'b'] },
    output: 'the product',
    limitations: [],
    examples: [],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: String((args.a as number) * (args.b as number)) };
  },
};

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

/**
 * A folder holding the qwen2-tiny fixture as a chat model: its weights (linked), its config with a longer
 * context (the agent's prompts, tool cards included, are ~2k bytes with a byte tokenizer; RoPE has no table,
 * so a longer context only costs KV cache) and the byte-level tokenizer with Qwen's chat template.
 */
export function tinyChatModelDir(positions = 4096): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentflow-tiny-chat-'));
  const config = JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: positions }));
  symlinkSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  return dir;
}
