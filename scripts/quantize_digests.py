#!/usr/bin/env python3
"""llama-quantize digests for `oracle quantize` (docs/quantize.md). Pure python, no numpy.

  quantize_digests.py generate --peer-bin DIR --shared DIR --oracle BIN --out TABLE [--work DIR]
      runs llama-quantize (the peer, scripts/build_peer.sh) for every run of RUNS on
      llama2xs, on SmolLM2's F32 export (itself made by llama-quantize from the
      Q4_1 file) and on `oracle synth --preset gqa --seed 1`, and writes TABLE: per run the output file's size and SHA-256 and
      every tensor's type, and per (tensor, type) the SHA-256 of its data.
  quantize_digests.py generate --ggml-base PEER_BUILD_BIN --ggml-include DIR --oracle BIN ...
      the same with scripts/peer_mini_quantize.c (compiled against the peer's
      libggml-base) in place of llama-quantize: bytes and files from ggml, the
      per-tensor types and order from `oracle quantize --json` (noted in TABLE).
  quantize_digests.py compare A.gguf B.gguf
      per-tensor comparison (type, dims, data) and whole-file comparison; prints
      "tensors: k/n identical" and exits 1 on any difference.
  quantize_digests.py runs
      prints the runs, one "MODEL RUN ARGS" line each (used by the peer test).
"""
import hashlib
import os
import struct
import subprocess
import sys

TYPES = {0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 10: 'Q2_K',
         11: 'Q3_K', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K', 30: 'BF16'}
MIXES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K_S', 'Q3_K_M',
         'Q3_K_L', 'Q4_K_S', 'Q4_K_M', 'Q5_K_S', 'Q5_K_M', 'Q6_K']
PURE = ['Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K']
# run id -> (llama-quantize flags, type); the same arguments go to `oracle quantize`.
RUNS = [(m, [], m) for m in MIXES] + [(p + '+pure', ['--pure'], p) for p in PURE]
# model -> (input relative to the shared models dir or to the work dir, extra flags)
MODELS = {
    'smollm2-export': ('smollm2/SmolLM2-135M-Instruct.Q4_1.gguf', ['--allow-requantize']),
    'llama2xs': ('gguf/llama2xs.gguf', []),
    'smollm2': ('@smollm2-f32.gguf', []),  # the export above
    'synth-gqa': ('@synth-gqa.gguf', []),  # `oracle synth --preset gqa --seed 1`: 256-multiple rows
}


def read_gguf(path):
    """(kv list, tensors [name, dims, type, data bytes]) of a GGUF v2/v3 file."""
    with open(path, 'rb') as f:
        b = f.read()
    o = 0

    def u(fmt):
        nonlocal o
        v = struct.unpack_from('<' + fmt, b, o)
        o += struct.calcsize('<' + fmt)
        return v[0]

    def s():
        nonlocal o
        n = u('Q')
        v = b[o:o + n]
        o += n
        return v.decode('utf-8', 'replace')

    scal = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            et = u('I')
            return [val(et) for _ in range(u('Q'))]
        return u(scal[t])

    assert b[:4] == b'GGUF', path
    o = 4
    u('I')
    nt, nkv = u('Q'), u('Q')
    kv = []
    for _ in range(nkv):
        k = s()
        kv.append((k, val(u('I'))))
    infos = []
    for _ in range(nt):
        name = s()
        dims = [u('Q') for _ in range(u('I'))]
        infos.append((name, dims, u('I'), u('Q')))
    align = dict(kv).get('general.alignment', 32)
    base = (o + align - 1) // align * align
    tensors = []
    for name, dims, ty, off in infos:
        tensors.append([name, dims, ty, b[base + off:base + off + tensor_bytes(dims, ty)], off])
    return kv, tensors, b


BLOCK = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
         10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210)}


def tensor_bytes(dims, ty):
    be, bb = BLOCK[ty]
    n = 1
    for d in dims[1:]:
        n *= d
    return dims[0] // be * bb * n


def sha(b):
    return hashlib.sha256(b).hexdigest()


GGML_IDS = {'F32': 0, 'F16': 1, 'Q4_0': 2, 'Q4_1': 3, 'Q5_0': 6, 'Q5_1': 7, 'Q8_0': 8, 'Q2_K': 10, 'Q3_K': 11,
            'Q4_K': 12, 'Q5_K': 13, 'Q6_K': 14, 'BF16': 30}
MINI = {}  # 'bin', 'oracle' when generating with peer_mini_quantize


def run_mini(inp, out, flags, qtype):
    import json
    r = subprocess.run([MINI['oracle'], 'quantize', inp, out + '.oracle', '--type', qtype, '--json'] + flags,
                       stdout=subprocess.PIPE, text=True, check=True)
    os.remove(out + '.oracle')
    rep = json.loads(r.stdout)
    plan = out + '.plan'
    with open(plan, 'w') as f:
        for t in rep['tensors']:
            f.write('%s %d\n' % (t['name'], GGML_IDS[t['to']]))
    subprocess.run([MINI['bin'], inp, out, str(rep['file_type']), plan], check=True)
    os.remove(plan)


