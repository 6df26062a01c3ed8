// An MLC conv_template (mlc-chat-config.json) as a Jinja chat template for ChatTemplate, so a model that
// web-llm has cached loads in the planner without tokenizer_config.json (which web-llm never downloads).
//
// The rendering rules are web-llm's (0.2.86, lib/index.js Conversation.getSystemPrompt /
// getPromptArrayInternal, and getConversationFromChatCompletionRequest), which agree with mlc-llm's
// python/mlc_llm/protocol/conversation_protocol.py as_prompt wherever this module accepts a template:
// - prompt = system_template with {system_message} replaced by the request's first message when that is a
//   system message, else by conv.system_message; nothing when that is empty and
//   render_empty_system_message is false; no system prompt at all when the result is '';
// - message i (counting after the system message) = roles[role] + role_content_sep, then
//   role_templates[role] with {user_message} / {assistant_message} / {tool_message} replaced by the
//   content, then seps[i % seps.length]; the role prefix is left out of message 0 when
//   add_role_after_system_message is false and there is a system prompt;
// - generation prompt = roles.assistant + role_empty_sep;
// - a system message anywhere but first, or a role the template lacks, is an error.
// What the two disagree on, or what needs more than text (system_prefix_token_ids), is rejected here
// rather than guessed: see checkConv.
//
// Text from the config becomes Jinja string literals with every brace, quote and control character
// escaped; message content is only ever inserted by expression, so it comes out verbatim (web-llm's
// String.replace would expand '$&' in content and strip '{function_string}' from it; that is not copied).
import { AgentFlowError, type ErrorCategory } from '../../errors';

export const MLC_CHAT_CONFIG = 'mlc-chat-config.json';

const ROLES = ['user', 'assistant', 'tool'] as const;
type ConvRole = (typeof ROLES)[number];
const PLACEHOLDER: Record<ConvRole | 'system', string> = {
  system: '{system_message}',
  user: '{user_message}',
  assistant: '{assistant_message}',
  tool: '{tool_message}',
};
const FUNCTION_PLACEHOLDER = '{function_string}';

export class ConvTemplateError extends AgentFlowError {
  override readonly category: ErrorCategory = 'no-chat-template';
  constructor(message: string) {
    super(message);
    this.name = 'ConvTemplateError';
  }
}

/** The fields of a conv_template this module renders, checked. */
interface Conv {
  systemTemplate: string;
  systemMessage: string;
  renderEmptySystemMessage: boolean;
  addRoleAfterSystemMessage: boolean;
  roles: Partial<Record<ConvRole, string>> & { user: string; assistant: string };
  roleTemplates: Partial<Record<ConvRole, string>>;
  seps: string[];
  roleContentSep: string;
  roleEmptySep: string;
}

/** The chat template for mlc-chat-config.json's conv_template (`chatConfig` is the whole parsed file). */
export function chatTemplateFromMlcChatConfig(chatConfig: unknown, file = MLC_CHAT_CONFIG): string {
  const conv = (chatConfig as { conv_template?: unknown } | null)?.conv_template;
  if (conv === undefined || conv === null) throw new ConvTemplateError(`${file}: no 'conv_template'`);
  return convTemplateToJinja(conv, file);
}

/** Why mlc-chat-config.json's conv_template gives no chat template, or null when it gives one. */
export function convTemplateProblem(chatConfig: unknown, file = MLC_CHAT_CONFIG): string | null {
  try {
    chatTemplateFromMlcChatConfig(chatConfig, file);
    return null;
  } catch (e) {
    if (e instanceof ConvTemplateError) return e.message;
    throw e;
  }
}

/** A Jinja chat template that renders `conv` as web-llm does (see the header). */
export function convTemplateToJinja(conv: unknown, file = MLC_CHAT_CONFIG): string {
  const c = checkConv(conv, file);
  return [systemPart(c), messagesPart(c), generationPart(c)].join('');
}

