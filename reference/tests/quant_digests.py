#!/usr/bin/env python3
# Regenerates the expected digests in test_quant.cpp ("seeded random blocks match
# the python gguf dequantizers") with an implementation independent of ours:
# pip install gguf numpy && python3 reference/tests/quant_digests.py
import hashlib
import numpy as np
from gguf import quants, GGMLQuantizationType as T, GGML_QUANT_SIZES
MASK=(1<<64)-1
def splitmix(state):
    state=(state+0x9E3779B97F4A7C15)&MASK
    z=state
    z=((z^(z>>30))*0xBF58476D1CE4E5B9)&MASK
    z=((z^(z>>27))*0x94D049BB133111EB)&MASK
    return state, z^(z>>31)
fp16_fields={'F16':None,'BF16':None,'Q4_0':[0],'Q4_1':[0,2],'Q5_0':[0],'Q5_1':[0,2],'Q8_0':[0],
  'Q2_K':[80,82],'Q3_K':[108],'Q4_K':[0,2],'Q5_K':[0,2],'Q6_K':[208]}
def fix_half(b, off, bf16=False):
    h=b[off]|(b[off+1]<<8)
    if bf16:
        if (h>>7)&0xff==0xff: h^=0x4000
    else:
        if (h>>10)&0x1f==0x1f: h^=0x4000
    b[off]=h&0xff; b[off+1]=h>>8
for name,fields in fp16_fields.items():
    qt=T[name]; bs,ts=GGML_QUANT_SIZES[qt]
    nb = 8 if bs>1 else 256
    n=nb*ts
    state=0x1234567 + qt.value
    b=bytearray(n)
    for i in range(n):
        state,z=splitmix(state); b[i]=z&0xff
    if fields is None:
        for off in range(0,n,2): fix_half(b,off,name=='BF16')
    else:
        for blk in range(nb):
            for f in fields: fix_half(b,blk*ts+f)
    arr=np.frombuffer(bytes(b),dtype=np.uint8).reshape(1,n)
    out=quants.dequantize(arr,qt).astype(np.float32)
    assert out.size==nb*bs
    print(name, nb*bs, hashlib.sha256(out.astype('<f4').tobytes()).hexdigest())
