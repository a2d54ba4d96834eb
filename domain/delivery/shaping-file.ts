import { z } from 'zod';
import { DEFAULT_SHAPING } from './shaping-defaults.ts';
import {
  MX_GROUP_PREFIX,
  type ReplyRule,
  type ShapingDefaults,
  type ShapingGroupRule,
  type ShapingPolicy,
} from './shaping-groups.ts';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30s`, `15m`, `2h`, `1d` in milliseconds. */
export function durationMs(text: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(text);
  if (!m) throw new Error(`${text} is not a duration such as 30s, 15m, 2h or 1d`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

const isRegex = (text: string) => {
  try {
    new RegExp(text, 'i');
    return true;
  } catch {
    return false;
  }
};

const replyRule = z
  .strictObject({
    match: z.string().min(1).refine(isRegex, 'is not a valid regular expression').optional(),
    status: z
      .string()
      .regex(/^[245](\.(\d{1,3}|\*)){0,2}$/, 'is a pattern such as 4.7.28, 4.7.* or 4.*')
      .optional(),
    action: z.enum(['pause', 'halve']),
    for: z
      .string()
      .regex(/^\d+(s|m|h|d)$/, 'is a duration such as 30s, 15m, 2h or 1d')
      .optional(),
  })
  .refine((r) => r.match !== undefined || r.status !== undefined, 'a reply rule needs a match or a status')
  .refine((r) => (r.action === 'pause') === (r.for !== undefined), 'a pause, and only a pause, has a for');

const count = z.number().int().min(1);
const limits = {
  connections: count.max(1000).optional(),
  messagesPerConnection: count.optional(),
  perMinute: count.nullable().optional(),
  perHour: count.nullable().optional(),
  replies: z.array(replyRule).optional(),
};
const hostPattern = z
  .string()
  .regex(/^(\*\.)?([a-z0-9-]+\.)*[a-z0-9-]+\.?$/i, 'is a host name or *.domain pattern');

const fileSchema = z.strictObject({
  default: z.strictObject(limits).optional(),
  groups: z
    .array(
      z.strictObject({
        name: z
          .string()
          .min(1)
          .refine(
            (n) => !n.startsWith(MX_GROUP_PREFIX),
            `names starting ${MX_GROUP_PREFIX} are the MX groups'`,
          ),
        mx: z.array(hostPattern).min(1).optional(),
        ...limits,
      }),
    )
    .optional(),
});

type FileRule = z.infer<typeof replyRule>;
type FileLimits = {
  [K in keyof typeof limits]?: K extends 'replies'
    ? FileRule[]
    : K extends 'perMinute' | 'perHour'
      ? number | null
      : number;
};

const ruleOf = (r: FileRule): ReplyRule => {
  const on = {
    ...(r.match !== undefined && { match: r.match }),
    ...(r.status !== undefined && { status: r.status }),
  };
  return r.action === 'pause'
    ? { ...on, action: 'pause', forMs: durationMs(r.for as string) }
    : { ...on, action: 'halve' };
};

/** The fields a file entry gives, in the policy's terms (absent fields left out). */
function given(entry: FileLimits): Partial<ShapingDefaults> {
  const out: Partial<ShapingDefaults> = {};
  for (const key of ['connections', 'messagesPerConnection'] as const)
    if (entry[key] !== undefined) out[key] = entry[key];
  for (const key of ['perMinute', 'perHour'] as const) if (entry[key] !== undefined) out[key] = entry[key];
  if (entry.replies !== undefined) out.replies = entry.replies.map(ruleOf);
  return out;
}

/** Where a zod issue is, as an operator reads it: `groups[2] ("google").perMinute`. */
export function whereOf(path: PropertyKey[], json: unknown): string {
  let out = '';
  let node: unknown = json;
  for (const part of path) {
    if (typeof part === 'number') {
      const name = (node as unknown[])?.[part] as { name?: unknown } | undefined;
      out += `[${part}]${typeof name?.name === 'string' ? ` ("${name.name}")` : ''}`;
    } else out += `${out ? '.' : ''}${String(part)}`;
    node = (node as Record<PropertyKey, unknown>)?.[part];
  }
  return out || 'the file';
}

/**
 * The shaping policy: the shipped groups with the operator's file (its JSON, if any) over them. A file group
 * named as a shipped one changes the fields it gives; a new name adds a group, which needs `mx` and takes the
 * fields it leaves out from `default`. Throws a message naming the faulty entry.
 */
export function parseShapingFile(json: unknown, base: ShapingPolicy = DEFAULT_SHAPING): ShapingPolicy {
  if (json === undefined || json === null) return base;
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${whereOf(issue.path, json)}: ${issue.message}`);
  }
  const defaults: ShapingDefaults = { ...base.default, ...given(parsed.data.default ?? {}) };
  const groups: ShapingGroupRule[] = base.groups.map((g) => ({ ...g }));
  for (const [i, entry] of (parsed.data.groups ?? []).entries()) {
    const at = groups.findIndex((g) => g.name === entry.name);
    const fields = { ...given(entry), ...(entry.mx && { mx: entry.mx.map((p) => p.toLowerCase()) }) };
    if (at >= 0) groups[at] = { ...groups[at], ...fields };
    else if (!entry.mx) throw new Error(`groups[${i}] ("${entry.name}"): a new group needs mx`);
    else groups.push({ ...defaults, name: entry.name, mx: [], ...fields });
  }
  return { default: defaults, groups };
}

/** The shaping policy the configuration holds (SHAPING_FILE's JSON, if any), checked. */
export const shapingPolicyOf = (config: { shaping?: unknown }): ShapingPolicy =>
  parseShapingFile(config.shaping);
