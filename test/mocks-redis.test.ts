import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RunningRedis } from '../src/toolsets/mocks/redis/testing.js';
import { connectStdio, type TestClient } from './helpers/client.js';
import { mocksWorkspace } from './helpers/programs.js';

let root: string;
let dk: TestClient;
let redis: RunningRedis | undefined;

const tool = (name: string, args: Record<string, unknown>) => dk.structured(name, args);

beforeAll(async () => {
  root = mocksWorkspace('debugkit-mocks-redis-');
  redis = await startRedis();
  dk = await connectStdio({ root, args: ['--toolsets', 'mocks'] });
});
afterAll(async () => {
  await dk?.close();
  await redis?.stop();
});

describe('mocks: Redis (redis-py) recorded as Keploy Redis mocks and replayed without the server', () => {
  it('records; completes the set with onMiss record, passes through; replays with no server; reports a changed command', async () => {
    const command = `/usr/bin/python3 cache.py ${redis!.port} ${redis!.password} plum`;
    const rec = await tool('keploy_mock_record', { command, path: 'keploy-redis' });
    expect(rec).toMatchObject({ success: true, protocols: ['Redis'] });
    expect(rec.mockCount).toBeGreaterThanOrEqual(5);
    const recorded = readFileSync(path.join(root, 'cache-out.txt'), 'utf8');
    expect(recorded).toBe("set=True value=b'ripe' visits=1 basket=[(b'plum', b'3')]\n");
    const yaml = readFileSync(path.join(root, rec.mockFilePath), 'utf8');
    expect(yaml).toMatch(/^version: api.keploy.io\/v1beta1\nkind: Redis\nname: mock-0\nspec:\n {4}metadata:\n/);
    expect(yaml).toContain('redisrequests:');
    expect(yaml).not.toContain(redis!.password);

    // onMiss record, the server up: the commands the set lacks go to it and are added to the set.
    const pear = (password: string) => `/usr/bin/python3 cache.py ${redis!.port} ${password} pear`;
    const completed = await tool('keploy_mock_test', { command: pear(redis!.password), path: 'keploy-redis', onMiss: 'record' });
    expect(completed).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(completed.mocksRecorded).toBeGreaterThanOrEqual(3); // SET, GET and HSET of pear
    const pearOut = readFileSync(path.join(root, 'cache-out.txt'), 'utf8');
    expect(pearOut).toMatch(/^set=True value=b'ripe' visits=1 basket=/);
    expect(readFileSync(path.join(root, rec.mockFilePath), 'utf8')).not.toContain(redis!.password);
    // onMiss passthrough: answered by the server, not added.
    const passed = await tool('keploy_mock_test', { command: `/usr/bin/python3 cache.py ${redis!.port} ${redis!.password} quince`, path: 'keploy-redis', onMiss: 'passthrough' });
    expect(passed).toMatchObject({ appExitCode: 0, success: false });
    expect(passed.mocksFellBack).toBeGreaterThanOrEqual(3);

    const port = redis!.port;
    const pearCommand = pear('any');
    await redis!.stop();
    redis = undefined;
    writeFileSync(path.join(root, 'cache-out.txt'), '');
    const replay = await tool('keploy_mock_test', { command: `/usr/bin/python3 cache.py ${port} wrong-password plum`, path: 'keploy-redis' });
    expect(replay).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0, mocksReplayed: rec.mockCount });
    expect(readFileSync(path.join(root, 'cache-out.txt'), 'utf8')).toBe(recorded);

    writeFileSync(path.join(root, 'cache-out.txt'), '');
    expect(await tool('keploy_mock_test', { command: pearCommand, path: 'keploy-redis' })).toMatchObject({ success: true, mocksMissed: 0, appExitCode: 0 });
    expect(readFileSync(path.join(root, 'cache-out.txt'), 'utf8')).toBe(pearOut);

    const changed = await tool('keploy_mock_test', { command: `/usr/bin/python3 cache.py ${port} x fig`, path: 'keploy-redis' });
    expect(changed).toMatchObject({ success: false });
    expect(changed.misses[0]).toMatch(/^redis 127\.0\.0\.1:\d+: no recorded mock for SET "fruit:fig" "ripe"; closest mock-\d+: SET "fruit:(plum|pear)" "ripe"/);
    expect(changed.appOutput).toMatch(/ResponseError: .*debugkit: redis .*no recorded mock for SET/);
  });
});
