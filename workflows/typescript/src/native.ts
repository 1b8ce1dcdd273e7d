/**
 * Overspill's engine (Rust, the very code the worker runs), as typed classes: a spill {@link Store}
 * by URL with the four read-back pages, {@link Limits}, a summarizing {@link Model} and
 * {@link reduce}. Every call that touches a store or a model runs on a Tokio runtime off the
 * Node event loop and returns a Promise.
 *
 * Worker-side only: a workflow bundle cannot load a native addon.
 *
 * @module
 */

import { delimiter, join } from 'node:path';
import { accessSync, constants } from 'node:fs';

import type * as Native from '../native/index.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const native: typeof Native = require('../native/index.js');

/** Who reads or writes a spill: the namespace and workflow id of the Temporal activity a call is
 * made in. No caller is a program outside Temporal: it reads every spill and writes spills of no
 * workflow. */
export type Caller = Native.Caller;

/** The call a tool return came from; its spill key is `{runId}/{toolCallId}.{retry}`. */
export type Call = Native.Call;

/** A tool's return value (text, bytes, or with `structured` JSON text) and, for a ToolReturn
 * envelope, its `content` and `metadata`. */
export type Output = Native.Output;

/** The read-back tools' requests, as the worker's activities take them (snake_case). */
export interface ReadRequest {
  handle: string;
  offset?: number;
  limit?: number;
  from_end?: boolean;
  pattern?: string | null;
}
/** `grep_tool_result`'s request. */
export interface GrepRequest {
  handle: string;
  pattern: string;
  regex?: boolean;
  ignore_case?: boolean;
  context?: number;
  offset?: number;
  limit?: number;
  from_end?: boolean;
}
/** `query_tool_result`'s request. */
export interface QueryRequest {
  handle: string;
  filter: string;
  offset?: number;
  limit?: number;
}
/** `list_tool_results`' request: a run's spills, newest first. */
export interface ListRequest {
  run_id: string;
  limit?: number;
  tool_names?: Record<string, string>;
}

/** An engine output form: text, or a JSON value. */
export type EngineOutput = { text: string } | { json: unknown } | { bytes_b64: string };

/** The reduce activity's reply: what the model sees instead of a tool's return. */
export interface Reduced {
  /** What happened to the value: `truncated`, `spilled`, `summarized` or `passthrough`. */
  kind: 'truncated' | 'spilled' | 'summarized' | 'passthrough';
  /** What happened to an envelope's content. */
  content_kind: 'truncated' | 'spilled' | 'summarized' | 'passthrough';
  /** The value the model sees. */
  return_value: EngineOutput;
  content?: unknown;
  metadata?: unknown;
  envelope?: boolean;
  /** The store's URL, where a spill's handle resolves. */
  store?: string | null;
  [field: string]: unknown;
}

/** An Overspill call failed. */
export class OverspillError extends Error {
  override name = 'OverspillError';
}

/** The store has no spill under the handle, or the caller may not see it. */
export class NotFoundError extends OverspillError {
  override name = 'NotFoundError';
}

/** A spill store failed: it is down, slow, refuses the credentials, or is misconfigured. */
export class StoreError extends OverspillError {
  override name = 'StoreError';
  constructor(
    message: string,
    /** The failure's kind (`StoreUnavailable`, `StoreMisconfigured`, …). */
    readonly kind: string,
    /** Whether a later try may succeed. */
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** A read-back tool's argument is wrong: the message tells the model what to change. */
export class ArgumentError extends OverspillError {
  override name = 'ArgumentError';
}

/** A limits configuration, store URL or option the engine refuses (the message names it). */
export class ConfigError extends OverspillError {
  override name = 'ConfigError';
}

/** The query sandbox failed, or there is none to run a model's jq filter in. */
export class QuerySandboxError extends OverspillError {
  override name = 'QuerySandboxError';
}

/** `outcome`'s value, or its failure thrown as the typed error. */
function unwrap<T>(outcome: T | Native.Failure): T {
  if (!isFailure(outcome)) return outcome;
  const { error, message } = outcome;
  switch (error) {
    case 'NotFound':
      throw new NotFoundError(message);
    case 'StoreError':
      throw new StoreError(message, outcome.kind ?? 'Unknown', outcome.retryable ?? false);
    case 'ArgumentError':
      throw new ArgumentError(message);
    case 'ConfigError':
      throw new ConfigError(message);
    case 'QuerySandboxError':
      throw new QuerySandboxError(message);
    default:
      throw new OverspillError(`${error}: ${message}`);
  }
}

function isFailure(value: unknown): value is Native.Failure {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Buffer.isBuffer(value) &&
    typeof (value as Native.Failure).error === 'string' &&
    typeof (value as Native.Failure).message === 'string'
  );
}

/** How a {@link Store} reads, and where its queries run. */
export interface StoreOptions {
  /** The spills reads inside an activity see: `workflow` (default: the activity's own workflow's),
   * `namespace` or `any`; any other reads as a missing one. */
  readScope?: 'workflow' | 'namespace' | 'any';
  /** The `overspill` executable, which each `query_tool_result` runs in (`overspill
   * query-sandbox`), bounded in memory and time. Default: `overspill` on `PATH`; without one,
   * queries are refused rather than run unbounded in this process. */
  querySandbox?: string | null;
}

/** A spill store by URL, written and read exactly as the Overspill worker writes and reads it:
 * the worker pages what this writes, and this pages what the worker wrote. */
export class Store {
  /** The addon's store. */
  readonly native: Native.Store;

