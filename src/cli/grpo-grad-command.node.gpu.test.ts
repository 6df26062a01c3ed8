// `grpo-grad` end to end on the qwen2-tiny fixture: the batch file is the fixture's own `flowgrpo` object,
// the loss printed and the gradients written must match PyTorch; bad input exits 2 naming the problem.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { relL2 } from '../../tests/support/compare';
import { TINY, readSafetensorsF32 } from '../../tests/support/qwen2-fixture';
import { runGrpoGrad } from './grpo-grad-command';

function capture() {
  let out = '';
  let err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
  return { out: () => out, err: () => err };
}

describe('cli grpo-grad', () => {
  afterEach(() => vi.restoreAllMocks());
  const dir = mkdtempSync(join(tmpdir(), 'grpo-grad-'));
  const flowgrpo = JSON.parse(readFileSync(join(TINY, 'expected.json'), 'utf8')).flowgrpo;

  it('prints the fixture loss and writes its gradients under the PEFT names', async () => {
    const batch = join(dir, 'batch.json');
    writeFileSync(batch, JSON.stringify(flowgrpo));
    const out = join(dir, 'grads.safetensors');
    const io = capture();
    const code = await runGrpoGrad(['grpo-grad', '--model', TINY, '--adapter', join(TINY, 'adapter'), '--batch', batch, '--out', out]);
    vi.restoreAllMocks();
    expect(code, io.err()).toBe(0);
    const loss = JSON.parse(io.out().trim()).loss;
    expect(Math.abs(loss - flowgrpo.loss) / flowgrpo.loss).toBeLessThan(1e-4);
    const got = readSafetensorsF32(out);
    const want = readSafetensorsF32(join(TINY, 'flowgrpo_grads.safetensors'));
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [name, w] of want) {
      expect(got.get(name)!.shape).toEqual(w.shape);
      expect(relL2(got.get(name)!.data, w.data), name).toBeLessThan(1e-2);
    }
  });

  it('exits 2 naming a missing flag, a bad batch field and a wrong log-prob count', async () => {
    const io = capture();
    expect(await runGrpoGrad(['--model', TINY])).toBe(2);
    expect(io.err()).toMatch(/needs --adapter/);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...flowgrpo, beta: 'x' }));
    expect(await runGrpoGrad(['--model', TINY, '--adapter', join(TINY, 'adapter'), '--batch', bad, '--out', join(dir, 'x')])).toBe(2);
    expect(io.err()).toMatch(/'beta' must be a finite number >= 0, got "x"/);
    writeFileSync(bad, JSON.stringify({ ...flowgrpo, samples: [{ ...flowgrpo.samples[0], old_logprobs: [0] }] }));
    expect(await runGrpoGrad(['--model', TINY, '--adapter', join(TINY, 'adapter'), '--batch', bad, '--out', join(dir, 'x')])).toBe(2);
    expect(io.err()).toMatch(/samples\[0\]\.old_logprobs must have 6 entries/);
  });

  it('exits 2 naming an advantage or old logprob that is not a float32 number, and a non-finite eps (not "got null")', async () => {
    const io = capture();
    const bad = join(dir, 'bad-values.json');
    const run = (batch: unknown) => {
      // 1e999 is how a JSON file spells a value that parses to Infinity.
      writeFileSync(bad, JSON.stringify(batch).replace('"INF"', '1e999'));
      return runGrpoGrad(['--model', TINY, '--adapter', join(TINY, 'adapter'), '--batch', bad, '--out', join(dir, 'x')]);
    };
    expect(await run({ ...flowgrpo, samples: [{ ...flowgrpo.samples[0], advantage: 1e39 }] })).toBe(2);
    expect(io.err()).toMatch(/samples\[0\]\.advantage must be a finite number within float32's ±3\.4e38, got 1e\+39/);
    expect(await run({ ...flowgrpo, samples: [{ ...flowgrpo.samples[0], old_logprobs: [-1, -1, 'INF', -1, -1, -1] }] })).toBe(2);
    expect(io.err()).toMatch(/samples\[0\]\.old_logprobs\[2\] must be a finite number, got Infinity/);
    expect(await run({ ...flowgrpo, eps_high: 'INF' })).toBe(2);
    expect(io.err()).toMatch(/'eps_high' must be a finite number >= 0, got Infinity/);
  });

  it('exits 1 naming the gradient tensor when float32 overflows, and writes no gradients file (not "loss": null)', async () => {
    const batch = join(dir, 'overflow.json');
    // 3e38 fits float32, but the gradients it scales overflow it.
    writeFileSync(batch, JSON.stringify({ ...flowgrpo, samples: flowgrpo.samples.map((s: object, i: number) => (i < 2 ? { ...s, advantage: 3e38 } : s)) }));
    const out = join(dir, 'overflow.safetensors');
    const io = capture();
    const code = await runGrpoGrad(['--model', TINY, '--adapter', join(TINY, 'adapter'), '--batch', batch, '--out', out]);
    vi.restoreAllMocks();
    expect(code).toBe(1);
    expect(io.out()).toBe('');
    expect(io.err()).toMatch(/the gradient of 'base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight' has NaN at \[\d+, \d+\]: a value of the batch overflows float32 \(the GPU computes in it\); no gradients were written/);
    expect(existsSync(out)).toBe(false);
  });
});
