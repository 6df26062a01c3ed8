// The CLI end to end on the qwen2-tiny fixture (spawned as a separate process on Dawn), against the
// float64 PyTorch outputs in expected.json.
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readExpected, readFixtureAdapter, readFixtureWeights, TINY } from '../../tests/support/qwen2-fixture';
import { qwen2RefForward, type Qwen2RefConfig, type Qwen2RefWeights } from '../../tests/support/qwen2-ref';
import { bigActivationQwen2, infActivationQwen2, OVERFLOW_TOKEN } from '../../tests/support/overflow-models';
import { toHfFiles } from '../../tests/support/random-qwen2';
import { maxAbsDiff } from '../../tests/support/compare';
import { runCli } from './cli-spawn';
import { copyFixture, flipByte, setMlcElement, setSafetensorsElement, TINY_MLC } from '../../tests/support/damaged-models';

const expected = readExpected();

describe('planner CLI on the qwen2-tiny fixture', () => {
  const input = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
  writeFileSync(input, JSON.stringify({ sequences: expected.forward.map((f) => f.tokens) }));

  for (const withAdapter of [false, true]) {
    it(`score ${withAdapter ? 'with' : 'without'} the adapter`, async () => {
      const r = await runCli(['score', '--model', TINY, ...(withAdapter ? ['--adapter', join(TINY, 'adapter')] : []), '--input', input]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { logprobs: number[][] };
      expect(out.logprobs.length).toBe(expected.forward.length);
      expected.forward.forEach((f, i) => {
        expect(maxAbsDiff(out.logprobs[i], withAdapter ? f.logprobs_adapter : f.logprobs_base)).toBeLessThan(2e-3);
      });
    }, 120_000);
  }

  it('greedy generate with the adapter', async () => {
    const g = expected.greedy;
    const r = await runCli([
      'generate', '--model', TINY, '--adapter', join(TINY, 'adapter'),
      '--prompt-ids', g.prompt.join(','), '--max-new-tokens', String(g.continuation.length), '--temperature', '0',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).tokens).toEqual(g.continuation);
  }, 120_000);

  it('an out-of-range id fails naming it and the vocabulary size', async () => {
    const r = await runCli(['generate', '--model', TINY, '--prompt-ids', '1,999', '--max-new-tokens', '2']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/id 999.*\[0, 320\)/);
  }, 120_000);
});

describe('planner CLI on weights holding a NaN or infinity', () => {
  const seqs = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
  writeFileSync(seqs, JSON.stringify({ sequences: [[1, 2, 3, 4]] }));

  it('a NaN in a BF16 weight: score exits 1 naming the tensor and element instead of printing null logprobs', async () => {
    const dir = copyFixture();
    setSafetensorsElement(join(dir, 'model.safetensors'), 'model.layers.1.mlp.down_proj.weight', 70, 0x7fc0);
    const r = await runCli(['score', '--model', dir, '--input', seqs]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/model\.safetensors: tensor 'model\.layers\.1\.mlp\.down_proj\.weight' has NaN at \[0, 70\]/);
  }, 120_000);

  it('an infinity in the adapter: generate exits 1 naming the adapter tensor', async () => {
    const dir = copyFixture();
    setSafetensorsElement(join(dir, 'adapter', 'adapter_model.safetensors'), 'base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight', 3, 0x7f800000);
    const r = await runCli(['generate', '--model', TINY, '--adapter', join(dir, 'adapter'), '--prompt-ids', '1,2', '--max-new-tokens', '2']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/adapter_model\.safetensors: tensor 'base_model\.model\.model\.layers\.0\.self_attn\.v_proj\.lora_B\.weight' has Infinity at \[0, 3\]/);
  }, 120_000);

  it('a NaN q4 scale in a web-llm build (md5sum consistent): score exits 1 naming the shard and record', async () => {
    const dir = copyFixture(TINY_MLC);
    setMlcElement(dir, 'model.layers.1.self_attn.c_attn.q_scale', 5, 0x7e00);
    const r = await runCli(['score', '--model', dir, '--input', seqs]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/params_shard_0\.bin: tensor 'model\.layers\.1\.self_attn\.c_attn\.q_scale' has NaN at \[2, 1\]/);
  }, 120_000);
});

describe('planner CLI on a web-llm build whose shard does not match its md5sum', () => {
  it('score exits 1 naming the shard and saying to download it again', async () => {
    const seqs = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
    writeFileSync(seqs, JSON.stringify({ sequences: [[1, 2, 3, 4]] }));
    const dir = copyFixture(TINY_MLC);
    flipByte(join(dir, 'params_shard_0.bin'), 20_000);
    const r = await runCli(['score', '--model', dir, '--input', seqs]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/params_shard_0\.bin in .* is corrupt: it has MD5 [0-9a-f]{32} but tensor-cache\.json lists 9615f8bb91a9dcd686e74a7a4dcbdcab\. Replace it with a fresh download/);
  }, 120_000);
});

describe("planner CLI honours the adapter's target_modules", () => {
  it('an adapter whose config selects q_proj and v_proj scores as those two alone (float64 reference), not as all seven', async () => {
    const dir = copyFixture();
    const cfgFile = join(dir, 'adapter', 'adapter_config.json');
    writeFileSync(cfgFile, JSON.stringify({ ...JSON.parse(readFileSync(cfgFile, 'utf8')), target_modules: ['q_proj', 'v_proj'] }));
    const tokens = expected.forward[0].tokens;
    const seqs = join(dir, 'seqs.json');
    writeFileSync(seqs, JSON.stringify({ sequences: [tokens] }));
    const r = await runCli(['score', '--model', TINY, '--adapter', join(dir, 'adapter'), '--input', seqs]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/adapter: 10 module\(s\) with LoRA weights that target_modules does not select are left out/);
    const { config, weights } = readFixtureWeights();
    const full = readFixtureAdapter();
    const qv = { ...full, layers: full.layers.map((l) => ({ q: l.q, v: l.v })) };
    const got = (JSON.parse(r.stdout) as { logprobs: number[][] }).logprobs[0];
    const want = qwen2RefForward(config, weights, tokens, qv).logprobs;
    expect(maxAbsDiff(got, Array.from(want))).toBeLessThan(2e-3);
    // The check can tell the two apart: all seven modules give other logprobs.
    expect(maxAbsDiff(got, expected.forward[0].logprobs_adapter)).toBeGreaterThan(1e-2);
  }, 120_000);
});

// Issue 25, item 3: finite weights whose activations leave f32's range. Too big to square must still
// match float64; an outright overflow must exit 1 naming the position and layer, with nothing on stdout.
describe('planner CLI on finite weights whose activations overflow f32', () => {
  const write = (m: { config: Qwen2RefConfig; weights: Qwen2RefWeights }) => {
    const dir = join(mkdtempSync(join(tmpdir(), 'agentflow-overflow-')), 'model');
    mkdirSync(dir);
    for (const [name, bytes] of Object.entries(toHfFiles(m.config, m.weights))) writeFileSync(join(dir, name), bytes);
    return dir;
  };
  const seqs = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
  const SEQS = [[3, 9, 14, 2, 30, 5], [4, 5, OVERFLOW_TOKEN, 6, 8]];
  writeFileSync(seqs, JSON.stringify({ sequences: SEQS }));

  it('score of a residual stream too big to square matches float64 (was flat log(1/V) from zeroed norms)', async () => {
    const m = bigActivationQwen2();
    const r = await runCli(['score', '--model', write(m), '--input', seqs]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { logprobs: number[][] };
    SEQS.forEach((s, i) => expect(maxAbsDiff(out.logprobs[i], qwen2RefForward(m.config, m.weights, s).logprobs)).toBeLessThan(2e-3));
  }, 120_000);

  it('score and generate of an overflowing row exit 1 naming the sequence, position and layer', async () => {
    const dir = write(infActivationQwen2());
    const s = await runCli(['score', '--model', dir, '--input', seqs]);
    expect(s.code, s.stderr).toBe(1);
    expect(s.stdout).toBe('');
    expect(s.stderr).toMatch(/score: sequence 1, position 2: the hidden state became NaN or infinite in layer 0's MLP/);
    const g = await runCli(['generate', '--model', dir, '--prompt-ids', `1,${OVERFLOW_TOKEN}`, '--max-new-tokens', '3', '--temperature', '0']);
    expect(g.code, g.stderr).toBe(1);
    expect(g.stdout).toBe('');
    expect(g.stderr).toMatch(/generate: position 1: the hidden state became NaN or infinite in layer 0's MLP/);
  }, 120_000);
});

// Issue 25, item 7: what loads but deserves a word says so on stderr (and still loads).
describe('planner CLI load warnings', () => {
  const seqs = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
  writeFileSync(seqs, JSON.stringify({ sequences: [[1, 2, 3, 4]] }));

  it("an adapter whose base_model_name_or_path names another model: a warning naming both, then the run", async () => {
    const dir = copyFixture();
    const cfgFile = join(dir, 'adapter', 'adapter_config.json');
    writeFileSync(cfgFile, JSON.stringify({ ...JSON.parse(readFileSync(cfgFile, 'utf8')), base_model_name_or_path: 'Qwen/Qwen2.5-7B-Instruct' }));
    const r = await runCli(['score', '--model', TINY, '--adapter', join(dir, 'adapter'), '--input', seqs]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: the adapter .*adapter was made for 'Qwen\/Qwen2\.5-7B-Instruct'.*not the loaded model 'qwen2-tiny'/);
    // The fixture's own adapter names its model: no warning.
    const ok = await runCli(['score', '--model', TINY, '--adapter', join(TINY, 'adapter'), '--input', seqs]);
    expect(ok.stderr).not.toMatch(/warning/);
  }, 120_000);

  it('a tensor-cache.json record without md5sum: one note that the shard was not checked', async () => {
    const dir = copyFixture(TINY_MLC);
    const file = join(dir, 'tensor-cache.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { records: Array<{ md5sum?: string }> };
    for (const rec of manifest.records) delete rec.md5sum;
    writeFileSync(file, JSON.stringify(manifest));
    const r = await runCli(['score', '--model', dir, '--input', seqs]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/lists no md5sum/g)?.length).toBe(1);
    expect(r.stderr).toMatch(/note: tensor-cache\.json in .* lists no md5sum for 1 of 1 shard\(s\) \(params_shard_0\.bin\): they were loaded without an integrity check/);
  }, 120_000);
});
