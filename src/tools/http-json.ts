// Fetches a URL and parses JSON, turning every way that can fail into one error with a message a model
// and a user can act on: unreachable, HTTP status, not JSON, cancelled.
import { AgentFlowError, type ErrorCategory } from '../errors';

export class ToolHttpError extends AgentFlowError {
  override readonly category: ErrorCategory = 'tool';
  constructor(
    message: string,
    /** 'network' | 'http' | 'json' | 'abort' */
    readonly kind: 'network' | 'http' | 'json' | 'abort',
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

export async function fetchJson(label: string, url: string, init: RequestInit & { signal: AbortSignal }): Promise<unknown> {
  const shown = redactUrl(url);
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (init.signal.aborted) throw new ToolHttpError(`${label}: cancelled`, 'abort');
    throw new ToolHttpError(`${label}: could not reach ${shown} (${e instanceof Error ? e.message : String(e)}); check the internet connection`, 'network');
  }
  let body: string;
  try {
    body = await res.text();
  } catch (e) {
    if (init.signal.aborted) throw new ToolHttpError(`${label}: cancelled`, 'abort');
    throw new ToolHttpError(`${label}: the connection to ${shown} broke while reading the answer (${String(e)})`, 'network');
  }
  if (!res.ok) {
    throw new ToolHttpError(`${label}: ${shown} answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${snippet(body)}`, 'http', res.status);
  }
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new ToolHttpError(`${label}: ${shown} returned a response that is not valid JSON${snippet(body)}`, 'json', res.status);
  }
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
