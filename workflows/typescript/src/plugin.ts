/**
 * `OverspillPlugin`: tool outputs reduced in the tool's own activity, before Temporal records them.
 *
 * An AI SDK agent on Temporal runs its loop in the workflow, each tool's `execute` calls an activity,
 * and every model call is an `invokeModel` activity whose input is the whole conversation: a big
 * tool output is recorded once as the activity's result and again in every later model call's
 * input. On the worker that runs the tools, this plugin's activity interceptor reduces each covered
 * tool's output when its activity completes, with the engine the Overspill worker runs: Truncate
 * and Spill happen right there (a spill is written to the store under `{workflow run id}/{activity
 * id}.0`, the same key on every attempt and on replay, so a retry overwrites one object and the
 * handle never changes), and only the reduced text is recorded. A spill the store refuses falls
 * back to its band's `then`, with a warning on stderr.
 *
 * @module
 */

import { Context } from '@temporalio/activity';
import { SimplePlugin } from '@temporalio/plugin';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';

import { type Caller, Limits, type Model, type Reduced, Store, outputValue, reduce } from './native';

/** Which tool call an activity runs, and the parts of its spill key (`{runId}/{toolCallId}.{retry}`). */
export interface ToolCallSite {
  toolName: string;
  runId: string;
  toolCallId: string;
  retry: number;
}

/** A tool's return as the engine reduces it: text, or the JSON text of a structured value. */
export interface ToolOutputParts {
  value: string;
  structured: boolean;
}

/** How a kind of activity carries a tool's output: which activities run tool calls, where the
 * output is in their result, and how to put the reduced text back. */
export interface ToolActivities {
  /** The tool call activity `info` runs with `args`, or `undefined` if this does not cover it. */
  callSite(info: Context['info'], args: readonly unknown[]): ToolCallSite | undefined;
  /** The tool's output inside the activity's `result`, or `undefined` if it carries none to reduce. */
  output(result: unknown): ToolOutputParts | undefined;
  /** The activity's result, carrying the reduced output instead. */
  withOutput(result: unknown, reduced: unknown): unknown;
}

/** The key parts every covered activity's spill gets: the workflow run and the activity id, which
 * the workflow numbers deterministically, so every attempt and every replay derives the same. */
function siteOf(info: Context['info'], toolName: string): ToolCallSite | undefined {
  const runId = info.workflowExecution?.runId;
  if (!runId) return undefined;
  return { toolName, runId, toolCallId: info.activityId, retry: 0 };
}

/**
 * The user's own tool activities, which a tool's `execute` returns as they are: a string reaches
 * the model as text, any other JSON value as JSON. A reduced output is the marker's text.
 */
export class UserToolActivities implements ToolActivities {
  private readonly toolNames: ReadonlyMap<string, string>;

  /** `tools`: the activity names, or a map from activity name to the tool name the model sees. */
  constructor(tools: readonly string[] | Readonly<Record<string, string>>) {
    const entries = Array.isArray(tools) ? tools.map((name): [string, string] => [name, name]) : Object.entries(tools);
    this.toolNames = new Map(entries);
  }

  callSite(info: Context['info'], _args: readonly unknown[]): ToolCallSite | undefined {
    const toolName = this.toolNames.get(info.activityType);
    return toolName === undefined ? undefined : siteOf(info, toolName);
  }

  /** Text as itself; any other value as the JSON text the payload converter records (binary
   * results and values JSON cannot carry are left to the workflow). */
  output(result: unknown): ToolOutputParts | undefined {
    if (typeof result === 'string') return { value: result, structured: false };
    if (result === undefined || result instanceof Uint8Array) return undefined;
    const json = JSON.stringify(result);
    return json === undefined ? undefined : { value: json, structured: true };
  }

  withOutput(_result: unknown, reduced: unknown): unknown {
    return reduced;
  }
}

/** An MCP `CallToolResult`, as `${server}-callTool` returns it. */
interface CallToolResult {
  content: { type: string; text?: unknown }[];
  isError?: boolean;
  structuredContent?: unknown;
  [field: string]: unknown;
}

