// Streams over /rpc (docs/protocol.md 2.3, 2.4): seq numbering, resume after a dropped
// connection, gaps, cancel — against the real engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stream } from '../src/streams';
import { deleteAllSandboxes } from './support/cleanup';
import { hasEngine } from './support/engine';
import { RpcSocket, otherKey } from './support/worker';

type Note = { method: string; params: Record<string, unknown> };

describe('Stream backlog', () => {
  const sub = () => {
    const sent: string[] = [];
    return { sent, s: { send: (t: string) => sent.push(t), open: true } };
  };

  it('replays everything after `after`, in order, after answering', () => {
    const st = new Stream('st_x', 'key', 'sb', 'st_engine', 7, null);
    for (let i = 1; i <= 3; i++) st.push('stream.output', { streamId: 'st_engine', seq: i, channel: 'stdout', data: `${i}` });
    const { sent, s } = sub();
    let answer: unknown;
    st.resume(1, s, (a) => (answer = a));
    expect(answer).toEqual({ streamId: 'st_x', after: 1, last: 3, done: false });
    expect(sent.map((t) => (JSON.parse(t) as Note).params.seq)).toEqual([2, 3]);
    expect((JSON.parse(sent[0]!) as Note).params).toMatchObject({ streamId: 'st_x', requestId: 7 });
  });

  it('answers -32009 with the oldest seq held when the backlog dropped output', () => {
    const st = new Stream('st_x', 'key', 'sb', 'st_e', 1, null);
    for (let i = 1; i <= 8200; i++) st.push('stream.output', { seq: i, channel: 'stdout', data: 'x' });
    expect(st.firstSeq).toBe(8200 - 8192 + 1);
    const { s } = sub();
    expect(() => st.resume(0, s, () => undefined)).toThrowError(expect.objectContaining({ code: -32009, data: { first: 9 } }));
    let answer: unknown;
    st.resume(8, s, (a) => (answer = a));
    expect(answer).toMatchObject({ after: 8, last: 8200 });
  });

  it("relays an agent run's stream.event with the event as it came, and replays it on resume", async () => {
    const { sent, s } = sub();
    const st = new Stream('st_run', 'key', 'sb', 'st_engine', 'r1', s);
    const event = { type: 'tool_call', turn: 0, id: 'toolu_1', name: 'Write', input: { file_path: '/workspace/a.txt', content: 'hi' } };
    st.push('stream.event', { streamId: 'st_engine', seq: 1, requestId: 3, event: { type: 'session', turn: 0, sessionId: 'abc' } });
    st.push('stream.event', { streamId: 'st_engine', seq: 2, requestId: 3, event });
    st.push('stream.end', { streamId: 'st_engine', seq: 3, requestId: 3, result: { success: true, result: 'done', streamId: 'st_engine' } });
    const notes = sent.map((t) => JSON.parse(t) as Note);
    expect(notes.map((n) => n.method)).toEqual(['stream.event', 'stream.event', 'stream.end']);
    expect(notes[1]!.params).toEqual({ streamId: 'st_run', seq: 2, requestId: 'r1', event });
    expect(notes[2]!.params.result).toEqual({ success: true, result: 'done', streamId: 'st_run' });
    expect(await st.ended()).toEqual({ success: true, result: 'done', streamId: 'st_run' });
    const again = sub();
    st.resume(1, again.s, () => undefined);
    expect(again.sent.map((t) => (JSON.parse(t) as Note).params.seq)).toEqual([2, 3]);
    expect(again.sent[0]).toBe(sent[1]);
  });

  it('a watcher gets the backlog after `after`, then every new notification, beside the subscriber', () => {
    const owner = sub();
    const st = new Stream('st_x', 'key', 'sb', 'st_engine', 7, owner.s);
    st.push('stream.output', { seq: 1, channel: 'stdout', data: 'a' });
    st.push('stream.output', { seq: 2, channel: 'stdout', data: 'b' });
    const w = sub();
    let answer: unknown;
    st.watch(1, w.s, (a) => (answer = a));
    expect(answer).toEqual({ streamId: 'st_x', after: 1, last: 2, done: false });
    expect(w.sent.map((t) => (JSON.parse(t) as Note).params.seq)).toEqual([2]);
    st.push('stream.output', { seq: 3, channel: 'stdout', data: 'c' });
    st.push('stream.end', { seq: 4, result: { exitCode: 0 } });
    expect(owner.sent).toHaveLength(4); // the subscriber keeps everything
    expect(w.sent.slice(1)).toEqual(owner.sent.slice(2));
    expect((JSON.parse(w.sent[2]!) as Note).params).toMatchObject({ requestId: 7, result: { exitCode: 0 } });
    expect(st.watchers.size).toBe(0);
    // Watching twice from one connection delivers once; a closed watcher is dropped.
    const st2 = new Stream('st_y', 'key', 'sb', 'st_e2', 1, owner.s);
    const twice = sub();
    st2.watch(0, twice.s, () => undefined);
    st2.watch(0, twice.s, () => undefined);
    st2.push('stream.output', { seq: 1, channel: 'stdout', data: 'x' });
    expect(twice.sent).toHaveLength(1);
    const closed = { send: () => undefined, open: false };
    st2.watch(1, closed, () => undefined);
    st2.push('stream.output', { seq: 2, channel: 'stdout', data: 'y' });
    expect(st2.watchers.has(closed)).toBe(false);
  });

  it('ignores duplicates and rewrites the end result to its own id', async () => {
    const st = new Stream('st_w', 'key', 'sb', 'st_e', 1, null);
    st.push('stream.output', { seq: 1, data: 'a' });
    st.push('stream.output', { seq: 1, data: 'a' });
    st.push('stream.end', { seq: 2, result: { exitCode: 0, streamId: 'st_e' } });
    expect(st.backlog).toHaveLength(2);
    expect(await st.ended()).toEqual({ exitCode: 0, streamId: 'st_w' });
  });
});

