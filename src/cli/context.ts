import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULTS } from '../config/config';
import { AdminApi, type AdminApiOptions } from './admin-api';
import { CliError, EXIT_USAGE } from './errors';

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Starts the service in this process (`idpool serve`), `port` overriding IDPOOL_PORT; resolves once it was handed control. */
  serve(overrides: { port?: number }): Promise<void>;
  /** Asks for a secret without echoing it; undefined when there is no terminal to ask on. */
  askSecret?(question: string): Promise<string | undefined>;
}

/** What every command group is built with: the process's io, and the global options read per command. */
export type CliContext = ReturnType<typeof cliContext>;

export function cliContext(io: CliIo) {
  /** The options given before the command (`--url`, `--json`, `--timeout`). */
  const globals = (cmd: Command) => cmd.optsWithGlobals<{ url?: string; json?: boolean; timeout: number }>();
  /** The API of the instance `--url` (or the environment) names, with a bearer token named by `credential`. */
  const api = (cmd: Command, token: string, credential?: AdminApiOptions['credential']) => {
    const g = globals(cmd);
    return new AdminApi({
      url: g.url || io.env.IDPOOL_URL || `http://127.0.0.1:${io.env.IDPOOL_PORT || DEFAULTS.port}`,
      token,
      credential,
      timeoutMs: g.timeout,
      warn: (message) => io.stderr(`idpool: warning: ${message}\n`),
    });
  };
  return {
    io,
    globals,
    /** Prints `json` under `--json`, else the text. */
    print: (cmd: Command, json: unknown, text: () => string) =>
      io.stdout(globals(cmd).json ? `${JSON.stringify(json, null, 2)}\n` : text()),
    /** `idpool: <line>` on stderr as a command goes, unless `--json` (whose output says it at the end). */
    note: (cmd: Command, line: string) => {
      if (!globals(cmd).json) io.stderr(`idpool: ${line}\n`);
    },
    api,
    /** The admin API, with IDPOOL_ADMIN_TOKEN. */
    admin(cmd: Command) {
      const token = io.env.IDPOOL_ADMIN_TOKEN;
      if (!token)
        throw new CliError(EXIT_USAGE, 'IDPOOL_ADMIN_TOKEN is not set: export the admin token of the service');
      return api(cmd, token);
    },
  };
}

/** Argument parser of an option that may be given again: every value, in order. */
export const repeatable = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Argument parser: a non-negative integer that fits a JS number exactly. */
export const nonNegativeInt = (value: string): number => {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('must be a non-negative integer.');
  return Number(value);
};

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Argument parser: a duration such as `90s`, `30m`, `12h` or `7d` (a bare number is seconds), in whole seconds. */
export const duration = (value: string): number => {
  const m = /^(\d{1,9})([smhd]?)$/.exec(value);
  if (!m) throw new InvalidArgumentError('must be a duration such as 90s, 30m, 12h or 7d.');
  return Number(m[1]) * UNIT_SECONDS[m[2] || 's'];
};

/** Argument parser: a non-negative decimal up to 19 digits, kept as a string (an id offset may pass 2^53). */
export const decimal = (value: string): string => {
  if (!/^\d{1,19}$/.test(value)) throw new InvalidArgumentError('must be a non-negative decimal integer.');
  return value;
};