def run_peer(peer_bin, inp, out, flags, qtype):
    if MINI:
        return run_mini(inp, out, flags, qtype)
    cmd = [os.path.join(peer_bin, 'llama-quantize')] + flags + [inp, out, qtype]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit('failed: ' + ' '.join(cmd) + '\n' + r.stdout[-3000:])


def peer_commit(peer_bin):
    """'llama.cpp <commit>' from llama-completion --version (llama-quantize has no --version)."""
    try:
        r = subprocess.run([os.path.join(peer_bin, 'llama-completion'), '--version'], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    except OSError:
        return '(llama.cpp commit unknown)'
    for l in r.stdout.splitlines():
        if 'commit' in l:
            return '(llama.cpp ' + l.split('commit')[-1].strip(' )') + ','
    return '(llama.cpp commit unknown,'



def generate(peer_bin, shared, oracle, out_path, work):
    os.makedirs(work, exist_ok=True)
    subprocess.run([oracle, 'synth', '--preset', 'gqa', '--seed', '1', '-o', os.path.join(work, 'synth-gqa.gguf')],
                   check=True, stdout=subprocess.DEVNULL)
    lines = ['# llama-quantize outputs, made by scripts/quantize_digests.py generate (docs/quantize.md).',
             '# file MODEL RUN BYTES SHA256 | types MODEL RUN T1,T2,.. (file order) | order MODEL N1,N2,..',
             '# data MODEL TENSOR TYPE SHA256 (of the tensor data, without padding)']
    if MINI:
        lines.append('# SOURCE: scripts/peer_mini_quantize.c over the peer\'s libggml-base (llama.cpp 0c1e570,'
                     ' llama-cpp-python 0.3.36 sdist): tensor bytes, metadata and layout by ggml;'
                     ' per-tensor types and order from oracle quantize --json (llama-quantize not built yet)')
    else:
        lines.append('# SOURCE: llama-quantize ' + peer_commit(peer_bin) + ' llama-cpp-python 0.3.36 sdist)')
    for model, (src, extra) in MODELS.items():
        inp = os.path.join(work, src[1:]) if src.startswith('@') else os.path.join(shared, src)
        runs = [('F32', [], 'F32')] if model == 'smollm2-export' else RUNS
        data, order = {}, None
        for run, flags, qtype in runs:
            out = os.path.join(work, 'smollm2-f32.gguf') if model == 'smollm2-export' \
                else os.path.join(work, '%s-%s.gguf' % (model, run))
            run_peer(peer_bin, inp, out, extra + flags, qtype)
            _, tensors, whole = read_gguf(out)
            names = [t[0] for t in tensors]
            if order is None:
                order = names
                lines.append('order %s %s' % (model, ','.join(names)))
            assert names == order, (model, run)
            lines.append('file %s %s %d %s' % (model, run, len(whole), sha(whole)))
            lines.append('types %s %s %s' % (model, run, ','.join(TYPES[t[2]] for t in tensors)))
            for name, _, ty, b, _ in tensors:
                data[(name, TYPES[ty])] = sha(b)
            if model != 'smollm2-export' and out.endswith('.gguf'):
                os.remove(out)
            print(model, run, 'done', flush=True)
        for (name, ty), h in data.items():
            lines.append('data %s %s %s %s' % (model, name, ty, h))
    with open(out_path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def compare(a, b):
    _, ta, wa = read_gguf(a)
    _, tb, wb = read_gguf(b)
    db = {t[0]: t for t in tb}
    same = 0
    for name, dims, ty, data, _ in ta:
        o = db.get(name)
        if o and o[1] == dims and o[2] == ty and o[3] == data:
            same += 1
        else:
            print('differs:', name, TYPES.get(ty), 'vs', TYPES.get(o[2]) if o else 'missing')
    whole = wa == wb
    print('tensors: %d/%d identical; whole file %s' % (same, max(len(ta), len(tb)),
                                                       'identical' if whole else 'differs'))
    return 0 if same == len(ta) == len(tb) and whole else 1


def main():
    a = sys.argv[1:]
    if a and a[0] == 'runs':
        for model, (src, extra) in MODELS.items():
            runs = [('F32', [], 'F32')] if model == 'smollm2-export' else RUNS
            for run, flags, qtype in runs:
                print(model, src, run, ' '.join(extra + flags + [qtype]))
        return 0
    if a and a[0] == 'compare' and len(a) == 3:
        return compare(a[1], a[2])
    if a and a[0] == 'generate':
        opts = dict(zip(a[1::2], a[2::2]))
        if '--ggml-base' in opts:
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'peer_mini_quantize.c')
            MINI['bin'] = os.path.join(opts.get('--work', '/tmp/quantize_digests'), 'peer_mini_quantize')
            os.makedirs(os.path.dirname(MINI['bin']), exist_ok=True)
            subprocess.run(['gcc', '-O2', '-I' + opts['--ggml-include'], src, '-L' + opts['--ggml-base'],
                            '-lggml-base', '-Wl,-rpath,' + opts['--ggml-base'], '-o', MINI['bin']], check=True)
            MINI['oracle'] = opts['--oracle']
            opts.setdefault('--peer-bin', '')
        generate(opts['--peer-bin'], opts['--shared'], opts['--oracle'], opts['--out'], opts.get('--work', '/tmp/quantize_digests'))
        return 0
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main())
