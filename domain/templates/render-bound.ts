type Node = hbs.AST.Node & Record<string, unknown>;

/**
 * Characters a part may build while it renders, at most. The rendered size is checked after rendering, and a small
 * template with a long value builds far more first (a 500 KB part of `{{b}}` times a 300 KB `b`: gigabytes, the
 * event loop blocked for seconds, the memory gone). 64 times the rendered limit leaves any real template room.
 */
export const MAX_RENDER_CHARS = 64 * 1024 * 1024;
/** The most one character of a value grows when HTML-escaped (`"` → `&quot;`). */
const ESCAPED = 6;
/** What a value that is not a string renders as, at most (`[object Object]`, a number, `true`). */
const SHORT = 32;

/** A part's mustaches: top-level plain paths (`{{contact.first_name}}`), whose values are looked up, and the rest. */
export interface Mustaches {
  paths: string[][];
  others: number;
}

/** The mustaches of a parsed template: a plain path outside any block resolves against the data itself. */
export function mustachesOf(program: hbs.AST.Program): Mustaches {
  const found: Mustaches = { paths: [], others: 0 };
  const walk = (node: Node | undefined, inBlock: boolean) => {
    if (!node) return;
    if (node.type === 'MustacheStatement') {
      const m = node as unknown as hbs.AST.MustacheStatement;
      const path = m.path as hbs.AST.PathExpression;
      const plain = path.type === 'PathExpression' && !path.data && path.depth === 0 && m.params.length === 0;
      if (plain && !m.hash && !inBlock) found.paths.push(path.parts);
      else found.others++;
    }
    for (const child of (node.body as Node[] | undefined) ?? []) walk(child, inBlock);
    walk(node.program as Node | undefined, true);
    walk(node.inverse as Node | undefined, true);
  };
  walk(program as unknown as Node, false);
  return found;
}

/** The longest string anywhere in `value` (`SHORT` for anything else), looked at to a depth of 32. */
function longest(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (!value || typeof value !== 'object' || depth > 32) return SHORT;
  let most = 0;
  for (const v of Object.values(value)) most = Math.max(most, longest(v, depth + 1));
  return most;
}

/** How many characters a part with these mustaches may render from `data`, at most, outside its loops. */
export function renderBound(mustaches: Mustaches, source: string, data: unknown): number {
  let chars = source.length;
  for (const parts of mustaches.paths) {
    let value: unknown = data;
    for (const p of parts)
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[p] : undefined;
    chars += (typeof value === 'string' ? value.length : SHORT) * ESCAPED;
  }
  return mustaches.others > 0 ? chars + mustaches.others * longest(data) * ESCAPED : chars;
}
