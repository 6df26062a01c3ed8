// JSON-Schema-constrained decoding with @mlc-ai/web-xgrammar (the grammar library web-llm uses), for any
// decode loop that has a row's logits on the CPU: our WebGPU planner runtime and the float64 CPU planner.
//
// Usage:
//   const grammar = await SchemaGrammar.for(tokenizer, { vocabSize: config.vocabSize, stopIds });
//   const m = await grammar.matcher(schemaText);   // one per row: a matcher is that row's grammar state
//   while (!done) {
//     const mask = await m.allowedMask();          // bit (id & 31) of word (id >> 5) set: id allowed
//     maskLogits(logits, mask);                    // or drawMasked() (../grammar/masked-draw.ts)
//     m.accept(token);                             // false: the grammar rejects it (a bug upstream)
//     if (m.terminated) break;                     // a stop token was accepted after a complete value
//     for (const t of m.forced(budget)) ...        // jump-forward: tokens the grammar leaves no choice on,
//   }                                              //   already accepted; append them without a draw
//   m.dispose();                                   // frees its wasm state
// TokenizerInfo (the vocabulary, decoded once) is built once per tokenizer, vocabSize and stop ids; compiled
// grammars are cached per schema beside it. Loads in Node and in the browser (xgrammar-load.ts).
import type { CompiledGrammar, GrammarCompiler, GrammarMatcher } from '@mlc-ai/web-xgrammar';
import type { TokenConstraint } from '../generation';
import { xgrammar } from './xgrammar-load';

/** How tokenizer.json's strings spell bytes: GPT-2's byte alphabet, SentencePiece's <0x..>, or as text. */
export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

/** What the grammar needs of a tokenizer (tokenizer/tokenizer.ts's Tokenizer has it). */
export interface GrammarTokenizer {
  /** Every token's string by id as tokenizer.json spells it, specials included, and how to read them. */
  vocabulary(): { tokens: string[]; vocabType: VocabType; specialIds: ReadonlySet<number> };
  /** Plain text to ids (the jump-forward string is tokenized with it). */
  encode(text: string): number[];
}

export interface GrammarVocabOptions {
  /** Logits per row (config.json's vocab_size: may exceed the tokenizer's; the extra ids are never allowed). */
  vocabSize: number;
  /** Ids that end a reply: allowed only where the schema's value is complete. */
  stopIds: readonly number[];
}

/** Tokens a grammar may force at once (a schema's fixed keys are a few dozen at most). */
const MAX_FORCED = 256;

const byTokenizer = new WeakMap<GrammarTokenizer, Map<string, Promise<SchemaGrammar>>>();

/** A tokenizer's grammar compiler: TokenizerInfo built once, compiled schemas cached. */
export class SchemaGrammar {
  private readonly compiled = new Map<string, Promise<CompiledGrammar>>();

  private constructor(
    private readonly compiler: GrammarCompiler,
    private readonly tokenizer: GrammarTokenizer,
    readonly vocabSize: number,
    private readonly stopIds: number[],
  ) {}

  /** The grammar compiler for `tokenizer` with these logits and stop ids (made once, then shared). */
  static for(tokenizer: GrammarTokenizer, o: GrammarVocabOptions): Promise<SchemaGrammar> {
    if (!Number.isInteger(o.vocabSize) || o.vocabSize < 1) throw new Error(`SchemaGrammar: vocabSize must be a positive integer, got ${o.vocabSize}`);
    const stopIds = [...new Set(o.stopIds)].sort((a, b) => a - b);
    for (const id of stopIds) if (!Number.isInteger(id) || id < 0 || id >= o.vocabSize) throw new Error(`SchemaGrammar: stop id ${id} is outside the vocabulary of ${o.vocabSize}`);
    let perTokenizer = byTokenizer.get(tokenizer);
    if (!perTokenizer) byTokenizer.set(tokenizer, (perTokenizer = new Map()));
    const key = `${o.vocabSize}|${stopIds.join(',')}`;
    let made = perTokenizer.get(key);
    if (!made) {
      made = SchemaGrammar.make(tokenizer, o.vocabSize, stopIds);
      perTokenizer.set(key, made);
      made.catch(() => perTokenizer.delete(key));
    }
    return made;
  }

