// Maps web-llm's load reports (a fraction and a sentence) to the app's LoadProgress. web-llm states byte
// counts only in its text ("Fetching param cache[3/27]: 214MB fetched. 12% completed, …"), so they are
// parsed from there; reports without bytes (compiling shaders, "Finish loading") carry the fraction as
// bytesDone/bytesTotal with bytesTotal = 1.
import type { InitProgressReport } from '@mlc-ai/web-llm';
import type { LoadProgress } from '../chat-engine';

const MIB = 1024 * 1024;
const PARAMS = /^(Fetching param cache|Loading model from cache)\[(\d+)\/(\d+)\]: (\d+)MB (?:fetched|loaded)/;

export function toLoadProgress(report: InitProgressReport, modelId: string): LoadProgress {
  const m = PARAMS.exec(report.text);
  const fraction = Number.isFinite(report.progress) ? Math.min(1, Math.max(0, report.progress)) : 0;
  if (m) {
    const fromCache = m[1].startsWith('Loading');
    const bytesDone = Number(m[4]) * MIB;
    const bytesTotal = fraction > 0 ? Math.max(bytesDone, Math.round(bytesDone / fraction)) : 0;
    return { file: `${modelId} params (shard ${m[2]}/${m[3]})`, bytesDone, bytesTotal, fromCache };
  }
  return { file: `${modelId}: ${report.text}`, bytesDone: fraction, bytesTotal: 1, fromCache: /from cache/i.test(report.text) };
}
