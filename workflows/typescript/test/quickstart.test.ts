/**
 * The README's quickstart (`examples/quickstart/`) runs as pasted against `overspill dev`: the
 * agent's 200 KB tool output is spilled in the tool's own activity into the default store that
 * `overspill dev` and the plugin both derive, and the model reads its last line back through the
 * dev worker by the handle in the marker. Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

import { Process, env, unique } from './support';

const PACKAGE = join(__dirname, '..', '..');
const EXAMPLE = join(PACKAGE, 'examples', 'quickstart');

describe('the quickstart', () => {
  it('spills at the source and reads back against overspill dev', async () => {
    // A fresh TMPDIR gives this test its own default store, and a queue of its own keeps other
    // workers on the server away.
    const tmp = mkdtempSync(join(tmpdir(), 'overspill-quickstart-'));
    const { OVERSPILL_STORE: _, ...rest } = process.env;
    const runEnv = { ...rest, TMPDIR: tmp, OVERSPILL_TASK_QUEUE: unique('quickstart-overspill') };
    const dev = new Process(env('OVERSPILL_BIN'), ['dev', '--no-demo'], runEnv);
    let stdout: string;
    try {
      await dev.waitFor('overspill dev: Temporal at');
      ({ stdout } = await promisify(execFile)(process.execPath, [join(EXAMPLE, 'main.mts')], { env: runEnv, cwd: tmp, timeout: 120_000 }));
    } finally {
      await dev.stop();
    }
    // The answer is read_tool_result's last line of the spill, by the marker's handle:
    // `{run id}/{activity id}.0`, the tool being the workflow's second activity (after the model's).
    const [header, line] = stdout.trim().split('\n');
    assert.match(header ?? '', /^\[handle '[^']+\/2\.0': 9,001 matching line\(s\); showing 1\]$/, stdout);
    assert.equal(line, 'BUILD FAILED: disk full');
    const handle = (header ?? '').split("'")[1] ?? '';
    const spilled = join(tmp, `overspill-${process.geteuid?.()}`, 'tool_output_limits', handle);
    assert.ok(readFileSync(spilled, 'utf8').endsWith('BUILD FAILED: disk full\n'));
    assert.ok(statSync(spilled).size > 200_000);
  });

  it('is in the package README whole', () => {
    const readme = readFileSync(join(PACKAGE, 'README.md'), 'utf8');
    for (const file of ['workflows.ts', 'main.mts']) {
      assert.ok(readme.includes(`\`\`\`ts\n${readFileSync(join(EXAMPLE, file), 'utf8')}\`\`\``), `${file} is not in README.md whole`);
    }
  });
});
