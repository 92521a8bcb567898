#!/usr/bin/env python3
"""llama-quantize byte identity on adversarial tensors (docs/quantize.md; issue 29). Pure python.

  quantize_adversarial.py make IN.gguf OUT.gguf
      OUT = IN (an F32 GGUF: `oracle synth --preset gqa --seed 1 --layers 1`, rows of 256) with every
      2-D tensor's data replaced, 256 values at a time (so every block of every type sees each
      pattern whole), by the patterns of PATTERNS in turn, seeded.
  quantize_adversarial.py generate --peer-bin DIR --oracle BIN --out TABLE
      makes the input, runs llama-quantize for every run of quantize_digests.RUNS (17 mixes and
      10 --pure types) and writes TABLE: the input's SHA-256 and per run the output's size and
      SHA-256 (and whether `oracle quantize` wrote the same bytes, at generation time).
  quantize_adversarial.py regen --peer-bin DIR --oracle BIN --table TABLE
      generate into a temporary file and diff with TABLE (exit 77 without llama-quantize in DIR;
      PEER_BIN or ORACLE_PEER_BIN override DIR).
  quantize_adversarial.py check --oracle BIN --table TABLE
      makes the input (its SHA-256 must be TABLE's), runs `oracle quantize` for every run and
      compares each output's SHA-256 with llama-quantize's (exit 1 naming the runs that differ).
"""
import hashlib
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quantize_digests as qd  # noqa: E402

SEED = 29


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def bf16(x):  # round to nearest even at bfloat16, as a float32 value
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return struct.unpack('<f', struct.pack('<I', u))[0]


def ties(rng, first):  # the block's largest magnitude a taken with both signs (first: sign met first)
    a = rng.choice([1.0, 0.75, 3.0, 127.0])
    v = [rng.uniform(-a / 2, a / 2) for _ in range(256)]
    for j in range(0, 256, 32):  # in every 32-block, and in every 16-sub-block of the K types
        for k in (j, j + 16):
            v[k + rng.randrange(8)] = first * a
            v[k + 8 + rng.randrange(8)] = -first * a
    return v


def grid_half(rng):  # values on half-steps of a Q4_0/Q8_0 grid: nearest-int ties everywhere
    d = rng.choice([0.125, 0.25, 1.0])
    return [d * (rng.randrange(-16, 16) + 0.5) for _ in range(256)]


