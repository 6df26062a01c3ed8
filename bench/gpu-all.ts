// `bash .gpu-kit/run.sh all OUTDIR [part ...]`: every measurement issue 17 asks for, in one device call
// (bench/gpu-all-plan.ts lists the parts, their order and caps). Each part is its own process with its own
// time limit (SIGTERM, then SIGKILL 5 s later: bench/run.ts prints what it has on SIGTERM), its stdout in
// OUTDIR/<part>.json and its stderr in OUTDIR/<part>.log; a part that printed no JSON (failed, timed out,
// skipped) gets a JSON stub saying why, with its log's tail, so every .json parses. OUTDIR/summary.json lists
// each part's status, exit code, limit and seconds, and the headline figures (bench/gpu-all-headlines.ts); it is
// rewritten after every part, so a call cut short still brings back what ran.
// Environment: GPU_KIT_BANDWIDTH (GB/s, default 3350: H100 SXM), GPU_KIT_BUDGET (s, default 540, counted from
// run.sh's start, GPU_KIT_T0), GPU_KIT_CAPS (name=s,... replaces parts' caps), GPU_KIT_SMOKE=1 (fixtures and a
// few tokens, for a software adapter; needs GPU_KIT_FIXTURES, the fixtures folder), GPU_KIT_PYTHON (python3).
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_BANDWIDTH_GBS, DEFAULT_BUDGET_S, GRACE_S, SMOKE_FACTOR, envNumber, parseCaps, partLimitS, plan, type Part } from './gpu-all-plan';
import { headlines } from './gpu-all-headlines';
import { log } from './flags';

type Status = 'ok' | 'failed' | 'timeout' | 'skipped';

interface PartRecord {
  name: string;
  what: string;
  command: string;
  capS: number;
  /** What it was given: its cap or the budget left; null when skipped before starting. */
  limitS: number | null;
  status: Status;
  exitCode: number | null;
  signal: string | null;
  seconds: number;
  /** 'output': the part's own JSON; 'stub': it printed none, the file says why. */
  json: 'output' | 'stub';
  reason?: string;
}

const env = process.env;
const kit = dirname(fileURLToPath(import.meta.url));

function commandOf(p: Part, python: string): { file: string; args: string[] } {
  return 'node' in p.run ? { file: process.execPath, args: [join(kit, p.run.node), ...p.run.args] } : { file: python, args: [join(kit, p.run.python), ...p.run.args] };
}

/** Parses a file as one JSON value; null when it is empty or not JSON. */
function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

const tail = (path: string, n = 3000): string => {
  try {
    const s = readFileSync(path, 'utf8');
    return s.length > n ? s.slice(-n) : s;
  } catch {
    return '';
  }
};

/** Runs one part in its own process group, killed at limitS; resolves with its exit. */
function runPart(file: string, args: string[], out: string, err: string, limitS: number, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; signal: string | null; timedOut: boolean; spawnError?: string }> {
  return new Promise((done) => {
    const o = openSync(out, 'w');
    const e = openSync(err, 'w');
    const child = spawn(file, args, { stdio: ['ignore', o, e], detached: true, cwd: kit, env: { ...process.env, ...extraEnv } });
    closeSync(o);
    closeSync(e);
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const group = (sig: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      group('SIGTERM');
      killTimer = setTimeout(() => group('SIGKILL'), GRACE_S * 1000);
    }, limitS * 1000);
    child.on('error', (x) => {
      clearTimeout(timer);
      done({ code: null, signal: null, timedOut: false, spawnError: String(x) });
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      // Anything it left behind in its group (a stray worker) goes too.
      group('SIGKILL');
      done({ code, signal, timedOut });
    });
  });
}

function kitInfo(): unknown {
  const p = join(kit, 'kit.json');
  return existsSync(p) ? readJson(p) : null;
}

