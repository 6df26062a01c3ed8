// Registers the app's built-in tools with their default switches: Python and the base generator on;
// Wikipedia on but, as a network tool, waiting for the user's permission; web search off (it needs the
// user's own endpoint and key) and, once switched on, also waiting for permission.
import { BaseGeneratorTool, type BaseGeneratorOptions } from './base-generator';
import { PythonTool, type PythonToolOptions } from './python';
import type { ToolRegistry } from './registry';
import { WebSearchTool, type WebSearchToolOptions } from './web-search';
import { WikipediaTool, type WikipediaToolOptions } from './wikipedia';

export interface BuiltinToolsOptions {
  /** The shared chat engine (or a getter) the base generator asks. */
  engine: BaseGeneratorOptions['engine'];
  python?: PythonToolOptions;
  wikipedia?: WikipediaToolOptions;
  webSearch?: WebSearchToolOptions;
}

export interface BuiltinTools {
  python: PythonTool;
  wikipedia: WikipediaTool;
  baseGenerator: BaseGeneratorTool;
  webSearch: WebSearchTool;
}

export function registerBuiltinTools(registry: ToolRegistry, options: BuiltinToolsOptions): BuiltinTools {
  const tools: BuiltinTools = {
    python: new PythonTool(options.python),
    wikipedia: new WikipediaTool(options.wikipedia),
    baseGenerator: new BaseGeneratorTool({ engine: options.engine }),
    webSearch: new WebSearchTool(options.webSearch),
  };
  registry.register(tools.python);
  registry.register(tools.wikipedia);
  registry.register(tools.baseGenerator);
  registry.register(tools.webSearch, { enabled: false });
  return tools;
}
