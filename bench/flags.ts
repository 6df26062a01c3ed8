// Command-line flags of the benchmark scripts (`--name value`) and their progress log on stderr, so
// stdout stays JSON only.

/** The value after `--name`, or `fallback` when the flag is absent. */
export function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

export const log = (s: string): void => void process.stderr.write(`${s}\n`);
