import nodemailer from 'nodemailer';
import { expect } from 'vitest';
import type { ApiClient } from './service.ts';

/** A remote server's connection to the MX listening on `port` (STARTTLS with its self-signed certificate). */
export const mxClient = (port: number) =>
  nodemailer.createTransport({ host: '127.0.0.1', port, tls: { rejectUnauthorized: false } });

/**
 * The received email with `subject`, as GET /v1/emails/received lists it: the read model follows the MX's 250 by
 * a moment, so it is waited for (expect.poll's patience).
 */
export async function receivedWithSubject(client: ApiClient, subject: string) {
  let found: any;
  await expect
    .poll(async () => {
      const list = (await client.get('/v1/emails/received?limit=100')).body.data;
      found = list.find((e: any) => e.subject === subject);
      return found !== undefined;
    })
    .toBe(true);
  return found;
}
