// Why a model could not be loaded, in words a newcomer can act on: which host could not be reached, that a
// folder on another origin needs CORS headers (what `python3 -m http.server` does not send), and that
// `models/x` is read as a Hugging Face repo id while a folder on this site is `./models/x`.

/** A fetch that failed outright (offline, no such host, refused, or a cross-origin answer the page may not read). */
export function isUnreachable(message: string): boolean {
  return /Failed to fetch|NetworkError|Load failed|could not be reached|appear to be offline|ERR_INTERNET_DISCONNECTED/i.test(message);
}

/**
 * For a planner folder on another origin that could not be read: a server there must send CORS headers, or the
 * folder can be served from the app's own site. null when the folder is on the page's origin, or the browser is
 * offline (then nothing could be reached and CORS is beside the point).
 */
export function crossOriginAdvice(modelUrl: string, pageUrl: string, online: boolean): string | null {
  if (!online) return null;
  let model: URL;
  let page: URL;
  try {
    model = new URL(modelUrl);
    page = new URL(pageUrl);
  } catch {
    return null;
  }
  if (model.origin === page.origin) return null;
  const folder = model.pathname.replace(/\/+$/, '').split('/').pop() || 'model';
  return (
    `${model.origin} is another origin than this page (${page.origin}): a server there must send CORS headers ` +
    `(Access-Control-Allow-Origin) for this page to read its files, and a plain \`python3 -m http.server\` does not. ` +
    `Serve the folder from this app's own site (put it beside index.html and enter ./${folder}), or from a server that sends those headers.`
  );
}

/** What the planner field names when it is read as a Hugging Face repo id, and how to name a folder on this site instead. */
export function hubIdNote(field: string, isHubId: boolean): string | null {
  const s = field.trim();
  if (!isHubId || !s) return null;
  return `Read as the Hugging Face repo ${s} (downloaded from huggingface.co). For a folder on this site, write ./${s}`;
}

/** "huggingface.co" / "huggingface.co and raw.githubusercontent.com" */
export function hostsInWords(hosts: readonly string[]): string {
  return hosts.length <= 1 ? (hosts[0] ?? 'the server') : `${hosts.slice(0, -1).join(', ')} and ${hosts[hosts.length - 1]}`;
}
