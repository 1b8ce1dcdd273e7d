/**
 * The agent's tool activities in the tests and the bench: a crawl log's pages, records, and a big
 * build log. Each returns the same output on every call, so a retry or a replay sees the same.
 */

/** Page `n` of the crawl log: `chars` chars of numbered lines (as the Python suite's `page_text`). */
export function pageText(n: number, chars: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let line = 0; size < chars; line++) {
    const status = (line * 7 + n) % 13 ? 'ok' : 'ERROR';
    const text = `page ${String(n).padStart(4, '0')} line ${String(line).padStart(6, '0')} status=${status} ms=${(line * 37 + n) % 997}\n`;
    parts.push(text);
    size += text.length;
  }
  return parts.join('').slice(0, chars);
}

/** The last line of {@link buildLog}: what the model is asked to find. */
export const BUILD_FAILED = 'BUILD FAILED: disk full';

/** A build log of about `mb` MB: numbered lines, the last one {@link BUILD_FAILED}. */
export function buildLog(mb: number): string {
  const line = (i: number): string => `step ${String(i).padStart(8, '0')}: compiled module ${i % 9973} in ${i % 97} ms\n`;
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < mb * 1_000_000; i++) {
    const text = line(i);
    lines.push(text);
    size += text.length;
  }
  lines.push(`${BUILD_FAILED}\n`);
  return lines.join('');
}

/** The crawl's first `count` records. */
export function records(count: number): { id: number; status: string; page: number }[] {
  return Array.from({ length: count }, (_, id) => ({ id, status: id % 13 === 0 ? 'ERROR' : 'ok', page: Math.floor(id / 50) }));
}

export async function fetchPage(input: { n: number; chars: number }): Promise<string> {
  return pageText(input.n, input.chars);
}

export async function fetchRecords(input: { count: number }): Promise<{ id: number; status: string; page: number }[]> {
  return records(input.count);
}

export async function fetchLog(input: { mb: number }): Promise<string> {
  return buildLog(input.mb);
}

/** {@link fetchPage}, whose first attempt the retry test fails after the output was reduced. */
export async function fetchFlaky(input: { n: number; chars: number }): Promise<string> {
  return pageText(input.n, input.chars);
}
