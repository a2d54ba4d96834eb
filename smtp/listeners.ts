import type { Authenticate } from '../platform/auth/auth-context.ts';
import type { Services } from '../platform/services.ts';
import { mxHooks } from './mx.ts';
import { relayHooks } from './relay.ts';
import { SmtpServers } from './smtp-server.ts';

export interface SmtpListeners {
  /** The ports listened on (0 in the configuration picks a free one); absent when turned off. */
  submissionPort?: number;
  submissionsPort?: number;
  mxPort?: number;
  close(): Promise<void>;
}

/** Starts the SMTP listeners the configuration asks for: the relay's two (docs/smtp.md) and the MX. */
export async function startSmtp(services: Services, authenticate: Authenticate): Promise<SmtpListeners> {
  const {
    SMTP_SUBMISSION_PORT: submission,
    SMTP_SUBMISSIONS_PORT: submissions,
    SMTP_MX_PORT: mx,
  } = services.config;
  if (submission === null && submissions === null && mx === null) return { close: async () => {} };
  const servers = await SmtpServers.open(services);
  const listeners: SmtpListeners = { close: () => servers.close() };
  try {
    const relay = {
      banner: 'Postline relay',
      auth: true,
      smtpUtf8: false,
      hooks: relayHooks(servers, services, authenticate),
    };
    // Submission with STARTTLS, submissions with TLS from the first byte (RFC 8314).
    const relayPorts = [
      ['submission', submission, false],
      ['submissions', submissions, true],
    ] as const;
    for (const [name, port, implicitTls] of relayPorts)
      if (port !== null)
        listeners[`${name}Port`] = await servers.listen({ ...relay, name, port, implicitTls });
    if (mx !== null) {
      listeners.mxPort = await servers.listen({
        name: 'mx',
        port: mx,
        implicitTls: false,
        banner: 'Postline',
        auth: false,
        smtpUtf8: true,
        hooks: mxHooks(servers, services),
      });
    }
  } catch (error) {
    await servers.close();
    throw error;
  }
  const { submissionPort, submissionsPort, mxPort } = listeners;
  servers.log.info(
    { submission: submissionPort, submissions: submissionsPort, mx: mxPort },
    'SMTP listening',
  );
  return listeners;
}