function checkConv(conv: unknown, file: string): Conv {
  if (!conv || typeof conv !== 'object' || Array.isArray(conv)) throw new ConvTemplateError(`${file}: 'conv_template' is not an object`);
  const o = conv as Record<string, unknown>;
  const at = (field: string) => `${file}: conv_template.${field}`;
  if (o.system_template === undefined && o.roles === undefined && o.seps === undefined) {
    // Older builds name one of mlc-llm's built-in templates; its text is not in the file.
    throw new ConvTemplateError(`${file}: conv_template only names a template (${JSON.stringify(o.name)}) and does not spell it out (no system_template, roles or seps)`);
  }
  const str = (field: string, v: unknown, why = '') => {
    if (typeof v !== 'string') throw new ConvTemplateError(`${at(field)} must be a string${why}, got ${JSON.stringify(v)}`);
    return v;
  };
  const bool = (field: string, v: unknown, dflt: boolean) => {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') throw new ConvTemplateError(`${at(field)} must be true or false, got ${JSON.stringify(v)}`);
    return v;
  };

  const prefix = o.system_prefix_token_ids;
  if (prefix !== undefined && prefix !== null && !(Array.isArray(prefix) && prefix.length === 0)) {
    // web-llm prepends these ids to the encoded prompt; a text template cannot express token ids.
    throw new ConvTemplateError(`${at('system_prefix_token_ids')} is ${JSON.stringify(prefix)}: prompts that start with fixed token ids are not supported`);
  }
  if (o.use_function_calling === true || (typeof o.function_string === 'string' && o.function_string !== '')) {
    throw new ConvTemplateError(`${at('function_string')} / use_function_calling: function calling templates are not supported`);
  }
  if (Array.isArray(o.messages) && o.messages.length > 0) {
    // mlc-llm's as_prompt would render these before the request's messages; web-llm ignores them.
    throw new ConvTemplateError(`${at('messages')} holds ${o.messages.length} preset messages, which web-llm and mlc-llm treat differently`);
  }

  const systemTemplate = str('system_template', o.system_template);
  if (count(systemTemplate, PLACEHOLDER.system) > 1) {
    // web-llm replaces the first occurrence, mlc-llm every one.
    throw new ConvTemplateError(`${at('system_template')} contains ${PLACEHOLDER.system} more than once`);
  }
  const roles = checkRoles(o.roles, at);
  const roleTemplates = checkRoleTemplates(o.role_templates, at);
  for (const [field, text] of [['system_template', systemTemplate], ...Object.entries(roleTemplates).map(([r, t]) => [`role_templates.${r}`, t])]) {
    if (text.includes(FUNCTION_PLACEHOLDER)) throw new ConvTemplateError(`${at(field)} contains ${FUNCTION_PLACEHOLDER}: function calling templates are not supported`);
  }

  const seps = o.seps;
  if (!Array.isArray(seps) || seps.length < 1 || seps.length > 2 || !seps.every((s) => typeof s === 'string')) {
    throw new ConvTemplateError(`${at('seps')} must be a list of 1 or 2 strings, got ${JSON.stringify(seps)}`);
  }
  // Absent separators default to ': ' in web-llm but '' in mlc-llm, so they must be given.
  const defaultsDiffer = ' (web-llm and mlc-llm default it differently)';
  return {
    systemTemplate,
    systemMessage: str('system_message', o.system_message),
    renderEmptySystemMessage: bool('render_empty_system_message', o.render_empty_system_message, true),
    addRoleAfterSystemMessage: bool('add_role_after_system_message', o.add_role_after_system_message, true),
    roles,
    roleTemplates,
    seps: seps as string[],
    roleContentSep: str('role_content_sep', o.role_content_sep, defaultsDiffer),
    roleEmptySep: str('role_empty_sep', o.role_empty_sep, defaultsDiffer),
  };
}

function checkRoles(v: unknown, at: (f: string) => string): Conv['roles'] {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ConvTemplateError(`${at('roles')} must be an object, got ${JSON.stringify(v)}`);
  const o = v as Record<string, unknown>;
  const roles: Partial<Record<ConvRole, string>> = {};
  for (const r of ROLES) {
    if (o[r] === undefined) continue;
    if (typeof o[r] !== 'string') throw new ConvTemplateError(`${at(`roles.${r}`)} must be a string, got ${JSON.stringify(o[r])}`);
    roles[r] = o[r];
  }
  for (const r of ['user', 'assistant'] as const) if (roles[r] === undefined) throw new ConvTemplateError(`${at(`roles.${r}`)} is missing`);
  return roles as Conv['roles'];
}

