import { z } from 'zod';
import {
  RawMessage,
  ReceivedAttachment,
  ReceivedAttachmentList,
  ReceivedEmail,
  ReceivedEmailList,
} from '../../domain/received-emails/received-emails.response.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { createdBetween, listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
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

const listFilters = {
  domain: z.string().min(1).max(253).optional(),
  from: z.string().min(1).max(254).optional(),
  ...createdBetween,
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

  const received = queryRoutes(api, { tag: 'Received emails', name: 'Received email' });
  // `/emails/receiving` is how Resend's SDK says it (`emails.receiving.get`, `list`, `attachments`): an alias.
  for (const base of ['/emails/received', '/emails/receiving']) {
    const resends = base === '/emails/receiving' ? " (Resend's path)" : '';
    received.list(
      base,
      { summary: `List received emails${resends}`, query, responses: { 200: ReceivedEmailList } },
      async (req, page) => {
        const rows = await listReceivedEmails(services.db, req.auth, page);
        const data = await Promise.all(rows.data.map((row) => receivedEmailJson(services, row)));
        return { object: 'list', data, has_more: rows.has_more };
      },
    );

    received.get(
      `${base}/:received_email_id`,
      {
        summary: `Get a received email with its bodies and headers${resends}`,
        responses: { 200: ReceivedEmail },
      },
      async (req) => receivedEmailJson(services, await found(req.auth, req.params.received_email_id)),
    );

    received.get(
      `${base}/:received_email_id/raw`,
      {
        summary: `A download link for the raw message${resends}`,
        responses: { 200: RawMessage },
        errors: ['content_deleted'],
      },
      async (req) => {
        const row = kept(await found(req.auth, req.params.received_email_id));
        return {
          object: 'raw_message',
          received_email_id: row.id,
          size: row.size,
          ...downloadLink(services, row.raw_key, `${row.id}.eml`, 'message/rfc822'),
        };
      },
    );

    received.get(
      `${base}/:received_email_id/attachments`,
      {
        summary: `List a received email's attachments${resends}`,
        responses: { 200: ReceivedAttachmentList },
      },
      async (req) => {
        const row = await found(req.auth, req.params.received_email_id);
        const data = row.attachments.map((a) => receivedAttachmentJson(row, a));
        return { object: 'list', data, has_more: false };
      },
    );

    received.get(
      `${base}/:received_email_id/attachments/:attachment_id`,
      {
        summary: `Get an attachment with a download link${resends}`,
        responses: { 200: ReceivedAttachment },
        errors: ['content_deleted'],
      },
      async (req) => {
        const row = await found(req.auth, req.params.received_email_id);
        const a = row.attachments.find((x) => x.attachmentId === req.params.attachment_id);
        if (!a) throw notFound('Attachment', req.params.attachment_id);
        kept(row);
        return {
          ...receivedAttachmentJson(row, a),
          // With the charset it was written in: a server would otherwise say UTF-8 for any text.
          ...downloadLink(
            services,
            a.blobKey,
            a.filename,
            a.charset ? `${a.contentType}; charset=${a.charset}` : a.contentType,
          ),
        };
      },
    );
  }
}
