import type { Readable } from 'node:stream';
import {
  type ContactImportCommand,
  type ContactImportState,
  contactImportDecider,
} from '../../domain/contact-imports/contact-import.decider.ts';
import { contactImportStream } from '../../domain/contact-imports/contact-import.events.ts';
import { contactImportReport as reportOf } from '../../domain/contact-imports/contact-import.report.ts';
import { notFound } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { storeImportFile } from './import-file.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'config' | 'lookUps' | 'blobs'>;

/**
 * Stores the file and queues its import: the audience must be the caller's, the file one `storeImportFile`
 * takes. The file is written durably before the job names it.
 */
export async function startContactImport(
  services: Deps,
  meta: EventMetadata,
  input: { audienceId: string | null; file: Readable | AsyncIterable<Buffer>; maxBytes: number },
) {
  if (input.audienceId && !(await services.lookUps.findAudience(services.db, meta, input.audienceId)))
    throw notFound('Audience', input.audienceId);
  const now = services.clock.now().getTime();
  const { blobKey, bytes } = await storeImportFile(services, input.file, input.maxBytes, now);
  const importId = newId('imp', now);
  const { orgId, mode } = meta;
  const at = services.clock.now().toISOString();
  const { audienceId } = input;
  const command = {
    type: 'StartContactImport' as const,
    importId,
    orgId,
    mode,
    audienceId,
    blobKey,
    bytes,
    at,
  };
  const result = await onImport(services, meta, command, { history: [] });
  return { importId, position: result.position };
}

/** Decides `command` on the import's stream. */
export const onImport = (
  services: Pick<Services, 'store'>,
  meta: EventMetadata,
  command: ContactImportCommand,
  options?: { history: [] },
) =>
  handleCommand(
    services.store,
    contactImportStream(command.importId),
    contactImportDecider,
    command,
    meta,
    options,
  );

/** The job's state from its stream, and who started it (everything the import writes is caused by them). */
export async function readImport(services: Pick<Services, 'store'>, importId: string) {
  const events = await services.store.readStream(contactImportStream(importId));
  return { state: rebuildState(contactImportDecider, events), meta: events[0]?.metadata };
}

/** The job's state from its stream (a process reads it here, never by folding the stream itself). */
export async function readContactImport(
  services: Pick<Services, 'store'>,
  importId: string,
): Promise<ContactImportState> {
  return (await readImport(services, importId)).state;
}

/** What an import did, from its log: counts, the rows it lists as skipped, and why it failed. */
export const contactImportReport = async (services: Pick<Services, 'store'>, importId: string) =>
  reportOf(await services.store.readStream(contactImportStream(importId)));
