import { EMAIL_LIMITS } from '../../domain/emails/limits.ts';
import { invalidField } from '../../platform/errors.ts';
import { fetchRemoteFile, RemoteFileError, RemoteFileTooLarge } from '../../platform/remote-file.ts';
import type { Services } from '../../platform/services.ts';
import { attachmentsTooLarge, type CheckedAttachment } from './email-limits.ts';

/**
 * The attachments given by `path` (Resend's field: a URL the file is at) fetched, one after the other, each within
 * what the email's attachments before it left of their limit in all; a file that cannot be fetched is a 422 naming
 * its `path` and why (platform/remote-file.ts: public addresses only, unless
 * ATTACHMENT_PATHS_ALLOW_PRIVATE_NETWORKS).
 */
export async function withPathsFetched(
  config: Services['config'],
  attachments: CheckedAttachment[],
): Promise<(CheckedAttachment & { bytes: Buffer })[]> {
  let total = attachments.reduce((sum, a) => sum + ('bytes' in a ? a.bytes.length : 0), 0);
  const fetched: (CheckedAttachment & { bytes: Buffer })[] = [];
  for (const [i, a] of attachments.entries()) {
    if ('bytes' in a) {
      fetched.push(a);
      continue;
    }
    const { url, ...rest } = a;
    const bytes = await fetchRemoteFile(url, {
      maxBytes: EMAIL_LIMITS.attachmentBytes - total,
      timeoutMs: config.ATTACHMENT_PATHS_TIMEOUT_MS,
      allowPrivateNetworks: config.ATTACHMENT_PATHS_ALLOW_PRIVATE_NETWORKS,
    }).catch((error) => {
      if (error instanceof RemoteFileTooLarge) throw attachmentsTooLarge();
      if (error instanceof RemoteFileError) throw invalidField(`attachments[${i}].path`, error.message);
      throw error;
    });
    total += bytes.length;
    fetched.push({ ...rest, bytes });
  }
  return fetched;
}