function checkRoleTemplates(v: unknown, at: (f: string) => string): Conv['roleTemplates'] {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new ConvTemplateError(`${at('role_templates')} must be an object, got ${JSON.stringify(v)}`);
  const o = v as Record<string, unknown>;
  const out: Partial<Record<ConvRole, string>> = {};
  for (const r of ROLES) {
    const t = o[r];
    if (t === undefined || t === null) continue;
    if (typeof t !== 'string') throw new ConvTemplateError(`${at(`role_templates.${r}`)} must be a string, got ${JSON.stringify(t)}`);
    // Without the placeholder both web-llm and mlc-llm drop the message; twice, they disagree.
    if (count(t, PLACEHOLDER[r]) !== 1) throw new ConvTemplateError(`${at(`role_templates.${r}`)} must contain ${PLACEHOLDER[r]} exactly once, got ${JSON.stringify(t)}`);
    out[r] = t;
  }
  return out;
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** `text` as a single-quoted Jinja string literal that the lexer's preprocessing cannot touch. */
function jinjaLiteral(text: string): string {
  let out = "'";
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (ch === '\n') out += '\\n';
    // Braces are escaped so that no '{%', '{{' or '{#' appears in the source: @huggingface/jinja rewrites
    // some tags (e.g. '{% generation %}') with a regex before lexing, string literals included.
    else if (ch === '{' || ch === '}' || code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}

/** `a + b + ...` over Jinja expressions, leaving out empty literals. */
function concat(...parts: string[]): string {
  const kept = parts.filter((p) => p !== "''");
  return kept.length ? kept.join(' + ') : "''";
}

/** Sets `sys_prompt` (the rendered system prompt, '' for none) and `off` (1 when messages[0] is the system message). */
function systemPart(c: Conv): string {
  const at = c.systemTemplate.indexOf(PLACEHOLDER.system);
  const filled =
    at < 0
      ? jinjaLiteral(c.systemTemplate)
      : concat(jinjaLiteral(c.systemTemplate.slice(0, at)), 'sys', jinjaLiteral(c.systemTemplate.slice(at + PLACEHOLDER.system.length)));
  const prompt = c.renderEmptySystemMessage ? filled : `(${filled} if sys != '' else '')`;
  return (
    "{%- set has_sys = messages|length > 0 and messages[0]['role'] == 'system' -%}" +
    `{%- set sys = messages[0]['content'] if has_sys else ${jinjaLiteral(c.systemMessage)} -%}` +
    '{%- set off = 1 if has_sys else 0 -%}' +
    `{%- set sys_prompt = ${prompt} -%}` +
    '{{- sys_prompt -}}'
  );
}

function messagesPart(c: Conv): string {
  const branches = ROLES.filter((r) => c.roles[r] !== undefined).map((r, k) => `{%- ${k === 0 ? 'if' : 'elif'} m['role'] == '${r}' -%}${messagePart(c, r)}`);
  const misplaced = jinjaLiteral(`the chat template from ${MLC_CHAT_CONFIG}'s conv_template takes a system message only as the first message (as web-llm does)`);
  const unknown = jinjaLiteral(`${MLC_CHAT_CONFIG}: conv_template.roles has no role `);
  return (
    '{%- for m in messages -%}{%- if loop.index0 >= off -%}{%- set i = loop.index0 - off -%}' +
    branches.join('') +
    `{%- elif m['role'] == 'system' -%}{{- raise_exception(${misplaced}) -}}` +
    `{%- else -%}{{- raise_exception(${unknown} + m['role']) -}}` +
    '{%- endif -%}{%- endif -%}{%- endfor -%}'
  );
}

function messagePart(c: Conv, r: ConvRole): string {
  const template = c.roleTemplates[r] ?? PLACEHOLDER[r];
  const at = template.indexOf(PLACEHOLDER[r]);
  const before = template.slice(0, at);
  const after = template.slice(at + PLACEHOLDER[r].length);
  const sep = c.seps.length === 1 || c.seps[0] === c.seps[1] ? jinjaLiteral(c.seps[0]) : `(${jinjaLiteral(c.seps[0])} if i % 2 == 0 else ${jinjaLiteral(c.seps[1])})`;
  const rolePrefix = `{{- ${jinjaLiteral(c.roles[r]! + c.roleContentSep)} -}}`;
  const prefix = c.addRoleAfterSystemMessage ? rolePrefix : `{%- if not (i == 0 and sys_prompt != '') -%}${rolePrefix}{%- endif -%}`;
  return `${prefix}{{- ${concat(jinjaLiteral(before), "m['content']", jinjaLiteral(after), sep)} -}}`;
}

function generationPart(c: Conv): string {
  return `{%- if add_generation_prompt -%}{{- ${jinjaLiteral(c.roles.assistant + c.roleEmptySep)} -}}{%- endif -%}`;
}
