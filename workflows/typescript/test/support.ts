/**
 * What the tests (and the bench) share: the services from the environment, an `overspill worker`
 * process on a queue and store prefix of its own, the workflow bundle, a worker for the agent, and
 * a run's figures read off its history.
 *
 * Needs `TEMPORAL_ADDRESS`, `OVERSPILL_BIN` (the `overspill` binary cargo built) and, for S3,
 * `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables of `.deploy/seaweedfs.env`.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';

import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  type ActivityInterceptorsFactory,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker, type WorkflowBundleWithSourceMap, bundleWorkflowCode } from '@temporalio/worker';
import { OverspillPlugin, type OverspillPluginOptions } from '@overspill/temporal-ai-sdk';

import * as activities from './activities';
import { type Sent, scriptedProvider } from './model';
import type { AgentInput, AgentOutput } from './workflows';

// The workers' own lifecycle lines would drown the test report: warnings and errors only.
Runtime.install({ logger: new DefaultLogger('WARN') });

/** The variable `name`, which the test command sets. */
export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests from the test command (tests/integration/typescript.rs)`);
  return value;
}

/** A name no other run uses. */
export function unique(prefix: string): string {
  return `${prefix}-${process.pid}-${randomUUID().slice(0, 8)}`;
}

/** A store URL under the test bucket, of a prefix of its own. */
export function s3Store(name: string): string {
  return `${env('OVERSPILL_TEST_S3_URL').replace(/\/$/, '')}/${unique(`typescript-${name}`)}`;
}

/** A child process whose output is kept, ready once a line appears in it. */
export class Process {
  readonly child: ChildProcess;
  output = '';

  constructor(command: string, args: string[], extraEnv: Record<string, string> = {}, cwd?: string) {
    this.child = spawn(command, args, {
      env: { ...process.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(cwd === undefined ? {} : { cwd }),
    });
    const keep = (chunk: Buffer): void => {
      this.output += chunk.toString();
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
  }

  /** Resolves once `text` is in the output; rejects if the process ends first or after `ms`. */
  async waitFor(text: string, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.output.includes(text)) {
      if (this.child.exitCode !== null) throw new Error(`exited ${this.child.exitCode} before "${text}":\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`no "${text}" within ${ms} ms:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Stop it (SIGTERM, then SIGKILL after 10 s). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** `overspill worker` on a queue of its own, spilling to `store`. */
export async function overspillWorker(store: string, queue = unique('tool-output-limits-ts')): Promise<{ queue: string; process: Process }> {
  const worker = new Process(env('OVERSPILL_BIN'), ['worker', '--store', store, '--task-queue', queue], { AWS_ALLOW_HTTP: 'true' });
  await worker.waitFor('overspill worker started');
  return { queue, process: worker };
}

/** A Temporal client of the test server. */
export async function client(): Promise<Client> {
  // Histories of runs without Overspill pass gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address: env('TEMPORAL_ADDRESS'),
    channelArgs: { 'grpc.max_receive_message_length': 256 << 20 },
  });
  return new Client({ connection, namespace: process.env['TEMPORAL_NAMESPACE'] || 'default' });
}

/** The tests' workflows, bundled once per test file (as `AiSdkPlugin` bundles them). */
export async function bundle(): Promise<WorkflowBundleWithSourceMap> {
  const plugin = new AiSdkPlugin({ modelProvider: scriptedProvider({ requests: [], lastOutputs: [] }) });
  return await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), plugins: [plugin], logger: quietLogger() });
}

function quietLogger(): { log: () => void; trace: () => void; debug: () => void; info: () => void; warn: () => void; error: (m: string) => void } {
  const none = (): void => {};
  return { log: none, trace: none, debug: none, info: none, warn: none, error: (m: string) => console.error(m) };
}

/** An agent worker, running: the scripted model, the tool activities, and `overspill` (unless
 * `null`); `stop()` shuts it down. */
export interface AgentWorker {
  worker: Worker;
  queue: string;
  sent: Sent;
  stop: () => Promise<void>;
}

export async function agentWorker(
  workflowBundle: WorkflowBundleWithSourceMap,
  overspill: OverspillPluginOptions | null,
  options: { bodies?: boolean; interceptors?: ActivityInterceptorsFactory[] } = {},
): Promise<AgentWorker> {
  const sent: Sent = { requests: [], lastOutputs: [] };
  const queue = unique('agent-ts');
  const plugins = [new AiSdkPlugin({ modelProvider: scriptedProvider(sent, options) })];
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') }),
    namespace: process.env['TEMPORAL_NAMESPACE'] || 'default',
    taskQueue: queue,
    workflowBundle,
    activities,
    plugins: overspill === null ? plugins : [...plugins, new OverspillPlugin(overspill)],
    interceptors: { activity: options.interceptors ?? [] },
  });
  const running = worker.run();
  const stop = async (): Promise<void> => {
    worker.shutdown();
    await running;
  };
  return { worker, queue, sent, stop };
}

/** A finished run: the answer, and its history. */
export interface Run {
  output: AgentOutput;
  handle: WorkflowHandleWithFirstExecutionRunId;
  history: temporal.api.history.v1.IHistory;
}

/** Run the agent on `agent` with `input` and fetch its history. */
export async function runAgent(temporalClient: Client, agent: AgentWorker, input: AgentInput): Promise<Run> {
  const handle = await temporalClient.workflow.start('agent', {
    taskQueue: agent.queue,
    workflowId: unique('agent'),
    args: [input],
    workflowExecutionTimeout: '5 minutes',
  });
  const output = (await handle.result()) as AgentOutput;
  return { output, handle, history: await handle.fetchHistory() };
}

/** Run the workflow `name` with `args` on `agent`'s queue and resolve to its result. */
export async function runWorkflow(temporalClient: Client, agent: AgentWorker, name: string, args: unknown[]): Promise<unknown> {
  return await temporalClient.workflow.execute(name, {
    taskQueue: agent.queue,
    workflowId: unique(name),
    args,
    workflowExecutionTimeout: '2 minutes',
  });
}

/** The id of the first activity of type `type` in `history`. */
export function activityId(history: temporal.api.history.v1.IHistory, type: string): string {
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === type && scheduled.activityId) return scheduled.activityId;
  }
  throw new Error(`no ${type} activity in the history`);
}

/** A history's bytes as the server stores it (its protobuf encoding). */
export function historyBytes(history: temporal.api.history.v1.IHistory): number {
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** The bytes of the largest `invokeModel` input recorded in `history`. */
export function largestModelInput(history: temporal.api.history.v1.IHistory): number {
  let largest = 0;
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'invokeModel') continue;
    const size = (scheduled.input?.payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
    largest = Math.max(largest, size);
  }
  return largest;
}

/** The payloads' data of every event of `history`, as text. */
export function historyText(history: temporal.api.history.v1.IHistory): string {
  return Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
}
