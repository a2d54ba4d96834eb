import { z } from 'zod';
import { emailStream } from '../../domain/emails/email.events.ts';
import {
  Attachment,
  AttachmentList,
  Email,
  EmailEventList,
  EmailList,
  Usage,
} from '../../domain/emails/emails.response.ts';
import { EMAIL_STATUSES } from '../../domain/emails/status.ts';
import { monthOf, PLANS } from '../../domain/organizations/plans.ts';
import { notFound } from '../../platform/errors.ts';
import { createdBetween, listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes, under } from '../../platform/http/query-routes.ts';
import type { ApiRequest, ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import { publicHistory } from './email-history.ts';
import { emailMetricsRoute } from './email-metrics.route.ts';
import {
  type AttachmentRow,
  emailExists,
  getEmail,
  listAttachments,
  listEmails,
  monthlyUsage,
  planOfMonth,
} from './emails.queries.ts';

const listFilters = {
  status: z.enum(EMAIL_STATUSES).optional(),
  domain: z.string().min(1).max(253).optional(),
  tag: z.string().min(1).max(129).optional(), // `name:value` from Resend's tag objects
  ...createdBetween,
};
const listEmailsQuery = listQuery(listFilters);
const usageQuery = z
  .object({
    month: z
      .string()
      // A calendar month of the years 0001 to 9999, the years a timestamp the service stores can fall in.
      .regex(/^(?!0000)\d{4}-(0[1-9]|1[0-2])$/, 'must be a month, YYYY-MM (01 to 12)')
      .optional(),
  })
  .strict();

export function emailQueryRoutes(api: ApiRouter, services: Services) {
  const emails = queryRoutes(api, { tag: 'Emails', name: 'Email' });
  // Before /emails/:email_id, which would take `metrics` for an id.
  emailMetricsRoute(emails, services);
  emails.list(
    '/emails',
    { summary: 'List emails', query: listEmailsQuery, responses: { 200: EmailList } },
    (req, page) => listEmails(services.db, req.auth, page),
  );

  emails.get(
    '/emails/:email_id',
    { summary: 'Get an email with its content and recipients', responses: { 200: Email } },
    (req) => getEmail(services.db, req.auth, req.params.email_id),
  );

  /** A read under an email: the email's 404 unless it is the caller's. */
  const underEmail = (read: (req: ApiRequest) => Promise<unknown>) =>
    under((req) => emailExists(services.db, req.auth, req.params.email_id), read);

  // The email's history under the public names, each event with its documented data (email-history.ts).
  emails.get(
    '/emails/:email_id/events',
    {
      summary: "An email's history: each event with its time, recipient and data",
      responses: { 200: EmailEventList },
    },
    underEmail(async (req) => {
      const stream = await services.store.readStream(emailStream(req.params.email_id));
      return { object: 'list', data: await publicHistory(services.db, stream), has_more: false };
    }),
  );

  const attachment = (a: AttachmentRow) => ({
    object: 'attachment',
    id: a.id,
    email_id: a.email_id,
    filename: a.filename,
    content_type: a.content_type,
    content_id: a.content_id,
    size: a.size,
  });

  emails.get(
    '/emails/:email_id/attachments',
    { summary: "List an email's attachments", responses: { 200: AttachmentList } },
    underEmail(async (req) => {
      const rows = await listAttachments(services.db, req.auth, req.params.email_id);
      return { object: 'list', data: rows.map(attachment), has_more: false };
    }),
  );

  emails.get(
    '/emails/:email_id/attachments/:attachment_id',
    { summary: 'Get an attachment with a download link', responses: { 200: Attachment } },
    async (req) => {
      const rows = await listAttachments(services.db, req.auth, req.params.email_id);
      const a = rows.find((r) => r.id === req.params.attachment_id);
      if (!a) throw notFound('Attachment', req.params.attachment_id);
      const link = services.blobs.downloadLink(services.config.PUBLIC_URL, a.blob_key, {
        filename: a.filename,
        contentType: a.content_type,
        now: services.clock.now(),
      });
      return { ...attachment(a), ...link };
    },
  );

  // Monthly usage per mode: the Free plan's hard stop and the overage Pro and Business pay for.
  emails.get(
    '/usage',
    {
      summary: 'Emails sent this month, the plan and the overage',
      query: usageQuery,
      responses: { 200: Usage },
    },
    async (req) => {
      const q = parse(usageQuery, req.query, 'query');
      const month = q.month ?? monthOf(services.clock.now());
      // A month is figured on the plan in force at its end (the one under way: today's).
      const planName = (await planOfMonth(services.db, req.auth.orgId, month)) ?? req.auth.plan;
      const plan = PLANS[planName];
      const sent = await monthlyUsage(services.db, req.auth, month);
      const overage = plan.monthlyHardStop ? 0 : Math.max(0, sent - plan.emailsPerMonth);
      return {
        object: 'usage',
        month,
        mode: req.auth.mode,
        plan: planName,
        emails: sent,
        included: plan.emailsPerMonth,
        overage,
        overage_cost_eur:
          plan.overagePer1000Eur === null ? null : Math.round((overage * plan.overagePer1000Eur) / 10) / 100,
      };
    },
  );
}