PATTERNS = [
    ('zero', lambda r: [0.0] * 256),
    ('subnormal', lambda r: [r.choice([-1, 1]) * r.randrange(1, 1 << 23) * 2.0 ** -149 for _ in range(256)]),
    ('ties+first', lambda r: ties(r, 1)),
    ('ties-first', lambda r: ties(r, -1)),
    ('repeated', lambda r: [r.choice([0.5, -2.0, 1.0 / 3.0])] * 256),
    ('two-values', lambda r: [(1.5 if i % 2 else -1.5) for i in range(256)]),
    ('repeated-magnitudes', lambda r: [r.choice([-1, 1]) * r.choice([0.25, 0.5, 1.0]) for _ in range(256)]),
    ('bf16-origin', lambda r: [bf16(r.gauss(0.0, 0.05)) for _ in range(256)]),
    ('huge', lambda r: [r.uniform(-5.0e4, 5.0e4) for _ in range(256)]),
    ('tiny-normal', lambda r: [r.gauss(0.0, 1e-30) for _ in range(256)]),
    ('spike', lambda r: [1000.0 if i == r.randrange(256) else r.gauss(0.0, 1e-3) for i in range(256)]),
    ('grid-half-steps', grid_half),
    ('positive-only', lambda r: [r.uniform(0.5, 2.0) for _ in range(256)]),
    ('negative-only', lambda r: [-r.uniform(0.5, 2.0) for _ in range(256)]),
    ('mixed-scale', lambda r: [r.gauss(0.0, 1.0) * (1e-4 if (i // 16) % 2 else 10.0) for i in range(256)]),
    ('gauss', lambda r: [r.gauss(0.0, 0.02) for _ in range(256)]),
]


def make(src, dst):
    kv, tensors, b = qd.read_gguf(src)
    align = dict(kv).get('general.alignment', 32)
    end = max(t[4] + len(t[3]) for t in tensors)
    base = len(b) - (end + align - 1) // align * align
    out = bytearray(b)
    rng = random.Random(SEED)
    k = 0
    for name, dims, ty, data, off in tensors:
        assert b[base + off:base + off + len(data)] == data, name
        if ty != 0 or len(dims) < 2:
            continue  # norms stay as they are (1-D, F32 in every mix)
        vals = []
        while len(vals) < len(data) // 4:
            vals += [f32(x) for x in PATTERNS[k % len(PATTERNS)][1](rng)]
            k += 1
        out[base + off:base + off + len(data)] = struct.pack('<%df' % len(vals), *vals)
    with open(dst, 'wb') as f:
        f.write(out)
    return k


def sha(path):
    return hashlib.sha256(open(path, 'rb').read()).hexdigest()


def make_input(oracle, work):
    src, inp = os.path.join(work, 'gqa1.gguf'), os.path.join(work, 'adversarial.gguf')
    subprocess.run([oracle, 'synth', '--preset', 'gqa', '--seed', '1', '--layers', '1', '-o', src], check=True,
                   stdout=subprocess.DEVNULL)
    blocks = make(src, inp)
    return inp, blocks


def oracle_quantize(oracle, inp, out, flags, ty):
    subprocess.run([oracle, 'quantize', inp, out, '--type', ty, '--threads', '2'] + flags, check=True,
                   stdout=subprocess.DEVNULL)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ''
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    if mode == 'make':
        print('%d blocks of 256' % make(sys.argv[2], sys.argv[3]))
        return
    if mode == 'regen':
        args['--peer-bin'] = os.environ.get('PEER_BIN') or os.environ.get('ORACLE_PEER_BIN') or args['--peer-bin']
        if not os.access(os.path.join(args['--peer-bin'], 'llama-quantize'), os.X_OK):
            print('SKIP: no llama-quantize in %s (scripts/build_peer.sh)' % args['--peer-bin'])
            sys.exit(77)
        fd, tmp = tempfile.mkstemp()
        os.close(fd)
        try:
            subprocess.run([sys.executable, __file__, 'generate', '--peer-bin', args['--peer-bin'], '--oracle',
                            args['--oracle'], '--out', tmp], check=True)
            same = open(tmp).read() == open(args['--table']).read()
            print('llama-quantize writes the committed bytes' if same else 'llama-quantize now writes other bytes')
            sys.exit(0 if same else 1)
        finally:
            os.remove(tmp)
    work = tempfile.mkdtemp()
    try:
        inp, blocks = make_input(args['--oracle'], work)
        out = os.path.join(work, 'out.gguf')
        if mode == 'generate':
            lines = ['# llama-quantize on adversarial tensors: scripts/quantize_adversarial.py generate (seed %d)' % SEED,
                     '# input: `oracle synth --preset gqa --seed 1 --layers 1`, every 2-D tensor rewritten by '
                     '`quantize_adversarial.py make` (%d blocks of 256; patterns: %s)' % (
                         blocks, ', '.join(p for p, _ in PATTERNS)),
                     '# peer: llama-quantize [--pure] IN OUT TYPE 2 (llama.cpp 0c1e570, llama-cpp-python 0.3.36 sdist)',
                     'input %s' % sha(inp)]
            same = 0
            for run, flags, ty in qd.RUNS:
                p = subprocess.run([os.path.join(args['--peer-bin'], 'llama-quantize')] + flags + [inp, out, ty, '2'],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    lines.append('refused %s' % run)
                    continue
                want = sha(out)
                lines.append('file %s %d %s' % (run, os.path.getsize(out), want))
                oracle_quantize(args['--oracle'], inp, out, flags, ty)
                same += sha(out) == want
            lines.insert(3, '# at generation: oracle quantize byte-identical in %d of %d runs' % (same, len(qd.RUNS)))
            with open(args['--out'], 'w') as f:
                f.write('\n'.join(lines) + '\n')
            print('%d of %d runs identical' % (same, len(qd.RUNS)))
            return
        table = [l.split() for l in open(args['--table']) if l.strip() and not l.startswith('#')]
        want_in = [l[1] for l in table if l[0] == 'input'][0]
        if sha(inp) != want_in:
            sys.exit('the adversarial input changed (sha256 %s, table %s): regenerate the table' % (sha(inp), want_in))
        runs = {r: (f, t) for r, f, t in qd.RUNS}
        bad = []
        for l in table:
            if l[0] != 'file':
                continue
            flags, ty = runs[l[1]]
            oracle_quantize(args['--oracle'], inp, out, flags, ty)
            ok = sha(out) == l[3] and os.path.getsize(out) == int(l[2])
            print('%-12s %s' % (l[1], 'identical to llama-quantize' if ok else 'DIFFERS from llama-quantize'))
            if not ok:
                bad.append(l[1])
        n = sum(1 for l in table if l[0] == 'file')
        print('%d of %d runs byte-identical to llama-quantize' % (n - len(bad), n))
        sys.exit(1 if bad or n < len(qd.RUNS) else 0)
    finally:
        import shutil
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
