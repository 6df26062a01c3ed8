// CLI failures that happen before any GPU work: each exits non-zero, writes nothing to stdout, and the
// message on stderr names the file or flag at fault.
import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY } from '../../tests/support/qwen2-fixture';
import { runCli } from './cli-spawn';
import { parseArgs, parseIdList, parseSequencesJson, UsageError } from './args';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agentflow-cli-'));
}

function seqFile(dir: string): string {
  const f = join(dir, 'seqs.json');
  writeFileSync(f, JSON.stringify({ sequences: [[1, 2, 3]] }));
  return f;
}

describe('planner CLI errors', () => {
  it('a missing model directory', async () => {
    const dir = tempDir();
    const r = await runCli(['score', '--model', join(dir, 'nope'), '--input', seqFile(dir)]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(join(dir, 'nope'));
  }, 60_000);

  it('a truncated model.safetensors is named', async () => {
    const dir = tempDir();
    copyFileSync(join(TINY, 'config.json'), join(dir, 'config.json'));
    const bytes = readFileSync(join(TINY, 'model.safetensors'));
    writeFileSync(join(dir, 'model.safetensors'), bytes.subarray(0, bytes.length - 1000));
    const r = await runCli(['score', '--model', dir, '--input', seqFile(dir)]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/model\.safetensors/);
  }, 60_000);

  it('a corrupt config.json is named', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config.json'), '{"hidden_size": 64,');
    copyFileSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
    const r = await runCli(['score', '--model', dir, '--input', seqFile(dir)]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/config\.json/);
  }, 60_000);

  it('an adapter for another base is named', async () => {
    const dir = tempDir();
    copyFileSync(join(TINY, 'adapter', 'adapter_model.safetensors'), join(dir, 'adapter_model.safetensors'));
    const cfg = JSON.parse(readFileSync(join(TINY, 'adapter', 'adapter_config.json'), 'utf8'));
    writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, r: 8 }));
    const r = await runCli(['score', '--model', TINY, '--adapter', dir, '--input', seqFile(dir)]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/adapter_model\.safetensors/);
  }, 60_000);

  it('a malformed --input file is named', async () => {
    const dir = tempDir();
    const f = join(dir, 'bad.json');
    writeFileSync(f, JSON.stringify({ sequences: [[1, 2], ['x']] }));
    const r = await runCli(['score', '--model', TINY, '--input', f]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('bad.json: sequences[1]');
  }, 60_000);
});

describe('planner CLI argument parsing', () => {
  const allowed = { score: ['model', 'input'], generate: ['model', 'prompt-ids'] };
  it('reads --name value and --name=value', () => {
    const a = parseArgs(['score', '--model', 'm', '--input=i.json'], allowed);
    expect(a.command).toBe('score');
    expect([...a.flags]).toEqual([['model', 'm'], ['input', 'i.json']]);
  });
  it('rejects unknown commands and flags, and missing values', () => {
    expect(() => parseArgs(['train'], allowed)).toThrow(/unknown command 'train'/);
    expect(() => parseArgs(['score', '--adapter', 'x'], allowed)).toThrow(/no flag --adapter/);
    expect(() => parseArgs(['score', '--model'], allowed)).toThrow(/--model needs a value/);
  });
  it('parses id lists and sequence files', () => {
    expect(parseIdList('1, 2,30', 'prompt-ids')).toEqual([1, 2, 30]);
    expect(() => parseIdList('1,-2', 'prompt-ids')).toThrow(/entry 1/);
    expect(parseSequencesJson('{"sequences": [[1], [2, 3]]}', 'f.json')).toEqual([[1], [2, 3]]);
    expect(() => parseSequencesJson('[1]', 'f.json')).toThrow(UsageError);
  });
});
