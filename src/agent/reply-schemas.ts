// The JSON Schemas the modules' replies are decoded under (GenerateOptions.jsonSchema): the planner's tool name
// can only be a registered tool, the executor's arguments only what the chosen tool's card declares, the
// verifier's verdict only STOP or CONTINUE. Each schema is the shape its prompt (prompts.ts) asks for, field for
// field and in the same order (XGrammar makes properties appear in the schema's order).
//
// Free-text fields are bounded, so a model that never closes its string (an untrained, random-weight planner
// is the extreme case) ends its reply at the bound instead of at the token limit. The bound is a pattern, not
// maxLength: XGrammar's maxLength admits raw control characters, which JSON.parse refuses, while the pattern
// excludes them (and the quote and backslash, so a bounded field has no escapes: a model quotes with ').
// Bounded fields cost grammar-compile time in proportion to their length times the vocabulary, once per
// schema (engines cache compiled grammars), so the bounds are modest.
import type { JsonSchemaProperty, ToolCard } from '../tools/tool';

/** Characters each free-text field may hold. */
export interface ReplyLimits {
  subGoal: number;
  context: number;
  justification: number;
  explanation: number;
}

export const DEFAULT_REPLY_LIMITS: Readonly<ReplyLimits> = Object.freeze({ subGoal: 160, context: 240, justification: 160, explanation: 200 });

/** Most characters a bounded field may be given: the grammar grows a rule per character. */
export const MAX_FIELD_CHARS = 2000;

export type JsonSchema = Record<string, unknown>;

/** Checks limits (merged over the defaults), naming the field at fault. */
export function resolveReplyLimits(l: Partial<ReplyLimits> = {}): ReplyLimits {
  const out = { ...DEFAULT_REPLY_LIMITS, ...l };
  for (const [k, v] of Object.entries(out)) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_FIELD_CHARS) throw new Error(`agent config: replyLimits.${k} must be an integer from 1 to ${MAX_FIELD_CHARS} (characters), got ${v}`);
  }
  return out;
}

// JSON string characters that need no escape: anything but the quote, the backslash and control characters.
const PLAIN = '[^"\\\\\\x00-\\x1f]';

/**
 * A string of at most `chars` characters, none of them needing an escape. `nonBlank`: its first character is not
 * a space, so the parser (which trims) never finds it empty.
 */
export function boundedText(chars: number, nonBlank = false): JsonSchema {
  if (!Number.isInteger(chars) || chars < 1) throw new Error(`bounded text needs a positive whole number of characters, got ${chars}`);
  const pattern = nonBlank ? `^[^ "\\\\\\x00-\\x1f]${chars > 1 ? `${PLAIN}{0,${chars - 1}}` : ''}$` : `^${PLAIN}{0,${chars}}$`;
  return { type: 'string', pattern };
}

function objectOf(properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/**
 * The planner's reply: the tool first, then the sub-goal, the context the tool needs and why. The decision
 * comes first so that a reply cut off by the token limit still holds it: from the first character of the
 * sub-goal on, the parser can use whatever was written (parse.ts closes a cut-off object).
 */
export function plannerReplySchema(toolNames: readonly string[], limits: ReplyLimits = DEFAULT_REPLY_LIMITS): JsonSchema {
  const names = [...new Set(toolNames)];
  if (names.length === 0) throw new Error('planner reply schema: no tools are enabled, so no tool name can be allowed');
  return objectOf(
    {
      tool_name: { type: 'string', enum: names },
      sub_goal: boundedText(limits.subGoal, true),
      context: boundedText(limits.context),
      justification: boundedText(limits.justification),
    },
    ['tool_name', 'sub_goal', 'context', 'justification'],
  );
}

function argSchema(p: JsonSchemaProperty): JsonSchema {
  if (p.enum) return { type: p.type, enum: [...p.enum] };
  // A bounded argument (a search phrase) may start with a space or be empty: the tools' own check reports that.
  if (p.type === 'string') return p.maxLength !== undefined ? boundedText(p.maxLength) : { type: 'string' };
  const s: JsonSchema = { type: p.type };
  if (p.minimum !== undefined) s.minimum = p.minimum;
  if (p.maximum !== undefined) s.maximum = p.maximum;
  return s;
}

/**
 * The executor's reply: {"args": {...}} with exactly the card's inputs, its required ones present, each of its
 * type (and enum, bounds). Unbounded strings (code) keep JSON's escapes; bounded ones have none.
 */
export function executorReplySchema(card: ToolCard): JsonSchema {
  const props: Record<string, JsonSchema> = {};
  for (const [name, p] of Object.entries(card.input.properties)) props[name] = argSchema(p);
  const required = card.input.required.filter((r) => r in props);
  return objectOf({ args: objectOf(props, required) }, ['args']);
}

/** The verifier's reply: its explanation, then STOP or CONTINUE. */
export function verifierReplySchema(limits: ReplyLimits = DEFAULT_REPLY_LIMITS): JsonSchema {
  return objectOf({ explanation: boundedText(limits.explanation), verdict: { type: 'string', enum: ['STOP', 'CONTINUE'] } }, ['explanation', 'verdict']);
}

/** The schemas of one run's module calls as GenerateOptions.jsonSchema text, made once per run and per card. */
export class ReplySchemas {
  private readonly executors = new Map<string, string>();
  private planner: string | null | undefined;
  private verifier: string | undefined;

  constructor(
    private readonly toolNames: readonly string[],
    private readonly limits: ReplyLimits = DEFAULT_REPLY_LIMITS,
  ) {}

  /** Null with no tools enabled: there is no name to allow, and the loop reports the planner's choice instead. */
  forPlanner(): string | null {
    if (this.planner === undefined) this.planner = this.toolNames.length ? JSON.stringify(plannerReplySchema(this.toolNames, this.limits)) : null;
    return this.planner;
  }

  forExecutor(card: ToolCard): string {
    let s = this.executors.get(card.name);
    if (s === undefined) this.executors.set(card.name, (s = JSON.stringify(executorReplySchema(card))));
    return s;
  }

  forVerifier(): string {
    return (this.verifier ??= JSON.stringify(verifierReplySchema(this.limits)));
  }
}
