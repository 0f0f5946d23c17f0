import { describe, expect, it } from 'vitest';
import { DebugkitError } from '../../../core/errors.js';
import { appName, nameFor, shellWords, validateSetName } from './naming.js';

const NOW = new Date(1704153600_000); // the contract's example: mock-1704153600

describe("nameFor: the contract's names", () => {
  it('<app>-<protocols> for a recording that captured traffic', () => {
    expect(nameFor('go run main.go', ['HTTP'], NOW, '/home/dev/my-app')).toBe('my-app-http');
    expect(nameFor('npm start', ['HTTP'], NOW, '/srv/user-service')).toBe('user-service-http');
    expect(nameFor('npm start', ['HTTP', 'Postgres'], NOW, '/srv/order-service')).toBe('order-service-http-postgres');
    // A dependency label is as good as a protocol: the contract's order-service-stripe-postgres.
    expect(nameFor('npm start', ['stripe', 'Postgres'], NOW, '/srv/order-service')).toBe('order-service-stripe-postgres');
  });

  it('mock-<unix seconds> when nothing was captured', () => {
    expect(nameFor('npm start', [], NOW, '/srv/order-service')).toBe('mock-1704153600');
    expect(nameFor('go run .', ['', '  '], new Date(1704153600_999))).toBe('mock-1704153600');
  });

  it('protocols keep their order, lowercased and deduplicated', () => {
    expect(nameFor('./billing', ['HTTP', 'http', 'gRPC', 'Postgres', 'HTTP'], NOW)).toBe('billing-http-grpc-postgres');
  });

  it('always gives a valid set name', () => {
    for (const command of ['', '   ', '"', 'ünïcödé-äpp --flag', '../../etc/passwd', 'x'.repeat(500), '$(rm -rf /)']) {
      expect(() => validateSetName(nameFor(command, ['HTTP'], NOW))).not.toThrow();
      expect(() => validateSetName(nameFor(command, ['p'.repeat(300)], NOW, '/w/' + 'q'.repeat(300)))).not.toThrow();
    }
    expect(nameFor('ünïcödé-äpp', ['HTTP'], NOW)).toBe('unicode-app-http');
    expect(() => nameFor('x', ['HTTP'], new Date(NaN))).toThrow(DebugkitError);
  });
});

describe('appName: the application behind the command', () => {
  it.each([
    ['./test-app-product-catelog', undefined, 'test-app-product-catelog'],
    ['/usr/local/bin/billing-api --port 8080', undefined, 'billing-api'],
    ['node server.js', undefined, 'server'],
    ['node server.js', '/w/payment-api', 'payment-api'],
    ['sudo -E env PORT=8080 node --require dotenv/config dist/orders.js', undefined, 'orders'],
    ['PORT=1 time nohup python3 ./weather.py', undefined, 'weather'],
    ['python -m billing.api', undefined, 'billing.api'],
    ['python -m uvicorn app.main:app', '/w/inventory', 'inventory'],
    ['java -jar target/order-service-1.0.2-SNAPSHOT.jar', undefined, 'order-service'],
    ['java -cp lib/* com.example.OrderService', undefined, 'OrderService'],
    ['go run ./cmd/billing', undefined, 'billing'],
    ['go run main.go', '/w/my-app', 'my-app'],
    ['go run .', '/w/my-app', 'my-app'],
    ['go test ./...', '/w/my-app', 'my-app'],
    ['cargo run --release --bin ledger', undefined, 'ledger'],
    ['npm run dev', '/w/shop', 'shop'],
    ['yarn node scripts/seed.js', undefined, 'seed'],
    ['npx ts-node src/index.ts', '/w/inventory', 'inventory'],
    ['uv run python app.py', '/w/weather', 'weather'],
    ['poetry run gunicorn api:app', '/w/accounts', 'accounts'],
    ['bun run dev', '/w/site', 'site'],
    ['deno run --allow-net mailer.ts', undefined, 'mailer'],
    ['timeout 30 ./bin/server', '/w/gateway', 'gateway'],
    ['docker run --rm --name pricing pricing:latest', undefined, 'pricing'],
    ['./build/checkout/server', undefined, 'checkout'],
    ['node app.js && echo done', '/w/notes', 'notes'],
  ])('%s (cwd %s) → %s', (command, cwd, expected) => {
    expect(appName(command, cwd)).toBe(expected);
  });
});

describe('shellWords and validateSetName', () => {
  it('splits like a shell, stopping at the first command', () => {
    expect(shellWords(`FOO="a b" node 'my app.js' --x=\\"y\\" | tee log`)).toEqual(['FOO=a b', 'node', 'my app.js', '--x="y"']);
    expect(shellWords(`echo ""`)).toEqual(['echo', '']);
  });

  it('accepts safe directory names and refuses the rest', () => {
    for (const ok of ['order-service-stripe-postgres', 'mock-1704153600', 'test-set-0', 'A.b_c-1']) expect(validateSetName(ok)).toBe(ok);
    for (const bad of ['', '.', '..', '../x', 'a/b', 'a\\b', 'a..b', '.hidden', 'a b', 'ä', 'x'.repeat(201), 'a\0b']) {
      expect(() => validateSetName(bad), bad).toThrow(DebugkitError);
    }
    expect(() => validateSetName('../etc')).toThrow(/Invalid mock set name "\.\.\/etc": use letters, digits/);
  });
});
