import Handlebars from 'handlebars';
import { AppError } from '../../platform/errors.ts';

/**
 * Static analysis of one Handlebars source, pure (parsing needs no I/O, so the decider may call it). It finds
 * syntax errors with their line and column, refuses what the sandbox does not offer (partials, decorators,
 * unknown helpers) and collects the root-level variables the source reads, so that "used but not declared"
 * is caught when the template is saved rather than when an email is sent.
 */

/** Block helpers of the sandbox: the built-ins minus `log` (it would write to the server's console). */
export const BLOCK_HELPERS = new Set(['if', 'unless', 'each', 'with']);
/**
 * Helpers callable inline, `{{lookup items 0}}`, or as a sub-expression, with the number of arguments each takes:
 * called with another number they fail on every render, so that is refused when the template is saved.
 */
export const INLINE_HELPERS = new Map([['lookup', 2]]);
/** Block helpers whose main block runs against a new context (so plain paths inside no longer mean root data). */
const CONTEXT_CHANGING = new Set(['each', 'with']);

export interface Location {
  line: number;
  column: number;
}

/** One context on the way down: the root data, or what a #each or #with block iterates over. */
interface Frame {
  /** True for the template's own context, the data passed to render. */
  root: boolean;
  blockParams: string[];
}

const at = (loc: any): Location => ({ line: loc?.start?.line ?? 1, column: (loc?.start?.column ?? 0) + 1 });
const where = (l: Location) => `line ${l.line}, column ${l.column}`;

function syntaxError(field: string, error: any): AppError {
  // Parse errors carry their position only in the (shared, synchronous) lexer; block mismatches carry it themselves.
  const lexer = (Handlebars as any).Parser?.lexer?.yylloc;
  const loc: Location =
    typeof error?.lineNumber === 'number'
      ? { line: error.lineNumber, column: (error.column ?? 0) + 1 }
      : { line: lexer?.first_line ?? 1, column: (lexer?.first_column ?? 0) + 1 };
  const first = String(error?.message ?? error).split('\n');
  const expecting = first.find((l) => l.startsWith('Expecting'));
  const reason = expecting
    ? `unexpected ${first[first.length - 1].replace(/^.*got /, '')}`
    : first[0].replace(/ - \d+:\d+$/, '');
  return new AppError(
    'validation_error',
    `\`${field}\`: Handlebars syntax error at ${where(loc)}: ${reason}`,
  );
}

class Walker {
  readonly used = new Map<string, Location>();
  readonly #frames: Frame[] = [{ root: true, blockParams: [] }];
  readonly #field: string;
  constructor(field: string) {
    this.#field = field;
  }

