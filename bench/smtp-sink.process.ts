/**
 * The receiving server of `bench:smtp`, a process of its own as the receiver of real mail would be: an SMTP server
 * (smtp-server, no TLS) that tells its parent its port, then how many messages it has accepted whenever that
 * changes.
 */
import { startSmtpSink } from '../test/support/smtp-sink.ts';

const sink = await startSmtpSink();
process.send!({ port: sink.port });
let told = 0;
setInterval(() => {
  const count = sink.messages.length;
  if (count === told) return;
  told = count;
  process.send!({ count });
}, 2);
process.on('disconnect', () => process.exit(0));
