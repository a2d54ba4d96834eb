/**
 * The one rule for text that enters Postline (HTTP bodies, queries and headers; later SMTP and MIME): PostgreSQL's
 * text and jsonb cannot hold U+0000 nor a lone UTF-16 surrogate (`22P02`), so a string holding either is refused
 * where it comes in, before anything is appended that a projection would then fail on for ever.
 */
import { AppError } from './errors.ts';

export const UNSTORABLE_TEXT = 'must not contain a lone UTF-16 surrogate or NUL';

/** Whether PostgreSQL can store the string: well-formed UTF-16 and no NUL. */
export function isStorableString(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}

/** A key shown in a path: its unstorable characters written as `\uXXXX`, so the message itself stays storable. */
function shown(key: string): string {
  if (isStorableString(key)) return key;
  let out = '';
  for (const ch of key) {
    const code = ch.codePointAt(0)!;
    out += code === 0 || (code >= 0xd800 && code <= 0xdfff) ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
  }
  return out;
}

/** Where a value sits: its key in its parent, the parent's place; the path is spelled out only when needed. */
type Place = { key: string | number; parent: Place } | null;

function pathOf(place: Place, root: string): string {
  const keys: (string | number)[] = [];
  for (let p = place; p !== null; p = p.parent) keys.push(p.key);
  let path = root;
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i];
    path = typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${shown(key)}` : shown(key);
  }
  return path;
}

/**
 * The path (`to[0].name`, `headers.X-Tag`, the path of the key itself for a bad key) of the first string of a
 * JSON-like value, object key or value, that PostgreSQL could not store; undefined when there is none. Walks
 * without recursion, so no nesting depth a body parser accepts can overflow the stack.
 */
export function findUnstorableText(value: unknown, root = ''): string | undefined {
  const stack: [unknown, Place][] = [[value, null]];
  while (stack.length > 0) {
    const [v, place] = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableString(v)) return pathOf(place, root);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { key: i, parent: place }]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const at = { key: keys[i], parent: place };
        stack.push([(v as Record<string, unknown>)[keys[i]], at], [keys[i], at]); // the key is looked at first
      }
    }
  }
  return undefined;
}

/**
 * The rule applied: a 422 `validation_error` naming the first unstorable string's path under `root` (`subject`,
 * `query.limit`, `argv[2]`); `root` alone, or `body`, when the value is that string itself.
 */
export function refuseUnstorableText(value: unknown, root = ''): void {
  const path = findUnstorableText(value, root);
  if (path !== undefined) throw new AppError('validation_error', `\`${path || 'body'}\`: ${UNSTORABLE_TEXT}`);
}

/** At most `maxChars` UTF-16 units of `text`, never ending in half of a surrogate pair. */
export function cutText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const code = text.charCodeAt(maxChars - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars);
}
