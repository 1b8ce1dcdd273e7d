/**
 * Overspill for AI SDK agents in Temporal workflow code: import this entry point, never the
 * package root, from a workflow (the root loads the native engine, which a workflow bundle cannot).
 *
 * - {@link overspillTools}: the read-back tools, run by the Overspill worker's activities.
 * - {@link OverspillMasking}: a `prepareStep` that clears old tool outputs from the model's input,
 *   leaving markers whose handles read them back.
 *
 * @module
 */

export { overspillTools, READ_BACK_TOOLS, type ToolSpec, type OverspillToolsOptions } from './tools';
export { OverspillMasking, measure, type OverspillMaskingOptions } from './masking';
export {
  DEFAULT_TASK_QUEUE,
  SPILL_ACTIVITY,
  ModelRetry,
  NoWorkerError,
  OverspillWorker,
  type OverspillWorkerOptions,
} from './overspill-worker';
export { maskMarker, isMasked, spillHeader } from './markers';
