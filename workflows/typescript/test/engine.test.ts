/**
 * The package without Temporal: the native engine's store, reduce and errors, the read-back tool
 * table, the MCP codec, the markers against the Python package's (`OVERSPILL_PYTHON`), and the
 * masking rule on messages Overspill already spilled. Needs `OVERSPILL_BIN` (the query sandbox)
 * and `OVERSPILL_PYTHON` (a Python with the `overspill` wheel).
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

import type { ModelMessage } from 'ai';
import {
  ArgumentError,
  ConfigError,
  Limits,
  McpToolActivities,
  QuerySandboxError,
  Store,
  StoreError,
  readBackTools,
  reduce,
} from '@overspill/temporal-ai-sdk';
import { OverspillMasking, READ_BACK_TOOLS, isMasked, maskMarker, spillHeader } from '@overspill/temporal-ai-sdk/workflow';

import { env } from './support';

const READ_TOOLS = ['read_tool_result', 'grep_tool_result', 'query_tool_result'];

/** A store in a fresh local directory. */
function localStore(options: { querySandbox?: string | null } = {}): Store {
  return new Store(pathToFileURL(mkdtempSync(join(tmpdir(), 'overspill-ts-'))).href, options);
}

/** `expression` evaluated by the Python package over `args` (JSON in, JSON out). */
function python(expression: string, args: unknown): unknown {
  const script = `import json, sys\nfrom overspill._markers import mask_marker, spill_header, is_masked\nargs = json.load(sys.stdin)\nprint(json.dumps(${expression}))`;
  const run = spawnSync(env('OVERSPILL_PYTHON'), ['-c', script], { input: JSON.stringify(args), encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout);
}

describe('the native engine', () => {
  it('spills under the call key, once per key, and reads the bytes back', async () => {
    const store = localStore();
    const limits = new Limits();
    const text = 'line\n'.repeat(5_000);
    const call = { toolName: 'fetch', runId: 'run-1', toolCallId: '7' };
    const first = await reduce(limits, store, call, { value: text });
    const again = await reduce(limits, store, call, { value: text });
    assert.equal(first?.kind, 'spilled');
    assert.deepEqual(again, first);
    const marker = (first?.return_value as { text: string }).text;
    assert.ok(marker.startsWith("[Tool output too large (25,000 chars); stored to handle 'run-1/7.0'."), marker);
    assert.equal((await store.read('run-1/7.0')).toString(), text);
    assert.equal(await reduce(limits, store, call, { value: 'short' }), null);
    const page = await store.readToolResult({ handle: 'run-1/7.0', offset: 4_998 });
    assert.equal(page.split('\n').slice(1).join('\n'), 'line\nline');
  });

  it('reduces a structured output as JSON, which queries read in the sandbox', async () => {
    const store = localStore({ querySandbox: env('OVERSPILL_BIN') });
    const rows = Array.from({ length: 1_000 }, (_, id) => ({ id, ok: id % 7 !== 0 }));
    const call = { toolName: 'rows', runId: 'run-2', toolCallId: 'c' };
    const reduced = await reduce(new Limits(), store, call, { value: JSON.stringify(rows), structured: true });
    assert.equal(reduced?.kind, 'spilled');
    const page = await store.queryToolResult({ handle: 'run-2/c.0', filter: '.[] | select(.ok | not) | .id', limit: 3 });
    assert.match(page, /\n0\n7\n14\n/);
  });

  it('refuses queries without a sandbox rather than run them in this process', async () => {
    const store = localStore({ querySandbox: null });
    await store.write('r/q.0', '[1, 2, 3]');
    await assert.rejects(
      store.queryToolResult({ handle: 'r/q.0', filter: '.[]' }),
      (e: unknown) => e instanceof QuerySandboxError && e.message.includes('give `querySandbox` the `overspill` executable'),
    );
  });

  it("names the fix in this API's terms, as the engine's service layer does for each caller", async () => {
    const store = localStore();
    await assert.rejects(
      reduce(new Limits(), store, { toolName: '' }, { value: 'x'.repeat(20_000) }),
      (e: unknown) => e instanceof ArgumentError && e.message.includes('`toolName`'),
    );
    const long = 'r'.repeat(2_000);
    await assert.rejects(
      store.write(`${long}/c.0`, 'data'),
      (e: unknown) => e instanceof StoreError && /shorten `runId` or `toolCallId`/.test(e.message),
    );
  });

  it('throws typed errors, and answers an unknown handle as the worker does', async () => {
    assert.throws(() => new Limits('{"bands": 3}'), ConfigError);
    assert.throws(() => new Store('ftp://nowhere'), (e: unknown) => e instanceof StoreError || e instanceof ConfigError);
    const store = localStore();
    await assert.rejects(store.readToolResult({ handle: 'r/x.0', offset: -1 }), ArgumentError);
    await assert.rejects(store.readToolResult({ handle: 'r/x.0', surprise: true } as never), ArgumentError);
    assert.match(await store.readToolResult({ handle: 'r/none.0' }), /^\[No stored tool result for handle 'r\/none.0'\./);
    const unreachable = new Store('s3://spills/x?endpoint=http://127.0.0.1:9&allow_http=true');
    await assert.rejects(unreachable.check(), (e: unknown) => e instanceof StoreError && typeof e.retryable === 'boolean' && e.kind.length > 0);
  });

  it('gives workflow code the same read-back tool table as the engine', () => {
    const tools = readBackTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['read_tool_result', 'grep_tool_result', 'query_tool_result', 'list_tool_results'],
    );
    assert.deepEqual(READ_BACK_TOOLS, tools);
  });
});

describe('the MCP codec', () => {
  const mcp = new McpToolActivities(['docs']);
  const info = (activityType: string) => ({ activityType, activityId: '4', workflowExecution: { workflowId: 'w', runId: 'r' } }) as never;

  it('covers the callTool activities of the servers it names, keyed by run and activity', () => {
    assert.deepEqual(mcp.callSite(info('docs-callTool'), [{ name: 'search', input: {} }]), {
      toolName: 'search',
      runId: 'r',
      toolCallId: '4',
      retry: 0,
    });
    assert.equal(mcp.callSite(info('other-callTool'), [{ name: 'search' }]), undefined);
    assert.equal(mcp.callSite(info('docs-listTools'), [{}]), undefined);
  });

  it('reduces one text part, keeping the result shape, and leaves errors alone', () => {
    const result = { content: [{ type: 'text', text: 'x'.repeat(20) }], structuredContent: { x: 1 }, isError: false };
    assert.deepEqual(mcp.output(result), { value: 'x'.repeat(20), structured: false });
    assert.deepEqual(mcp.withOutput(result, 'marker'), { content: [{ type: 'text', text: 'marker' }], isError: false });
    assert.equal(mcp.output({ ...result, isError: true }), undefined);
    assert.equal(mcp.output({ content: [{ type: 'image', data: '' }] }), undefined);
  });
});

describe('the markers', () => {
  const cases: [string, string, string, string[]][] = [
    ['fetch', 'run-1/call-1.0', '60,000 chars', READ_TOOLS],
    ["it's", `a"b'c/\n\t\\ \u2028\u0007\u00e9\u{1f600}`, '5 chars', ['read_tool_result']],
    ['x', "only'single", '1,000 chars', ['read_tool_result', 'grep_tool_result']],
  ];

  it('writes the mask marker byte for byte as the Python package', () => {
    const ours = cases.map(([tool, handle, size, tools]) => maskMarker(tool, handle, size, tools));
    assert.deepEqual(ours, python('[mask_marker(*c) for c in args]', cases));
    assert.deepEqual(
      ours.map((m) => isMasked(m)),
      ours.map(() => true),
    );
    assert.deepEqual(python('[is_masked(m) for m in args]', ours), [true, true, true]);
  });

  it("reads the handle of the engine's spill marker as the Python package does", async () => {
    const store = localStore();
    for (const runId of ['run-1', "it's \"odd\"", 'r\u00e9\u2028']) {
      const reduced = await reduce(new Limits(), store, { toolName: 'fetch', runId, toolCallId: 'c' }, { value: 'y\n'.repeat(6_000) });
      const marker = (reduced?.return_value as { text: string }).text;
      const [handle, size] = python('list(spill_header(args))', marker) as [string, string];
      assert.deepEqual(spillHeader(marker), { handle, size });
      assert.equal(handle, `${runId}/c.0`);
    }
  });
});

describe('masking', () => {
  /** A conversation of `n` tool calls whose outputs Overspill spilled (a 1,200-char marker each). */
  function conversation(n: number): ModelMessage[] {
    const messages: ModelMessage[] = [{ role: 'user', content: 'go' }];
    for (let i = 0; i < n; i++) {
      const marker = `[Tool output too large (50,000 chars); stored to handle 'run/${i}.0'. ${'p'.repeat(1_200)}`;
      messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'fetch', input: { i } }] });
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'fetch', output: { type: 'text', value: marker } }] });
    }
    return messages;
  }
  const outputs = (messages: readonly ModelMessage[]): string[] =>
    messages.flatMap((m) => (m.role === 'tool' ? m.content.flatMap((p) => (p.type === 'tool-result' && p.output.type === 'text' ? [p.output.value] : [])) : []));

  it('replaces older spilled outputs by their handles, sparing the newest and the current turn', async () => {
    const masking = new OverspillMasking({ budget: 3_000, keepRecent: 2 });
    const messages = conversation(6);
    const masked = await masking.mask(messages);
    assert.ok(masked !== undefined);
    const texts = outputs(masked);
    assert.deepEqual(
      texts.slice(0, 4),
      [0, 1, 2, 3].map((i) => maskMarker('fetch', `run/${i}.0`, '50,000 chars', READ_TOOLS)),
    );
    assert.deepEqual(texts.slice(4), outputs(messages).slice(4));
    assert.equal(await masking.mask(masked), undefined, 'masking a masked conversation changes nothing');
    assert.equal(await new OverspillMasking({ budget: 100_000 }).mask(messages), undefined, 'within budget');
    // The last message's results are the current turn's, which the model has not seen yet.
    const current = await new OverspillMasking({ budget: 3_000, keepRecent: 0 }).mask(messages);
    assert.equal(outputs(current ?? [])[5], outputs(messages)[5]);
  });
});
