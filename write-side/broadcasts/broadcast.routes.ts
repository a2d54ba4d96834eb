import { z } from 'zod';
import type { BroadcastContent } from '../../domain/broadcasts/broadcast.events.ts';
import { Broadcast } from '../../domain/broadcasts/broadcasts.response.ts';
import { fromResendPlaceholders } from '../../domain/broadcasts/resend-placeholders.ts';
import { sendTime } from '../../domain/emails/send-time.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { invalidField } from '../../platform/errors.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import {
  CONTROL_CHARACTERS_REFUSED,
  hasNoControlCharacter,
  resendsName,
  resourceName,
  unionError,
} from '../../platform/http/route-schema.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import {
  BROADCAST_NAME_MAX,
  cancelBroadcast,
  checkDraftSend,
  createBroadcast,
  deleteBroadcast,
  duplicateBroadcast,
  sendBroadcast,
  sendChecked,
  updateBroadcast,
} from './broadcast.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const BROADCAST_PROJECTIONS = ['broadcasts'];

const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const source = z
  .string()
  .max(512 * 1024, 'must be at most 512 KB')
  .nullable();
const PREVIEW_TEXT_MAX = 200;
const fields = {
  name: resourceName(BROADCAST_NAME_MAX),
  audience_id: z.string().regex(idShape('aud'), 'must be an audience id (aud_…)'),
  topic_id: z.string().regex(idShape('top'), 'must be a topic id (top_…)').nullable(),
  from: text(998),
  reply_to: z.union([text(998), z.array(text(998)).max(10, 'must have at most 10 addresses')], {
    error: unionError('must be an address or an array of at most 10 addresses'),
  }),
  subject: text(1000).nullable(),
  html: source,
  text: source,
  template_id: z.string().max(100).nullable(),
  // One line of plain text, as an inbox shows it after the subject (Resend's `preview_text`).
  preview_text: z
    .string()
    .trim()
    .max(PREVIEW_TEXT_MAX, `must be at most ${PREVIEW_TEXT_MAX} characters`)
    .refine(hasNoControlCharacter, CONTROL_CHARACTERS_REFUSED)
    .nullable(),
};
const UNTITLED = 'Untitled';
// Resend's SDK names the audience `segment_id` (`broadcasts.create({ segmentId })`).
const segment = resendsName('segment_id', 'audience_id');
const createBody = z.preprocess(
  segment,
  z
    .object({
      ...fields,
      // Optional in Resend's API, which names such a broadcast "Untitled".
      name: fields.name.default(UNTITLED),
      topic_id: fields.topic_id.optional(),
      reply_to: fields.reply_to.optional(),
      subject: fields.subject.optional(),
      html: fields.html.optional(),
      text: fields.text.optional(),
      template_id: fields.template_id.optional(),
      preview_text: fields.preview_text.optional(),
      // Resend's create and send in one call (`broadcasts.create({ …, send: true, scheduledAt })`).
      send: z
        .boolean()
        .optional()
        .meta({ description: 'Send it at once, as `POST …/send` would (Resend’s).' }),
      scheduled_at: sendTime.optional().meta({ description: 'With `send: true`: when (Resend’s).' }),
    })
    .strict(),
);
const updateBody = z.preprocess(segment, z.object(fields).partial().strict());
const sendBody = z
  .object({
    send_at: sendTime,
    // Resend's name for it.
    scheduled_at: sendTime,
  })
  .partial()
  .strict()
  // One time, under one name: given both, which one counts would be a guess (a send of an email refuses it too).
  .refine((b) => b.send_at === undefined || b.scheduled_at === undefined, {
    path: ['scheduled_at'],
    message: 'cannot be given with `send_at` (it is Resend’s name for it)',
  });

const replyToList = (r: string | string[] | undefined) =>
  r === undefined ? undefined : Array.isArray(r) ? r : [r];

/** A source with Resend's placeholders written as Postline's variables (docs/broadcasts.md). */
const resends = (source: string | null | undefined) => (source ? fromResendPlaceholders(source) : source);

