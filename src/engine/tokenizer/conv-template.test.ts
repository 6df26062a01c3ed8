// The chat template derived from an MLC conv_template must render what web-llm renders for that template
// (its Conversation.getPromptArray rules); for Qwen2.5's 'chatml' conv_template that is also what the
// model's own Hugging Face template renders whenever the conversation starts with a system message. The
// expected strings are written out by hand from web-llm's rules.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChatTemplate } from './chat-template.ts';
import { chatTemplateFromMlcChatConfig, convTemplateToJinja } from './conv-template.ts';
import { MLC_MANIFEST_05B, TINY_MLC } from '../../io/test-fixtures.ts';
import type { ChatMessage } from '../chat-engine.ts';

const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8'));
const chatConfig = readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json'));
const QWEN_CONV = chatConfig.conv_template;
const derived = new ChatTemplate(chatTemplateFromMlcChatConfig(chatConfig));
const hf = ChatTemplate.fromTokenizerConfig(readJson('tests/fixtures-local/qwen2.5-0.5b-instruct/tokenizer_config.json'));
const gen = { addGenerationPrompt: true };

describe('Qwen2.5 chatml conv_template', () => {
  it('renders system + user with the generation prompt exactly as the Hugging Face template does', () => {
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'You are the Planner of a tool-using agent.\nAnswer in JSON.' },
      { role: 'user', content: 'Query: what is 2+2?' },
    ];
    const want =
      '<|im_start|>system\nYou are the Planner of a tool-using agent.\nAnswer in JSON.<|im_end|>\n' +
      '<|im_start|>user\nQuery: what is 2+2?<|im_end|>\n' +
      '<|im_start|>assistant\n';
    expect(derived.render(msgs, gen)).toBe(want);
    expect(hf.render(msgs, gen)).toBe(want);
  });

  it('renders a multi-turn conversation (seps after user and assistant turns) as the Hugging Face template does', () => {
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Capital of France?' },
      { role: 'assistant', content: 'Paris.' },
      { role: 'user', content: 'And of Italy?\n\nOne word.' },
    ];
    const turns =
      '<|im_start|>system\nBe terse.<|im_end|>\n' +
      '<|im_start|>user\nCapital of France?<|im_end|>\n' +
      '<|im_start|>assistant\nParis.<|im_end|>\n' +
      '<|im_start|>user\nAnd of Italy?\n\nOne word.<|im_end|>\n';
    expect(derived.render(msgs, gen)).toBe(`${turns}<|im_start|>assistant\n`);
    expect(hf.render(msgs, gen)).toBe(`${turns}<|im_start|>assistant\n`);
    // Without the generation prompt the conversation ends after the last turn's separator.
    expect(derived.render(msgs)).toBe(turns);
    expect(hf.render(msgs)).toBe(turns);
  });

  it("renders an empty system message as an empty system turn, as both do", () => {
    const msgs: ChatMessage[] = [{ role: 'system', content: '' }, { role: 'user', content: 'hi' }];
    const want = '<|im_start|>system\n<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';
    expect(derived.render(msgs, gen)).toBe(want);
    expect(hf.render(msgs, gen)).toBe(want);
  });

  it("falls back to the conv_template's system_message without a system message (web-llm's rule; Hugging Face's template uses Qwen's own default)", () => {
    const msgs: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    expect(derived.render(msgs, gen)).toBe(
      '<|im_start|>system\nA conversation between a user and an LLM-based AI assistant. The assistant gives helpful and honest answers.<|im_end|>\n' +
        '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(hf.render(msgs, gen)).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('keeps content that looks like Jinja or like template placeholders verbatim', () => {
    const sys = "{% if true %}S{% endif %} {{ messages }} {# c #} {system_message} $& \\ ' \"";
    const user = "{{ x }} {% if %} {% generation %} {user_message} {function_string} $' $$ \\n '\"";
    const reply = '{%- endfor %}{{ raise_exception("no") }}';
    const msgs: ChatMessage[] = [
      { role: 'system', content: sys },
      { role: 'user', content: user },
      { role: 'assistant', content: reply },
      { role: 'user', content: '}}' },
    ];
    expect(derived.render(msgs, gen)).toBe(
      `<|im_start|>system\n${sys}<|im_end|>\n<|im_start|>user\n${user}<|im_end|>\n` +
        `<|im_start|>assistant\n${reply}<|im_end|>\n<|im_start|>user\n}}<|im_end|>\n<|im_start|>assistant\n`,
    );
  });

  it('refuses a system message after the first, as web-llm does', () => {
    expect(() => derived.render([{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }], gen)).toThrow(/system message only as the first message/);
  });
});

