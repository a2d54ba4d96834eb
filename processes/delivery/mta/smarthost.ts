/** A relay every message goes through instead of MX look-ups (SMARTHOST_URL). */
export interface Smarthost {
  host: string;
  port: number;
  implicitTls: boolean;
  auth?: { user: string; pass: string };
}

/** `smtp://user:pass@host:port` or `smtps://…` (implicit TLS); the port defaults to 587 or 465. */
export function parseSmarthost(url: string): Smarthost {
  const u = new URL(url);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:')
    throw new Error('SMARTHOST_URL must be smtp:// or smtps://');
  const implicitTls = u.protocol === 'smtps:';
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : implicitTls ? 465 : 587,
    implicitTls,
    auth: u.username
      ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) }
      : undefined,
  };
}
