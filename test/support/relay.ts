import { type Server, type Socket, connect, createServer } from 'node:net';

/**
 * A TCP relay in front of a server, for network faults without netem: each
 * chunk is held for `delay ± jitter` ms (in order per direction, as TCP
 * delivers), or dropped while the relay is cut (both sockets stay open: a
 * half-open link as the client sees it).
 */
export interface Relay {
  readonly host: string;
  readonly port: number;
  /** Hold every chunk for delayMs ± jitterMs from now on (0, 0: forward at once). */
  setLatency(delayMs: number, jitterMs?: number): void;
  /** Drop everything in both directions; connections stay open. */
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startRelay(
  target: { host: string; port: number },
  listen: { host?: string; port?: number } = {},
): Promise<Relay> {
  let delayMs = 0;
  let jitterMs = 0;
  let cut = false;
  const sockets = new Set<Socket>();
  const hold = () => Math.max(0, delayMs + (jitterMs ? (Math.random() * 2 - 1) * jitterMs : 0));

  /**
   * Forwards `from` to `to` through a queue with one timer at a time: timers
   * due in the same millisecond may fire in any order, and a stream must
   * never be reordered.
   */
  const pipe = (from: Socket, to: Socket) => {
    const queue: { at: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      timer = undefined;
      while (queue.length && queue[0].at <= Date.now()) {
        const { chunk } = queue.shift()!;
        if (!to.destroyed) to.write(chunk);
      }
      if (queue.length) timer = setTimeout(flush, queue[0].at - Date.now());
    };
    from.on('data', (chunk: Buffer) => {
      if (cut) return;
      const last = queue.length ? queue[queue.length - 1].at : 0;
      queue.push({ at: Math.max(last, Date.now() + hold()), chunk });
      if (!timer) flush();
    });
  };

  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        // A close is a packet too: while cut it does not reach the other side.
        if (!cut) (s === client ? upstream : client).destroy();
      });
    }
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port ?? 0, listen.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as { address: string; port: number };
  return {
    host: address.address,
    port: address.port,
    setLatency(delay, jitter = 0) {
      delayMs = delay;
      jitterMs = jitter;
    },
    cut: () => void (cut = true),
    heal: () => void (cut = false),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
