// npx tsx bench/load-checks.ts [--reps N]
// What the loaders' CPU work costs on a Qwen2.5-0.5B-shaped model made in memory (pseudo-random values, no
// GPU): a BF16 and an F16 single-file safetensors checkpoint (loadCheckpoint, then every tensor converted as
// Qwen2Weights.upload converts it: f16() for matrices, f32() for norms and biases), and a web-llm q4f16_1
// build in 8 shards with its tensor-cache.json md5sums (loadMlcCheckpoint, which reads and verifies the
// shards, then raw() of every record as uploadQ4 takes them). Those passes include the non-finite scans
// and the MD5 check; run it on an older commit for the time without them. JSON on stdout, best of --reps.
import { md5Hex } from '../src/util/md5';
import { toF16Array, f32ToBf16Bits } from '../src/util/half';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { expectedQwen2Tensors } from '../src/io/qwen2-config';
import { expectedMlcQwen2Tensors, loadMlcCheckpoint } from '../src/io/mlc';
import { writeSafetensors, type WritableTensor } from '../src/io/safetensors';
import { memorySource } from '../src/engine/memory-source';
import { Rng } from '../src/util/rng';
import { QWEN25_05B } from './shaped-model';
import { flag, log } from './flags';

const reps = Number(flag('reps', '3'));
const now = () => performance.now();
const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const rng = new Rng(1);
const table = Float32Array.from(rng.fill(4099, 0.02));

function safetensorsModel(dtype: 'BF16' | 'F16'): Record<string, Uint8Array> {
  const bits = dtype === 'F16' ? toF16Array(table) : Uint16Array.from(table, (v) => f32ToBf16Bits(v));
  const tensors: WritableTensor[] = [];
  for (const [name, shape] of expectedQwen2Tensors(QWEN25_05B)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Uint16Array(n);
    for (let i = 0; i < n; i += bits.length) data.set(bits.subarray(0, Math.min(bits.length, n - i)), i);
    tensors.push({ name, shape, data, dtype });
  }
  const c = QWEN25_05B;
  const config = {
    hidden_size: c.hiddenSize, num_hidden_layers: c.numLayers, num_attention_heads: c.numHeads, num_key_value_heads: c.numKvHeads,
    intermediate_size: c.intermediateSize, vocab_size: c.vocabSize, tie_word_embeddings: c.tieWordEmbeddings, rope_theta: c.ropeTheta,
  };
  return { 'config.json': enc(config), 'model.safetensors': writeSafetensors(tensors) };
}

function mlcModel(): Record<string, Uint8Array> {
  const records = [...expectedMlcQwen2Tensors(QWEN25_05B)];
  const shardCount = 8;
  const per = Math.ceil(records.length / shardCount);
  const words = Uint32Array.from({ length: 4099 }, () => rng.int(2 ** 32) >>> 0);
  const halves = toF16Array(Array.from({ length: 4099 }, () => 0.005 + rng.int(1000) / 1e5));
  const files: Record<string, Uint8Array> = {};
  const manifest: { records: unknown[] } = { records: [] };
  for (let s = 0; s < shardCount; s++) {
    const part = records.slice(s * per, (s + 1) * per);
    const size = part.reduce((n, [, r]) => n + r.shape.reduce((a, b) => a * b, 1) * (r.dtype === 'uint32' ? 4 : 2), 0);
    const shard = new Uint8Array(size);
    const recs: unknown[] = [];
    let at = 0;
    for (const [name, r] of part) {
      const n = r.shape.reduce((a, b) => a * b, 1);
      const src = r.dtype === 'uint32' ? new Uint8Array(words.buffer) : new Uint8Array(halves.buffer);
      const bytes = n * (r.dtype === 'uint32' ? 4 : 2);
      for (let i = 0; i < bytes; i += src.length) shard.set(src.subarray(0, Math.min(src.length, bytes - i)), at + i);
      recs.push({ name, shape: r.shape, dtype: r.dtype, format: 'raw', nbytes: bytes, byteOffset: at });
      at += bytes;
    }
    const dataPath = `params_shard_${s}.bin`;
    files[dataPath] = shard;
    manifest.records.push({ dataPath, format: 'raw-shard', nbytes: size, md5sum: md5Hex(shard), records: recs });
  }
  const c = QWEN25_05B;
  files['tensor-cache.json'] = enc(manifest);
  files['mlc-chat-config.json'] = enc({
    model_type: 'qwen2', quantization: 'q4f16_1', context_window_size: 4096,
    model_config: { hidden_size: c.hiddenSize, num_hidden_layers: c.numLayers, num_attention_heads: c.numHeads, num_key_value_heads: c.numKvHeads, intermediate_size: c.intermediateSize, vocab_size: c.vocabSize, tie_word_embeddings: true, rope_theta: c.ropeTheta, rms_norm_eps: 1e-6 },
  });
  return files;
}

function best(run: () => Promise<number> | number): Promise<number> {
  return (async () => {
    let min = Infinity;
    for (let i = 0; i < reps; i++) min = Math.min(min, await run());
    return min;
  })();
}

const out: Record<string, unknown> = { model: 'Qwen2.5-0.5B shapes', reps };
for (const dtype of ['BF16', 'F16'] as const) {
  log(`building the ${dtype} checkpoint`);
  const files = safetensorsModel(dtype);
  out[`safetensors${dtype}`] = {
    bytes: files['model.safetensors'].byteLength,
    convertMs: await best(async () => {
      const ck = await loadCheckpoint(memorySource(files));
      const t0 = now();
      for (const t of ck.tensors.values()) {
        if (t.shape.length === 2) t.f16();
        else t.f32();
      }
      return now() - t0;
    }),
  };
}
log('building the q4f16_1 build');
const mlc = mlcModel();
const shardBytes = Object.entries(mlc).filter(([n]) => n.endsWith('.bin')).reduce((a, [, b]) => a + b.byteLength, 0);
out.mlcQ4f16_1 = {
  shardBytes,
  loadMs: await best(async () => {
    const t0 = now();
    const ck = await loadMlcCheckpoint(memorySource(mlc));
    const ms = now() - t0;
    ck.release();
    return ms;
  }),
  recordsMs: await best(async () => {
    const ck = await loadMlcCheckpoint(memorySource(mlc));
    const t0 = now();
    for (const name of ck.manifest.records.keys()) ck.raw(name);
    return now() - t0;
  }),
  md5AloneMs: await best(() => {
    const t0 = now();
    for (const [n, b] of Object.entries(mlc)) if (n.endsWith('.bin')) md5Hex(b);
    return now() - t0;
  }),
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
