import { z } from 'zod';
import type { ErrorCode } from '../errors.ts';

/**
 * What a route declares about itself: the OpenAPI document (`openapi.ts`) is generated from these declarations,
 * never written by hand. The route's handler parses with the same schema objects (`parse(schema.body, req.body)`),
 * so the document cannot describe a request the route would not take.
 */
export interface RouteSchema {
  /** One line, shown as the operation's title. */
  summary: string;
  description?: string;
  /** The resource the route belongs to (`Emails`, `Domains`, …): groups operations in the reference. */
  tag: string;
  /** Path parameters; default: each `:name` of the path as a string. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers the route reads, beside the Idempotency-Key of an idempotent route. */
  header?: z.ZodObject;
  body?: z.ZodType;
  /** The body may be left out (a send without options); default: required. */
  bodyOptional?: boolean;
  /** The body's media type when it is not JSON (a CSV upload: `text/csv` with `body: z.string()`). */
  bodyType?: string;
  /** Every success status the route answers, with its body's schema (`<resource>.response.ts`). */
  responses: { 200?: z.ZodType; 201?: z.ZodType; 202?: z.ZodType };
  /**
   * Error codes of the catalogue (platform/errors.ts) this route may answer beyond those every route of its kind
   * gives (authentication, rate limit, validation, not found for a path id, …: see `commonErrors` in openapi.ts).
   */
  errors?: ErrorCode[];
}

/**
 * The error of a union of types (`z.union(…, { error: unionError(takes) })`): the message of a rule the value
 * broke in a branch of its own type (a list that is too long), else what the field takes. zod's own ("Invalid
 * input") names no rule, and a branch of another type may report one that does not apply: a string's maximum
 * length checked against the length of an array.
 */
export const unionError =
  (takes: string) =>
  (issue: { input?: unknown; errors?: { code: string; message: string; path: PropertyKey[] }[][] }) =>
    issue.input === undefined
      ? 'is required'
      : (issue.errors
          ?.filter((branch) => !branch.some((e) => e.code === 'invalid_type' && e.path.length === 0))
          .flat()
          .find((e) => e.code !== 'invalid_type')?.message ?? takes);

/** A timestamp as the API writes it (`Date#toISOString()`). */
export const timestamp = z.iso.datetime();

/**
 * A date-time PostgreSQL can store and JavaScript writes back as it reads: an offset of at most ±15:59 and an
 * instant in the years 1 to 9999 (UTC). Anything else passed the API, was recorded, and then failed every write
 * of it into a read model (the consumer parked, /readyz 503).
 */
const storableInstant = (value: string) => {
  const offset = /([+-])(\d\d):?\d\d$/.exec(value);
  const year = new Date(value).getUTCFullYear();
  return !(offset && Number(offset[2]) > 15) && year >= 1 && year <= 9999;
};

/**
 * A body in which Resend's SDK names a field `resends` where Postline says `own` (a `z.preprocess` step): taken
 * for it when `own` is not given. Given both, which one counts would be a guess: refused by Resend's name.
 */
export const resendsName =
  (resends: string, own: string) =>
  (body: unknown, ctx: z.RefinementCtx): unknown => {
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !(resends in body)) return body;
    if (own in body) {
      ctx.addIssue({
        code: 'custom',
        path: [resends],
        message: `cannot be given with \`${own}\` (it is Resend’s name for it)`,
      });
      return body;
    }
    const { [resends]: value, ...rest } = body as Record<string, unknown>;
    return { ...rest, [own]: value };
  };

/** A date-time a request gives: ISO 8601 with a time zone. */
export const zonedDateTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' })
  .refine(storableInstant, 'must lie in the years 0001 to 9999 (UTC), with a UTC offset of at most ±15:59');

/**
 * Control characters (C0 with tab and line breaks, DEL, C1): a name is shown on one line in the dashboard, CSV
 * exports, logs and email headers and footers, where these break the line or the format, or drive a terminal.
 */
const CONTROL_CHARACTER = /\p{Cc}/u;
export const CONTROL_CHARACTERS_REFUSED =
  'must not contain control characters (line breaks, tabs and the like)';
export const hasNoControlCharacter = (text: string) => !CONTROL_CHARACTER.test(text);

/**
 * The one rule for the name a client gives a resource (an API key, audience, topic, template, broadcast, …): the
 * spaces around it dropped, then 1 to `max` characters, any printable Unicode and plain spaces, no control
 * character.
 */
export const resourceName = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'is required')
    .max(max, `must be at most ${max} characters`)
    .refine(hasNoControlCharacter, CONTROL_CHARACTERS_REFUSED)
    .meta({
      description: `1 to ${max} characters once the spaces around are dropped; no control characters (line breaks, tabs, …).`,
    });

/** `{id, deleted: true}`: what a DELETE answers. */
export const Deleted = z
  .strictObject({ id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'Deleted', example: { id: 'dom_01jx0m4qk3f5b8c9d2e6g7h8j9', deleted: true } });

/** A page of a list: `{object: "list", data, has_more}`, newest first (docs/api.md). */
export const listOf = (item: z.ZodType, id: string) =>
  z.strictObject({ object: z.literal('list'), data: z.array(item), has_more: z.boolean() }).meta({
    id,
    description: 'A page of the list, newest first; page on with `starting_after` or `ending_before`.',
  });

/** A signed, expiring link to a stored file (platform/blob-store.ts). */
export const downloadLinkFields = {
  download_url: z
    .url()
    .meta({ description: 'Signed link; it needs no API key and expires at `expires_at`.' }),
  expires_at: timestamp,
};