async function main(): Promise<void> {
  const [outArg, ...only] = process.argv.slice(2);
  if (!outArg) throw new Error('usage: run.sh all OUTDIR [part ...]');
  const outDir = resolve(outArg);
  mkdirSync(outDir, { recursive: true });
  const smoke = env.GPU_KIT_SMOKE === '1';
  if (smoke && !env.GPU_KIT_FIXTURES) throw new Error('GPU_KIT_SMOKE=1 runs the fixtures: set GPU_KIT_FIXTURES to the fixtures folder (../shared/fixtures)');
  const bandwidthGBs = envNumber(env, 'GPU_KIT_BANDWIDTH', DEFAULT_BANDWIDTH_GBS);
  const budgetS = envNumber(env, 'GPU_KIT_BUDGET', (smoke ? SMOKE_FACTOR : 1) * DEFAULT_BUDGET_S);
  const python = env.GPU_KIT_PYTHON || 'python3';
  const parts = plan({ smoke, bandwidthGBs, fixtures: env.GPU_KIT_FIXTURES ? resolve(env.GPU_KIT_FIXTURES) : undefined, caps: parseCaps(env.GPU_KIT_CAPS ?? ''), only });
  // The budget counts from run.sh's start (unpacking node and Dawn), when it says when that was.
  const t0 = env.GPU_KIT_T0 && Number.isFinite(Number(env.GPU_KIT_T0)) ? Number(env.GPU_KIT_T0) * 1000 : Date.now();
  const runnerT0 = Date.now() - process.uptime() * 1000;
  const elapsedS = (): number => (Date.now() - t0) / 1000;
  const hasPython = spawnSync(python, ['-c', 'import sys'], { stdio: 'ignore' }).status === 0;

  const records: PartRecord[] = [];
  const summary = (complete: boolean): void => {
    const adapter = readJson(join(outDir, 'adapter.json')) as { description?: string; vendor?: string } | null;
    const s = {
      complete,
      kit: kitInfo(),
      device: adapter?.description ? `${adapter.description} (${adapter.vendor ?? ''})` : null,
      smoke,
      bandwidthGBs,
      budgetS,
      unpackS: Math.round((runnerT0 - t0) / 100) / 10,
      totalS: Math.round(elapsedS() * 10) / 10,
      headlines: headlines(records.filter((r) => r.json === 'output').map((r) => r.name), (name) => (records.some((r) => r.name === name && r.json === 'output') ? readJson(join(outDir, `${name}.json`)) : null)),
      parts: records,
    };
    // Written whole then renamed: a call cut off mid-write must not leave half a summary.
    writeFileSync(join(outDir, 'summary.json.tmp'), `${JSON.stringify(s, null, 2)}\n`);
    renameSync(join(outDir, 'summary.json.tmp'), join(outDir, 'summary.json'));
  };

  for (const p of parts) {
    const { file, args } = commandOf(p, python);
    const out = join(outDir, `${p.name}.json`);
    const err = join(outDir, `${p.name}.log`);
    const envText = Object.entries(p.env ?? {}).map(([k, v]) => `${k}=${v} `).join('');
    const rec: PartRecord = { name: p.name, what: p.what, command: envText + [file === process.execPath ? 'node' : file, ...args.map((a) => a.replace(`${kit}/`, ''))].join(' '), capS: p.capS, limitS: null, status: 'skipped', exitCode: null, signal: null, seconds: 0, json: 'stub' };
    records.push(rec);
    const limit = partLimitS(p.capS, budgetS - elapsedS() - GRACE_S);
    const stub = (reason: string): void => {
      rec.reason = reason;
      rec.json = 'stub';
      writeFileSync(out, `${JSON.stringify({ part: p.name, status: rec.status, reason, logTail: tail(err) }, null, 2)}\n`);
    };
    if (limit === null) {
      writeFileSync(err, '');
      stub(`skipped: ${Math.max(0, budgetS - elapsedS()).toFixed(0)} s of the ${budgetS} s budget left`);
    } else if ('python' in p.run && !hasPython) {
      writeFileSync(err, '');
      stub(`skipped: no ${python} on this machine`);
    } else {
      rec.limitS = limit;
      log(`run.sh all: ${p.name} (limit ${limit} s): ${rec.command}`);
      const s0 = Date.now();
      const r = await runPart(file, args, out, err, limit, p.env);
      rec.seconds = Math.round((Date.now() - s0) / 100) / 10;
      rec.exitCode = r.code;
      rec.signal = r.signal;
      const json = readJson(out) as { skipped?: unknown; interrupted?: unknown } | null;
      rec.status = r.timedOut ? 'timeout' : r.code === 0 ? (typeof json?.skipped === 'string' ? 'skipped' : 'ok') : 'failed';
      if (json !== null) {
        rec.json = 'output';
        if (typeof json.skipped === 'string') rec.reason = json.skipped;
        if (r.timedOut) rec.reason = `timed out after ${limit} s; the JSON holds what it had finished`;
      } else {
        // Keep whatever it printed beside the stub.
        if (tail(out, 1).length > 0) renameSync(out, join(outDir, `${p.name}.stdout`));
        stub(r.spawnError ? `could not start: ${r.spawnError}` : r.timedOut ? `timed out after ${limit} s` : `exit ${r.code ?? r.signal}, no JSON on stdout`);
      }
      log(`run.sh all: ${p.name} ${rec.status} in ${rec.seconds} s`);
    }
    summary(false);
  }
  summary(true);
  log(`run.sh all: ${records.map((r) => `${r.name} ${r.status} ${r.seconds} s`).join(', ')}; ${elapsedS().toFixed(0)} s in all; ${outDir}/summary.json`);
}

main().catch((e: Error) => {
  log(`run.sh all failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
