import Handlebars from 'handlebars';
import { BoundedMap } from '../../platform/bounded-map.ts';
import { AppError } from '../../platform/errors.ts';
import { isStorableString } from '../../platform/unstorable-text.ts';
import { MAX_RENDER_CHARS, type Mustaches, mustachesOf, renderBound } from './render-bound.ts';

/**
 * The one Handlebars environment templates run in: a fresh `Handlebars.create()` so nothing registered
 * elsewhere leaks in, no `log` helper (it would write to our console), compiled with `knownHelpersOnly` and
 * the default (4.6+) refusal of prototype properties and methods. `#each` counts its iterations per rendered part so
 * nested loops over large data cannot keep a CPU busy for minutes.
 */
const env = Handlebars.create();
env.unregisterHelper('log');

export const MAX_ITERATIONS_PER_PART = 100_000;
let iterationsLeft = MAX_ITERATIONS_PER_PART;
let loopCharsLeft = MAX_RENDER_CHARS;

const tooLarge = () =>
  new AppError(
    'template_render_error',
    `Rendering stopped: the part would be larger than ${MAX_RENDER_CHARS / 1024 / 1024}M characters.`,
  );

const builtinEach = env.helpers.each;
env.registerHelper('each', function (this: unknown, context: unknown, options: any) {
  const fn = options.fn;
  const counted = {
    ...options,
    fn(item: unknown, opts: unknown) {
      if (--iterationsLeft < 0) {
        throw new AppError(
          'template_render_error',
          `Rendering stopped: more than ${MAX_ITERATIONS_PER_PART} #each iterations in one part.`,
        );
      }
      const out: string = fn(item, opts);
      // A loop's output counts against the part's budget as it grows (render-bound.ts).
      loopCharsLeft -= out.length;
      if (loopCharsLeft < 0) throw tooLarge();
      return out;
    },
  };
  return builtinEach.call(this, context, counted);
});

export type Part = 'subject' | 'html' | 'text';

type Compiled = { template: HandlebarsTemplateDelegate; mustaches: Mustaches };
const compiled = new BoundedMap<string, Compiled>(500);

/** Compiles once per (immutable) version and part; only `html` escapes HTML. */
function compile(cacheKey: string, part: Part, source: string): Compiled {
  const hit = compiled.get(cacheKey);
  if (hit) return hit;
  const template = env.compile(source, {
    knownHelpersOnly: true,
    // Not helpers here: `{{helperMissing}}` is a variable like any other (as a helper it fails every render).
    knownHelpers: { log: false, helperMissing: false, blockHelperMissing: false },
    noEscape: part !== 'html',
    strict: false,
  });
  const made = { template, mustaches: mustachesOf(env.parse(source)) };
  compiled.set(cacheKey, made);
  return made;
}

/** What renders one part with the data it is given: compiled on its first call, then kept. */
export type PartRenderer = (data: Record<string, unknown>) => string;

/**
 * A part's renderer, for sources rendered many times (a broadcast's, once per contact): it looks its template up
 * in the compile cache once. Each call is synchronous, so the iteration and size budgets belong to it alone.
 */
export function partRenderer(cacheKey: string, part: Part, source: string): PartRenderer {
  let made: Compiled | undefined;
  return (data) => {
    iterationsLeft = MAX_ITERATIONS_PER_PART;
    loopCharsLeft = MAX_RENDER_CHARS;
    let rendered: string;
    try {
      made ??= compile(`${cacheKey}:${part}`, part, source);
      // Refused before any work when its values could make it larger than the budget (render-bound.ts).
      if (renderBound(made.mustaches, source, data) > MAX_RENDER_CHARS) throw tooLarge();
      rendered = made.template(data);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError(
        'template_render_error',
        `\`${part}\` could not be rendered: ${(error as Error).message}`,
      );
    }
    // Indexing a string (`{{name.[0]}}`, `{{lookup name 0}}`) can split a surrogate pair; the stores cannot hold
    // half of one (the text rule, platform/unstorable-text.ts).
    if (!isStorableString(rendered))
      throw new AppError(
        'template_render_error',
        `\`${part}\` could not be rendered: it would hold half of a surrogate pair (a string indexed by position?).`,
      );
    return rendered;
  };
}

/** Renders one part once. */
export const renderPart = (cacheKey: string, part: Part, source: string, data: Record<string, unknown>) =>
  partRenderer(cacheKey, part, source)(data);
