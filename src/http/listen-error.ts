// A port could not be opened: a message naming the setting (CATCOMFORT_PORT, or the variable given,
// e.g. CATCOMFORT_METRICS_PORT) and the reason. src/main.ts
// prints it and exits with code 2, as for other configuration problems.
export class ListenError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
    reason: string,
    portVariable = 'CATCOMFORT_PORT',
  ) {
    super(describe(host, port, code, reason, portVariable));
  }

  static from(host: string, port: number, error: NodeJS.ErrnoException, portVariable?: string): ListenError {
    return new ListenError(host, port, error.code, error.message, portVariable);
  }
}

function describe(host: string, port: number, code: string | undefined, reason: string, portVariable: string): string {
  switch (code) {
    case 'EADDRINUSE':
      return `${portVariable} ${port} on ${host} is already in use`;
    case 'EACCES':
      return `${portVariable} ${port} on ${host} cannot be used: permission denied (EACCES)`;
    case 'EADDRNOTAVAIL':
      return `CATCOMFORT_HOST ${host} is not an address of this machine (EADDRNOTAVAIL)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return `CATCOMFORT_HOST ${host} cannot be resolved (${code})`;
    case 'EAFNOSUPPORT':
      return `CATCOMFORT_HOST ${host} is of an address family this machine does not support (EAFNOSUPPORT)`;
    default:
      return `${portVariable} ${port} on ${host} cannot be used: ${reason} (${code ?? 'no error code'})`;
  }
}
