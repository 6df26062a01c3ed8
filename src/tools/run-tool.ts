// Runs one tool call under its time limit and the caller's signal (the agent loop's executor step).
import { QUEUE_LIMIT_PER_TIME_LIMIT, startToolClock } from './tool-clock';
import type { Tool, ToolResult } from './tool';

class ToolTimeout extends Error {}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Runs a tool under its timeout and the loop's signal. A tool that ignores its signal is abandoned at the
 * deadline (its eventual result is dropped); the loop's own abort propagates as an AbortError, also while
 * the call is still queued. The timeout counts from the tool's started() notice when it gives one
 * (ToolContext.queued/started), so rollouts sharing one tool do not time out waiting for each other; the
 * wait itself times out only at the clock's much longer queue limit (startToolClock).
 */
export async function runTool(
  tool: Tool,
  args: Record<string, unknown>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<{ result: ToolResult; timedOut: boolean }> {
  signal.throwIfAborted();
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  const clock = startToolClock(timeoutMs, (kind, limitMs) =>
    ctl.abort(
      new ToolTimeout(
        kind === 'queue'
          ? `${tool.card.name} timed out waiting for its turn behind other calls: queue limit of ${limitMs} ms (${QUEUE_LIMIT_PER_TIME_LIMIT} x its ${timeoutMs} ms time limit)`
          : `${tool.card.name} timed out after ${timeoutMs} ms`,
      ),
    ),
  );
  const aborted = new Promise<never>((_, reject) => {
    if (ctl.signal.aborted) reject(ctl.signal.reason);
    ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason), { once: true });
  });
  try {
    const result = await Promise.race([tool.run(args, { signal: ctl.signal, timeoutMs, queued: clock.queued, started: clock.started }), aborted]);
    // A wrapped tool (e.g. the registry's) may answer 'cancelled' instead of throwing: an abort is an abort.
    signal.throwIfAborted();
    if (!result || typeof result.ok !== 'boolean') return { result: { ok: false, output: '', error: `${tool.card.name} returned no result` }, timedOut: false };
    return { result: { ...result, output: typeof result.output === 'string' ? result.output : String(result.output ?? '') }, timedOut: false };
  } catch (e) {
    if (signal.aborted) throw signal.reason ?? e;
    if (e instanceof ToolTimeout) return { result: { ok: false, output: '', error: e.message }, timedOut: true };
    return { result: { ok: false, output: '', error: `${tool.card.name} threw: ${errorMessage(e)}` }, timedOut: false };
  } finally {
    clock.stop();
    signal.removeEventListener('abort', onAbort);
    aborted.catch(() => undefined);
  }
}