/**
 * MCP tools (`TemporalMCPClient`), run as `${server}-callTool` activities whose result is the MCP
 * `CallToolResult`: a result whose content is one text part is reduced, and keeps its shape
 * (`structuredContent`, the same data by the MCP spec, is dropped with it); an error is left alone.
 */
export class McpToolActivities implements ToolActivities {
  /** `servers`: the MCP servers' names, or `undefined` for every server. */
  constructor(private readonly servers?: readonly string[]) {}

  callSite(info: Context['info'], args: readonly unknown[]): ToolCallSite | undefined {
    const server = info.activityType.endsWith('-callTool') ? info.activityType.slice(0, -'-callTool'.length) : undefined;
    if (server === undefined || (this.servers !== undefined && !this.servers.includes(server))) return undefined;
    const name = (args[0] as { name?: unknown } | undefined)?.name;
    return typeof name === 'string' ? siteOf(info, name) : undefined;
  }

  output(result: unknown): ToolOutputParts | undefined {
    if (!isCallToolResult(result) || result.isError === true || result.content.length !== 1) return undefined;
    const text = result.content[0]?.text;
    return result.content[0]?.type === 'text' && typeof text === 'string' ? { value: text, structured: false } : undefined;
  }

  withOutput(result: unknown, reduced: unknown): unknown {
    const { structuredContent: _, ...rest } = result as CallToolResult;
    const text = typeof reduced === 'string' ? reduced : JSON.stringify(reduced);
    return { ...rest, content: [{ ...rest.content[0], type: 'text', text }] };
  }
}

function isCallToolResult(value: unknown): value is CallToolResult {
  return typeof value === 'object' && value !== null && Array.isArray((value as CallToolResult).content);
}

/** The AI SDK plugin's model-call activities: their results repeat the provider's raw request and
 * response bodies. */
const MODEL_ACTIVITIES: ReadonlySet<string> = new Set(['invokeModel', 'invokeModelStreaming']);

/** What {@link OverspillPlugin} reduces, and how. */
export interface OverspillPluginOptions {
  /** The tool activities whose results the tools' `execute` returns: their names, or a map from
   * activity name to the tool name the model sees. */
  tools?: readonly string[] | Readonly<Record<string, string>>;
  /** Reduce MCP tools' results (`${server}-callTool`): `true` for every server, or their names. */
  mcp?: boolean | readonly string[];
  /** Other frameworks' tool activities. */
  activities?: readonly ToolActivities[];
  /** Size bands and their actions: {@link Limits}, or the JSON `overspill worker --limits` takes
   * (default: spill outputs over 10,000 chars with a 1,000-char preview). */
  limits?: Limits | string | object | null;
  /** Where spills go: a {@link Store} or its URL (default `OVERSPILL_STORE`, else the local store
   * every Overspill command shares). The Overspill worker that serves the read-back tools must
   * use the same store. */
  store?: Store | string | null;
  /** The model that writes the summaries of Summarize bands; without one they fall back to `then`. */
  model?: Model;
  /** Drop `request.body` and `response.body` from `invokeModel` results: the provider's raw
   * request (the whole prompt again) and response, which the workflow does not use, so each model
   * call is recorded once instead of about twice. Only `result.request`/`result.response` lose
   * them. Default `false`. */
  dropModelBodies?: boolean;
}

/**
 * Reduce the outputs of an AI SDK agent's tool activities in the activity, before Temporal records
 * them. Give it to the worker that runs the tool activities, beside `AiSdkPlugin`:
 *
 * ```ts
 * Worker.create({ ..., activities: { fetchPage },
 *   plugins: [new AiSdkPlugin({ modelProvider }), new OverspillPlugin({ tools: ['fetchPage'] })] });
 * ```
 *
 * An output over a band of `limits` is truncated or spilled right there, and the model gets the
 * marker `[Tool output too large (…); stored to handle '{run id}/{activity id}.0'. …]`. Give the
 * agent `overspillTools()` (from `@overspill/temporal-ai-sdk/workflow`) to read it back from an
 * Overspill worker on the same store.
 */
