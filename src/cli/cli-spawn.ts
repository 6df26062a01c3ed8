// Runs the CLI as `npm run -s cli -- ...` would (tsx src/cli/main.ts), for the CLI's own tests.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[]): Promise<CliRun> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [resolve(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'src/cli/main.ts', ...args], { cwd: ROOT, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => ok({ code, stdout, stderr }));
  });
}
