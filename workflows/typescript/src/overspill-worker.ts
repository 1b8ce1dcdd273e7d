/**
 * Run an activity of the Overspill worker by name, from workflow code. Workflow-safe.
 *
 * @module
 */

import { ActivityFailure, ApplicationFailure, TimeoutFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';

import engine from './generated/engine.json';

/** The task queue an Overspill worker polls by default (`overspill worker`, `overspill dev`). */
export const DEFAULT_TASK_QUEUE: string = engine.names.taskQueue;

/** The Overspill activity that persists a payload under its key. */
export const SPILL_ACTIVITY: string = engine.names.spill;

/** The Overspill worker refused the model's arguments (its `ModelRetry` failure): the message tells
 * the model what to change, and goes back to it as the tool's error. */
export class ModelRetry extends Error {
  override name = 'ModelRetry';
}

/** No Overspill worker started an activity within its start timeout: none polls the task queue. */
export class NoWorkerError extends Error {
  override name = 'NoOverspillWorker';
}

/** Where the Overspill worker's activities run, and how long a call may take. */
export interface OverspillWorkerOptions {
  /** The task queue the Overspill worker polls (default `tool-output-limits`). */
  taskQueue?: string;
  /** Each activity's `scheduleToCloseTimeout`, retries included (default 1 minute). */
  timeout?: Duration;
  /** How long an activity waits for a worker to start it before {@link NoWorkerError} (default 10 s). */
  startTimeout?: Duration;
}

/** The Overspill worker, called by activity name from workflow code. */
export class OverspillWorker {
  readonly taskQueue: string;
  readonly timeout: Duration;
  readonly startTimeout: Duration;

  constructor(options: OverspillWorkerOptions = {}) {
    this.taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.timeout = options.timeout ?? '1 minute';
    this.startTimeout = options.startTimeout ?? '10 seconds';
  }

  /**
   * Run activity `name` with `request` (its JSON form) and resolve to its result. Throws
   * {@link ModelRetry} for the worker's `ModelRetry` failure, {@link NoWorkerError} when no worker
   * polls the queue, and the `ActivityFailure` of any other failure.
   */
  async run(name: string, request: object, summary: string): Promise<unknown> {
    const activities = proxyActivities<Record<string, (request: object) => Promise<unknown>>>({
      taskQueue: this.taskQueue,
      scheduleToCloseTimeout: this.timeout,
      scheduleToStartTimeout: this.startTimeout,
      summary,
    });
    const activity = activities[name];
    if (activity === undefined) throw new Error(`no activity ${name}`);
    try {
      return await activity(request);
    } catch (error) {
      const cause = error instanceof ActivityFailure ? error.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === 'ModelRetry') throw new ModelRetry(cause.message);
      if (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START') {
        const message =
          `no Overspill worker polls task queue '${this.taskQueue}': ${name} waited ${String(this.startTimeout)} ` +
          'for one to start it. Start `overspill dev`, or `overspill worker --task-queue` with that queue.';
        log.error(message);
        throw new NoWorkerError(message);
      }
      throw error;
    }
  }
}
