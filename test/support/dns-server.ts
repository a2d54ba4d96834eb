import { createServer, Packet } from 'dns2';

// The typings lack the response codes.
const RCODE = (Packet as unknown as { RCODE: Record<'NXDOMAIN' | 'NOTIMP', number> }).RCODE;

export type DnsRecordType = 'TXT' | 'MX' | 'CNAME' | 'PTR' | 'A' | 'AAAA';
/**
 * TXT: a string (split into 255-byte character-strings, as a zone file would) or the character-strings themselves.
 * MX: `{ exchange, priority }` or `'10 mx.example.com'`. CNAME, PTR: the target (a PTR at `2.0.0.127.in-addr.arpa`).
 * A / AAAA: the address.
 */
export type DnsValue = string | string[] | { exchange: string; priority: number };

export interface TestDnsServer {
  port: number;
  /** For DNS_SERVERS or `Resolver.setServers()`. */
  serverAddress: string;
  /** Replaces all records of this type at this name. */
  set(name: string, type: DnsRecordType, values: DnsValue[]): void;
  /** How many questions of any type this server was asked about the name. */
  asked(name: string): number;
  /** Removes the records of one type at the name, or all of them. */
  remove(name: string, type?: DnsRecordType): void;
  clear(): void;
  close(): Promise<void>;
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

function chunks(text: string): string[] {
  const bytes = Buffer.from(text, 'utf8');
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255).toString('utf8'));
  return out.length ? out : [''];
}

function rdata(type: DnsRecordType, value: DnsValue): Record<string, unknown> {
  switch (type) {
    case 'TXT':
      return { data: Array.isArray(value) ? value : chunks(String(value)) };
    case 'MX': {
      if (typeof value === 'object' && !Array.isArray(value))
        return { exchange: value.exchange, priority: value.priority };
      const [priority, exchange] = String(value).split(/\s+/);
      return { exchange, priority: Number(priority) };
    }
    case 'CNAME':
    case 'PTR':
      return { domain: String(value) };
    default:
      return { address: String(value) };
  }
}

type Dns2Server = ReturnType<typeof createServer>;

/** UDP on a free port, then TCP on the same number: truncated answers are retried over TCP on that port. */
async function listenOnOnePort(
  handle: (request: any, send: (response: any) => void) => void,
): Promise<{ server: Dns2Server; port: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const server = createServer({ udp: true, tcp: true, handle });
    server.on('requestError', () => {});
    // dns2 re-emits its sockets' errors here: unheard, a taken TCP port would crash the test process.
    server.on('error', () => {});
    const { udp, tcp } = (server as any).servers;
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    const port = udp.address().port as number;
    const listening = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (listening) return { server, port };
    await new Promise((r) => udp.close(r));
  }
  throw new Error('no port free for both UDP and TCP on 127.0.0.1');
}

/**
 * A programmable authoritative DNS server on 127.0.0.1 (UDP and TCP on the same free port). Names without any
 * record answer NXDOMAIN, names with other types only answer NODATA, and a CNAME at the name is returned
 * (and followed inside this server) for other types, as a real server would.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, Map<DnsRecordType, DnsValue[]>>();
  const questions = new Map<string, number>();

  const answersFor = (name: string, type: DnsRecordType, depth = 0): any[] => {
    const at = zone.get(key(name));
    if (!at) return [];
    const base = { name, class: Packet.CLASS.IN, ttl: 60 };
    const own = at.get(type);
    if (own?.length) return own.map((v) => ({ ...base, type: Packet.TYPE[type], ...rdata(type, v) }));
    const cname = at.get('CNAME');
    if (cname?.length && depth < 8) {
      const target = String(cname[0]);
      return [{ ...base, type: Packet.TYPE.CNAME, domain: target }, ...answersFor(target, type, depth + 1)];
    }
    return [];
  };

  const handle = (request: any, send: (response: any) => void) => {
    const response = Packet.createResponseFromRequest(request);
    response.header.aa = 1;
    const [question] = request.questions;
    if (question) questions.set(key(question.name), (questions.get(key(question.name)) ?? 0) + 1);
    const typeName = Object.entries(Packet.TYPE).find(([, v]) => v === question?.type)?.[0] as
      | DnsRecordType
      | undefined;
    if (!question || !typeName) {
      response.header.rcode = RCODE.NOTIMP;
    } else if (!zone.has(key(question.name))) {
      response.header.rcode = RCODE.NXDOMAIN;
    } else {
      response.answers = answersFor(question.name, typeName);
    }
    send(response);
  };

  const { server, port } = await listenOnOnePort(handle);

  return {
    port,
    serverAddress: `127.0.0.1:${port}`,
    set(name, type, values) {
      const at = zone.get(key(name)) ?? new Map();
      at.set(type, values);
      zone.set(key(name), at);
    },
    asked(name) {
      return questions.get(key(name)) ?? 0;
    },
    remove(name, type) {
      const at = zone.get(key(name));
      if (!at) return;
      if (type) at.delete(type);
      if (!type || at.size === 0) zone.delete(key(name));
    },
    clear() {
      zone.clear();
    },
    async close() {
      await server.close();
    },
  };
}
