import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/cli/admin-api';

/** The hostname as the CLI sees it: parsed (and normalised) by WHATWG URL. */
const host = (url: string) => new URL(url).hostname;

describe('isLoopbackHost: whether the CLI may send the admin token over http:// without a warning', () => {
  it('accepts 127.0.0.0/8, ::1 and localhost, however they are spelled in the URL', () => {
    for (const url of [
      'http://127.0.0.1:8080',
      'http://127.255.3.4',
      'http://127.1',
      'http://2130706433',
      'http://[::1]:8080',
      'http://[0:0:0:0:0:0:0:1]',
      'http://[::ffff:127.0.0.1]',
      'http://localhost',
      'http://LOCALHOST:80',
    ]) {
      expect(isLoopbackHost(host(url)), url).toBe(true);
    }
  });

  it('warns for every other host, names that only look local included', () => {
    for (const url of [
      'http://10.0.0.5',
      'http://128.0.0.1',
      'http://0.0.0.0',
      'http://[::2]',
      'http://[::ffff:10.0.0.1]',
      'http://localhost.invalid',
      'http://localhost.example.com',
      'http://my-localhost',
      'http://idpool.internal',
    ]) {
      expect(isLoopbackHost(host(url)), url).toBe(false);
    }
  });
});
