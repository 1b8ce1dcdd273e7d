/**
 * Overspill for AI SDK agents on Temporal (`@temporalio/ai-sdk`): keeps oversized tool outputs out
 * of the model's context and the workflow's history, durably, with the engine the Overspill worker
 * runs.
 *
 * On the worker (this entry point):
 * - {@link OverspillPlugin}: reduces the outputs of the tool activities it is told about in the
 *   activity, before Temporal records them (spilled to the store, truncated, or summarized), and can
 *   drop the provider's raw bodies from `invokeModel` results.
 * - {@link Store}, {@link Limits}, {@link Model}, {@link reduce}: the engine itself.
 *
 * In workflow code (`@overspill/temporal-ai-sdk/workflow`): `overspillTools()`, the read-back tools,
 * and `OverspillMasking`, which clears old tool outputs from the model's input.
 *
 * @module
 */

export {
  OverspillPlugin,
  UserToolActivities,
  McpToolActivities,
  type OverspillPluginOptions,
  type ToolActivities,
  type ToolCallSite,
  type ToolOutputParts,
} from './plugin';
export {
  Store,
  Limits,
  Model,
  reduce,
  sanitizeKey,
  engineNames,
  readBackTools,
  type ToolSpec,
  OverspillError,
  NotFoundError,
  StoreError,
  ArgumentError,
  ConfigError,
  QuerySandboxError,
  type StoreOptions,
  type Caller,
  type Call,
  type Output,
  type Reduced,
  type EngineOutput,
  type ReadRequest,
  type GrepRequest,
  type QueryRequest,
  type ListRequest,
} from './native';
