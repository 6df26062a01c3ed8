// Tools the executor can call. Each has a card that the planner and executor see in their prompts, and
// a JSON-schema-like input description the executor's arguments are checked against.

export interface JsonSchemaProperty {
  type: 'string' | 'number' | 'integer' | 'boolean';
  description: string;
  enum?: Array<string | number>;
  /**
   * Bounds that constrained decoding writes into the reply's grammar (src/agent/reply-schemas.ts), so a
   * model cannot write a value without end. The tools themselves still clamp what they are given.
   */
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

export interface ToolCard {
  name: string;
  description: string;
  input: { type: 'object'; properties: Record<string, JsonSchemaProperty>; required: string[] };
  output: string;
  limitations: string[];
  examples: Array<{ goal: string; args: Record<string, unknown> }>;
  /** Sends data off the device; such tools are off until the user allows them, and the UI says so. */
  usesNetwork: boolean;
}

export interface ToolContext {
  signal: AbortSignal;
  /** Milliseconds the tool may take; the executor enforces it too. */
  timeoutMs: number;
  /**
   * A tool that runs calls one at a time (one shared worker) calls `queued()` when a call must wait for its
   * turn and `started()` when its work on the call begins. The caller's time limit stops while queued and
   * counts from started(), so a call is not timed out for the time it spent behind other callers' calls;
   * the wait has its own, longer limit (QUEUE_LIMIT_PER_TIME_LIMIT x timeoutMs). A tool that calls neither
   * is timed from the call; calls after the caller gave up are ignored.
   */
  queued?: () => void;
  started?: () => void;
  /**
   * What a user waiting on the call should know that the tool is doing, as plain text (e.g. 'starting
   * Python (first use)' while its runtime loads); null when that is over. For display only; optional.
   */
  note?: (text: string | null) => void;
}

export interface ToolResult {
  ok: boolean;
  /** Full output, stored in memory as is. */
  output: string;
  /** Set when ok is false: what went wrong, for the memory and the UI. */
  error?: string;
}

export interface Tool {
  card: ToolCard;
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
  /** Releases workers or other resources. */
  dispose?(): void;
}
