// A plain node:http listener beside the public port (the metrics port, the admin port): opened on
// host and port, a port that cannot be opened reported naming its variable (ListenError).
import type http from 'node:http';
import { ListenError } from './listen-error';

export interface SideListener {
  port: number;
  close(): void;
}

export async function listenBeside(server: http.Server, host: string, port: number, portVariable: string): Promise<SideListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(ListenError.from(host, port, error, portVariable)));
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
