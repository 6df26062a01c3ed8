// Fetches a URL and parses JSON, turning every way that can fail into one error with a message a model
// and a user can act on: unreachable, HTTP status, not JSON, too large, cancelled.
import { AgentFlowError, type ErrorCategory } from '../errors';

export class ToolHttpError extends AgentFlowError {
  override readonly category: ErrorCategory = 'tool';
  constructor(
    message: string,
    /** 'too-large': the response passed the tool's byte cap and was not read further. */
    readonly kind: 'network' | 'http' | 'json' | 'abort' | 'too-large',
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ToolHttpError';
  }
}

/** Hides query strings (they may carry an API key) when a URL is shown in an error. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url.split('?')[0];
  }
}

/**
 * The most a tool reads of one response (4 MiB). A search answer is a few kB to a few hundred; the cap is
 * there so a server (or a proxy) that streams without end cannot fill the page's memory.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/** "4 MiB", "512 KiB", "100 bytes": a cap as a person reads it. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

export async function fetchJson(label: string, url: string, init: RequestInit & { signal: AbortSignal }, maxBytes = DEFAULT_MAX_RESPONSE_BYTES): Promise<unknown> {
  const shown = redactUrl(url);
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (init.signal.aborted) throw new ToolHttpError(`${label}: cancelled`, 'abort');
    throw new ToolHttpError(`${label}: could not reach ${shown} (${e instanceof Error ? e.message : String(e)}); check the internet connection`, 'network');
  }
  const tooLarge = (what: string) => new ToolHttpError(`${label}: the response from ${shown} ${what}`, 'too-large', res.status);
  let body: string;
  let over: 'declared' | 'read' | null;
  try {
    ({ body, over } = await readCapped(res, maxBytes));
  } catch (e) {
    if (init.signal.aborted) throw new ToolHttpError(`${label}: cancelled`, 'abort');
    throw new ToolHttpError(`${label}: the connection to ${shown} broke while reading the answer (${String(e)})`, 'network');
  }
  // An error status says more than the size, and the part read is enough for its snippet.
  if (!res.ok) {
    throw new ToolHttpError(`${label}: ${shown} answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${snippet(body)}`, 'http', res.status);
  }
  const cap = `this tool's limit of ${formatBytes(maxBytes)}`;
  if (over === 'declared') throw tooLarge(`would be ${res.headers.get('content-length')} bytes, over ${cap}; it was not read`);
  if (over === 'read') throw tooLarge(`is over ${cap}; reading stopped there`);
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new ToolHttpError(`${label}: ${shown} returned a response that is not valid JSON${snippet(body)}`, 'json', res.status);
  }
}

/**
 * The body as text, read chunk by chunk and abandoned (the stream cancelled, so the connection closes) once
 * it passes `maxBytes`: reading it whole first, then checking, would already have held all of it.
 */
async function readCapped(res: Response, maxBytes: number): Promise<{ body: string; over: 'declared' | 'read' | null }> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    return { body: '', over: 'declared' };
  }
  if (!res.body) return { body: '', over: null };
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let body = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      body += decoder.decode(value.subarray(0, value.byteLength - (bytes - maxBytes)), { stream: true });
      await reader.cancel().catch(() => {});
      return { body, over: 'read' };
    }
    body += decoder.decode(value, { stream: true });
  }
  return { body: body + decoder.decode(), over: null };
}

function snippet(body: string): string {
  const s = body.replace(/\s+/g, ' ').trim();
  if (!s) return '';
  return ` (starts with ${JSON.stringify(s.length > 80 ? s.slice(0, 80) + '…' : s)})`;
}

/** Shortens text to at most `max` characters, preferring to end at a sentence, then at a word. */
export function trimText(text: string, max: number): string {
  const t = text.replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n').trim();
  if (t.length <= max) return t;
  const head = t.slice(0, max);
  const sentence = Math.max(head.lastIndexOf('. '), head.lastIndexOf('.\n'));
  if (sentence >= max * 0.5) return head.slice(0, sentence + 1) + ' …';
  const space = head.lastIndexOf(' ');
  return (space >= max * 0.5 ? head.slice(0, space) : head) + ' …';
}
