// Qwen2.5-0.5B-Instruct's real chat template (tests/fixtures-local) must render exactly the ChatML text
// transformers produces; the expected strings below are written out by hand from the template's rules.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { ChatTemplate, chatTemplateOf } from './chat-template.ts';

const config = JSON.parse(readFileSync('tests/fixtures-local/qwen2.5-0.5b-instruct/tokenizer_config.json', 'utf8'));
const tpl = ChatTemplate.fromTokenizerConfig(config);
const DEFAULT_SYSTEM = '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n';

describe('Qwen2.5 chat template', () => {
  it('is the real template (tools branch, default system prompt)', () => {
    const src = chatTemplateOf(config);
    expect(src.startsWith('{%- if tools %}')).toBe(true);
    expect(src).toContain("{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}");
    expect(src.endsWith("{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n")).toBe(true);
  });

  it('adds the default system prompt when there is no system message', () => {
    expect(tpl.render([{ role: 'user', content: 'Hi there' }])).toBe(`${DEFAULT_SYSTEM}<|im_start|>user\nHi there<|im_end|>\n`);
  });

  it('uses the given system message instead', () => {
    expect(tpl.render([{ role: 'system', content: 'Be terse.' }, { role: 'user', content: '2+2?' }], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('renders a multi-turn conversation with a generation prompt', () => {
    const text = tpl.render(
      [
        { role: 'user', content: 'What is the capital of France?' },
        { role: 'assistant', content: 'Paris.' },
        { role: 'user', content: 'And of Italy?\nAnswer in one word.' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      DEFAULT_SYSTEM +
        '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n' +
        '<|im_start|>assistant\nParis.<|im_end|>\n' +
        '<|im_start|>user\nAnd of Italy?\nAnswer in one word.<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('keeps content verbatim (no trimming or escaping) and ends without a prompt when not asked', () => {
    const content = '  <b>x</b> {{ not jinja }} \n';
    expect(tpl.render([{ role: 'system', content: 'S' }, { role: 'user', content }, { role: 'assistant', content: 'ok' }])).toBe(
      `<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n${content}<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n`,
    );
  });

  it('renders a later system message as its own turn', () => {
    expect(tpl.render([{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }])).toBe(
      `${DEFAULT_SYSTEM}<|im_start|>user\na<|im_end|>\n<|im_start|>system\nb<|im_end|>\n`,
    );
  });

  it('names the problem when a config has no template', () => {
    expect(() => chatTemplateOf({}, 'x/tokenizer_config.json')).toThrow(/x\/tokenizer_config\.json: no 'chat_template'/);
    expect(chatTemplateOf({ chat_template: [{ name: 'tool_use', template: 'T' }, { name: 'default', template: 'D' }] })).toBe('D');
  });
});
