import { describe, expect, it } from 'vitest';
import { crossOriginAdvice, hostsInWords, hubIdNote, isUnreachable } from './load-failure';

describe('load failures in words', () => {
  it('tells a folder on another origin needs CORS headers, and says nothing of CORS on the same origin or offline', () => {
    const advice = crossOriginAdvice('http://127.0.0.1:8000/tiny-chat/', 'http://127.0.0.1:5173/app/#models', true);
    expect(advice).toContain('http://127.0.0.1:8000 is another origin than this page (http://127.0.0.1:5173)');
    expect(advice).toContain('must send CORS headers (Access-Control-Allow-Origin)');
    expect(advice).toContain('python3 -m http.server');
    expect(advice).toContain('enter ./tiny-chat');
    expect(crossOriginAdvice('http://127.0.0.1:5173/app/models/x/', 'http://127.0.0.1:5173/app/', true)).toBeNull();
    expect(crossOriginAdvice('http://127.0.0.1:8000/x/', 'http://127.0.0.1:5173/', false)).toBeNull();
  });
  it('reads failed fetches as unreachable, other errors not', () => {
    expect(isUnreachable('download of x failed: the server could not be reached, or it does not let this page read the file (Failed to fetch)')).toBe(true);
    expect(isUnreachable('TypeError: NetworkError when attempting to fetch resource.')).toBe(true);
    expect(isUnreachable('config.json is a web page, not the model file')).toBe(false);
  });
  it('notes a repo id and how to name a folder on this site', () => {
    expect(hubIdNote('models/x', true)).toBe('Read as the Hugging Face repo models/x (downloaded from huggingface.co). For a folder on this site, write ./models/x');
    expect(hubIdNote('./models/x', false)).toBeNull();
    expect(hostsInWords(['a.example', 'b.example', 'c.example'])).toBe('a.example, b.example and c.example');
  });
});
