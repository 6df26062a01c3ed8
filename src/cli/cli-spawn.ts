// Runs the CLI as `npm run -s cli -- ...` would (tsx src/cli/main.ts), for the CLI's own tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  /** What it has printed so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves when it has exited (killed or not). */
  done: Promise<CliRun>;
}

/** Starts the CLI without waiting for it (tests that stop it midway). */
export function spawnCli(args: string[]): CliProcess {
  // One process (tsx as a loader, not its CLI, which runs the program in a child): a kill reaches the run itself.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: ROOT, env: process.env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<CliRun>((ok, fail) => {
    child.on('error', fail);
    child.on('close', (code) => ok({ code, stdout, stderr }));
  });
  return { child, output: () => ({ stdout, stderr }), done };
}

export function runCli(args: string[]): Promise<CliRun> {
  return spawnCli(args).done;
}