describe.skipIf(!hasEngine)('streams through the Worker', () => {
  let id = '';
  beforeAll(async () => {
    await deleteAllSandboxes();
    const s = await RpcSocket.open();
    id = (await s.result<{ id: string }>('agents.create', { type: 'claude-code', size: 'lite' })).id;
    s.close();
  });
  afterAll(() => deleteAllSandboxes());

  it('numbers notifications from 1, ties them to the request, and ends with the result', async () => {
    const s = await RpcSocket.open();
    const notes: Note[] = [];
    s.send({
      jsonrpc: '2.0',
      id: 41,
      method: 'agents.exec',
      params: { id, command: 'echo out; echo err >&2; exit 2', options: { stream: true } },
    });
    const answer = (await s.nextAnswer(notes as never)) as { result: Record<string, unknown> };
    while (!notes.some((n) => n.method === 'stream.end')) notes.push((await s.next()) as Note);
    expect(answer.result).toMatchObject({ exitCode: 2, stdout: '', stderr: '', streamId: expect.stringMatching(/^st_/) });
    const streamId = answer.result.streamId;
    expect(notes.map((n) => n.params.seq)).toEqual(notes.map((_, i) => i + 1));
    for (const n of notes) expect(n.params).toMatchObject({ streamId, requestId: 41 });
    const end = notes.at(-1)!;
    expect(end.method).toBe('stream.end');
    expect(end.params.result).toEqual(answer.result);
    const text = (ch: string) =>
      notes.filter((n) => n.method === 'stream.output' && n.params.channel === ch).map((n) => n.params.data).join('');
    expect(text('stdout')).toBe('out\n');
    expect(text('stderr')).toBe('err\n');
    s.close();
  });

  it('relays a watch of /workspace: a file written by a command comes as a create, cancel ends it', async () => {
    const s = await RpcSocket.open();
    const notes: Note[] = [];
    const watch = await s.result<{ streamId: string; path: string }>('sandbox.watch', { id, path: '/workspace' }, notes as never);
    expect(watch).toMatchObject({ streamId: expect.stringMatching(/^st_/), path: '/workspace', recursive: false });
    await s.result('agents.exec', { id, command: 'echo x > /workspace/watched.txt' }, notes as never);
    while (!notes.some((n) => n.method === 'stream.event' && (n.params.event as { path?: string }).path === '/workspace/watched.txt'))
      notes.push((await s.next()) as Note);
    const event = notes.find((n) => n.method === 'stream.event')!;
    expect(event.params).toMatchObject({ streamId: watch.streamId, event: { type: 'create', path: '/workspace/watched.txt', isDir: false } });
    await s.result('stream.cancel', { streamId: watch.streamId }, notes as never);
    while (!notes.some((n) => n.method === 'stream.end')) notes.push((await s.next()) as Note);
    expect(notes.find((n) => n.method === 'stream.end')!.params.result).toMatchObject({ path: '/workspace', cancelled: true });
    s.close();
  });

  it('resumes a stream on a new connection after a drop, without loss or repeats', async () => {
    const a = await RpcSocket.open();
    const seen: Note[] = [];
    a.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'agents.exec',
      params: { id, command: 'for i in 1 2 3 4 5 6; do echo n$i; sleep 0.3; done', options: { stream: true } },
    });
    // Take the first notification, then drop the connection mid-stream.
    seen.push((await a.next()) as Note);
    const streamId = seen[0]!.params.streamId as string;
    const lastSeen = seen[0]!.params.seq as number;
    a.close();

    await new Promise((r) => setTimeout(r, 700));
    const b = await RpcSocket.open();
    const replay: Note[] = [];
    const res = await b.result<{ streamId: string; after: number; last: number; done: boolean }>(
      'stream.resume',
      { streamId, after: lastSeen },
      replay as never,
    );
    expect(res).toMatchObject({ streamId, after: lastSeen, last: expect.any(Number) });
    expect(res.last).toBeGreaterThan(lastSeen);
    while (!replay.some((n) => n.method === 'stream.end')) replay.push((await b.next()) as Note);
    const all = [...seen, ...replay];
    expect(all.map((n) => n.params.seq)).toEqual(all.map((_, i) => i + 1));
    const out = all.filter((n) => n.method === 'stream.output').map((n) => n.params.data).join('');
    expect(out).toBe('n1\nn2\nn3\nn4\nn5\nn6\n');
    expect(all.at(-1)!.params.result).toMatchObject({ exitCode: 0, streamId });
    b.close();
  });

  it('stream.watch follows a stream live from a second connection, which keeps it too', async () => {
    const a = await RpcSocket.open();
    const toA: Note[] = [];
    a.send({
      jsonrpc: '2.0',
      id: 'started-by-a',
      method: 'agents.exec',
      params: { id, command: 'for i in 1 2 3 4; do echo w$i; sleep 0.3; done', options: { stream: true } },
    });
    toA.push((await a.next()) as Note);
    const streamId = toA[0]!.params.streamId as string;
    const b = await RpcSocket.open();
    const toB: Note[] = [];
    const res = await b.result<{ streamId: string; done: boolean }>('stream.watch', { streamId, after: 0 }, toB as never);
    expect(res).toMatchObject({ streamId, after: 0, done: false });
    while (!toB.some((n) => n.method === 'stream.end')) toB.push((await b.next()) as Note);
    while (!toA.some((n) => n.method === 'stream.end')) {
      const m = (await a.next()) as Note & { id?: unknown };
      if (m.method !== undefined) toA.push(m);
    }
    const text = (ns: Note[]) => ns.filter((n) => n.method === 'stream.output').map((n) => n.params.data).join('');
    expect(text(toB)).toBe('w1\nw2\nw3\nw4\n');
    expect(text(toA)).toBe('w1\nw2\nw3\nw4\n');
    expect(toB.map((n) => n.params.seq)).toEqual(toB.map((_, i) => i + 1));
    expect(toB.at(-1)!.params).toMatchObject({ requestId: 'started-by-a', result: { exitCode: 0 } });
    a.close();
    b.close();
  });

  it('keeps streams to their key', async () => {
    const a = await RpcSocket.open();
    const notes: Note[] = [];
    const r = await a.result<{ streamId: string }>('agents.exec', { id, command: 'echo x', options: { stream: true } }, notes as never);
    a.close();
    const other = await RpcSocket.open(await otherKey());
    expect(await other.call('stream.resume', { streamId: r.streamId, after: 0 })).toMatchObject({ error: { code: -32002 } });
    expect(await other.call('stream.watch', { streamId: r.streamId, after: 0 })).toMatchObject({ error: { code: -32002 } });
    other.close();
  });

  it('stream.cancel kills the command behind a stream', async () => {
    const s = await RpcSocket.open();
    const notes: Note[] = [];
    s.send({ jsonrpc: '2.0', id: 'long', method: 'agents.exec', params: { id, command: 'echo go; sleep 30', options: { stream: true } } });
    const first = (await s.next()) as Note;
    const started = Date.now();
    expect(await s.result('stream.cancel', { streamId: first.params.streamId }, notes as never)).toMatchObject({
      streamId: first.params.streamId,
    });
    const answer = await s.nextAnswer(notes as never);
    expect(answer).toMatchObject({ id: 'long', error: { code: -32012 } });
    while (!notes.some((n) => n.method === 'stream.end')) notes.push((await s.next()) as Note);
    expect(notes.at(-1)!.params).toMatchObject({ streamId: first.params.streamId, error: { code: -32012 } });
    expect(Date.now() - started).toBeLessThan(10_000);
    s.close();
  });

  it('relays a terminal: typed input and resize, for its own key only', async () => {
    const s = await RpcSocket.open();
    s.send({
      jsonrpc: '2.0',
      id: 'tty',
      method: 'agents.exec',
      params: { id, command: 'stty size; read line; echo "got:$line"; stty size', options: { pty: { cols: 100, rows: 30 } } },
    });
    const notes: Note[] = [];
    const out = () =>
      notes.filter((n) => n.method === 'stream.output').map((n) => n.params.data as string).join('');
    const until = async (pred: () => boolean) => {
      while (!pred()) notes.push((await s.next()) as Note);
    };
    await until(() => out().includes('30 100'));
    const streamId = notes[0]!.params.streamId as string;
    expect(notes[0]!.method).toBe('stream.event');
    expect(notes[0]!.params.event).toMatchObject({ type: 'terminal', cols: 100, rows: 30 });
    expect(await s.result('stream.resize', { streamId, cols: 120, rows: 40 }, notes as never)).toMatchObject({
      streamId,
      cols: 120,
      rows: 40,
    });
    expect(await s.result('stream.input', { streamId, data: 'hello\r' }, notes as never)).toMatchObject({ streamId, bytes: 6 });
    await until(() => notes.some((n) => n.method === 'stream.end'));
    // The terminal echoes what was typed, the program read it, and it saw the new size.
    expect(out()).toContain('got:hello');
    expect(out()).toContain('40 120');
    expect(notes.at(-1)!.params.result).toMatchObject({ exitCode: 0, streamId });
    // Not a terminal (or ended), or another key's: refused as the engine refuses them.
    const plain = await s.result<{ streamId: string }>('agents.exec', { id, command: 'echo x', options: { stream: true } });
    expect(await s.call('stream.input', { streamId: plain.streamId, data: 'x' })).toMatchObject({ error: { code: -32002 } });
    const other = await RpcSocket.open(await otherKey());
    expect(await other.call('stream.resize', { streamId, cols: 10, rows: 10 })).toMatchObject({ error: { code: -32002 } });
    other.close();
    s.close();
  });

  it('rpc.cancel answers the request -32012 and kills its command', async () => {
    const s = await RpcSocket.open();
    s.send({ jsonrpc: '2.0', id: 9, method: 'agents.exec', params: { id, command: 'sleep 30' } });
    await new Promise((r) => setTimeout(r, 300));
    s.send({ jsonrpc: '2.0', id: 10, method: 'rpc.cancel', params: { id: 9 } });
    const got = [await s.nextAnswer(), await s.nextAnswer()] as { id: number }[];
    expect(got.find((m) => m.id === 9)).toMatchObject({ error: { code: -32012 } });
    expect(got.find((m) => m.id === 10)).toMatchObject({ result: { cancelled: true } });
    expect(await s.call('rpc.cancel', { id: 12345 })).toMatchObject({ error: { code: -32002 } });
    const ps = await s.result<{ stdout: string }>('agents.exec', { id, command: 'ps -eo args | grep -c "^sleep 30" || true' });
    expect(ps.stdout.trim()).toBe('0');
    s.close();
  });
});
