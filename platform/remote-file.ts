import { Agent, request } from 'undici';
import { BlockedAddressError, checkLiteralHost, guardedLookup } from './ssrf-guard.ts';

/** Why a file could not be fetched, in words its sender can act on. */
export class RemoteFileError extends Error {}
/** The file is larger than it may be. */
export class RemoteFileTooLarge extends RemoteFileError {}

/** One keep-alive pool for guarded requests and one for an installation that allows private networks. */
const agents = new Map<boolean, Agent>();
const agentFor = (allowPrivateNetworks: boolean) => {
  let agent = agents.get(allowPrivateNetworks);
  if (!agent) {
    agent = new Agent(allowPrivateNetworks ? {} : { connect: { lookup: guardedLookup as never } });
    agents.set(allowPrivateNetworks, agent);
  }
  return agent;
};

export interface RemoteFileLimits {
  /** Past this many bytes the download stops and the file is refused. */
  maxBytes: number;
  /** For the whole of it: connection, answer and body. */
  timeoutMs: number;
  allowPrivateNetworks: boolean;
}

/**
 * The bytes at an http(s) URL that a user names a file by (an attachment's `path`): one GET, redirects not
 * followed (each hop would need the address check again, and a signed storage URL does not redirect), at most
 * `maxBytes` read, within `timeoutMs` in all, to public addresses only unless private networks are allowed (the
 * SSRF guard). Throws RemoteFileError saying why not.
 */
export async function fetchRemoteFile(url: string, limits: RemoteFileLimits): Promise<Buffer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new RemoteFileError('must be an http or https URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new RemoteFileError('must be an http or https URL');
  const literal = limits.allowPrivateNetworks ? null : checkLiteralHost(target);
  if (literal) throw new RemoteFileError(literal.message);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const answer = await request(target, { dispatcher: agentFor(limits.allowPrivateNetworks), signal });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      const redirect = answer.statusCode >= 300 && answer.statusCode < 400;
      throw new RemoteFileError(
        `answered HTTP ${answer.statusCode}${redirect ? ' (redirects are not followed: give the final URL)' : ''}`,
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.body) {
      size += chunk.length;
      if (size > limits.maxBytes) {
        answer.body.destroy();
        throw new RemoteFileTooLarge(`is larger than ${limits.maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  } catch (error) {
    if (error instanceof RemoteFileError) throw error;
    if (signal.aborted)
      throw new RemoteFileError(`did not answer in full within ${limits.timeoutMs / 1000} s`);
    const cause = (error as { cause?: unknown }).cause ?? error;
    if (cause instanceof BlockedAddressError) throw new RemoteFileError(cause.message);
    throw new RemoteFileError(
      `could not be fetched (${(cause as { code?: string }).code ?? 'connection failed'})`,
    );
  }
}
