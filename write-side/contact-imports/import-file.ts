import type { Readable } from 'node:stream';
import { headerOf } from '../../domain/contact-imports/contact-import.csv.ts';
import { AppError } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';

/**
 * Writes an import's file durably: at most `maxBytes` (413 past it), with a header row naming `email` (422
 * otherwise). A refused file leaves nothing behind.
 */
export async function storeImportFile(
  services: Pick<Services, 'blobs'>,
  file: Readable | AsyncIterable<Buffer>,
  maxBytes: number,
  /** The time the file's name is made from. */
  at: number,
): Promise<{ blobKey: string; bytes: number }> {
  const blobs = services.blobs;
  const blob = await blobs.writer(at);
  try {
    for await (const chunk of file) {
      await blob.write(chunk);
      if (blob.size > maxBytes)
        throw new AppError('body_too_large', `The file is larger than the limit of ${maxBytes} bytes.`);
    }
    if (blob.size === 0) throw new AppError('validation_error', 'The file is empty: it needs a header row.');
  } catch (error) {
    await blob.abort();
    throw error;
  }
  const blobKey = await blob.finish();
  try {
    await headerOf(blob.reader());
  } catch (error) {
    await blobs.delete(blobKey);
    throw error;
  }
  return { blobKey, bytes: blob.size };
}
