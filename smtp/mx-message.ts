import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { MimeShape } from '../domain/received-emails/mime-shape.ts';
import type { BlobStore } from '../platform/blob-store.ts';
import type { BlobWriter } from '../platform/blob-writer.ts';
import type { Clock } from '../platform/clock.ts';
import type { BlobRow } from '../platform/eventstore/types.ts';
import { readMessage } from './message-reader.ts';
import type { ReplyName } from './replies.ts';

/**
 * A message the MX took, spooled: written to the blob store as it arrived, then staged (blob-writer.ts): a small
 * one is a row for the event that records it to commit, a larger one a synced file.
 */
export class SpooledMessage {
  readonly blob: BlobWriter;
  /** Settles once the message is staged: a larger one synced. */
  readonly staged: Promise<BlobRow | undefined>;
  #committed = false;

  constructor(blob: BlobWriter) {
    this.blob = blob;
    this.staged = blob.stage();
    this.staged.catch(() => {}); // awaited by whoever needs it
  }

  /** Its row, for the events that record the message to commit: none once committed, or when it is a file. */
  async rows(): Promise<BlobRow[]> {
    const row = await this.staged;
    return row && !this.#committed ? [row] : [];
  }

  /** An event that names the message committed its row. */
  committed(): void {
    this.#committed = true;
  }

  /** Durable on its own, for a route that keeps the message without an event naming it. */
  async keep(): Promise<void> {
    if ((await this.rows()).length > 0) await this.blob.finish();
    this.#committed = true;
  }
}

/**
 * Writes the message to the blob store as it arrives, its MIME shape measured on the way, so that no message is
 * held whole in memory. One that breaks a rule is removed, and `refuse` gives the reply it is refused with.
 */
export async function storeArriving(
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  o: { blobs: BlobStore; clock: Clock; refuse: (reply: ReplyName) => Error },
): Promise<SpooledMessage> {
  const args = (session.envelope.mailFrom || undefined)?.args || undefined;
  // SMTPUTF8 declares headers in UTF-8 (RFC 6531, 6532), with or without BODY=8BITMIME for the body.
  const eightBit = String(args?.BODY ?? '').toUpperCase() === '8BITMIME' || Boolean(args?.SMTPUTF8);
  const blob = await o.blobs.writer(o.clock.now().getTime());
  const shape = new MimeShape();
  let refusal: ReplyName | undefined;
  try {
    const read = await readMessage(stream, eightBit, (chunk) =>
      shape.push(chunk).problem ? Promise.resolve() : blob.write(chunk),
    );
    refusal = stream.sizeExceeded ? 'messageTooBig' : (read.problem ?? shape.problem);
  } catch (error) {
    await blob.abort();
    throw error;
  }
  if (refusal) {
    await blob.abort();
    throw o.refuse(refusal);
  }
  // Staged while the message is handled: nothing names it before it is durable, with that record or before.
  return new SpooledMessage(blob);
}
