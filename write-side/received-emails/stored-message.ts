import type { Readable } from 'node:stream';
import {
  type AttachmentStream,
  type HeaderLines,
  type Headers,
  MailParser,
  type StructuredHeader,
} from 'mailparser';
import type { BlobStore } from '../../platform/blob-store.ts';
import type { BlobWriter } from '../../platform/blob-writer.ts';
import type { BlobRow } from '../../platform/eventstore/types.ts';

export interface StoredAttachment {
  filename: string | undefined;
  contentType: string;
  charset: string | undefined;
  contentId: string | undefined;
  size: number;
  blobKey: string;
}

export interface ParsedMessage {
  headers: Headers;
  headerLines: HeaderLines;
  text?: string;
  html?: string;
  attachments: StoredAttachment[];
  /** RFC 2047 encoded words decoded, as mailparser decodes the headers it reads as text. */
  decodeWords: (value: string) => string;
  /**
   * The attachments' rows, for the record of the message to commit (BlobWriter.stage), once every larger one is
   * synced: their writes end with the parse, their syncs after it.
   */
  rows: Promise<BlobRow[]>;
}

/**
 * Parses a message kept in the blob store as it streams back (`raw`): each attachment is decoded straight into a
 * blob of its own, so no attachment and no whole message is held in memory (the text and html bodies are).
 * Rejects when the message cannot be parsed, with the attachments written so far removed. Resolves before the
 * larger attachments are synced (`rows`), so that their syncs overlap the work after the parse.
 */
export function parseStoredMessage(blobs: BlobStore, raw: Readable, at: number): Promise<ParsedMessage> {
  return new Promise((resolve, reject) => {
    const parser = new MailParser({
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
    });
    // What mailparser keeps of a message but does not declare.
    const inner = parser as unknown as { hasText: boolean; libmime: { decodeWords(value: string): string } };
    const parsed: ParsedMessage = {
      headers: new Map(),
      headerLines: [],
      attachments: [],
      decodeWords: (value) => {
        try {
          return inner.libmime.decodeWords(value);
        } catch {
          return value; // words it cannot decode stay as they are, as mailparser leaves them
        }
      },
      rows: Promise.resolve([]),
    };
    const written: Promise<unknown>[] = [];
    const writers: BlobWriter[] = [];
    /** Each attachment is staged while the parser goes on to the next: the larger ones' syncs overlap. */
    const staged: Promise<BlobRow | undefined>[] = [];
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      parser.destroy();
      void Promise.allSettled(written).then(() => Promise.all(writers.map((w) => w.abort())));
      reject(error);
    };
    const store = async (a: AttachmentStream) => {
      try {
        const blob = await blobs.writer(at);
        writers.push(blob);
        for await (const chunk of a.content) await blob.write(chunk);
        parsed.attachments.push({
          filename: a.filename,
          contentType: a.contentType,
          charset: (a.headers?.get('content-type') as StructuredHeader | undefined)?.params?.charset,
          contentId: a.contentId,
          size: blob.size,
          blobKey: blob.key,
        });
        const row = blob.stage();
        row.catch(() => {}); // awaited with the others at the end
        staged.push(row);
      } finally {
        a.release?.();
      }
    };
    parser.on('headers', (headers) => {
      parsed.headers = headers;
      parsed.headerLines = parser.headerLines || [];
    });
    parser.on('data', (data) => {
      if (data.type === 'attachment') written.push(store(data).catch(fail));
      else {
        // mailparser gives mail without a text part (html only) an empty text: it has none.
        parsed.text = inner.hasText ? data.text : undefined;
        parsed.html = typeof data.html === 'string' ? data.html : undefined;
      }
    });
    parser.on('error', fail);
    parser.on('end', () => {
      Promise.all(written).then(() => {
        if (failed) return;
        // A sync that fails removes the attachments, as a failed parse does.
        parsed.rows = Promise.all(staged).then(
          (rows) => rows.filter((r) => r !== undefined),
          async (error) => {
            await Promise.all(writers.map((w) => w.abort()));
            throw error;
          },
        );
        parsed.rows.catch(() => {}); // awaited by the caller
        resolve(parsed);
      }, fail);
    });
    raw.on('error', fail).pipe(parser);
  });
}
