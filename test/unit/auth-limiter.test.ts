import { describe, expect, it } from 'vitest';
import { AuthFailureLimiter, ServiceTokens, limiterKey } from '../../src/http/auth';
import { RateLimitedError, UnauthorizedError } from '../../src/errors';

describe('limiterKey: what failed authentications are counted per', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:127.0.0.2', '127.0.0.2'],
    ['::FFFF:10.0.0.7', '10.0.0.7'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0009', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0::/64'],
    ['not-an-address', 'not-an-address'],
    ['1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7:8:9'],
  ])('%s -> %s', (address, key) => {
    expect(limiterKey(address)).toBe(key);
  });

  it('an IPv6 client rotating through its /64 is one client', () => {
    let t = 0;
    const limiter = new AuthFailureLimiter({ monotonic: () => t });
    for (let i = 0; i < 30; i++) limiter.fail(`2001:db8:aa:bb:${i.toString(16)}::${(i * 7).toString(16)}`);
    expect(limiter.blockedFor('2001:db8:aa:bb:dead:beef:1:2')).toBe(10);
    expect(limiter.blockedFor('2001:db8:aa:bc::1')).toBe(0); // the next /64
    t = 10_000;
    expect(limiter.blockedFor('2001:db8:aa:bb::1')).toBe(0);
  });
});

describe('AuthFailureLimiter', () => {
  const wrong = () => {
    throw new UnauthorizedError('invalid admin token');
  };

  it('service tokens: past the limit, refused with 429 without being compared', async () => {
    const limiter = new AuthFailureLimiter({ monotonic: () => 0 });
    for (let i = 0; i < 30; i++)
      await expect(limiter.guardToken('10.0.0.1', wrong)).rejects.toBeInstanceOf(UnauthorizedError);
    let compared = false;
    const right = () => {
      compared = true;
      return 'admin';
    };
    const refused = await limiter.guardToken('10.0.0.1', right).catch((err) => err);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(refused.retryAfterSeconds).toBe(10);
    expect(compared).toBe(false);
    expect(await limiter.guardToken('10.0.0.2', right)).toBe('admin');
  });

  it('entity secrets: still compared, so a valid one passes from a blocked address', async () => {
    const limiter = new AuthFailureLimiter({ monotonic: () => 0 });
    for (let i = 0; i < 30; i++)
      await expect(limiter.guardSecret('10.0.0.1', wrong)).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(limiter.guardSecret('10.0.0.1', wrong)).rejects.toBeInstanceOf(RateLimitedError);
    expect(await limiter.guardSecret('10.0.0.1', () => 'entity')).toBe('entity');
  });
});

describe('ServiceTokens', () => {
  it('names the kind of a token among those accepted', () => {
    const tokens = new ServiceTokens({ admin: 'a'.repeat(32), ops: 'o'.repeat(32), metrics: undefined });
    expect(tokens.kindOf('a'.repeat(32), ['admin', 'ops'])).toBe('admin');
    expect(tokens.kindOf('o'.repeat(32), ['admin', 'ops'])).toBe('ops');
    expect(tokens.kindOf('o'.repeat(32), ['admin'])).toBeUndefined();
    expect(tokens.kindOf('a'.repeat(31), ['admin', 'ops'])).toBeUndefined();
    expect(tokens.kindOf('', ['metrics'])).toBeUndefined();
  });
});