/** The request's fields as the aggregate names them; absent ones stay absent (a PATCH changes only what it names). */
function contentOf(body: z.infer<typeof updateBody>): Partial<BroadcastContent> {
  const out: Partial<BroadcastContent> = {
    name: body.name,
    audienceId: body.audience_id,
    topicId: body.topic_id,
    from: body.from,
    replyTo: replyToList(body.reply_to),
    subject: resends(body.subject),
    html: resends(body.html),
    text: resends(body.text),
    templateId: body.template_id,
    previewText: body.preview_text,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

export function broadcastCommandRoutes(api: ApiRouter, services: Services) {
  const broadcasts = commandRoutes(api, services, {
    tag: 'Broadcasts',
    name: 'Broadcast',
    param: 'broadcast_id',
    idPattern: idShape('bc'),
    projections: BROADCAST_PROJECTIONS,
    read: (tenant, id) => services.lookUps.findBroadcast(services.db, tenant, id),
    response: Broadcast,
  });

  broadcasts.create(
    '/broadcasts',
    {
      summary: 'Create a broadcast (a draft)',
      description:
        'With `send: true` (Resend’s), it is sent at once, or at `scheduled_at`, as `POST /v1/broadcasts/{id}/send` would: what that send refuses, this create refuses before anything is made.',
      body: createBody,
      errors: ['domain_not_verified', 'template_not_published'],
    },
    async (req) => {
      const { send, scheduled_at: sendAt, ...body } = parse(createBody, req.body);
      if (sendAt !== undefined && !send)
        throw invalidField('scheduled_at', 'needs `send: true`: a draft has no time');
      const absent = {
        topicId: null,
        replyTo: [],
        subject: null,
        html: null,
        text: null,
        templateId: null,
        previewText: null,
      };
      const content = { ...absent, ...contentOf(body) } as BroadcastContent;
      // The send's own checks first, once, so that a send they would refuse leaves no draft behind.
      const at = send ? await checkDraftSend(services, req.auth, content, sendAt) : undefined;
      const created = await createBroadcast(services, metaOf(req.auth), content);
      if (!send) return { id: created.broadcastId, position: created.position };
      const sent = await sendChecked(services, req.auth, created.broadcastId, at);
      return { id: created.broadcastId, position: sent.position };
    },
  );

  broadcasts.create(
    '/broadcasts/:broadcast_id/duplicate',
    {
      summary: 'Duplicate a broadcast as a draft',
      description:
        'A new draft with its content, named `Copy of <name>`; the broadcast may be in any status.',
    },
    async (req) => {
      const { broadcastId: id, position } = await duplicateBroadcast(
        services,
        req.auth,
        await broadcasts.id(req),
      );
      return { id, position };
    },
  );

  broadcasts.change(
    'PATCH',
    '/broadcasts/:broadcast_id',
    { summary: 'Change a draft broadcast', body: updateBody, errors: ['broadcast_not_draft'] },
    (req, id) => updateBroadcast(services, metaOf(req.auth), id, contentOf(parse(updateBody, req.body))),
  );

  broadcasts.delete(
    '/broadcasts/:broadcast_id',
    { summary: 'Delete a draft broadcast', errors: ['broadcast_not_draft'] },
    deleteBroadcast,
  );

  broadcasts.change(
    'POST',
    '/broadcasts/:broadcast_id/send',
    {
      summary: 'Send a draft broadcast, now or at `send_at`',
      description:
        'Without a body, or without `send_at` (`scheduled_at` is taken too, as Resend names it), the broadcast starts sending now.',
      body: sendBody,
      bodyOptional: true,
      errors: ['broadcast_not_draft', 'domain_not_verified', 'template_not_published'],
    },
    (req, id) => {
      const body = parse(sendBody, req.body);
      return sendBroadcast(services, req.auth, id, body.send_at ?? body.scheduled_at);
    },
  );

  broadcasts.change(
    'POST',
    '/broadcasts/:broadcast_id/cancel',
    {
      summary:
        'Cancel a broadcast: a scheduled one becomes a draft again; a sending one stops, its emails nobody received canceled',
      errors: ['broadcast_not_scheduled'],
    },
    (req, id) => cancelBroadcast(services, metaOf(req.auth), id),
  );
}
