/**
 * An AI SDK agent on Temporal (`@temporalio/ai-sdk`, a scripted `MockLanguageModelV4`) whose tools
 * are activities, with `OverspillPlugin` on its worker, `overspillTools()` and `OverspillMasking` in
 * its workflow, and an `overspill worker` on SeaweedFS serving the read-back tools and masking's
 * spills. Needs `TEMPORAL_ADDRESS`, `OVERSPILL_BIN`, `OVERSPILL_TEST_S3_URL` and the `AWS_*`
 * variables.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { Store } from '@overspill/temporal-ai-sdk';

import { BUILD_FAILED, buildLog, pageText, records } from './activities';
import {
  type AgentWorker,
  type Process,
  activityId,
  agentWorker,
  bundle,
  client,
  env,
  historyBytes,
  historyText,
  largestModelInput,
  overspillWorker,
  runAgent,
  runWorkflow,
  s3Store,
  unique,
} from './support';

const TOOLS = { fetchPage: 'fetch_page', fetchRecords: 'fetch_records', fetchLog: 'fetch_log', fetchFlaky: 'fetch_page' };

describe('an AI SDK agent on Temporal with Overspill', () => {
  let temporalClient: Client;
  let workflowBundle: WorkflowBundleWithSourceMap;
  let storeUrl: string;
  let store: Store;
  let overspill: { queue: string; process: Process };
  let agent: AgentWorker;

  before(async () => {
    storeUrl = s3Store('agent');
    store = new Store(storeUrl, { querySandbox: env('OVERSPILL_BIN') });
    [temporalClient, workflowBundle, overspill] = await Promise.all([client(), bundle(), overspillWorker(storeUrl)]);
    agent = await agentWorker(workflowBundle, { tools: TOOLS, store });
  });

  after(async () => {
    await agent?.stop();
    await overspill?.process.stop();
    await temporalClient?.connection.close();
  });

  it('completes a 40 MB tool output with a history under 100 KB, and reads it back by handle', async () => {
    const prompt = `fetch the log of 40 MB, then read ${BUILD_FAILED}; then grep ${BUILD_FAILED}`;
    const run = await runAgent(temporalClient, agent, { prompt, overspillQueue: overspill.queue, maxSteps: 5 });
    const bytes = historyBytes(run.history);
    assert.ok(bytes < 100_000, `history of ${bytes} bytes`);
    const [marker, read] = agent.sent.lastOutputs;
    const handle = `${run.handle.firstExecutionRunId}/${activityId(run.history, 'fetchLog')}.0`;
    assert.ok(marker?.startsWith('[Tool output too large ('), marker);
    assert.ok(marker?.includes(`stored to handle '${handle}'`), marker);
    // The worker paged what the plugin wrote: read_tool_result's line, grep_tool_result's match.
    assert.ok(read?.includes(BUILD_FAILED), read);
    assert.match(run.output.text, new RegExp(`^\\d+:${BUILD_FAILED}$`, 'm'));
    // ...and the same pages through the addon, as the agent's workflow reads them.
    const caller = { namespace: 'default', workflowId: run.handle.workflowId };
    assert.equal(await store.readToolResult({ handle, pattern: BUILD_FAILED, limit: 1 }, { caller }), read);
    assert.equal(await store.grepToolResult({ handle, pattern: BUILD_FAILED }, { caller }), run.output.text);
    assert.equal((await store.read(handle)).length, buildLog(40).length);
  });

  it('gives the model the Rust worker text for the same output and limits, byte for byte', async () => {
    const pages = await runAgent(temporalClient, agent, { prompt: 'fetch 1 page of 200000 chars', overspillQueue: overspill.queue, maxSteps: 3 });
    const listed = await runAgent(temporalClient, agent, {
      prompt: 'fetch 2000 records, then query .[] | select(.status == "ERROR") | .id',
      overspillQueue: overspill.queue,
      maxSteps: 4,
    });
    const cases = [
      { run: pages, activity: 'fetchPage', tool: 'fetch_page', output: { text: pageText(0, 200_000) } },
      { run: listed, activity: 'fetchRecords', tool: 'fetch_records', output: { json: records(2000) } },
    ];
    for (const { run, activity, tool, output } of cases) {
      const seen = toolResultOf(run, activity);
      const request = {
        tool_name: tool,
        run_id: run.handle.firstExecutionRunId,
        tool_call_id: activityId(run.history, activity),
        output,
      };
      const reduced = (await runWorkflow(temporalClient, agent, 'overspillActivity', [overspill.queue, 'tool_output_limits.reduce', request])) as {
        return_value: { text: string };
      };
      assert.equal(seen, reduced.return_value.text);
    }
    // The query ran in the worker's sandbox over the JSON the plugin spilled.
    assert.match(listed.output.text, /^0\n13\n26\n/m);
  });

  it('pages what the worker wrote as the worker pages it', async () => {
    const key = `${unique('run')}/call-1.0`;
    const text = pageText(7, 60_000);
    const json = JSON.stringify(records(500));
    const requests = [
      { activity: 'tool_output_limits.read_tool_result', request: { handle: key, offset: 10, limit: 5 } },
      { activity: 'tool_output_limits.read_tool_result', request: { handle: key, pattern: 'status=ERROR', limit: 3, from_end: true } },
      { activity: 'tool_output_limits.grep_tool_result', request: { handle: key, pattern: 'ms=9[0-9]{2}', regex: true, context: 1 } },
      { activity: 'tool_output_limits.read_tool_result', request: { handle: `${key}-missing` } },
    ];
    const [spilled, ...pages] = (await runWorkflow(temporalClient, agent, 'spillThenPage', [
      overspill.queue,
      { key, tool_name: 'fetch_page', output: { text } },
      requests,
    ])) as [{ handle: string }, ...string[]];
    assert.equal(spilled.handle, key);
    for (const [i, { activity, request }] of requests.entries()) {
      const tool = activity.slice('tool_output_limits.'.length);
      const page = tool === 'grep_tool_result' ? store.grepToolResult(request as never) : store.readToolResult(request as never);
      assert.equal(await page, pages[i], `${activity} ${JSON.stringify(request)}`);
    }
    const jsonKey = `${unique('run')}/call-2.0`;
    const query = { handle: jsonKey, filter: '.[] | select(.page == 3) | .id', limit: 4 };
    const [, queried] = (await runWorkflow(temporalClient, agent, 'spillThenPage', [
      overspill.queue,
      { key: jsonKey, tool_name: 'fetch_records', output: { json: JSON.parse(json) } },
      [{ activity: 'tool_output_limits.query_tool_result', request: query }],
    ])) as [unknown, string];
    assert.equal(await store.queryToolResult(query), queried);
    assert.match(queried, /^150\n151\n152\n153$/m);
  });

  it('writes one object when the tool activity is retried after its output was spilled', async () => {
    // An interceptor outside the plugin's fails the first attempt after the plugin spilled, as a
    // worker that died before reporting the result would.
    let attempts = 0;
    const failFirst = (ctx: Context) => ({
      inbound: {
        async execute(input: { args: unknown[] }, next: (input: never) => Promise<unknown>): Promise<unknown> {
          const result = await next(input as never);
          if (ctx.info.activityType === 'fetchFlaky' && ++attempts === 1) throw ApplicationFailure.retryable('the result was lost');
          return result;
        },
      },
    });
    const flaky = await agentWorker(workflowBundle, { tools: TOOLS, store }, { interceptors: [failFirst] });
    try {
      const run = await runAgent(temporalClient, flaky, {
        prompt: 'fetch 1 page of 50000 chars, then list',
        overspillQueue: overspill.queue,
        maxSteps: 4,
        flaky: true,
      });
      assert.equal(attempts, 2);
      const runId = run.handle.firstExecutionRunId;
      const handle = `${runId}/${activityId(run.history, 'fetchFlaky')}.0`;
      // list_tool_results, by the worker: the run's one spill.
      assert.match(run.output.text, /: 1 spilled tool result\(s\); showing 1, newest first\]/);
      assert.ok(run.output.text.includes(handle), run.output.text);
      assert.equal((await store.read(handle)).toString(), pageText(0, 50_000));
      const listing = await store.listToolResults({ run_id: runId });
      assert.equal(listing.split(handle).length - 1, 1, listing);
    } finally {
      await flaky.stop();
    }
  });

  it('replays the recorded history', async () => {
    const run = await runAgent(temporalClient, agent, {
      prompt: 'fetch 3 pages of 20000 chars, then read status=ERROR',
      overspillQueue: overspill.queue,
      maxSteps: 6,
      mask: { budget: 2_000, keepRecent: 1, minChars: 500 },
    });
    await Worker.runReplayHistory({ workflowBundle }, run.history, run.handle.workflowId);
  });

  it('masks older tool outputs so later model inputs shrink, and reads a masked output back', async () => {
    // No reduction at the source: the outputs reach the model whole, until masking clears them.
    const plain = await agentWorker(workflowBundle, { store });
    try {
      const prompt = 'fetch 6 pages of 30000 chars, then read page 0000 line 000012';
      const base = { prompt, overspillQueue: overspill.queue, maxSteps: 9 };
      await runAgent(temporalClient, plain, base);
      const unmasked = [...plain.sent.requests];
      plain.sent.requests.length = 0;
      const run = await runAgent(temporalClient, plain, { ...base, mask: { budget: 50_000, keepRecent: 1 } });
      const masked = plain.sent.requests;
      // The 7th request follows the 6th fetch: 180,000 chars of outputs without masking; with it,
      // the newest output and five markers. (Only the masked run then reads a handle back.)
      assert.deepEqual([unmasked.length, masked.length], [7, 8]);
      assert.ok((masked[6] ?? 0) < (unmasked[6] ?? 0) / 3, `${masked[6]} against ${unmasked[6]}`);
      // The model read the first output back by the handle in its mask marker.
      const markers = plain.sent.lastOutputs.filter((o) => o.startsWith("[Tool output of 'fetch_page' cleared from context (30,000 chars)"));
      assert.equal(markers.length, 5, plain.sent.lastOutputs.join('\n').slice(0, 2000));
      const line = pageText(0, 30_000).split('\n')[12] ?? '';
      assert.ok(line.startsWith('page 0000 line 000012') && run.output.text.includes(line), run.output.text);
    } finally {
      await plain.stop();
    }
  });

  it('drops the provider bodies from invokeModel results when asked', async () => {
    const figures: Record<string, number> = {};
    for (const drop of [false, true]) {
      const bodies = await agentWorker(workflowBundle, { tools: TOOLS, store, dropModelBodies: drop }, { bodies: true });
      try {
        const run = await runAgent(temporalClient, bodies, { prompt: 'fetch 3 pages of 20000 chars', overspillQueue: overspill.queue, maxSteps: 5 });
        figures[String(drop)] = historyBytes(run.history);
        assert.equal(historyText(run.history).includes('"body"'), !drop);
        assert.ok(largestModelInput(run.history) > 0);
      } finally {
        await bodies.stop();
      }
    }
    assert.ok((figures['true'] ?? 0) < (figures['false'] ?? 0), JSON.stringify(figures));
  });
});

/** The text of the tool result `activity` returned, as recorded in the run's history (the
 * activity's completed result, a JSON string). */
function toolResultOf(run: { history: import('@temporalio/proto').temporal.api.history.v1.IHistory }, activity: string): string {
  const id = activityId(run.history, activity);
  const events = run.history.events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityId === id)?.eventId;
  const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled));
  const data = completed?.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
  assert.ok(data, `no result of ${activity}`);
  return JSON.parse(Buffer.from(data).toString()) as string;
}