// A template exercising every rule and every character that needs escaping in the literal text.
const ODD_CONV = {
  name: 'odd',
  system_template: `<sys '{"q"}' \\ {% generation %}{#>{system_message}</sys>\n`,
  system_message: 'default {{ sys }}',
  system_prefix_token_ids: null,
  add_role_after_system_message: false,
  roles: { user: 'U{#', assistant: "A'}}" },
  role_templates: { user: '<<{user_message}>>', assistant: '{assistant_message}\t' },
  messages: [],
  seps: ['|', '||\n'],
  role_content_sep: ': ',
  role_empty_sep: ':',
  stop_str: [],
  stop_token_ids: [],
  function_string: '',
  use_function_calling: false,
};
const odd = (conv: object = ODD_CONV) => new ChatTemplate(convTemplateToJinja(conv));

describe('conv_template rules', () => {
  const SYS = (m: string) => `<sys '{"q"}' \\ {% generation %}{#>${m}</sys>\n`;

  it('copies literal text exactly, alternates two seps by position, leaves out the role of the first message after a system prompt', () => {
    const msgs: ChatMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ];
    expect(odd().render(msgs, gen)).toBe(SYS('default {{ sys }}') + '<<a>>|' + "A'}}: b\t||\n" + 'U{#: <<c>>|' + "A'}}:");
    expect(odd().render([{ role: 'system', content: 'S' }, ...msgs])).toBe(SYS('S') + '<<a>>|' + "A'}}: b\t||\n" + 'U{#: <<c>>|');
  });

  it("takes seps by message position, not role (web-llm's i % seps.length)", () => {
    expect(odd().render([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }])).toBe(SYS('default {{ sys }}') + '<<a>>|' + 'U{#: <<b>>||\n');
  });

  it('renders no system prompt for an empty system message when render_empty_system_message is false, and then keeps the first role', () => {
    const conv = { ...ODD_CONV, render_empty_system_message: false };
    expect(odd(conv).render([{ role: 'system', content: '' }, { role: 'user', content: 'a' }], gen)).toBe("U{#: <<a>>|A'}}:");
    expect(odd(conv).render([{ role: 'system', content: 'S' }, { role: 'user', content: 'a' }], gen)).toBe(`${SYS('S')}<<a>>|A'}}:`);
  });

  it('uses the bare content for a role without a role template, and a system_template without the placeholder as is', () => {
    const conv = { ...ODD_CONV, system_template: 'FIXED\n', role_templates: {}, add_role_after_system_message: true };
    expect(odd(conv).render([{ role: 'system', content: 'ignored' }, { role: 'user', content: 'a' }], gen)).toBe("FIXED\nU{#: a|A'}}:");
  });
});

describe('conv_template errors name mlc-chat-config.json and the field', () => {
  const bad = (patch: object) => () => convTemplateToJinja({ ...QWEN_CONV, ...patch });

  it('rejects a conv_template that only names a template (the tiny fixture)', () => {
    expect(() => chatTemplateFromMlcChatConfig(readJson(join(TINY_MLC, 'mlc-chat-config.json')))).toThrow(
      /^mlc-chat-config\.json: conv_template only names a template \("qwen2"\)/,
    );
    expect(() => chatTemplateFromMlcChatConfig({ model_type: 'qwen2' })).toThrow(/mlc-chat-config\.json: no 'conv_template'/);
  });

  it('rejects what a text template cannot express or web-llm and mlc-llm disagree on', () => {
    expect(bad({ system_prefix_token_ids: [1] })).toThrow(/mlc-chat-config\.json: conv_template\.system_prefix_token_ids is \[1\]/);
    expect(bad({ role_content_sep: undefined })).toThrow(/conv_template\.role_content_sep must be a string/);
    expect(bad({ role_empty_sep: 3 })).toThrow(/conv_template\.role_empty_sep must be a string/);
    expect(bad({ seps: [] })).toThrow(/conv_template\.seps must be a list of 1 or 2 strings/);
    expect(bad({ seps: ['a', 'b', 'c'] })).toThrow(/conv_template\.seps/);
    expect(bad({ roles: { user: '<|im_start|>user' } })).toThrow(/conv_template\.roles\.assistant is missing/);
    expect(bad({ role_templates: { user: 'no placeholder' } })).toThrow(/conv_template\.role_templates\.user must contain \{user_message\} exactly once/);
    expect(bad({ role_templates: { user: '{function_string}{user_message}' } })).toThrow(/conv_template\.role_templates\.user contains \{function_string\}/);
    expect(bad({ system_template: '{system_message}{system_message}' })).toThrow(/conv_template\.system_template contains \{system_message\} more than once/);
    expect(bad({ use_function_calling: true })).toThrow(/conv_template\.function_string/);
    expect(bad({ messages: [['user', 'hi']] })).toThrow(/conv_template\.messages holds 1 preset messages/);
    expect(bad({ system_message: null })).toThrow(/conv_template\.system_message must be a string/);
  });

  it('accepts an empty system_prefix_token_ids list', () => {
    expect(() => convTemplateToJinja({ ...QWEN_CONV, system_prefix_token_ids: [] })).not.toThrow();
  });
});
