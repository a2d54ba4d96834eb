import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { MimeShape } from '../domain/received-emails/mime-shape.ts';
import type { BlobStore } from '../platform/blob-store.ts';
import type { BlobWriter } from '../platform/blob-writer.ts';
import type { Clock } from '../platform/clock.ts';
import { readMessage } from './message-reader.ts';
import type { ReplyName } from './replies.ts';

/** A message the MX took, spooled: written to the blob store as it arrived, `synced` once it is on disk. */
export interface SpooledMessage {
  blob: BlobWriter;
  synced: Promise<string>;
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
  const blob = await o.blobs.writer(o.clock.now().getTime());
  const shape = new MimeShape();
  let refusal: ReplyName | undefined;
  try {
    const read = await readMessage(stream, String(args?.BODY ?? '').toUpperCase() === '8BITMIME', (chunk) =>
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
  // Synced while the message is handled; nothing is recorded before it is on disk.
  const synced = blob.finish();
  synced.catch(() => {}); // awaited by whoever needs it
  return { blob, synced };
}
