// Library entry: `<agentflow-chat>` for any page, with what an embedding page needs to drive it without
// models (scripted engines) or to give it its own tools.
export { AgentFlowChat, type AgentflowAnswerDetail, type AgentflowTurnDetail } from './ui/agentflow-chat';
export { AgentflowToolSwitches } from './ui/tool-switches';
export { isScripted, scriptedDemoEngines } from './controllers/engines/demo-engines';
export { renderMarkdown } from './ui/markdown';
export { onStorageNotice, storageNotice, type StorageNotice } from './store/db';
export { ScriptedEngine, type Script, type ScriptedReply } from './agent/scripted-engine';
export { demoScript, demoEngines } from './agent/demo';
export { ToolRegistry } from './tools/registry';
export type { Tool, ToolCard, ToolContext, ToolResult } from './tools/tool';
export type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult, LoadProgress } from './engine/chat-engine';
export type { AgentEngines } from './agent/loop';
export { AgentFlowError, errorCategory, type ErrorCategory } from './errors';
export { WorkerGoneError } from './util/worker-watch';
