import { afterAll, beforeAll } from 'vitest';
import { startDnsServer, type TestDnsServer } from './dns-server.ts';
import { domainEnv } from './domains.ts';
import { type TestServiceOptions, useTestService } from './service.ts';

/**
 * A test service whose domains verify against a DNS server on loopback: the server starts before the service and
 * is closed after the file; `dns` stands for it in hooks and tests. `options` as useTestService takes them, their
 * `env` on top of the DNS settings.
 */
export function useDnsService(options: TestServiceOptions | (() => TestServiceOptions) = {}) {
  let server: TestDnsServer | undefined;
  const started = () => {
    if (!server) throw new Error('The DNS server starts in beforeAll: use it in hooks and tests.');
    return server;
  };
  beforeAll(async () => {
    server = await startDnsServer();
  });
  const svc = useTestService(() => {
    const o = typeof options === 'function' ? options() : options;
    return { ...o, env: { ...domainEnv(started()), ...o.env } };
  });
  afterAll(async () => {
    await server?.close();
  });
  const dns: TestDnsServer = {
    get port() {
      return started().port;
    },
    get serverAddress() {
      return started().serverAddress;
    },
    set: (name, type, values) => started().set(name, type, values),
    asked: (name) => started().asked(name),
    remove: (name, type) => started().remove(name, type),
    clear: () => started().clear(),
    // Closed by the afterAll above.
    close: async () => {},
  };
  return { svc, dns };
}
