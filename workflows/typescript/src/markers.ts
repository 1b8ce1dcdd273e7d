/**
 * The markers masking reads and writes, byte for byte the Python package's (`overspill._markers`),
 * so that a history masked by one is read the same by the other.
 *
 * - A spill marker starts `[Tool output too large ({size}); stored to handle {handle!r}.`: an
 *   output that starts with one was spilled already, and its handle is reused, with no new write.
 * - A mask marker is what replaces a masked output: the tool, its size, its handle and the tools
 *   that read it back.
 *
 * `{x!r}` is Python's `repr()` of a string, which the engine writes into every marker; sizes
 * count chars as Python does (code points).
 *
 * Workflow-safe: no Node API.
 *
 * @module
 */

const QUOTED = String.raw`'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`;

const SPILL_MARKER = new RegExp(
  String.raw`^\[Tool output too large \((?<size>[^)]*)\); stored to handle (?<handle>${QUOTED})\.`,
);

const MASK_MARKER = new RegExp(
  String.raw`^\[Tool output of (?:${QUOTED}) cleared from context \([^)]*\); ` +
    String.raw`stored to handle (?:${QUOTED})\. Get it back with [^\]]*\]$`,
);

/**
 * The text that replaces a masked output: the tool, its size, its handle, and how to get it back.
 *
 * `[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle 'run/call-1.0'.
 * Get it back with read_tool_result, grep_tool_result or query_tool_result.]`
 */
export function maskMarker(
  toolName: string,
  handle: string,
  size: string,
  tools: readonly string[],
): string {
  const names =
    tools.length > 1 ? `${tools.slice(0, -1).join(', ')} or ${tools[tools.length - 1]}` : tools.join('');
  return (
    `[Tool output of ${pyRepr(toolName)} cleared from context (${size}); stored to handle ${pyRepr(handle)}. ` +
    `Get it back with ${names}.]`
  );
}

/** Whether `text` is exactly a mask marker. */
export function isMasked(text: string): boolean {
  return MASK_MARKER.test(text);
}

/**
 * The handle (`undefined` when its quoting does not parse) and the size a spill marker at the start
 * of `text` names, or `undefined` if `text` does not start with one.
 */
export function spillHeader(text: string): { handle: string | undefined; size: string } | undefined {
  const header = SPILL_MARKER.exec(text);
  if (header?.groups === undefined) return undefined;
  return { handle: pyUnquote(header.groups['handle'] ?? ''), size: header.groups['size'] ?? '' };
}

/** Chars of `text` as Python counts them: code points (a surrogate pair is one). */
export function chars(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit < 0xdc00) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next < 0xe000) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}

/** `f"{n:,}"`: an integer with comma thousands separators. */
export function thousands(n: number): string {
  return Math.trunc(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Python's `str.isprintable()` false: controls, formats, surrogates, private use, unassigned and separators but the space. */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python's `repr()` of a string. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    if (c === '\\' || c === quote) out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c === ' ' || !NOT_PRINTABLE.test(c)) out += c;
    else {
      const code = c.codePointAt(0) ?? 0;
      const hex = code.toString(16);
      out += code < 0x100 ? `\\x${hex.padStart(2, '0')}` : code < 0x10000 ? `\\u${hex.padStart(4, '0')}` : `\\U${hex.padStart(8, '0')}`;
    }
  }
  return out + quote;
}

/** The string a Python string literal (as `repr()` writes it) stands for, or `undefined`. */
function pyUnquote(literal: string): string | undefined {
  const quote = literal[0];
  if (literal.length < 2 || (quote !== "'" && quote !== '"') || literal[literal.length - 1] !== quote) {
    return undefined;
  }
  const body = literal.slice(1, -1);
  const simple: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', r: '\r', t: '\t' };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? '';
    if (c !== '\\') {
      out += c;
      continue;
    }
    const escape = body[i + 1] ?? '';
    const digits = { x: 2, u: 4, U: 8 }[escape as 'x' | 'u' | 'U'];
    if (digits !== undefined) {
      const hex = body.slice(i + 2, i + 2 + digits);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === digits ? parseInt(hex, 16) : NaN;
      if (!(code <= 0x10ffff)) return undefined;
      out += String.fromCodePoint(code);
      i += 1 + digits;
    } else if (escape in simple) {
      out += simple[escape];
      i += 1;
    } else {
      return undefined;
    }
  }
  return out;
}
