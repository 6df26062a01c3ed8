export { Tokenizer, StreamingDecoder, type TokenizerSources } from './tokenizer.ts';
export { ChatTemplate, chatTemplateOf, type RenderOptions } from './chat-template.ts';
