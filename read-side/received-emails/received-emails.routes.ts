import { z } from 'zod';
import { AppError, notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import {
  downloadLink,
  findReceivedEmail,
  listReceivedEmails,
  type ReceivedEmailRow,
  receivedAttachmentJson,
  receivedEmailJson,
} from './received-emails.queries.ts';
import {
  RawMessage,
  ReceivedAttachment,
  ReceivedAttachmentList,
  ReceivedEmail,
  ReceivedEmailList,
} from './received-emails.response.ts';

const dateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' });
const listFilters = {
  domain: z.string().min(1).max(253).optional(),
  from: z.string().min(1).max(254).optional(),
  from_date: dateTime.optional(),
  to_date: dateTime.optional(),
};
const query = listQuery(listFilters);

/** Registered before `GET /v1/emails/:email_id`, which would otherwise take `received` for an email id. */
export function receivedEmailQueryRoutes(api: ApiRouter, services: Services) {
  const found = async (tenant: Tenant, id: string) => {
    const row = await findReceivedEmail(services.db, tenant, id);
    if (!row) throw notFound('Received email', id);
    return row;
  };

  /** The raw message and attachments are deleted when the retention ends; asking for them then is a 410. */
  const kept = (row: ReceivedEmailRow) => {
    if (row.purged_at)
      throw new AppError(
        'content_deleted',
        `The content of received email ${row.id} was deleted when its retention ended; its metadata remains.`,
      );
    return row;
  };

  api.get(
    '/emails/received',
    async (req) => {
      const page = await listReceivedEmails(services.db, req.auth, parsePage(req.query, query));
      const data = await Promise.all(page.data.map((row) => receivedEmailJson(services, row)));
      return ok({ object: 'list', data, has_more: page.has_more });
    },
    {
      schema: {
        tag: 'Received emails',
        summary: 'List received emails',
        query,
        responses: { 200: ReceivedEmailList },
      },
    },
  );

  api.get(
    '/emails/received/:received_email_id',
    async (req) => ok(await receivedEmailJson(services, await found(req.auth, req.params.received_email_id))),
    {
      schema: {
        tag: 'Received emails',
        summary: 'Get a received email with its bodies and headers',
        responses: { 200: ReceivedEmail },
      },
    },
  );

  api.get(
    '/emails/received/:received_email_id/raw',
    async (req) => {
      const row = kept(await found(req.auth, req.params.received_email_id));
      return ok({
        object: 'raw_message',
        received_email_id: row.id,
        size: row.size,
        ...downloadLink(services, row.raw_key, `${row.id}.eml`, 'message/rfc822'),
      });
    },
    {
      schema: {
        tag: 'Received emails',
        summary: 'A download link for the raw message',
        responses: { 200: RawMessage },
        errors: ['content_deleted'],
      },
    },
  );

  api.get(
    '/emails/received/:received_email_id/attachments',
    async (req) => {
      const row = await found(req.auth, req.params.received_email_id);
      const data = row.attachments.map((a) => receivedAttachmentJson(row, a));
      return ok({ object: 'list', data, has_more: false });
    },
    {
      schema: {
        tag: 'Received emails',
        summary: "List a received email's attachments",
        responses: { 200: ReceivedAttachmentList },
      },
    },
  );

  api.get(
    '/emails/received/:received_email_id/attachments/:attachment_id',
    async (req) => {
      const row = await found(req.auth, req.params.received_email_id);
      const a = row.attachments.find((x) => x.attachmentId === req.params.attachment_id);
      if (!a) throw notFound('Attachment', req.params.attachment_id);
      kept(row);
      return ok({
        ...receivedAttachmentJson(row, a),
        ...downloadLink(services, a.blobKey, a.filename, a.contentType),
      });
    },
    {
      schema: {
        tag: 'Received emails',
        summary: 'Get an attachment with a download link',
        responses: { 200: ReceivedAttachment },
        errors: ['content_deleted'],
      },
    },
  );
}