export class OverspillPlugin extends SimplePlugin {
  constructor(options: OverspillPluginOptions = {}) {
    const reducer = new ToolOutputReducer(options);
    super({
      name: 'overspill',
      workerInterceptors: { activity: [(ctx: Context) => ({ inbound: new ReduceToolOutputs(ctx, reducer) })] },
    });
  }
}

/** The plugin's state: what it covers, its limits, store and model. */
class ToolOutputReducer {
  readonly activities: readonly ToolActivities[];
  readonly limits: Limits;
  readonly store: Store;
  readonly model: Model | undefined;
  readonly dropModelBodies: boolean;

  constructor(options: OverspillPluginOptions) {
    const activities = [...(options.activities ?? [])];
    if (options.tools !== undefined) activities.push(new UserToolActivities(options.tools));
    if (options.mcp === true) activities.push(new McpToolActivities());
    else if (Array.isArray(options.mcp)) activities.push(new McpToolActivities(options.mcp));
    this.activities = activities;
    this.limits = options.limits instanceof Limits ? options.limits : new Limits(options.limits);
    this.store = options.store instanceof Store ? options.store : new Store(options.store);
    this.model = options.model;
    this.dropModelBodies = options.dropModelBodies ?? false;
  }

  /** `result` with its tool output reduced, or as it is when there is nothing to reduce. */
  async reduce(ctx: Context, tools: ToolActivities, site: ToolCallSite, result: unknown): Promise<unknown> {
    const parts = tools.output(result);
    if (parts === undefined) return result;
    let reduced: Reduced | null;
    try {
      reduced = await heartbeating(ctx, () =>
        reduce(
          this.limits,
          this.store,
          { toolName: site.toolName, runId: site.runId, toolCallId: site.toolCallId, retry: site.retry },
          { value: parts.value, structured: parts.structured },
          { caller: callerOf(ctx.info), model: this.model },
        ),
      );
    } catch (error) {
      ctx.log.debug(`leaving the output of tool ${site.toolName} to the workflow: ${String(error)}`);
      return result;
    }
    if (reduced === null || reduced.kind === 'passthrough') return result;
    return tools.withOutput(result, outputValue(reduced.return_value));
  }
}

class ReduceToolOutputs implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: Context,
    private readonly reducer: ToolOutputReducer,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const result = await next(input);
    const info = this.ctx.info;
    if (this.reducer.dropModelBodies && MODEL_ACTIVITIES.has(info.activityType)) return withoutBodies(result);
    for (const tools of this.reducer.activities) {
      const site = tools.callSite(info, input.args);
      if (site !== undefined) return await this.reducer.reduce(this.ctx, tools, site, result);
    }
    return result;
  }
}

/** Who writes a spill from the activity `info`: its workflow's namespace and id. */
function callerOf(info: Context['info']): Caller {
  return { namespace: info.workflowNamespace ?? info.namespace, workflowId: info.workflowExecution?.workflowId };
}

/** Run `body` while heartbeating at half the activity's heartbeat timeout: a spill of a large
 * output can take longer than the timeout the tool's own heartbeats were sized for. */
async function heartbeating<T>(ctx: Context, body: () => Promise<T>): Promise<T> {
  const timeout = ctx.info.heartbeatTimeoutMs;
  if (!timeout) return await body();
  ctx.heartbeat();
  const beat = setInterval(() => ctx.heartbeat(), timeout / 2);
  try {
    return await body();
  } finally {
    clearInterval(beat);
  }
}

/** A model call's result without the provider's raw `request.body` and `response.body`. */
function withoutBodies(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return result;
  const { request, response, ...rest } = result as { request?: unknown; response?: unknown };
  return { ...rest, ...bodiless('request', request), ...bodiless('response', response) };
}

function bodiless(field: string, part: unknown): Record<string, unknown> {
  if (part === undefined) return {};
  if (typeof part !== 'object' || part === null) return { [field]: part };
  const { body: _, ...rest } = part as { body?: unknown };
  return { [field]: rest };
}
