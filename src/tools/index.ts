// The tools package: what other modules import.
export type { JsonSchemaProperty, Tool, ToolCard, ToolContext, ToolResult } from './types';
export { ToolRegistry, ToolRegistryError, type RegisterOptions, type ToolStatus, type ToolSwitches } from './registry';
export { checkCard, validateArgs, type ValidationResult } from './validate';
export { BASE_GENERATOR_CARD, BUILTIN_CARDS, PYTHON_CARD, WEB_SEARCH_CARD, WIKIPEDIA_CARD } from './cards';
export { defaultPyodideIndexURL, PythonTool, PythonToolError, type PythonToolOptions } from './python';
export { DEFAULT_WIKIPEDIA_API, WikipediaTool, type WikipediaArticle, type WikipediaToolOptions } from './wikipedia';
export { BASE_GENERATOR_SYSTEM_PROMPT, BaseGeneratorTool, type BaseGeneratorOptions } from './base-generator';
export { JSON_SEARCH_PRESETS, JsonSearchProvider, WebSearchTool, type JsonSearchProviderConfig, type WebSearchProvider, type WebSearchResult, type WebSearchToolOptions } from './web-search';
export { registerBuiltinTools, type BuiltinTools, type BuiltinToolsOptions } from './builtin';
