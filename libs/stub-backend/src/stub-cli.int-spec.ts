import { runStubCli, type StubCliIo, type StubCliResult } from './stub-cli';
import type { StubBackend } from './types';

// The stub as a program (issue 13 item 8): the live deploy checks run it in a container as the vLLM and
// llama.cpp stand-in, which needs a bind address other than 127.0.0.1 and a working --help.

function io(env: Record<string, string> = {}): StubCliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    env,
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    out: () => out,
    err: () => err,
  };
}

function running(result: StubCliResult): StubBackend {
  if (!('stub' in result)) throw new Error(`the stub did not start (exit ${result.exitCode})`);
  return result.stub;
}

describe('stub-backend program', () => {
  const started: StubBackend[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.close()));
  });

  it('prints its flags on --help and starts nothing', async () => {
    const cli = io();
    const result = await runStubCli(['--help'], cli);
    expect(result).toEqual({ exitCode: 0 });
    for (const flag of ['--host', '--port', '--window', '--flavor', '--model'])
      expect(cli.out()).toContain(flag);
  });

  it('binds the address, window and model it is given', async () => {
    const cli = io();
    // 127.0.0.2 is loopback too, and proves the bind address is taken from the flag (it was fixed before).
    const stub = running(
      await runStubCli(
        ['--host', '127.0.0.2', '--port', '0', '--window', '4096', '--model', 'qwen-test'],
        cli,
      ),
    );
    started.push(stub);
    expect(stub.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
    expect(cli.out()).toBe(`stub listening on ${stub.url} (window 4096, flavor vllm, model qwen-test)\n`);
    const models = (await (await fetch(`${stub.url}/v1/models`)).json()) as {
      data: { id: string; max_model_len: number }[];
    };
    expect(models.data[0]).toMatchObject({ id: 'qwen-test', max_model_len: 4096 });
  });

  it('imitates llama.cpp with --flavor llamacpp', async () => {
    const stub = running(await runStubCli(['--port', '0', '--flavor', 'llamacpp', '--window', '2048'], io()));
    started.push(stub);
    const props = (await (await fetch(`${stub.url}/props`)).json()) as {
      default_generation_settings: { n_ctx: number };
    };
    expect(props.default_generation_settings.n_ctx).toBe(2048);
  });

  it('takes STUB_* variables as defaults, and a flag over its variable', async () => {
    const cli = io({ STUB_PORT: '0', STUB_WINDOW: '3000', STUB_FLAVOR: 'vllm' });
    const stub = running(await runStubCli(['--window', '5000'], cli));
    started.push(stub);
    expect(stub.window).toBe(5000);
    expect(stub.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('refuses a bad port or flavor with exit code 2 and says why', async () => {
    const badPort = io();
    expect(await runStubCli(['--port', 'eighty'], badPort)).toEqual({ exitCode: 2 });
    expect(badPort.err()).toContain('port');
    const badFlavor = io();
    expect(await runStubCli(['--flavor', 'tgi'], badFlavor)).toEqual({ exitCode: 2 });
    expect(badFlavor.err()).toContain('tgi');
  });

  it('holds each answer back for STUB_LATENCY_MS, a request in flight the deploy checks can stop a sidecar under', async () => {
    const stub = running(await runStubCli([], io({ STUB_PORT: '0', STUB_LATENCY_MS: '600000' })));
    started.push(stub);
    const gone = new AbortController();
    const answer = fetch(`${stub.url}/v1/models`, { signal: gone.signal }).catch(() => 'aborted');
    while (stub.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
    // Received, and still unanswered: ten minutes is far beyond any machine's stall.
    expect(stub.requests[0]).toMatchObject({ path: '/v1/models' });
    expect(stub.requests[0]?.answeredAt).toBeUndefined();
    gone.abort();
    expect(await answer).toBe('aborted');
  });

  it('spreads a streamed answer over STUB_STREAM_MS: the first event at once, the stream open after it', async () => {
    const stub = running(await runStubCli([], io({ STUB_PORT: '0', STUB_STREAM_MS: '600000' })));
    started.push(stub);
    const gone = new AbortController();
    const res = await fetch(`${stub.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stub-model',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      signal: gone.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // One event, and the rest still to come: ten minutes is far beyond any machine's stall.
    expect(first).toMatch(/^data: \{.*\}\n\n$/);
    expect(first).not.toContain('[DONE]');
    expect(stub.requests[0]?.aborted).toBe(false);
    gone.abort();
    await reader.read().catch(() => undefined);
    while (stub.requests[0]?.aborted !== true) await new Promise((r) => setTimeout(r, 20));
  });
});