  private static async make(tokenizer: GrammarTokenizer, vocabSize: number, stopIds: number[]): Promise<SchemaGrammar> {
    const xg = await xgrammar();
    const { tokens, vocabType, specialIds } = tokenizer.vocabulary();
    if (tokens.length > vocabSize) throw new Error(`SchemaGrammar: the tokenizer has ${tokens.length} tokens, more than the model's ${vocabSize} logits`);
    const stops = new Set(stopIds);
    // A special token that is not a stop token must never be drawn inside a reply; xgrammar reads a token
    // that decodes to nothing as special (never allowed), while a special's own text ('<|im_start|>') would
    // otherwise be allowed inside a JSON string.
    // Likewise a token holding a raw control character: xgrammar's JSON strings admit them, JSON.parse does
    // not, and with one-line output (see compile) no valid reply has one outside a string either.
    const encoded = tokens.map((t, id) => ((specialIds.has(id) || hasControlChar(t ?? '', vocabType)) && !stops.has(id) ? '' : (t ?? '')));
    const info = await xg.TokenizerInfo.createTokenizerInfo(encoded, vocabType, false, vocabSize, stopIds);
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, true);
    return new SchemaGrammar(compiler, tokenizer, vocabSize, stopIds);
  }

  /**
   * The schema (JSON Schema text) compiled for this tokenizer, cached. Replies are one line with ', ' and
   * ': ' separators (a small model's whitespace is otherwise a place to wander), and hold no property the
   * schema does not name.
   */
  compile(schema: string): Promise<CompiledGrammar> {
    let c = this.compiled.get(schema);
    if (!c) {
      c = (async () => {
        try {
          JSON.parse(schema);
        } catch (e) {
          throw new Error(`jsonSchema is not valid JSON: ${(e as Error).message}`);
        }
        try {
          return await this.compiler.compileJSONSchema(schema, false, -1, [', ', ': '], true);
        } catch (e) {
          throw new Error(`jsonSchema could not be compiled to a grammar: ${e instanceof Error ? e.message : String(e)}`);
        }
      })();
      this.compiled.set(schema, c);
      c.catch(() => this.compiled.delete(schema));
    }
    return c;
  }

  /** A fresh matcher (one row's grammar state) for `schema`. */
  async matcher(schema: string): Promise<SchemaMatcher> {
    const xg = await xgrammar();
    const compiled = await this.compile(schema);
    const m = await xg.GrammarMatcher.createGrammarMatcher(compiled, this.stopIds, false);
    return new SchemaMatcher(m, this.tokenizer, this.vocabSize);
  }
}

/** One row's grammar state: which tokens may come next, and which the grammar forces. */
export class SchemaMatcher implements TokenConstraint {
  /** Milliseconds spent in xgrammar (masks, accepts, jump-forward) for this row: what the grammar costs. */
  grammarMs = 0;
  private disposed = false;

  constructor(
    private readonly m: GrammarMatcher,
    private readonly tokenizer: Pick<GrammarTokenizer, 'encode'>,
    readonly vocabSize: number,
  ) {}

  /** Bitmask of the tokens allowed next: bit (id & 31) of word (id >> 5) set means allowed. */
  async allowedMask(): Promise<Int32Array> {
    this.live();
    const t0 = performance.now();
    const mask = await this.m.getNextTokenBitmask();
    this.grammarMs += performance.now() - t0;
    return mask;
  }

  /** Takes a drawn token; false (state unchanged) when the grammar does not allow it. */
  accept(id: number): boolean {
    this.live();
    const t0 = performance.now();
    const ok = this.m.acceptToken(id);
    this.grammarMs += performance.now() - t0;
    return ok;
  }

  /** True once a stop token was accepted after a complete value. */
  get terminated(): boolean {
    return this.m.isTerminated();
  }

  /**
   * Up to `limit` tokens the grammar leaves no choice on (jump-forward), already accepted: the tokenized
   * jump-forward string, as far as the grammar takes its tokens one by one. Empty where the next token is
   * a choice. The ids are the tokenizer's for the forced text alone, so the split can differ from what the
   * model would have drawn (a token spanning the forced text and the next choice is never among them).
   */
  forced(limit = MAX_FORCED): number[] {
    this.live();
    const out: number[] = [];
    const t0 = performance.now();
    try {
      while (out.length < limit) {
        const text = this.m.findJumpForwardString();
        if (!text) break;
        const ids = this.tokenizer.encode(text);
        let took = 0;
        for (const id of ids) {
          if (out.length >= limit || !this.m.acceptToken(id)) break;
          out.push(id);
          took++;
        }
        if (took < ids.length) break;
      }
    } finally {
      this.grammarMs += performance.now() - t0;
    }
    return out;
  }

  /**
   * The text the grammar would force right after `id` (its jump-forward string there), with this state left as
   * it was: two tokens with the same text and continuation lead to the same reply up to the next choice, such
   * as "b" and "base" of an enum value "base_generator" (the entropy bonus over choices counts them as one).
   * Null when the grammar does not allow `id` here.
   */
  continuation(id: number): string | null {
    this.live();
    const t0 = performance.now();
    try {
      if (!this.m.acceptToken(id)) return null;
      // A stop token ends the reply: nothing follows it (and xgrammar aborts on a jump-forward past the end).
      const text = this.m.isTerminated() ? '' : this.m.findJumpForwardString();
      this.m.rollBack(1);
      return text;
    } finally {
      this.grammarMs += performance.now() - t0;
    }
  }

  reset(): void {
    this.live();
    this.m.reset();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.m.dispose();
  }

  private live(): void {
    if (this.disposed) throw new Error('SchemaMatcher: used after dispose()');
  }
}

/**
 * Whether a token's bytes hold a control character (U+0000..U+001F). Byte-level vocabularies spell those
 * bytes as U+0100..U+011F (GPT-2's byte alphabet); byte-fallback ones as <0x00>..<0x1F>.
 */
function hasControlChar(token: string, vocabType: VocabType): boolean {
  if (vocabType === 'byte_level') return /[\u0100-\u011f]/.test(token);
  if (vocabType === 'byte_fallback' && /^<0x[01][0-9A-Fa-f]>$/.test(token)) return true;
  return /[\u0000-\u001f]/.test(token);
}

/** Sets the logits of the tokens `mask` does not allow to -Infinity, in place. */
export function maskLogits(logits: Float32Array, mask: Int32Array): void {
  for (let i = 0; i < logits.length; i++) if (!isAllowed(mask, i)) logits[i] = -Infinity;
}

export function isAllowed(mask: Int32Array, id: number): boolean {
  return ((mask[id >>> 5] >>> (id & 31)) & 1) === 1;
}
