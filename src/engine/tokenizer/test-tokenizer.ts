// Test data shared by the Node and Chromium tokenizer tests: a small byte-level BPE tokenizer.json (GPT-2
// byte alphabet, Qwen2's pre-tokenizer regex and special tokens, a handful of merges) and Qwen2.5's real
// tokenizer_config.json fields (tests/fixtures-local). Expected ids in the tests are worked out by hand.
import tokenizerConfigJson from '../../../tests/fixtures-local/qwen2.5-0.5b-instruct/tokenizer_config.json';
import { byteLevelBpe } from '../../../tests/support/byte-tokenizer';

const merges = ['h e', 'l l', 'he ll', 'hell o', 'Ġ t', 'Ġt he', 'Ġ w', 'o r', 'Ġw or', 'Ġwor l', 'Ġworl d'];
const bpe = byteLevelBpe(merges);
export const vocab = bpe.vocab;
export const ID = { hello: vocab['hello'], _the: vocab['Ġthe'], _world: vocab['Ġworld'] };
export const SPECIAL = bpe.specials;
export const tokenizerJson = bpe.json;
export const tokenizerConfig: Record<string, unknown> = { ...tokenizerConfigJson };
export const bytesOf = (s: string) => [...new TextEncoder().encode(s)];
