import { Agent, type Dispatcher, request } from 'undici';
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

/** How many redirects a fetch follows, each to a URL checked as the first one is. */
const MAX_REDIRECTS = 3;

/** An http(s) URL that may be fetched: a literal internal address is refused here, a name when it is resolved. */
function checkedUrl(url: string | URL, allowPrivateNetworks: boolean): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new RemoteFileError('must be an http or https URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new RemoteFileError('must be an http or https URL');
  const literal = allowPrivateNetworks ? null : checkLiteralHost(target);
  if (literal) throw new RemoteFileError(literal.message);
  return target;
}

/**
 * The bytes at an http(s) URL that a user names a file by (an attachment's `path`): a GET, up to 3 redirects
 * followed (each new URL checked as the first), at most `maxBytes` read, within `timeoutMs` in all, to public
 * addresses only unless private networks are allowed (the SSRF guard). Throws RemoteFileError saying why not.
 */
export async function fetchRemoteFile(url: string, limits: RemoteFileLimits): Promise<Buffer> {
  let target = checkedUrl(url, limits.allowPrivateNetworks);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    for (let redirects = 0; ; redirects++) {
      const answer = await request(target, { dispatcher: agentFor(limits.allowPrivateNetworks), signal });
      const location = answer.headers.location;
      if (answer.statusCode >= 300 && answer.statusCode < 400 && typeof location === 'string') {
        await answer.body.dump();
        if (redirects === MAX_REDIRECTS)
          throw new RemoteFileError(`was redirected more than ${MAX_REDIRECTS} times`);
        target = checkedUrl(new URL(location, target), limits.allowPrivateNetworks);
        continue;
      }
      if (answer.statusCode !== 200) {
        await answer.body.dump();
        throw new RemoteFileError(`answered HTTP ${answer.statusCode}`);
      }
      return await bodyOf(answer.body, limits.maxBytes);
    }
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

/** A body's bytes, refused past `maxBytes` (the download stops there). */
async function bodyOf(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw new RemoteFileTooLarge(`is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