  #refuse(loc: any, message: string): never {
    throw new AppError('validation_error', `\`${this.#field}\`: ${message} at ${where(at(loc))}`);
  }

  program(program: any, frame?: Frame) {
    if (!program) return;
    if (frame) this.#frames.push(frame);
    for (const statement of program.body) this.statement(statement);
    if (frame) this.#frames.pop();
  }

  statement(node: any) {
    switch (node.type) {
      case 'ContentStatement':
      case 'CommentStatement':
        return;
      case 'MustacheStatement':
        return this.call(node, false);
      case 'BlockStatement':
        return this.block(node);
      case 'PartialStatement':
      case 'PartialBlockStatement':
        return this.#refuse(node.loc, 'partials are not supported');
      default:
        return this.#refuse(node.loc, `${node.type} is not supported`);
    }
  }

  block(node: any) {
    const name = node.path.type === 'PathExpression' ? node.path.original : '';
    if (node.type === 'DecoratorBlock') this.#refuse(node.loc, 'decorators are not supported');
    if (!BLOCK_HELPERS.has(name)) {
      this.#refuse(node.loc, `unknown block helper \`${name}\` (use #if, #unless, #each or #with)`);
    }
    if (node.params.length !== 1) this.#refuse(node.loc, `#${name} takes exactly one argument`);
    this.expression(node.params[0]);
    for (const pair of node.hash?.pairs ?? []) this.expression(pair.value);
    // #if and #unless keep the context; #each and #with run their main block against a new one: the root data
    // again for a #with over it (`this`, `@root`), whose plain paths then read root variables.
    const overRoot = this.#isRoot(node.params[0]);
    if (name === 'each' && overRoot)
      this.#refuse(node.loc, "#each over the template's own data reads variables it does not declare");
    const frame = CONTEXT_CHANGING.has(name)
      ? { root: overRoot, blockParams: node.program?.blockParams ?? [] }
      : undefined;
    this.program(node.program, frame);
    this.program(node.inverse);
  }

  /** A mustache or sub-expression: either a variable, or a helper call with arguments. */
  call(node: any, sub: boolean) {
    const path = node.path;
    const args = [...node.params, ...(node.hash?.pairs ?? []).map((p: any) => p.value)];
    if (path.type !== 'PathExpression') {
      if (args.length) this.#refuse(node.loc, 'a literal cannot be called as a helper');
      if (path.type === 'StringLiteral')
        this.path({ parts: [path.value], depth: 0, data: false, original: path.value, loc: path.loc });
      return;
    }
    const name = path.original;
    if (BLOCK_HELPERS.has(name))
      this.#refuse(node.loc, `\`${name}\` is a block helper: write {{#${name} …}}…{{/${name}}}`);
    const arity = INLINE_HELPERS.get(name);
    if (arity !== undefined) {
      if (node.params.length !== arity)
        this.#refuse(node.loc, `\`${name}\` takes exactly ${arity} arguments`);
      if (this.#isRoot(node.params[0])) this.#lookUpRoot(node.params[1]);
    } else if (args.length) {
      this.#refuse(node.loc, `unknown helper \`${name}\``);
    } else {
      this.path(path);
    }
    if (sub && !args.length) return;
    for (const arg of args) this.expression(arg);
  }

  expression(node: any) {
    if (node.type === 'PathExpression') this.path(node);
    else if (node.type === 'SubExpression') this.call(node, true);
  }

  path(node: any) {
    if (node.data) {
      // @root.x reads root data; @index, @key, @first, @last are the loop's own.
      if (node.parts[0] === 'root' && node.parts[1]) this.#use(node.parts[1], node.loc);
      return;
    }
    const head = node.parts[0];
    if (head === undefined) return; // {{this}}
    const scoped = /^\.|this\b/.test(node.original);
    if (!node.depth && !scoped && this.#frames.some((f) => f.blockParams.includes(head))) return;
    // `../` climbs one context per step; only context-changing blocks push one (as in Handlebars 4). Climbing past
    // the template's data (a `../` inside a top-level #if) finds nothing: it would render empty in every email.
    const index = this.#frames.length - 1 - node.depth;
    if (index < 0)
      this.#refuse(
        node.loc,
        `\`${node.original}\` climbs above the template's data (only #each and #with open a context for ../ to leave)`,
      );
    const target = this.#frames[index];
    if (target.root) this.#use(head, node.loc);
  }

  /** Whether `node` is the template's data itself: `this` or `.` in the root context, `../` up to it, `@root`. */
  #isRoot(node: any): boolean {
    if (node?.type !== 'PathExpression') return false;
    if (node.data) return node.parts.length === 1 && node.parts[0] === 'root';
    return node.parts.length === 0 && this.#frames[this.#frames.length - 1 - node.depth]?.root === true;
  }

  /** `lookup` on the template's data reads the variable it names: only a name written out can be checked. */
  #lookUpRoot(key: any) {
    if (key.type === 'StringLiteral' || key.type === 'NumberLiteral') this.#use(String(key.value), key.loc);
    else this.#refuse(key.loc, "`lookup` on the template's own data needs the variable's name in quotes");
  }

  #use(name: string, loc: any) {
    if (!this.used.has(name)) this.used.set(name, at(loc));
  }
}

/** Deeper block nesting than any real email needs is refused. */
export const MAX_BLOCK_DEPTH = 100;

/** The deepest block nesting, from a linear scan of `{{#`, `{{^` (open) and `{{/` (close) tags. */
function blockDepth(source: string): number {
  let depth = 0;
  let max = 0;
  for (const m of source.matchAll(/\{\{~?\s*([#^/])/g)) {
    depth = m[1] === '/' ? depth - 1 : depth + 1;
    if (depth > max) max = depth;
  }
  return max;
}

/** Parses `source` and returns the root variables it reads, each with where it is first read. */
export function analyseTemplate(field: string, source: string): Map<string, Location> {
  const tooDeep = () =>
    new AppError('validation_error', `\`${field}\`: blocks are nested more than ${MAX_BLOCK_DEPTH} deep`);
  // The parser slows down sharply with depth (seconds at a few thousand): refuse deep nesting before it runs.
  if (blockDepth(source) > MAX_BLOCK_DEPTH) throw tooDeep();
  let ast: any;
  try {
    ast = Handlebars.parse(source);
  } catch (error) {
    throw error instanceof RangeError ? tooDeep() : syntaxError(field, error);
  }
  const walker = new Walker(field);
  try {
    walker.program(ast);
  } catch (error) {
    // The walk recurses like the parser: past the stack it is the same answer, not a server error.
    throw error instanceof RangeError ? tooDeep() : error;
  }
  return walker.used;
}
