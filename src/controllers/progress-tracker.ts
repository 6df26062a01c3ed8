// Turns a stream of LoadProgress reports into what a progress bar shows: bytes done and total, percent and
// an estimate of the time left. web-llm reports one model as numbered shards with cumulative byte counts
// ("… params (shard 3/27)"), so shards of one model are folded into one row; its reports without bytes
// (bytesTotal 1: compiling, "finish loading") are status lines, not files. The wait after the last byte is
// named too: web-llm's shader compilation by its count, and after any loader's files, the GPU setup.
import type { LoadProgress } from '../engine/chat-engine';

export interface ProgressRow {
  key: string;
  bytesDone: number;
  bytesTotal: number;
  fromCache: boolean;
}

export interface ProgressSummary {
  rows: ProgressRow[];
  bytesDone: number;
  bytesTotal: number;
  /** 0..100, or null while no total is known. */
  percent: number | null;
  /** Seconds left at the rate seen so far (network bytes only), or null when it cannot be told yet. */
  secondsLeft: number | null;
  status: string;
}

const SHARD = / \(shard \d+\/\d+\)$/;
const SHADERS = /^(.*?): Loading GPU shader modules\[(\d+)\/(\d+)\]/;

export class ProgressTracker {
  private readonly rows = new Map<string, ProgressRow>();
  private status = '';
  /** The status is the loader's own words (a phase), not the file being read. */
  private statusLine = false;
  private startedAt: number | null = null;
  private networkBytesAtStart = 0;

  constructor(private readonly now: () => number = () => Date.now()) {}

  update(p: LoadProgress): void {
    if (p.bytesTotal === 1 && p.bytesDone <= 1) {
      const m = SHADERS.exec(p.file);
      this.status = m ? `${m[1]}: compiling GPU shaders (${m[2]} of ${m[3]}), which downloads nothing; the browser may keep them for later loads` : p.file;
      this.statusLine = true;
      return;
    }
    this.statusLine = false;
    const key = p.file.replace(SHARD, '');
    const row = this.rows.get(key) ?? { key, bytesDone: 0, bytesTotal: 0, fromCache: p.fromCache };
    row.bytesDone = Math.max(row.bytesDone, p.bytesDone);
    row.bytesTotal = Math.max(row.bytesTotal, p.bytesTotal, row.bytesDone);
    row.fromCache = p.fromCache;
    this.rows.set(key, row);
    if (this.startedAt === null && !p.fromCache) {
      this.startedAt = this.now();
      this.networkBytesAtStart = this.networkDone() - p.bytesDone;
    }
    this.status = p.fromCache ? `reading ${key} from the browser cache` : `downloading ${key}`;
  }

  private networkDone(): number {
    let n = 0;
    for (const r of this.rows.values()) if (!r.fromCache) n += r.bytesDone;
    return n;
  }

  summary(): ProgressSummary {
    const rows = [...this.rows.values()];
    const bytesDone = rows.reduce((s, r) => s + r.bytesDone, 0);
    const bytesTotal = rows.reduce((s, r) => s + r.bytesTotal, 0);
    const percent = bytesTotal > 0 ? Math.min(100, (100 * bytesDone) / bytesTotal) : null;
    let secondsLeft: number | null = null;
    if (this.startedAt !== null) {
      const elapsed = (this.now() - this.startedAt) / 1000;
      const got = this.networkDone() - this.networkBytesAtStart;
      if (elapsed > 0 && got > 0) secondsLeft = Math.max(0, (bytesTotal - bytesDone) / (got / elapsed));
    }
    // Every file read and the loader quiet: it is uploading weights and building the model on the GPU.
    const filesDone = rows.length > 0 && bytesDone >= bytesTotal && !this.statusLine;
    return { rows, bytesDone, bytesTotal, percent, secondsLeft, status: filesDone ? 'all files read; setting the model up on the GPU (weight upload)' : this.status };
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}