  /**
   * Open the store at `url`: `file:///path`, `s3://bucket/prefix`, `gs://…`, `az://…` or
   * `memory://`, as `overspill worker --store` takes it (default: `OVERSPILL_STORE`, else the local
   * store every Overspill command shares, `file://$TMPDIR/overspill-<euid>`).
   */
  constructor(url?: string | null, options: StoreOptions = {}) {
    const sandbox = options.querySandbox === undefined ? onPath('overspill') : options.querySandbox;
    const location = url ?? (process.env['OVERSPILL_STORE'] || null);
    this.native = unwrap(native.openStore(location, options.readScope ?? 'workflow', sandbox));
  }

  /** The URL as the worker shows it (no query parameters, no password). */
  get url(): string {
    return this.native.url;
  }

  /** The read scope reads inside an activity have. */
  get readScope(): string {
    return this.native.readScope;
  }

  /** Check that the store can be used: a local root is created `0700` (or checked), a bucket
   * answers a listing. */
  async check(): Promise<void> {
    const failure = await this.native.check();
    if (failure !== null) unwrap(failure);
  }

  /** Store `data` under `key` (an overwrite) with its line index and the facts of its writer and
   * tool; resolves to the handle. */
  async write(key: string, data: string | Buffer, options: { toolName?: string; caller?: Caller } = {}): Promise<string> {
    return unwrap(await this.native.write(key, data, options.toolName, options.caller));
  }

  /** The whole payload of `handle`, as `caller` may see it ({@link NotFoundError} otherwise). */
  async read(handle: string, options: { caller?: Caller } = {}): Promise<Buffer> {
    return unwrap(await this.native.read(handle, options.caller));
  }

  /** `read_tool_result`'s page: the worker's text, byte for byte. */
  readToolResult(request: ReadRequest, options: { caller?: Caller } = {}): Promise<string> {
    return this.page('read_tool_result', request, options.caller);
  }

  /** `grep_tool_result`'s page. */
  grepToolResult(request: GrepRequest, options: { caller?: Caller } = {}): Promise<string> {
    return this.page('grep_tool_result', request, options.caller);
  }

  /** `query_tool_result`'s page, the filter run in the query sandbox. */
  queryToolResult(request: QueryRequest, options: { caller?: Caller } = {}): Promise<string> {
    return this.page('query_tool_result', request, options.caller);
  }

  /** `list_tool_results`' page: the run's spills `caller` may see, newest first. */
  listToolResults(request: ListRequest, options: { caller?: Caller } = {}): Promise<string> {
    return this.page('list_tool_results', request, options.caller);
  }

  private async page(tool: string, request: object, caller: Caller | undefined): Promise<string> {
    return unwrap(await this.native.page(tool, request, caller));
  }
}

/** Size bands and their actions: the JSON `overspill worker --limits` takes. */
export class Limits {
  /** The addon's limits. */
  readonly native: Native.Limits;

  /** The limits `config` says, as JSON text or its value (default: one band spilling outputs over
   * 10,000 chars with a 1,000-char preview, truncating when the spill fails). */
  constructor(config?: string | object | null) {
    const json = config === undefined || config === null || typeof config === 'string' ? config : JSON.stringify(config);
    this.native = unwrap(native.parseLimits(json));
  }
}

/** An OpenAI-compatible chat-completions endpoint that writes the summaries of Summarize bands, in
 * chunks that fit its context window, as `overspill worker --model-url` does. */
export class Model {
  /** The addon's model. */
  readonly native: Native.Model;

  constructor(options: Native.ModelOptions) {
    this.native = unwrap(native.openModel(options));
  }
}

/**
 * Reduce one tool return as the worker's `tool_output_limits.reduce` activity does: an output over
 * a band is truncated, or spilled to `store` under the call's key for `caller`, or summarized by
 * `model` (without one, a Summarize band falls back to its `then`). Resolves to the reduce
 * activity's reply, or `null` when the return is left as it is.
 */
export async function reduce(
  limits: Limits,
  store: Store,
  call: Call,
  output: Output,
  options: { caller?: Caller; model?: Model } = {},
): Promise<Reduced | null> {
  const reduced = unwrap(await native.reduce(limits.native, store.native, call, output, options.caller, options.model?.native));
  return reduced as Reduced | null;
}

/** `key`'s object path inside a store's `tool_output_limits/` folder, made safe as the worker makes
 * it (`run-1/../call 1.0` → `run-1/_/call_1.0`). */
export function sanitizeKey(key: string): string {
  return native.sanitizeKey(key);
}

/** The names other processes call Overspill by: the default task queue, the spill activity. */
export function engineNames(): Native.Names {
  return native.names();
}

/** The value an engine output form stands for: its text, or its JSON value. */
export function outputValue(output: EngineOutput): unknown {
  if ('text' in output) return output.text;
  if ('json' in output) return output.json;
  return Buffer.from(output.bytes_b64, 'base64');
}

/** The executable `name` in a directory of `PATH`, if any. */
function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

/** A read-back tool as a model sees it: its name, the Overspill activity that serves it, its
 * description and its parameters (a JSON Schema object). */
export type ToolSpec = Native.ToolSpec;

/** The read-back tools `read_tool_result`, `grep_tool_result`, `query_tool_result` and
 * `list_tool_results`, as every Overspill integration gives them to its model (the engine's
 * table). Workflow code has the same table as `READ_BACK_TOOLS` from `…/workflow`. */
export function readBackTools(): ToolSpec[] {
  return native.readBackTools();
}
